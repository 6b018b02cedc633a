// The image size found from a bare pointer must equal the size of the file nvcc wrote, for every
// kernel image the samples embed (fatbins with every --compress-mode, and PTX text), and a fatbin
// wrapper must resolve to the fatbin it points to.
#include <cstdint>
#include <iterator>
#include <vector>

#include <catch2/catch.hpp>

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
  auto put16 = [&](size_t at, uint16_t v) { elf[at] = v & 0xff; elf[at + 1] = v >> 8; };
  auto put64 = [&](size_t at, uint64_t v) { for (int i = 0; i < 8; ++i) elf[at + i] = (v >> (8 * i)) & 0xff; };
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
