// The shared-memory swizzle patterns of tensor copies (CU_TENSOR_MAP_SWIZZLE_32B/64B/128B) and
// of wgmma matrix descriptors: the one home of the formula (docs/emulator.md, "Tensor maps",
// names the sources and the checks).
//
// A swizzle permutes the 16-byte chunks of shared memory by the chunk's own shared-memory
// address: with S = 1, 2, 3 for the 32-, 64- and 128-byte modes, the S bits of address bits
// 4.. are XORed with the S address bits from bit 7, so the pattern repeats every 256, 512 and
// 1024 bytes. It is a function of the absolute shared address (a box that starts off the
// repeat boundary sees the pattern offset), and an involution: the same function maps logical
// to physical and back.
#pragma once

#include <cstdint>

namespace cusnap::emu::ptx {

// Encoded as CUtensorMapSwizzle's first four values.
enum class Swizzle : uint8_t { kNone = 0, k32B = 1, k64B = 2, k128B = 3 };

// Bytes of one swizzled row: 32, 64 or 128 (16 without a swizzle, one chunk).
constexpr uint32_t swizzle_span(Swizzle s) { return 16u << static_cast<uint32_t>(s); }

// Bytes after which the pattern repeats: 256, 512 or 1024 (16 without a swizzle).
constexpr uint32_t swizzle_repeat(Swizzle s) {
  return s == Swizzle::kNone ? 16u : 128u << static_cast<uint32_t>(s);
}

// The physical shared-memory address of the byte at logical shared-memory address `a`.
constexpr uint64_t swizzle_address(uint64_t a, Swizzle s) {
  const uint64_t mask = (uint64_t{1} << static_cast<uint32_t>(s)) - 1;
  return a ^ (((a >> 7) & mask) << 4);
}

}  // namespace cusnap::emu::ptx
