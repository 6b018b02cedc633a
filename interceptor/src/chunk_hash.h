// The snapshot change-detection hash (docs/capture.md, "Where memory is hashed"): a 128-bit value
// per memory chunk that the shim computes on the device with the hand-written PTX kernel
// chunk_hash.ptx, so that a chunk whose hash did not change is never copied to the host. It only
// detects change; a chunk's content id in the capture is still format::hash_blob (XXH3-128) of
// its bytes, computed on the host from the copy.
//
// The algorithm (chunk_hash.ptx's header comment): word i = bytes 8i..8i+7 little-endian, missing
// tail bytes zero; p_i = fmix64(w_i ^ k_i) with a per-position key k_i; a = sum p_i,
// b = sum rotl64(p_i, 23) * (k_i | 1) (mod 2^64, so any lane order gives the same sums); then
// both are mixed with the length. fmix64 is a bijection, so changing any one word (any one bit)
// always changes `a` and with it `low`; wider changes collide with probability ~2^-128 for data
// that is not built to collide. Not a cryptographic hash.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace cusnap::icpt {

struct ChunkHash {
  uint64_t low = 0;
  uint64_t high = 0;
  friend bool operator==(const ChunkHash&, const ChunkHash&) = default;
};

// The kernel's PTX text (chunk_hash.ptx, embedded at build time), its entry name and the block
// size it requires (.reqntid).
std::string_view chunk_hash_ptx() noexcept;
inline constexpr const char* kChunkHashKernel = "cusnap_chunk_hash";
inline constexpr unsigned kChunkHashThreads = 256;

// The one C++ implementation of the kernel's algorithm: what the kernel must compute for `bytes`.
ChunkHash chunk_hash_reference(std::span<const uint8_t> bytes) noexcept;

}  // namespace cusnap::icpt
