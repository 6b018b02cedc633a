// The fatbin reader against real nvcc output (every --compress-mode) and module loading of
// images without PTX.
#include <cstdint>
#include <cstring>
#include <vector>

#include "cusnap/fatbin/fatbin.h"
#include "driver/ptx_selection.h"
#include "test_helpers.h"

using namespace cusnap_test;
// The container reader is the shared library (fatbin/); the PTX choice is the emulator's.
namespace fatbin {
using namespace cusnap::fatbin;
using cusnap::emu::driver::PtxSelection;
using cusnap::emu::driver::select_ptx;
}  // namespace fatbin

namespace {

// The PTX text without comments, blank lines and whitespace differences: nvcc -ptx output and
// the fatbin's PTX entry agree on that.
std::string significant_lines(const std::string& text) {
  std::string out, line;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      size_t comment = line.find("//");
      if (comment != std::string::npos) line.resize(comment);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
        line.pop_back();
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
        if (std::string(mode) == "default" || std::string(mode) == "size")
          CHECK((entry.flags & fatbin::kFlagZstd) != 0);
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

namespace {

// The shape of `.nvFatBinSegment` entries (see fatbin.h): u32 magic, u32 version, u64 data,
// u64 filename (v1) or NULL-terminated prelinked fatbin list (v2).
struct TestWrapper {
  uint32_t magic;
  uint32_t version;
  const void* data;
  const void* filename_or_fatbins;
};

}  // namespace

TEST_CASE("fatbin: a version-2 (rdc) wrapper takes the PTX of its prelinked fatbin",
          "[fatbin][module]") {
  // As `nvcc -dlink` lays it out: data -> the device-linked fatbin (cubins only), and a
  // NULL-terminated list holding the translation unit's own fatbin (PTX + cubin).
  std::string linked = read_file(kernel_path("vector_sass.fatbin"));
  std::string unit = read_file(kernel_path("vector_default.fatbin"));
  const void* prelinked[] = {unit.data(), nullptr};
  TestWrapper wrapper{fatbin::kWrapperMagic, 2, linked.data(), prelinked};
  REQUIRE(fatbin::classify(&wrapper) == fatbin::ImageKind::kWrapper);

  fatbin::Wrapper read = fatbin::read_wrapper(&wrapper);
  REQUIRE(read.error.empty());
  CHECK(read.version == 2);
  CHECK(read.data == linked.data());
  REQUIRE(read.prelinked.size() == 1);
  CHECK(read.prelinked[0] == unit.data());

  fatbin::PtxSelection direct = fatbin::select_ptx(unit.data(), 90);
  REQUIRE(direct.error.empty());
  fatbin::PtxSelection selection = fatbin::select_ptx(&wrapper, 90);
  INFO(selection.error);
  REQUIRE(selection.error.empty());
  CHECK_FALSE(selection.sass_only);
  CHECK(selection.sm == 75);
  CHECK(selection.ptx == direct.ptx);
  CHECK(selection.ptx.find(".entry vector_add") != std::string::npos);
  // Only the linked fatbin is one byte range; the prelinked ones live elsewhere.
  CHECK(fatbin::image_size(&wrapper) == linked.size());

  primary_context();
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, &wrapper));
  REQUIRE_CU(cuModuleUnload(module));

  // The CUDA runtime's way in: cuLibraryLoadData on the wrapper, the binary "preserved".
  CUlibraryOption option = CU_LIBRARY_BINARY_IS_PRESERVED;
  void* option_value = reinterpret_cast<void*>(uintptr_t{1});
  CUlibrary library = nullptr;
  REQUIRE_CU(cuLibraryLoadData(&library, &wrapper, nullptr, nullptr, 0, &option, &option_value, 1));
  CUkernel kernel = nullptr;
  REQUIRE_CU(cuLibraryGetKernel(&kernel, library, "vector_add"));
#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE
  int n = 200;
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i) * 0.25f;
    b[i] = 1000.0f - static_cast<float>(i);
  }
  CUdeviceptr da = 0, db = 0, dc = 0;
  REQUIRE_CU(cuMemAlloc(&da, n * sizeof(float)));
  REQUIRE_CU(cuMemAlloc(&db, n * sizeof(float)));
  REQUIRE_CU(cuMemAlloc(&dc, n * sizeof(float)));
  REQUIRE_CU(cuMemcpyHtoD(da, a.data(), n * sizeof(float)));
  REQUIRE_CU(cuMemcpyHtoD(db, b.data(), n * sizeof(float)));
  void* params[] = {&da, &db, &dc, &n};
  REQUIRE_CU(cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 2, 1, 1, 128, 1, 1, 0, nullptr,
                            params, nullptr));
  REQUIRE_CU(cuMemcpyDtoH(c.data(), dc, n * sizeof(float)));
  for (int i = 0; i < n; ++i) REQUIRE(c[i] == a[i] + b[i]);
  REQUIRE_CU(cuMemFree(da));
  REQUIRE_CU(cuMemFree(db));
  REQUIRE_CU(cuMemFree(dc));
#endif
  REQUIRE_CU(cuLibraryUnload(library));
}

TEST_CASE("fatbin: version-2 wrappers the emulator cannot run are refused with reasons",
          "[fatbin][module]") {
  std::string linked = read_file(kernel_path("vector_sass.fatbin"));
  std::string unit = read_file(kernel_path("vector_default.fatbin"));
  std::string other = read_file(kernel_path("vector_speed.fatbin"));
  primary_context();
  CUmodule module = nullptr;

  SECTION("PTX in several prelinked fatbins needs device linking") {
    const void* prelinked[] = {unit.data(), other.data(), nullptr};
    TestWrapper wrapper{fatbin::kWrapperMagic, 2, linked.data(), prelinked};
    fatbin::PtxSelection selection = fatbin::select_ptx(&wrapper, 90);
    CHECK(selection.ptx.empty());
    CHECK(selection.error.find("device linking") != std::string::npos);
    CHECK(selection.error.find("2 prelinked") != std::string::npos);
    CHECK(cuModuleLoadData(&module, &wrapper) == CUDA_ERROR_INVALID_IMAGE);
  }
  SECTION("no PTX anywhere is SASS only") {
    const void* prelinked[] = {linked.data(), nullptr};
    TestWrapper wrapper{fatbin::kWrapperMagic, 2, linked.data(), prelinked};
    fatbin::PtxSelection selection = fatbin::select_ptx(&wrapper, 90);
    CHECK(selection.sass_only);
    CHECK(cuModuleLoadData(&module, &wrapper) == CUDA_ERROR_NO_BINARY_FOR_GPU);
  }
  SECTION("a version-2 wrapper without its list") {
    TestWrapper wrapper{fatbin::kWrapperMagic, 2, linked.data(), nullptr};
    CHECK(fatbin::read_wrapper(&wrapper).error.find("no prelinked fatbin list") !=
          std::string::npos);
    CHECK(cuModuleLoadData(&module, &wrapper) == CUDA_ERROR_INVALID_IMAGE);
  }
  SECTION("a prelinked entry that is not a fatbin") {
    const char* junk = "\x01\x02\x03\x04 not a fatbin";
    const void* prelinked[] = {junk, nullptr};
    TestWrapper wrapper{fatbin::kWrapperMagic, 2, linked.data(), prelinked};
    fatbin::PtxSelection selection = fatbin::select_ptx(&wrapper, 90);
    CHECK(selection.error.find("prelinked fatbin 0 is not a fatbin container (magic 0x04030201)") !=
          std::string::npos);
  }
}

TEST_CASE("fatbin: unknown wrapper versions and bad magic are refused clearly",
          "[fatbin][module]") {
  std::string unit = read_file(kernel_path("vector_default.fatbin"));
  primary_context();
  CUmodule module = nullptr;
  CUlibrary library = nullptr;

  TestWrapper version3{fatbin::kWrapperMagic, 3, unit.data(), nullptr};
  fatbin::PtxSelection selection = fatbin::select_ptx(&version3, 90);
  CHECK(selection.ptx.empty());
  CHECK(selection.error.find("unknown version 3") != std::string::npos);
  CHECK(fatbin::image_size(&version3) == 0);
  CHECK(cuModuleLoadData(&module, &version3) == CUDA_ERROR_INVALID_IMAGE);
  CHECK(cuLibraryLoadData(&library, &version3, nullptr, nullptr, 0, nullptr, nullptr, 0) ==
        CUDA_ERROR_INVALID_IMAGE);

  // One bit off the wrapper magic: binary bytes that are no known image and no PTX text.
  TestWrapper bad_magic{fatbin::kWrapperMagic ^ 1u, 1, unit.data(), nullptr};
  CHECK(fatbin::classify(&bad_magic) == fatbin::ImageKind::kUnknown);
  CHECK(fatbin::read_wrapper(&bad_magic).error.find("bad magic 0x466243B0") != std::string::npos);
  selection = fatbin::select_ptx(&bad_magic, 90);
  CHECK(selection.error.find("unrecognised image: magic 0x466243B0") != std::string::npos);
  CHECK(cuLibraryLoadData(&library, &bad_magic, nullptr, nullptr, 0, nullptr, nullptr, 0) ==
        CUDA_ERROR_INVALID_IMAGE);

  // A good wrapper whose data is not a container.
  std::string corrupt = unit;
  corrupt[0] ^= 0x10;
  TestWrapper bad_data{fatbin::kWrapperMagic, 1, corrupt.data(), nullptr};
  selection = fatbin::select_ptx(&bad_data, 90);
  CHECK(selection.error.find("does not point at a fatbin container") != std::string::npos);
  CHECK(cuModuleLoadData(&module, &bad_data) == CUDA_ERROR_INVALID_IMAGE);
}
