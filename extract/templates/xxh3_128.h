// XXH3-128: the 128-bit XXH3 hash (xxHash, seed 0 by default), written from the published
// specification (xxHash's doc/xxhash_spec.md, "XXH3 Algorithm Description"). A reproducer
// written by `cusnap extract --emit-cpp` includes it to check memory whose expected state the
// capture recorded only as chunk hashes: a chunk is named by the XXH3-128 of its bytes.
//
// Plain C++17 with no dependency: every multi-byte value is read little-endian byte by byte and
// the 64x64 -> 128-bit products are computed from 32-bit halves, so the result is the same on
// every compiler and byte order. It favours being easy to check against the specification over
// speed. This file is the one source of the emitted xxh3_128.h; cusnap's tests compile it and
// compare it bit for bit with libxxhash's XXH3_128bits / XXH3_128bits_withSeed.
#ifndef CUSNAP_REPRODUCER_XXH3_128_H
#define CUSNAP_REPRODUCER_XXH3_128_H

#include <cstddef>
#include <cstdint>

namespace xxh3 {

// The result, as XXH128_hash_t holds it. Printed canonically: high then low, most significant
// hex digit first.
struct Hash128 {
  uint64_t low = 0;
  uint64_t high = 0;
};

namespace detail {

constexpr uint64_t kPrime32_1 = 0x9E3779B1u;
constexpr uint64_t kPrime32_2 = 0x85EBCA77u;
constexpr uint64_t kPrime32_3 = 0xC2B2AE3Du;
constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime64_3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime64_4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime64_5 = 0x27D4EB2F165667C5ull;
constexpr uint64_t kPrimeMx1 = 0x165667919E3779F9ull;
constexpr uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ull;

constexpr size_t kSecretSize = 192;
constexpr uint8_t kDefaultSecret[kSecretSize] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

inline uint32_t read32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint64_t read64(const uint8_t* p) {
  return uint64_t(read32(p)) | uint64_t(read32(p + 4)) << 32;
}

inline uint32_t bswap32(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}
inline uint64_t bswap64(uint64_t x) {
  return uint64_t(bswap32(uint32_t(x))) << 32 | bswap32(uint32_t(x >> 32));
}
inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// The full 128-bit product of two 64-bit values, from four 32x32 -> 64-bit products.
inline Hash128 mul128(uint64_t a, uint64_t b) {
  const uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
  const uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const uint64_t lo_lo = a_lo * b_lo;
  const uint64_t hi_lo = a_hi * b_lo;
  const uint64_t lo_hi = a_lo * b_hi;
  const uint64_t hi_hi = a_hi * b_hi;
  // The middle column cannot overflow: (2^32 - 1)^2 + 2 * (2^32 - 1) = 2^64 - 1.
  const uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
  Hash128 r;
  r.high = hi_hi + (hi_lo >> 32) + (cross >> 32);
  r.low = (cross << 32) | (lo_lo & 0xffffffffu);
  return r;
}
// The low half xor the high half of the 128-bit product ("mul128_fold64").
inline uint64_t mul_fold64(uint64_t a, uint64_t b) {
  const Hash128 p = mul128(a, b);
  return p.low ^ p.high;
}

inline uint64_t avalanche(uint64_t x) {  // the spec's avalanche()
  x ^= x >> 37;
  x *= kPrimeMx1;
  x ^= x >> 32;
  return x;
}
inline uint64_t avalanche_xxh64(uint64_t x) {  // the spec's avalanche_XXH64()
  x ^= x >> 33;
  x *= kPrime64_2;
  x ^= x >> 29;
  x *= kPrime64_3;
  x ^= x >> 32;
  return x;
}

// 0 bytes.
inline Hash128 hash_empty(const uint8_t* secret, uint64_t seed) {
  Hash128 r;
  r.low = avalanche_xxh64(seed ^ read64(secret + 64) ^ read64(secret + 72));
  r.high = avalanche_xxh64(seed ^ read64(secret + 80) ^ read64(secret + 88));
  return r;
}

// 1 to 3 bytes.
inline Hash128 hash_1to3(const uint8_t* in, size_t len, const uint8_t* secret, uint64_t seed) {
  const uint32_t combined = uint32_t(in[len - 1]) | uint32_t(len) << 8 | uint32_t(in[0]) << 16 |
                            uint32_t(in[len >> 1]) << 24;
  const uint64_t low = (uint64_t(read32(secret) ^ read32(secret + 4)) + seed) ^ combined;
  const uint64_t high =
      (uint64_t(read32(secret + 8) ^ read32(secret + 12)) - seed) ^ rotl32(bswap32(combined), 13);
  Hash128 r;
  r.low = avalanche_xxh64(low);
  r.high = avalanche_xxh64(high);
  return r;
}

// 4 to 8 bytes.
inline Hash128 hash_4to8(const uint8_t* in, size_t len, const uint8_t* secret, uint64_t seed) {
  const uint64_t first = read32(in);
  const uint64_t last = read32(in + len - 4);
  const uint64_t modified_seed = seed ^ (uint64_t(bswap32(uint32_t(seed))) << 32);
  const uint64_t combined = first | last << 32;
  const uint64_t value = ((read64(secret + 16) ^ read64(secret + 24)) + modified_seed) ^ combined;
  Hash128 m = mul128(value, kPrime64_1 + (uint64_t(len) << 2));
  uint64_t high = m.high + (m.low << 1);
  uint64_t low = m.low ^ (high >> 3);
  low ^= low >> 35;
  low *= kPrimeMx2;
  low ^= low >> 28;
  high = avalanche(high);
  Hash128 r;
  r.low = low;
  r.high = high;
  return r;
}

// 9 to 16 bytes.
inline Hash128 hash_9to16(const uint8_t* in, size_t len, const uint8_t* secret, uint64_t seed) {
  const uint64_t first = read64(in);
  const uint64_t last = read64(in + len - 8);
  const uint64_t val1 = ((read64(secret + 32) ^ read64(secret + 40)) - seed) ^ first ^ last;
  const uint64_t val2 = ((read64(secret + 48) ^ read64(secret + 56)) + seed) ^ last;
  const Hash128 m = mul128(val1, kPrime64_1);
  uint64_t low = m.low + (uint64_t(len - 1) << 54);
  uint64_t high = m.high + ((val2 >> 32) << 32) + (val2 & 0xffffffffu) * kPrime32_2;
  low ^= bswap64(high);
  // {low, high} * PRIME64_2 as a 128 x 64 -> 128-bit product.
  const Hash128 m2 = mul128(low, kPrime64_2);
  low = m2.low;
  high = m2.high + high * kPrime64_2;
  Hash128 r;
  r.low = avalanche(low);
  r.high = avalanche(high);
  return r;
}

// The spec's mixStep: 16 bytes of data with 16 bytes of secret.
inline uint64_t mix16(const uint8_t* data, const uint8_t* secret, uint64_t seed) {
  return mul_fold64(read64(data) ^ (read64(secret) + seed),
                    read64(data + 8) ^ (read64(secret + 8) - seed));
}

// The spec's mixTwoChunks: updates the two accumulators of the medium sizes.
inline void mix32(uint64_t acc[2], const uint8_t* data1, const uint8_t* data2,
                  const uint8_t* secret, uint64_t seed) {
  acc[0] += mix16(data1, secret, seed);
  acc[1] += mix16(data2, secret + 16, seed);
  acc[0] ^= read64(data2) + read64(data2 + 8);
  acc[1] ^= read64(data1) + read64(data1 + 8);
}

inline Hash128 finish_medium(const uint64_t acc[2], size_t len, uint64_t seed) {
  Hash128 r;
  r.low = avalanche(acc[0] + acc[1]);
  r.high = uint64_t(0) - avalanche(acc[0] * kPrime64_1 + acc[1] * kPrime64_4 +
                                   (uint64_t(len) - seed) * kPrime64_2);
  return r;
}

// 17 to 128 bytes: pairs of 16-byte pieces from both ends, the innermost pair first.
inline Hash128 hash_17to128(const uint8_t* in, size_t len, const uint8_t* secret, uint64_t seed) {
  uint64_t acc[2] = {uint64_t(len) * kPrime64_1, 0};
  const size_t rounds = ((len - 1) >> 5) + 1;
  for (size_t i = rounds; i-- > 0;)
    mix32(acc, in + 16 * i, in + len - 16 * i - 16, secret + 32 * i, seed);
  return finish_medium(acc, len, seed);
}

// 129 to 240 bytes: 32-byte pieces, an avalanche after the first four, then the last 32 bytes.
inline Hash128 hash_129to240(const uint8_t* in, size_t len, const uint8_t* secret, uint64_t seed) {
  uint64_t acc[2] = {uint64_t(len) * kPrime64_1, 0};
  const size_t pieces = len >> 5;
  for (size_t i = 0; i < 4; ++i) mix32(acc, in + 32 * i, in + 32 * i + 16, secret + 32 * i, seed);
  acc[0] = avalanche(acc[0]);
  acc[1] = avalanche(acc[1]);
  for (size_t i = 4; i < pieces; ++i)
    mix32(acc, in + 32 * i, in + 32 * i + 16, secret + 32 * (i - 4) + 3, seed);
  // The last piece: halves swapped, seed negated.
  mix32(acc, in + len - 16, in + len - 32, secret + 103, uint64_t(0) - seed);
  return finish_medium(acc, len, seed);
}

// More than 240 bytes: eight accumulators over 64-byte stripes, blocks of
// (secret size - 64) / 8 stripes, a scramble after each full block.
constexpr size_t kStripe = 64;
constexpr size_t kStripesPerBlock = (kSecretSize - 64) / 8;  // 16
constexpr size_t kBlock = kStripe * kStripesPerBlock;        // 1024

inline void accumulate(uint64_t acc[8], const uint8_t* stripe, const uint8_t* secret) {
  for (size_t i = 0; i < 8; ++i) {
    const uint64_t lane = read64(stripe + 8 * i);
    const uint64_t value = lane ^ read64(secret + 8 * i);
    acc[i ^ 1] += lane;
    acc[i] += (value & 0xffffffffu) * (value >> 32);
  }
}

inline void scramble(uint64_t acc[8], const uint8_t* secret) {
  const uint8_t* last64 = secret + kSecretSize - 64;
  for (size_t i = 0; i < 8; ++i) {
    acc[i] ^= acc[i] >> 47;
    acc[i] ^= read64(last64 + 8 * i);
    acc[i] *= kPrime32_1;
  }
}

inline uint64_t final_merge(const uint64_t acc[8], uint64_t init, const uint8_t* secret) {
  uint64_t result = init;
  for (size_t i = 0; i < 4; ++i)
    result += mul_fold64(acc[2 * i] ^ read64(secret + 16 * i),
                         acc[2 * i + 1] ^ read64(secret + 16 * i + 8));
  return avalanche(result);
}

inline Hash128 hash_large(const uint8_t* in, size_t len, const uint8_t* secret) {
  uint64_t acc[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3,
                     kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  // Every full block but the last (a last block that is full is left to the step below).
  const size_t full_blocks = (len - 1) / kBlock;
  for (size_t b = 0; b < full_blocks; ++b) {
    for (size_t n = 0; n < kStripesPerBlock; ++n)
      accumulate(acc, in + b * kBlock + n * kStripe, secret + 8 * n);
    scramble(acc, secret);
  }
  // The last block's full stripes except its last stripe, then the input's last 64 bytes.
  const uint8_t* last_block = in + full_blocks * kBlock;
  const size_t last_len = len - full_blocks * kBlock;  // 1 .. kBlock
  const size_t stripes = (last_len - 1) / kStripe;
  for (size_t n = 0; n < stripes; ++n) accumulate(acc, last_block + n * kStripe, secret + 8 * n);
  accumulate(acc, in + len - kStripe, secret + kSecretSize - 71);
  Hash128 r;
  r.low = final_merge(acc, uint64_t(len) * kPrime64_1, secret + 11);
  r.high = final_merge(acc, ~(uint64_t(len) * kPrime64_2), secret + kSecretSize - 75);
  return r;
}

}  // namespace detail

// XXH3_128bits_withSeed (XXH3_128bits when seed is 0) of len bytes at data.
inline Hash128 xxh3_128(const void* data, size_t len, uint64_t seed = 0) {
  using namespace detail;
  const uint8_t* in = static_cast<const uint8_t*>(data);
  if (len == 0) return hash_empty(kDefaultSecret, seed);
  if (len <= 3) return hash_1to3(in, len, kDefaultSecret, seed);
  if (len <= 8) return hash_4to8(in, len, kDefaultSecret, seed);
  if (len <= 16) return hash_9to16(in, len, kDefaultSecret, seed);
  if (len <= 128) return hash_17to128(in, len, kDefaultSecret, seed);
  if (len <= 240) return hash_129to240(in, len, kDefaultSecret, seed);
  if (seed == 0) return hash_large(in, len, kDefaultSecret);
  // A seed with a long input: the secret derived from it (the spec's deriveSecret), as 24
  // little-endian 64-bit words, seed added to the even ones and subtracted from the odd ones.
  uint8_t derived[kSecretSize];
  for (size_t i = 0; i < kSecretSize / 8; ++i) {
    const uint64_t word = read64(kDefaultSecret + 8 * i) + (i % 2 == 0 ? seed : uint64_t(0) - seed);
    for (size_t b = 0; b < 8; ++b) derived[8 * i + b] = uint8_t(word >> (8 * b));
  }
  return hash_large(in, len, derived);
}

}  // namespace xxh3

#endif  // CUSNAP_REPRODUCER_XXH3_128_H
