// The image size found from a bare pointer must equal the size of the file nvcc wrote, for every
// kernel image the samples embed (fatbins with every --compress-mode, and PTX text), and a fatbin
// wrapper must resolve to the fatbin it points to (version 2: flattened into one fatbin by
// cusnap::fatbin::flatten_rdc; tests/fatbin checks that on nvcc's own rdc output).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <vector>

#include "image_size.h"
#include "sample_images.h"

using namespace cusnap::icpt;
using namespace cusnap::icpt::test;

TEST_CASE("image sizes of the samples' embedded kernels") {
  REQUIRE(std::size(kImages) > 0);
  for (const SampleImage& image : kImages) {
    INFO(image.sample << " " << image.kind << " " << image.mode << " " << image.path);
    std::vector<uint8_t> bytes = read_all(image.path);
    REQUIRE(!bytes.empty());
    // Trailing garbage after the image must not change the answer; PTX needs its terminating NUL.
    std::vector<uint8_t> padded = bytes;
    padded.push_back(0);
    padded.insert(padded.end(), 64, 0xAB);
    ImageView view = inspect_image(padded.data());
    if (std::string(image.kind) == "ptx") {
      CHECK(view.kind == ImageKind::kPtx);
    } else {
      CHECK(view.kind == ImageKind::kFatbin);
    }
    CHECK(view.data == padded.data());
    CHECK(view.size == bytes.size());

    if (std::string(image.kind) == "fatbin") {
      struct Wrapper {
        uint32_t magic, version;
        const void* data;
        const void* filename;
      } wrapper{0x466243B1, 1, padded.data(), nullptr};
      ImageView wrapped = inspect_image(&wrapper);
      CHECK(wrapped.kind == ImageKind::kFatbinWrapper);
      CHECK(wrapped.data == padded.data());
      CHECK(wrapped.size == bytes.size());
    }
  }
}

TEST_CASE("an ELF image's size is the end of its furthest table or section") {
  // A minimal ELF64 header with a section header table of 3 entries at offset 256.
  std::vector<uint8_t> elf(256 + 3 * 64 + 32, 0);
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  std::copy(std::begin(ident), std::end(ident), elf.begin());
  auto put16 = [&](size_t at, uint16_t v) {
    elf[at] = v & 0xff;
    elf[at + 1] = v >> 8;
  };
  auto put64 = [&](size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) elf[at + i] = (v >> (8 * i)) & 0xff;
  };
  put64(0x28, 256);  // e_shoff
  put16(0x3A, 64);   // e_shentsize
  put16(0x3C, 3);    // e_shnum
  ImageView view = inspect_image(elf.data());
  CHECK(view.kind == ImageKind::kCubin);
  CHECK(view.size == 256 + 3 * 64);
}

TEST_CASE("unrecognised bytes are reported as unknown") {
  const uint8_t binary[16] = {0x01, 0x02, 0x03, 0x04, 0x05, 0xff, 0x00};
  CHECK(inspect_image(binary).kind == ImageKind::kUnknown);
  CHECK(inspect_image(nullptr).size == 0);
}

namespace {

// A fatbin container built by hand: 16-byte header, then entries of (kind, 64-byte header,
// payload). Only the fields inspect_image reads are filled in.
struct TestEntry {
  uint16_t kind;  // 1 PTX, 2 ELF
  std::vector<uint8_t> payload;
};

std::vector<uint8_t> make_fatbin(const std::vector<TestEntry>& entries) {
  std::vector<uint8_t> out(16, 0);
  auto put = [](std::vector<uint8_t>& v, size_t at, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) v[at + i] = static_cast<uint8_t>(value >> (8 * i));
  };
  put(out, 0, 0xBA55ED50, 4);
  put(out, 4, 1, 2);
  put(out, 6, 16, 2);
  for (const TestEntry& entry : entries) {
    size_t at = out.size();
    out.resize(at + 64, 0);
    put(out, at, entry.kind, 2);
    put(out, at + 4, 64, 4);
    put(out, at + 8, entry.payload.size(), 8);
    out.insert(out.end(), entry.payload.begin(), entry.payload.end());
  }
  put(out, 8, out.size() - 16, 8);
  return out;
}

std::vector<uint8_t> bytes_of(const char* text, size_t padded_to) {
  std::vector<uint8_t> v(text, text + std::strlen(text));
  v.resize(padded_to, 0);
  return v;
}

}  // namespace

TEST_CASE("a version-2 (rdc) wrapper becomes one self-contained fatbin") {
  std::vector<uint8_t> linked_cubin = bytes_of(
      "\x7f"
      "ELF linked sm_90",
      24);
  std::vector<uint8_t> relocatable = bytes_of(
      "\x7f"
      "ELF relocatable sm_90",
      32);
  std::vector<uint8_t> ptx = bytes_of(".version 9.0 .target sm_75", 32);
  std::vector<uint8_t> linked = make_fatbin({{2, linked_cubin}});
  std::vector<uint8_t> unit = make_fatbin({{1, ptx}, {2, relocatable}});
  struct Wrapper {
    uint32_t magic, version;
    const void* data;
    const void* fatbins;
  };

  SECTION("one translation unit: the linked cubins, then that unit's PTX") {
    const void* list[] = {unit.data(), nullptr};
    Wrapper wrapper{0x466243B1, 2, linked.data(), list};
    ImageView view = inspect_image(&wrapper);
    REQUIRE(view.kind == ImageKind::kFatbinWrapper);
    REQUIRE(view.owned != nullptr);
    CHECK(view.data == view.owned->data());
    // Expected: the linked fatbin's header (sizes patched) + its entry + the PTX entry verbatim.
    std::vector<uint8_t> expected = make_fatbin({{2, linked_cubin}, {1, ptx}});
    REQUIRE(view.size == expected.size());
    CHECK(std::vector<uint8_t>(view.data, view.data + view.size) == expected);
    // The result is an ordinary fatbin that sizes to itself.
    ImageView again = inspect_image(view.data);
    CHECK(again.kind == ImageKind::kFatbin);
    CHECK(again.size == view.size);
  }
  SECTION("PTX in several units: the linked cubins, then every unit's PTX in list order") {
    // (The device runtime's fatbin is such a second unit in every rdc program: a consumer picks
    // the PTX usable on its target, and refuses when several units have some.)
    std::vector<uint8_t> ptx2 = bytes_of(".version 9.0 .target sm_121", 32);
    std::vector<uint8_t> unit2 = make_fatbin({{2, relocatable}, {1, ptx2}});
    const void* list[] = {unit.data(), unit2.data(), nullptr};
    Wrapper wrapper{0x466243B1, 2, linked.data(), list};
    ImageView view = inspect_image(&wrapper);
    REQUIRE(view.kind == ImageKind::kFatbinWrapper);
    std::vector<uint8_t> expected = make_fatbin({{2, linked_cubin}, {1, ptx}, {1, ptx2}});
    CHECK(std::vector<uint8_t>(view.data, view.data + view.size) == expected);
  }
  SECTION("broken version-2 wrappers are unknown") {
    Wrapper no_list{0x466243B1, 2, linked.data(), nullptr};
    CHECK(inspect_image(&no_list).kind == ImageKind::kUnknown);
    const uint8_t junk[16] = {1, 2, 3, 4};
    const void* list[] = {junk, nullptr};
    Wrapper bad_entry{0x466243B1, 2, linked.data(), list};
    CHECK(inspect_image(&bad_entry).kind == ImageKind::kUnknown);
    Wrapper version3{0x466243B1, 3, linked.data(), nullptr};
    CHECK(inspect_image(&version3).kind == ImageKind::kUnknown);
  }
}
