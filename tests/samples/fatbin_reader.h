// A fatbin container reader for the samples' image tests, written from the layout in
// cuda-facts.md ("Fatbin container") independently of fatbin/, so that the tests check
// nvcc's output rather than agree with the code under test. Header-only; Catch2 assertions.
#pragma once

#include <lz4.h>
#include <zstd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace cusnap_test {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;

inline std::vector<unsigned char> read_file(const std::string& path) {
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

struct FatbinEntry {
  uint16_t kind;  // 1 PTX, 2 ELF
  uint32_t sm;
  uint64_t flags;
  std::string options;                 // the entry's option string, if any
  std::vector<unsigned char> payload;  // decompressed
};

inline std::vector<unsigned char> decompress_payload(const std::vector<unsigned char>& bytes,
                                                     size_t offset, uint32_t compressed_size,
                                                     uint64_t payload_size,
                                                     uint64_t uncompressed_size, uint64_t flags) {
  if ((flags & (kFlagLz4 | kFlagZstd)) == 0 || compressed_size == 0) {
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

// Every entry of a container that must span exactly its header's entry size.
inline std::vector<FatbinEntry> parse_fatbin(const std::vector<unsigned char>& bytes) {
  REQUIRE(load<uint32_t>(bytes, 0) == kFatbinMagic);
  REQUIRE(load<uint16_t>(bytes, 4) == 1);
  const uint16_t header_size = load<uint16_t>(bytes, 6);
  const uint64_t end = header_size + load<uint64_t>(bytes, 8);
  REQUIRE(end <= bytes.size());
  std::vector<FatbinEntry> entries;
  size_t offset = header_size;
  while (offset < end) {
    FatbinEntry entry;
    entry.kind = load<uint16_t>(bytes, offset);
    const uint32_t entry_header = load<uint32_t>(bytes, offset + 4);
    const uint64_t payload_size = load<uint64_t>(bytes, offset + 8);
    const uint32_t compressed_size = load<uint32_t>(bytes, offset + 16);
    entry.sm = load<uint32_t>(bytes, offset + 28);
    entry.flags = load<uint64_t>(bytes, offset + 40);
    const uint64_t uncompressed_size = load<uint64_t>(bytes, offset + 56);
    REQUIRE(entry_header >= 64);
    REQUIRE(offset + entry_header + payload_size <= end);
    if (entry_header >= 72) {
      // Options string: offset and size (relative to the entry) at +64 and +68.
      const uint32_t options_offset = load<uint32_t>(bytes, offset + 64);
      const uint32_t options_size = load<uint32_t>(bytes, offset + 68);
      if (options_size > 0) {
        REQUIRE(options_offset + options_size <= entry_header);
        const char* text = reinterpret_cast<const char*>(bytes.data() + offset + options_offset);
        entry.options.assign(text, strnlen(text, options_size));
      }
    }
    entry.payload = decompress_payload(bytes, offset + entry_header, compressed_size, payload_size,
                                       uncompressed_size, entry.flags);
    entries.push_back(std::move(entry));
    offset += entry_header + payload_size;
  }
  REQUIRE(offset == end);
  return entries;
}

}  // namespace cusnap_test
