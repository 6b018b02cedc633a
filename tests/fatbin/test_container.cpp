// The fatbin library on well-formed nvcc output: classification, sizes, entry walking and
// payloads, checked against nvcc's own PTX and cubin and against the independent reader in
// tests/samples/fatbin_reader.h.
#include <elf.h>

#include <string>
#include <vector>

#include "cusnap/fatbin/fatbin.h"
#include "fatbin_reader.h"
#include "test_images.h"

namespace fb = cusnap::fatbin;
using namespace cusnap_fatbin_test;

namespace {

struct SampleImage {
  const char* kind;  // "fatbin" or "ptx"
  const char* path;
};
const SampleImage kSampleImages[] = {
#include "sample_images.inc"
    {nullptr, nullptr},
};

// Checks a whole container against the reference reader: the entries tile it exactly, agree on
// kind, sm and flags, and every payload decodes to the reference's bytes.
void check_against_reference(const std::vector<uint8_t>& bytes, size_t size) {
  fb::Container container = fb::parse_container(bytes.data(), size);
  INFO(container.error);
  REQUIRE(container.error.empty());
  CHECK(container.total_size == size);
  CHECK(container.header_size == fetch<uint16_t>(bytes, 6));
  CHECK(fb::container_size(bytes.data()) == size);

  std::vector<cusnap_test::FatbinEntry> reference = cusnap_test::parse_fatbin(
      std::vector<unsigned char>(bytes.begin(), bytes.begin() + static_cast<long>(size)));
  REQUIRE(container.entries.size() == reference.size());
  size_t expected_offset = container.header_size;
  for (size_t i = 0; i < reference.size(); ++i) {
    const fb::Entry& entry = container.entries[i];
    INFO("entry " << i << " at offset " << entry.header_offset);
    CHECK(entry.header_offset == expected_offset);
    CHECK(entry.header_size == fetch<uint32_t>(bytes, entry.header_offset + 4));
    CHECK(entry.payload_offset == entry.header_offset + entry.header_size);
    expected_offset = entry.end_offset();
    CHECK(entry.kind == reference[i].kind);
    CHECK(entry.sm == reference[i].sm);
    CHECK(entry.flags == reference[i].flags);
    std::string payload, error;
    REQUIRE(fb::entry_payload(bytes.data(), entry, &payload, &error));
    std::string expected(reference[i].payload.begin(), reference[i].payload.end());
    if (entry.kind == fb::kEntryPtx) expected.resize(std::strlen(expected.c_str()));
    CHECK(payload == expected);
  }
  CHECK(expected_offset == size);
}

}  // namespace

TEST_CASE("fatbin: every --compress-mode, entry by entry, against nvcc's PTX and cubin",
          "[fatbin]") {
  std::string ptx_reference = significant_lines(
      std::string(reinterpret_cast<const char*>(read_bytes(image_path("k.ptx"), 1).data())));
  REQUIRE(ptx_reference.find(".entry _Z4axpyfPKfPfi") != std::string::npos);
  std::vector<uint8_t> cubin = read_bytes(image_path("k_sm90.cubin"));

  for (std::string mode : {"default", "size", "speed", "none"}) {
    INFO("--compress-mode=" << mode);
    std::vector<uint8_t> bytes = read_bytes(image_path("k_" + mode + ".fatbin"), 64);
    size_t size = bytes.size() - 64;
    CHECK(fb::classify(bytes.data()) == fb::ImageKind::kContainer);
    CHECK(fb::image_size(bytes.data()) == size);
    check_against_reference(bytes, size);

    // Trusting the header (a bare pointer) reads the same.
    fb::Container container = fb::parse_container(bytes.data());
    REQUIRE(container.error.empty());
    REQUIRE(container.entries.size() == 2);
    for (const fb::Entry& entry : container.entries) {
      std::string payload, error;
      REQUIRE(fb::entry_payload(bytes.data(), entry, &payload, &error));
      bool zstd = (entry.flags & fb::kFlagZstd) != 0, lz4 = (entry.flags & fb::kFlagLz4) != 0;
      if (entry.kind == fb::kEntryPtx) {
        CHECK(entry.sm == 75);
        CHECK(entry.ptx_major == 9);
        CHECK(significant_lines(payload) == ptx_reference);
        CHECK(zstd == (mode == "default" || mode == "size"));
        CHECK(lz4 == (mode == "speed"));
      } else {
        REQUIRE(entry.kind == fb::kEntryElf);
        CHECK(entry.sm == 90);
        // The cubin inside the fatbin is byte for byte what `nvcc -cubin` writes.
        CHECK(payload == std::string(cubin.begin(), cubin.end()));
        CHECK(zstd == (mode == "size"));
        CHECK_FALSE(lz4);
      }
    }
  }
}

TEST_CASE("fatbin: the samples' embedded images", "[fatbin]") {
  size_t seen = 0;
  for (const SampleImage* image = kSampleImages; image->path != nullptr; ++image, ++seen) {
    INFO(image->path);
    std::vector<uint8_t> bytes = read_bytes(image->path, 64);
    size_t size = bytes.size() - 64;
    if (std::string(image->kind) == "ptx") {
      CHECK(fb::classify(bytes.data()) == fb::ImageKind::kPtxText);
      CHECK(fb::image_size(bytes.data()) == size + 1);
    } else {
      CHECK(fb::classify(bytes.data()) == fb::ImageKind::kContainer);
      CHECK(fb::image_size(bytes.data()) == size);
      check_against_reference(bytes, size);
    }
  }
  SUCCEED(seen << " sample images (none when the samples are not part of the build)");
}

TEST_CASE("fatbin: a bare cubin, PTX text and wrappers are classified and sized", "[fatbin]") {
  std::vector<uint8_t> cubin = read_bytes(image_path("k_sm90.cubin"), 64);
  size_t cubin_size = cubin.size() - 64;
  CHECK(fb::classify(cubin.data()) == fb::ImageKind::kElf);
  CHECK(fb::elf_size(cubin.data()) == cubin_size);
  CHECK(fb::elf_size(cubin.data(), cubin_size) == cubin_size);
  CHECK(fb::elf_size(cubin.data(), cubin_size - 1) == 0);
  CHECK(fb::image_size(cubin.data()) == cubin_size);
  std::vector<uint8_t> elf32 = cubin;
  elf32[EI_CLASS] = ELFCLASS32;
  CHECK(fb::elf_size(elf32.data()) == 0);

  std::vector<uint8_t> ptx = read_bytes(image_path("k.ptx"), 1);
  CHECK(fb::classify(ptx.data()) == fb::ImageKind::kPtxText);
  CHECK(fb::image_size(ptx.data()) == ptx.size());

  std::vector<uint8_t> fatbin = read_bytes(image_path("k_default.fatbin"), 64);
  TestWrapper v1{fb::kWrapperMagic, 1, fatbin.data(), nullptr};
  CHECK(fb::classify(&v1) == fb::ImageKind::kWrapper);
  CHECK(fb::image_size(&v1) == fatbin.size() - 64);
  std::vector<uint8_t> linked = read_bytes(image_path("k_rdc_sass_dlink.fatbin"), 64);
  const void* list[] = {fatbin.data(), nullptr};
  TestWrapper v2{fb::kWrapperMagic, 2, linked.data(), list};
  CHECK(fb::image_size(&v2) == linked.size() - 64);  // the linked fatbin only

  const uint8_t binary[16] = {0x01, 0x02, 0x03, 0x04, 0x05, 0xff};
  CHECK(fb::classify(binary) == fb::ImageKind::kUnknown);
  CHECK(fb::unknown_image_error(binary) ==
        "unrecognised image: magic 0x04030201 at offset 0 is none of fatbin wrapper (" +
            fb::hex32(fb::kWrapperMagic) + "), fatbin container (" +
            fb::hex32(fb::kContainerMagic) + "), ELF, or PTX text");
  CHECK(fb::image_size(binary) == 0);
  CHECK(fb::container_size(binary) == 0);
  CHECK(fb::elf_size(binary) == 0);
}
