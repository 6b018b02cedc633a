// An sm_90a GEMM as Hopper kernels write it, from the PTX ISA and the driver's tensor-map API
// (test_wgmma_gemm in test_tensor_maps.cpp): C (M x N, f32, row-major) = A (M x K, f16,
// row-major) * B^T, B given as N x K (f16, row-major), i.e. both operands K-major. One CTA of one
// warpgroup (128 threads) computes a 64 x 64 tile of C. Per 64-wide k stage, thread 0 loads the
// 64 x 64 boxes of A and B with cp.async.bulk.tensor (CU_TENSOR_MAP_SWIZZLE_128B: one 128-byte
// row per box row) onto an mbarrier; every thread waits, then the warpgroup issues four
// wgmma.mma_async m64n64k16, the descriptors' start addresses advancing 32 bytes (16 halves)
// inside the 128B-swizzled rows, SBO = 1024 bytes (8 rows of 128 bytes).
#include <cuda.h>

#include <cstdint>

namespace {

__device__ inline uint32_t smem(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The ISA's matrix descriptor: start address, LBO (unused for swizzled K-major: 1), SBO, 128B
// swizzle (mode 1 in bits 62-63), base offset 0 (the tiles are 1024-byte aligned).
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

}  // namespace

extern "C" __global__ void __launch_bounds__(128)
    wgmma_gemm(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
               float* c, int n, int k) {
  __shared__ alignas(1024) uint16_t sa[64 * 64];
  __shared__ alignas(1024) uint16_t sb[64 * 64];
  __shared__ alignas(8) uint64_t bar;
  const uint32_t b = smem(&bar);
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  float d[32];
  for (float& v : d) v = 0.0f;
  uint32_t phase = 0;
  for (int k0 = 0; k0 < k; k0 += 64) {
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b),
                   "r"(2 * 64 * 64 * 2)
                   : "memory");
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
          " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem(sa)),
          "l"(reinterpret_cast<uint64_t>(&a_map)), "r"(k0), "r"(m0), "r"(b)
          : "memory");
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
          " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem(sb)),
          "l"(reinterpret_cast<uint64_t>(&b_map)), "r"(k0), "r"(n0), "r"(b)
          : "memory");
    }
    uint32_t done = 0;
    while (!done)
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, "
          "0, p; }"
          : "=r"(done)
          : "r"(b), "r"(phase)
          : "memory");
    phase ^= 1;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int kk = 0; kk < 4; ++kk)
      wgmma_64x64x16(d, descriptor(smem(sa) + 32 * kk), descriptor(smem(sb) + 32 * kk),
                     k0 > 0 || kk > 0);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    __syncthreads();  // every warp is done with the tiles before they are reloaded
  }
  // The accumulator fragment: warp w, lane (g = lane / 4, t = lane % 4), element i at row
  // 16 w + g + 8 ((i >> 1) & 1), column 8 (i >> 2) + 2 t + (i & 1).
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  for (int i = 0; i < 32; ++i) {
    const int row = m0 + 16 * w + g + 8 * ((i >> 1) & 1);
    const int col = n0 + 8 * (i >> 2) + 2 * t + (i & 1);
    c[row * n + col] = d[i];
  }
}
