// The reproducer's XXH3-128 (extract/templates/xxh3_128.h, the one source of the xxh3_128.h that
// --emit-cpp writes) compiled as it is and compared bit for bit with libxxhash, the library that
// names every chunk of a capture (format::hash_blob: XXH3_128bits, seed 0). Lengths cover every
// size class of the specification and their boundaries (0, 1-3, 4-8, 9-16, 17-128, 129-240, and
// over 240: one stripe, a partial and a full block, many blocks), at every alignment of the
// input, with random data and with the all-zero and all-one bytes that stress the carries of the
// 64x64 -> 128-bit products. Seeded hashes are checked too (libxxhash's
// XXH3_128bits_withSeed), although chunk hashes use seed 0: they reach the secret derivation
// that long seeded inputs take.
#include <xxhash.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "xxh3_128.h"

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng() >> 56);
  return out;
}

// Counts lengths where ours and libxxhash's differ, naming the first few.
size_t mismatches(const uint8_t* data, size_t len, uint64_t seed) {
  const xxh3::Hash128 ours = xxh3::xxh3_128(data, len, seed);
  const XXH128_hash_t theirs =
      seed == 0 ? XXH3_128bits(data, len) : XXH3_128bits_withSeed(data, len, seed);
  if (ours.low == theirs.low64 && ours.high == theirs.high64) return 0;
  UNSCOPED_INFO("length " << len << ", seed " << seed << ": ours " << std::hex << ours.high << ' '
                          << ours.low << ", libxxhash " << theirs.high64 << ' ' << theirs.low64);
  return 1;
}

}  // namespace

TEST_CASE("xxh3_128.h equals libxxhash's XXH3_128bits for every length 0..5000") {
  const std::vector<uint8_t> data = random_bytes(5000 + 8, 1);
  size_t bad = 0;
  for (size_t offset : {0, 1, 3, 7}) {  // every alignment class of the input pointer
    for (size_t len = 0; len <= 5000; ++len) bad += mismatches(data.data() + offset, len, 0);
  }
  CHECK(bad == 0);
}

TEST_CASE("xxh3_128.h equals libxxhash at each size class boundary, over many random inputs") {
  // 0 | 1-3 | 4-8 | 9-16 | 17-128 | 129-240 | 241+: stripes of 64 bytes, blocks of 1024.
  const size_t lengths[] = {0,    1,    2,    3,    4,    5,    7,    8,     9,     15,    16,
                            17,   31,   32,   33,   63,   64,   65,   96,    127,   128,   129,
                            159,  160,  161,  192,  239,  240,  241,  255,   256,   257,   319,
                            320,  1023, 1024, 1025, 1087, 1088, 1089, 2047,  2048,  2049,  3071,
                            3072, 3073, 4096, 4097, 5000, 8191, 8192, 65535, 65536, 65537, 200003};
  size_t bad = 0;
  for (uint64_t round = 0; round < 64; ++round) {
    const std::vector<uint8_t> data = random_bytes(200003, 100 + round);
    for (size_t len : lengths) bad += mismatches(data.data(), len, 0);
  }
  for (uint8_t fill : {uint8_t{0x00}, uint8_t{0xff}, uint8_t{0x80}}) {
    const std::vector<uint8_t> data(200003, fill);
    for (size_t len : lengths) bad += mismatches(data.data(), len, 0);
  }
  CHECK(bad == 0);
}

TEST_CASE("xxh3_128.h with a seed equals libxxhash's XXH3_128bits_withSeed") {
  const std::vector<uint8_t> data = random_bytes(5000, 2);
  std::mt19937_64 rng(3);
  const uint64_t seeds[] = {1, 0xffffffffffffffffull, 0x9E3779B185EBCA87ull, rng(), rng()};
  size_t bad = 0;
  for (uint64_t seed : seeds) {
    for (size_t len = 0; len <= 5000; len += (len < 300 ? 1 : 37)) {
      bad += mismatches(data.data(), len, seed);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("xxh3_128.h changes with every single flipped bit (it reads every byte)") {
  std::vector<uint8_t> data = random_bytes(2500, 4);
  for (size_t len :
       {size_t{1}, size_t{3}, size_t{8}, size_t{16}, size_t{128}, size_t{240}, size_t{2500}}) {
    const xxh3::Hash128 base = xxh3::xxh3_128(data.data(), len);
    size_t same = 0;
    for (size_t i = 0; i < len; i += (len > 300 ? 7 : 1)) {
      data[i] ^= 0x10;
      const xxh3::Hash128 flipped = xxh3::xxh3_128(data.data(), len);
      if (flipped.low == base.low && flipped.high == base.high) ++same;
      data[i] ^= 0x10;
    }
    CHECK(same == 0);
  }
}
