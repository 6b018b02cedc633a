// C (m x n, f32) = A (m x k) * B (k x n), both row-major f32 inputs rounded to f16 while they are
// staged in shared memory, on the sm_80 tensor-core path: ldmatrix.x4 (A) and ldmatrix.x4.trans
// (B) fragments feeding mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32. A block of 4 warps
// computes a 32x32 tile of C (each warp 16x16, two m16n8 tiles) stepping k by 32; edges are
// zero-filled, so any m, n, k work.
#include <cuda_fp16.h>

#include <cstdint>

constexpr int kTile = 32;
constexpr int kPad = 8;  // rows of 40 halves (80 bytes) keep every ldmatrix row 16-byte aligned

__device__ inline uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void hgemm_mma(const float* a, const float* b, float* c, int m, int n,
                                     int k) {
  __shared__ __align__(16) __half tile_a[kTile][kTile + kPad];  // [row][k]
  __shared__ __align__(16) __half tile_b[kTile][kTile + kPad];  // [k][col]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  const int wr = (warp >> 1) * 16, wc = (warp & 1) * 16;  // the warp's 16x16 sub-tile
  float acc[2][4] = {};
  for (int k0 = 0; k0 < k; k0 += kTile) {
    for (int i = tid; i < kTile * kTile; i += blockDim.x) {
      const int r = i / kTile, q = i % kTile;
      const int ar = row0 + r, ak = k0 + q, bk = k0 + r, bc = col0 + q;
      tile_a[r][q] = __float2half(ar < m && ak < k ? a[ar * k + ak] : 0.0f);
      tile_b[r][q] = __float2half(bk < k && bc < n ? b[bk * n + bc] : 0.0f);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile; kk += 16) {
      // A 16x16 as four 8x8 matrices: lane l addresses row l % 8 of matrix l / 8.
      uint32_t fa[4], fb[4];
      const __half* pa = &tile_a[wr + (lane & 7) + ((lane >> 3) & 1) * 8][kk + (lane >> 4) * 8];
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                   : "=r"(fa[0]), "=r"(fa[1]), "=r"(fa[2]), "=r"(fa[3])
                   : "r"(shared_address(pa)));
      // B 16x16 (k x n) transposed into two col-major 16x8 fragments.
      const __half* pb = &tile_b[kk + (lane & 7) + ((lane >> 3) & 1) * 8][wc + (lane >> 4) * 8];
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                   : "=r"(fb[0]), "=r"(fb[1]), "=r"(fb[2]), "=r"(fb[3])
                   : "r"(shared_address(pb)));
#pragma unroll
      for (int t = 0; t < 2; ++t)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
            : "+f"(acc[t][0]), "+f"(acc[t][1]), "+f"(acc[t][2]), "+f"(acc[t][3])
            : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[2 * t]),
              "r"(fb[2 * t + 1]));
    }
    __syncthreads();
  }
  // C fragment: c0, c1 at (lane / 4, 2 (lane % 4) + {0, 1}), c2, c3 eight rows below.
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 4; ++i) {
      const int r = row0 + wr + (lane >> 2) + (i >> 1) * 8;
      const int q = col0 + wc + t * 8 + (lane & 3) * 2 + (i & 1);
      if (r < m && q < n) c[r * n + q] = acc[t][i];
    }
}
