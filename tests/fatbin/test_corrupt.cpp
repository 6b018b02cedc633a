// The fatbin library on truncated and corrupted nvcc output: every failure is an error value that
// names the byte offset of what is wrong, and nothing is read outside the bytes given.
#include <elf.h>

#include <cstddef>
#include <string>
#include <vector>

#include "cusnap/fatbin/fatbin.h"
#include "test_images.h"

namespace fb = cusnap::fatbin;
using namespace cusnap_fatbin_test;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A well-formed container and its parse, as the starting point of each corruption.
struct Parsed {
  std::vector<uint8_t> bytes;
  size_t size = 0;
  fb::Container container;
};

Parsed load(const std::string& name) {
  Parsed p;
  p.bytes = read_bytes(image_path(name));
  p.size = p.bytes.size();
  p.container = fb::parse_container(p.bytes.data(), p.size);
  REQUIRE(p.container.error.empty());
  REQUIRE(p.container.total_size == p.size);
  REQUIRE(p.container.entries.size() >= 2);
  return p;
}

}  // namespace

TEST_CASE("fatbin: a truncated buffer is an error at every length", "[fatbin]") {
  Parsed p = load("k_default.fatbin");
  for (size_t limit = 1; limit < p.size; ++limit) {
    // A copy of exactly `limit` bytes: reading past it would be caught by ASan builds.
    std::vector<uint8_t> cut(p.bytes.begin(), p.bytes.begin() + static_cast<std::ptrdiff_t>(limit));
    fb::Container container = fb::parse_container(cut.data(), limit);
    INFO("limit " << limit << ": " << container.error);
    REQUIRE_FALSE(container.error.empty());
    CHECK(container.entries.empty());
    if (limit < fb::kContainerHeaderSize) {
      CHECK(contains(container.error, "shorter than its 16-byte header"));
    } else {
      CHECK(contains(container.error, "(offset 8) says " + std::to_string(p.size) +
                                          " bytes but only " + std::to_string(limit) +
                                          " are available"));
    }
  }
}

TEST_CASE("fatbin: a header that ends the container inside an entry names that entry", "[fatbin]") {
  Parsed p = load("k_size.fatbin");
  for (size_t i = 0; i < p.container.entries.size(); ++i) {
    const fb::Entry& entry = p.container.entries[i];
    std::string at = "fatbin entry at offset " + std::to_string(entry.header_offset);
    // Ends inside the entry's header (fewer than 64 bytes of it), then inside its payload.
    for (size_t end : {entry.header_offset + 32, entry.payload_offset + 8}) {
      std::vector<uint8_t> bytes = p.bytes;
      store<uint64_t>(bytes, 8, end - p.container.header_size);
      fb::Container container = fb::parse_container(bytes.data(), bytes.size());
      INFO("entry " << i << ", container cut at " << end << ": " << container.error);
      CHECK(contains(container.error, at + ":"));
      CHECK(container.entries.size() == i);  // the entries before it are still listed
      CHECK(container.total_size == end);
    }
  }
}

TEST_CASE("fatbin: corrupt entry header fields are errors with their offsets", "[fatbin]") {
  Parsed p = load("k_speed.fatbin");
  for (size_t i = 0; i < p.container.entries.size(); ++i) {
    size_t offset = p.container.entries[i].header_offset;
    std::string at = "fatbin entry at offset " + std::to_string(offset) + ":";
    SECTION("header size below 64, entry " + std::to_string(i)) {
      std::vector<uint8_t> bytes = p.bytes;
      store<uint32_t>(bytes, offset + 4, 8);
      fb::Container container = fb::parse_container(bytes.data(), bytes.size());
      CHECK(contains(container.error, at));
      CHECK(contains(container.error, "header size 8 (offset " + std::to_string(offset + 4) + ")"));
      CHECK(container.entries.size() == i);
    }
    SECTION("payload size past the end, entry " + std::to_string(i)) {
      std::vector<uint8_t> bytes = p.bytes;
      store<uint64_t>(bytes, offset + 8, uint64_t{1} << 40);
      fb::Container container = fb::parse_container(bytes.data(), bytes.size());
      CHECK(contains(container.error, at));
      CHECK(contains(container.error, "(offset " + std::to_string(offset + 8) + ")"));
      CHECK(contains(container.error, "container end at " + std::to_string(p.size)));
    }
  }
  SECTION("bad magic and implausible container headers") {
    std::vector<uint8_t> bytes = p.bytes;
    bytes[0] ^= 0x10;
    fb::Container container = fb::parse_container(bytes.data(), bytes.size());
    CHECK(contains(container.error, "bad magic 0xBA55ED40 at offset 0"));
    CHECK(fb::container_size(bytes.data()) == 0);
    bytes = p.bytes;
    store<uint16_t>(bytes, 6, 8);
    CHECK(contains(fb::parse_container(bytes.data(), bytes.size()).error,
                   "header size 8 at offset 6"));
    CHECK(fb::container_size(bytes.data()) == 0);
    bytes = p.bytes;
    store<uint64_t>(bytes, 8, ~uint64_t{0});
    CHECK(contains(fb::parse_container(bytes.data(), bytes.size()).error,
                   "implausible header at offset 0"));
    CHECK(fb::container_size(bytes.data()) == 0);
  }
}

TEST_CASE("fatbin: corrupt compressed payloads are errors naming the entry", "[fatbin]") {
  for (std::string mode : {"size", "speed"}) {
    INFO("--compress-mode=" << mode);
    Parsed p = load("k_" + mode + ".fatbin");
    const fb::Entry* ptx = nullptr;
    for (const fb::Entry& entry : p.container.entries) {
      if (entry.kind == fb::kEntryPtx) ptx = &entry;
    }
    REQUIRE(ptx != nullptr);
    REQUIRE(ptx->compressed_size != 0);
    std::string at = "fatbin entry at offset " + std::to_string(ptx->header_offset) +
                     " (payload at offset " + std::to_string(ptx->payload_offset) + ")";
    std::string out, error;

    // The compressed stream damaged: zstd's frame magic overwritten, LZ4's block cut in half.
    std::vector<uint8_t> bytes = p.bytes;
    fb::Entry damaged = *ptx;
    if (mode == "size") {
      store<uint32_t>(bytes, ptx->payload_offset, 0xDEADBEEF);
    } else {
      damaged.compressed_size /= 2;
    }
    out = "stale";
    CHECK_FALSE(fb::entry_payload(bytes.data(), damaged, &out, &error));
    CHECK(contains(error, at));
    CHECK(contains(error, mode == "size" ? "zstd" : "LZ4"));
    CHECK(out.empty());

    // Sizes that cannot be true.
    fb::Entry no_size = *ptx;
    no_size.uncompressed_size = 0;
    CHECK_FALSE(fb::entry_payload(p.bytes.data(), no_size, &out, &error));
    CHECK(contains(error, at + ": implausible compressed size"));
    CHECK(contains(error, "(offset " + std::to_string(ptx->header_offset + 56) + ")"));
    fb::Entry too_long = *ptx;
    too_long.compressed_size = static_cast<uint32_t>(ptx->payload_size + 1);
    CHECK_FALSE(fb::entry_payload(p.bytes.data(), too_long, &out, &error));
    CHECK(contains(error, "(offset " + std::to_string(ptx->header_offset + 16) + ")"));
  }
}

TEST_CASE("fatbin: an uncompressed size its compressed bytes cannot hold is refused", "[fatbin]") {
  // A forged uncompressed size used to be allocated as such (up to 4 GiB for zstd, 2 GiB for LZ4)
  // before decompression could fail: a few bytes of input were enough to exhaust memory.
  for (std::string mode : {"size", "speed"}) {
    INFO("--compress-mode=" << mode);
    Parsed p = load("k_" + mode + ".fatbin");
    for (const fb::Entry& entry : p.container.entries) {
      if (entry.compressed_size == 0) continue;
      std::string out, error;
      REQUIRE(fb::entry_payload(p.bytes.data(), entry, &out, &error));  // the real size fits
      fb::Entry forged = entry;
      forged.uncompressed_size = uint64_t{1} << 30;
      CHECK_FALSE(fb::entry_payload(p.bytes.data(), forged, &out, &error));
      INFO(error);
      CHECK(contains(error, "uncompressed size 1073741824 (offset " +
                                std::to_string(entry.header_offset + 56) + ") is more than its " +
                                std::to_string(entry.compressed_size) +
                                " compressed bytes can hold"));
      CHECK(out.empty());
    }
  }
}

TEST_CASE("fatbin: ELF headers that point outside the image give no size", "[fatbin]") {
  std::vector<uint8_t> cubin = read_bytes(image_path("k_sm90.cubin"));
  size_t size = cubin.size();
  auto header = fetch<Elf64_Ehdr>(cubin, 0);
  REQUIRE(fb::elf_size(cubin.data(), size) == size);
  // A section table that ends past the buffer: refused without reading it.
  std::vector<uint8_t> bytes = cubin;
  store<uint64_t>(bytes, offsetof(Elf64_Ehdr, e_shoff), size - 8);
  CHECK(fb::elf_size(bytes.data(), size) == 0);
  // An offset no image can have.
  bytes = cubin;
  store<uint64_t>(bytes, offsetof(Elf64_Ehdr, e_phoff), uint64_t{1} << 62);
  CHECK(fb::elf_size(bytes.data(), size) == 0);
  // A section whose contents lie past the end.
  bytes = cubin;
  size_t last = header.e_shoff + (header.e_shnum - 1) * sizeof(Elf64_Shdr);
  auto section = fetch<Elf64_Shdr>(bytes, last);
  section.sh_type = SHT_PROGBITS;
  section.sh_offset = size;
  section.sh_size = 16;
  store(bytes, last, section);
  CHECK(fb::elf_size(bytes.data(), size) == 0);
  CHECK(fb::elf_size(bytes.data()) == size + 16);  // trusted, as for a bare pointer
  CHECK(fb::elf_size(cubin.data(), sizeof(Elf64_Ehdr) - 1) == 0);
}
