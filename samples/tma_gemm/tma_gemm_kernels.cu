// tma_gemm's kernel, an sm_90a GEMM as Hopper kernels write it, from the PTX ISA and the driver's
// tensor-map API (also run by tests/emulator/driver/test_tensor_maps.cpp): C (M x N, f32,
// row-major) = A (M x K, f16, row-major) * B^T, B given as N x K (f16, row-major), i.e. both
// operands K-major. One CTA of one warpgroup (128 threads) computes a 64 x 64 tile of C; the
// tensor copies fill the parts of a box outside A or B with zeros, so M, N and K need not be tile
// multiples (K * 2 bytes, the row pitch, must be a multiple of 16), and rows or columns of C
// beyond M or N are not stored. Per 64-wide k stage, thread 0 loads the
// 64 x 64 boxes of A and B with cp.async.bulk.tensor (CU_TENSOR_MAP_SWIZZLE_128B: one 128-byte
// row per box row) onto an mbarrier; every thread waits, then the warpgroup issues four
// wgmma.mma_async m64n64k16, the descriptors' start addresses advancing 32 bytes (16 halves)
// inside the 128B-swizzled rows, SBO = 1024 bytes (8 rows of 128 bytes).
#include <cuda.h>

#include <cstdint>

#include "wgmma_ops.cuh"  // samples/wgmma_gemm: descriptor and wgmma helpers

using namespace wgmma_ops;

extern "C" __global__ void __launch_bounds__(128)
    tma_gemm(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
             float* c, int m, int n, int k) {
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
    wgmma_tile_k64(d, smem(sa), smem(sb), k0 > 0);
    __syncthreads();  // every warp is done with the tiles before they are reloaded
  }
  // The accumulator fragment: warp w, lane (g = lane / 4, t = lane % 4), element i at row
  // 16 w + g + 8 ((i >> 1) & 1), column 8 (i >> 2) + 2 t + (i & 1).
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  for (int i = 0; i < 32; ++i) {
    const int row = m0 + 16 * w + g + 8 * ((i >> 1) & 1);
    const int col = n0 + 8 * (i >> 2) + 2 * t + (i & 1);
    if (row < m && col < n) c[row * n + col] = d[i];
  }
}
