// Checks the kernel images the samples embed, straight from the build tree: every fatbin must
// carry PTX (what the emulator executes) and SASS (what a real GPU runs), its compression must
// be the one its sample asked nvcc for, and the PTX inside must decompress to PTX text with
// kernel entries. Runs without a GPU or a driver.
#include <lz4.h>
#include <zstd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

struct SampleImage {
  const char* sample;
  const char* kind;           // "fatbin" or "ptx"
  const char* compress_mode;  // nvcc --compress-mode, or "ptx"
  const char* path;
};

const SampleImage kImages[] = {
#include "sample_images.inc"
};

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <typename T>
T load(const std::vector<unsigned char>& bytes, size_t offset) {
  T value;
  REQUIRE(offset + sizeof(T) <= bytes.size());
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

struct Entry {
  uint16_t kind;  // 1 PTX, 2 ELF
  uint32_t sm;
  uint64_t flags;
  std::vector<unsigned char> payload;  // decompressed
};

std::vector<unsigned char> decompress(const std::vector<unsigned char>& bytes, size_t offset,
                                      uint32_t compressed_size, uint64_t payload_size,
                                      uint64_t uncompressed_size, uint64_t flags) {
  if ((flags & (kFlagLz4 | kFlagZstd)) == 0) {
    return {bytes.begin() + offset, bytes.begin() + offset + payload_size};
  }
  REQUIRE(compressed_size <= payload_size);
  std::vector<unsigned char> out(uncompressed_size);
  if (flags & kFlagZstd) {
    size_t n = ZSTD_decompress(out.data(), out.size(), bytes.data() + offset, compressed_size);
    REQUIRE_FALSE(ZSTD_isError(n));
    out.resize(n);
  } else {
    int n = LZ4_decompress_safe(reinterpret_cast<const char*>(bytes.data() + offset),
                                reinterpret_cast<char*>(out.data()), int(compressed_size),
                                int(out.size()));
    REQUIRE(n >= 0);
    out.resize(size_t(n));
  }
  return out;
}

std::vector<Entry> parse_fatbin(const std::vector<unsigned char>& bytes) {
  REQUIRE(load<uint32_t>(bytes, 0) == kFatbinMagic);
  REQUIRE(load<uint16_t>(bytes, 4) == 1);
  const uint16_t header_size = load<uint16_t>(bytes, 6);
  const uint64_t entries_size = load<uint64_t>(bytes, 8);
  REQUIRE(header_size + entries_size <= bytes.size());
  std::vector<Entry> entries;
  size_t offset = header_size;
  while (offset < header_size + entries_size) {
    Entry entry;
    entry.kind = load<uint16_t>(bytes, offset);
    const uint32_t entry_header = load<uint32_t>(bytes, offset + 4);
    const uint64_t payload_size = load<uint64_t>(bytes, offset + 8);
    const uint32_t compressed_size = load<uint32_t>(bytes, offset + 16);
    entry.sm = load<uint32_t>(bytes, offset + 28);
    entry.flags = load<uint64_t>(bytes, offset + 40);
    const uint64_t uncompressed_size = load<uint64_t>(bytes, offset + 56);
    REQUIRE(entry_header >= 64);
    REQUIRE(offset + entry_header + payload_size <= header_size + entries_size);
    entry.payload = decompress(bytes, offset + entry_header, compressed_size, payload_size,
                               uncompressed_size, entry.flags);
    entries.push_back(std::move(entry));
    offset += entry_header + payload_size;
  }
  REQUIRE(offset == header_size + entries_size);
  return entries;
}

bool contains(const std::vector<unsigned char>& bytes, const std::string& needle) {
  return std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()) != bytes.end();
}

}  // namespace

TEST_CASE("every sample fatbin carries PTX and SASS with the requested compression") {
  int fatbins = 0;
  for (const SampleImage& image : kImages) {
    if (std::string(image.kind) != "fatbin") continue;
    ++fatbins;
    INFO("sample " << image.sample << ", image " << image.path << ", mode " << image.compress_mode);
    std::vector<unsigned char> bytes = read_file(image.path);
    REQUIRE(!bytes.empty());
    std::vector<Entry> entries = parse_fatbin(bytes);
    int ptx = 0, sass = 0;
    const std::string mode = image.compress_mode;
    for (const Entry& entry : entries) {
      INFO("entry kind " << entry.kind << " sm " << entry.sm << " flags " << entry.flags);
      const uint64_t compression = entry.flags & (kFlagLz4 | kFlagZstd);
      if (entry.kind == 1) {
        ++ptx;
        CHECK(contains(entry.payload, ".version"));
        CHECK(contains(entry.payload, ".entry"));
        if (mode == "none") CHECK(compression == 0);
        if (mode == "speed") CHECK(compression == kFlagLz4);
        if (mode == "size" || mode == "default" || mode == "balance") CHECK(compression == kFlagZstd);
      } else {
        REQUIRE(entry.kind == 2);
        ++sass;
        CHECK(entry.sm >= 75);
        REQUIRE(entry.payload.size() >= 4);
        CHECK(std::memcmp(entry.payload.data(), "\x7f" "ELF", 4) == 0);
        if (mode == "none" || mode == "default" || mode == "balance") CHECK(compression == 0);
      }
    }
    CHECK(ptx >= 1);
    CHECK(sass >= 1);
  }
  CHECK(fatbins >= 12);
}

TEST_CASE("PTX-text images are plain PTX with entries") {
  int ptx_images = 0;
  for (const SampleImage& image : kImages) {
    if (std::string(image.kind) != "ptx") continue;
    ++ptx_images;
    INFO("sample " << image.sample << ", image " << image.path);
    std::vector<unsigned char> bytes = read_file(image.path);
    CHECK(contains(bytes, ".version"));
    CHECK(contains(bytes, ".visible .entry"));
    // The embedding adds the terminating NUL; a NUL inside would cut the text short.
    CHECK(std::find(bytes.begin(), bytes.end(), 0) == bytes.end());
  }
  CHECK(ptx_images >= 1);
}
