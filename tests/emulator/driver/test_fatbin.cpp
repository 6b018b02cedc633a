// The fatbin reader against real nvcc output (every --compress-mode) and module loading of
// images without PTX.
#include <cstring>

#include "fatbin/fatbin.h"
#include "test_helpers.h"

using namespace cusnap_test;
namespace fatbin = cusnap::emu::fatbin;

namespace {

// The PTX text without comments, blank lines and whitespace differences: nvcc -ptx output and
// the fatbin's PTX entry agree on that.
std::string significant_lines(const std::string& text) {
  std::string out, line;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      size_t comment = line.find("//");
      if (comment != std::string::npos) line.resize(comment);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
      // Collapse whitespace runs: the fatbin copy and nvcc -ptx differ in tabs vs spaces.
      std::string squeezed;
      for (char c : line) {
        bool space = c == ' ' || c == '\t';
        if (space && (squeezed.empty() || squeezed.back() == ' ')) continue;
        squeezed += space ? ' ' : c;
      }
      if (!squeezed.empty()) out += squeezed + "\n";
      line.clear();
    } else {
      line += text[i];
    }
  }
  return out;
}

}  // namespace

TEST_CASE("fatbin: the PTX entry of every compress mode equals nvcc -ptx", "[fatbin]") {
  std::string ptx = read_file(kernel_path("vector.ptx"));
  std::string expected = significant_lines(ptx);
  REQUIRE(expected.find(".entry vector_add") != std::string::npos);
  for (const char* mode : {"default", "size", "speed", "none"}) {
    INFO("compress mode " << mode);
    std::string image = read_file(kernel_path((std::string("vector_") + mode + ".fatbin").c_str()));
    REQUIRE(fatbin::classify(image.data()) == fatbin::ImageKind::kContainer);
    fatbin::Container container = fatbin::parse_container(image.data(), image.size());
    REQUIRE(container.error.empty());
    CHECK(container.total_size == image.size());
    bool has_ptx = false, has_elf = false;
    for (const auto& entry : container.entries) {
      has_ptx |= entry.kind == fatbin::kEntryPtx;
      has_elf |= entry.kind == fatbin::kEntryElf;
      if (entry.kind == fatbin::kEntryPtx) {
        CHECK(entry.sm == 75);
        bool compressed = (entry.flags & (fatbin::kFlagLz4 | fatbin::kFlagZstd)) != 0;
        CHECK(compressed == (std::string(mode) != "none"));
        if (std::string(mode) == "speed") CHECK((entry.flags & fatbin::kFlagLz4) != 0);
        if (std::string(mode) == "default" || std::string(mode) == "size") CHECK((entry.flags & fatbin::kFlagZstd) != 0);
      }
    }
    CHECK(has_ptx);
    CHECK(has_elf);
    fatbin::PtxSelection selection = fatbin::select_ptx(image.data(), 90);
    REQUIRE(selection.error.empty());
    CHECK(selection.sm == 75);
    CHECK(significant_lines(selection.ptx) == expected);
    CHECK(fatbin::image_size(image.data()) == image.size());

    // The same container behind a fatbin wrapper, as .nvFatBinSegment holds it.
    struct {
      uint32_t magic = fatbin::kWrapperMagic;
      uint32_t version = 1;
      const void* data;
      const void* filename = nullptr;
    } wrapper{fatbin::kWrapperMagic, 1, image.data(), nullptr};
    CHECK(fatbin::classify(&wrapper) == fatbin::ImageKind::kWrapper);
    CHECK(significant_lines(fatbin::select_ptx(&wrapper, 90).ptx) == expected);

    // Emulating an architecture older than every PTX entry is refused.
    CHECK_FALSE(fatbin::select_ptx(image.data(), 70).error.empty());
  }
}

TEST_CASE("fatbin: corrupt and truncated containers are errors with offsets", "[fatbin]") {
  std::string image = read_file(kernel_path("vector_default.fatbin"));
  fatbin::Container truncated = fatbin::parse_container(image.data(), image.size() - 100);
  CHECK_FALSE(truncated.error.empty());
  std::string bad = image;
  uint64_t huge = uint64_t{1} << 40;
  std::memcpy(&bad[16 + 8], &huge, 8);  // first entry's payload size
  fatbin::Container corrupt = fatbin::parse_container(bad.data(), bad.size());
  CHECK(corrupt.error.find("offset 16") != std::string::npos);
}

TEST_CASE("fatbin: SASS-only images are refused", "[fatbin][module]") {
  std::string sass = read_file(kernel_path("vector_sass.fatbin"));
  fatbin::PtxSelection selection = fatbin::select_ptx(sass.data(), 90);
  CHECK(selection.sass_only);
  primary_context();
  CUmodule module = nullptr;
  CHECK(cuModuleLoadData(&module, sass.data()) == CUDA_ERROR_NO_BINARY_FOR_GPU);
  // A bare ELF cubin, cut out of the fatbin.
  fatbin::Container container = fatbin::parse_container(sass.data(), sass.size());
  REQUIRE_FALSE(container.entries.empty());
  const auto& elf = container.entries.front();
  REQUIRE(elf.kind == fatbin::kEntryElf);
  std::string cubin = sass.substr(elf.payload_offset, elf.payload_size);
  CHECK(fatbin::classify(cubin.data()) == fatbin::ImageKind::kElf);
  CHECK(cuModuleLoadData(&module, cubin.data()) == CUDA_ERROR_NO_BINARY_FOR_GPU);
  CUlibrary library = nullptr;
  CHECK(cuLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) ==
        CUDA_ERROR_NO_BINARY_FOR_GPU);
}
