// The sm_90a wgmma pieces shared by the wgmma_gemm sample's kernel and the TMA + wgmma GEMM
// (samples/tma_gemm/tma_gemm_kernels.cu, the tma_gemm sample's kernel): shared addresses, the PTX ISA's
// matrix descriptor for a K-major 128B-swizzled tile (LBO 16, unused; SBO 1024: 8 rows of 128
// bytes; base offset 0, the tiles being 1024-byte aligned) and wgmma.mma_async m64n64k16 f32 +=
// f16 * f16 with both operands from descriptors.
#pragma once

#include <cstdint>

namespace wgmma_ops {

__device__ inline uint32_t smem(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Matrix descriptor: start address, LBO 16 (unused by swizzled K-major layouts), SBO 1024,
// 128B swizzle (1 in bits 62-63), base offset 0.
__device__ inline uint64_t descriptor(uint32_t addr) {
  auto encode = [](uint64_t x) { return (x & 0x3ffffull) >> 4; };
  return encode(addr) | encode(16) << 16 | encode(1024) << 32 | uint64_t{1} << 62;
}

__device__ inline void wgmma_64x64x16(float (&d)[32], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
        "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(accumulate));
}

// One 64-wide k stage of 64 x 64 tiles at shared addresses sa and sb: wgmma.fence, four
// m64n64k16 whose descriptors advance 32 bytes (16 halves) inside the swizzled rows, commit_group
// and wait_group 0. `accumulate`: add to d (else the first product starts it).
__device__ inline void wgmma_tile_k64(float (&d)[32], uint32_t sa, uint32_t sb, bool accumulate) {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int kk = 0; kk < 4; ++kk)
    wgmma_64x64x16(d, descriptor(sa + 32 * kk), descriptor(sb + 32 * kk), accumulate || kk > 0);
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

}  // namespace wgmma_ops
