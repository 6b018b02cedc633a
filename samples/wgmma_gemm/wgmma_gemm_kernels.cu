// wgmma_gemm's kernel: C (m x n, f32) = A (m x k) * B (k x n), f32 in global memory, on a 2-D
// grid of 64 x 64 tiles, one warpgroup (128 threads) per tile. Per 64-wide k stage the threads
// stage A's 64 x 64 tile and B's (transposed: row n, column k) into shared memory as f16 in the
// K-major 128B-swizzled layout of the PTX ISA ("Shared Memory Matrix Layout": 128-byte rows,
// 16-byte chunk c of row r at chunk c ^ (r % 8), 1024-byte aligned tiles), zero outside the
// matrices; then wgmma.fence, four wgmma.mma_async.m64n64k16.f32.f16.f16 whose descriptors
// advance 32 bytes inside the swizzled rows (SBO 1024 bytes: 8 rows), commit_group and
// wait_group 0. The accumulator fragment is stored with the ISA's layout.
#include <cuda_fp16.h>

#include <cstdint>

#include "wgmma_ops.cuh"

using namespace wgmma_ops;

extern "C" __global__ void __launch_bounds__(128)
    wgmma_gemm(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ alignas(1024) __half sa[64 * 64];
  __shared__ alignas(1024) __half sb[64 * 64];
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  float d[32];
  for (float& v : d) v = 0.0f;
  for (int k0 = 0; k0 < k; k0 += 64) {
    for (int i = threadIdx.x; i < 64 * 64; i += 128) {
      const int r = i / 64, kk = i % 64;
      const uint32_t offset = r * 128 + kk * 2;
      const uint32_t at = (offset ^ (((offset >> 7) & 7) << 4)) / 2;
      const int gk = k0 + kk;
      sa[at] = __float2half(m0 + r < m && gk < k ? a[(m0 + r) * k + gk] : 0.0f);
      sb[at] = __float2half(n0 + r < n && gk < k ? b[gk * n + n0 + r] : 0.0f);
    }
    // The generic-proxy stores must be visible to wgmma's (async proxy) reads.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    wgmma_tile_k64(d, smem(sa), smem(sb), k0 > 0);
    __syncthreads();  // the tiles are read before the next stage overwrites them
  }
  // Warp w, lane (g = lane / 4, t = lane % 4): element i is row 16 w + g + 8 ((i >> 1) & 1),
  // column 8 (i >> 2) + 2 t + (i & 1) of the tile.
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  for (int i = 0; i < 32; ++i) {
    const int row = m0 + 16 * w + g + 8 * ((i >> 1) & 1);
    const int col = n0 + 8 * (i >> 2) + 2 * t + (i & 1);
    if (row < m && col < n) c[row * n + col] = d[i];
  }
}
