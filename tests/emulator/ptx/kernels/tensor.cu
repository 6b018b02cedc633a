// Tensor-core kernels written the way CUDA code uses them (inline PTX mma.sync + ldmatrix, as
// CUTLASS and hand-tuned kernels do), compiled by nvcc for sm_80 and run by the emulator against
// host GEMMs (test_kernels_tensor.cpp). One warp per output tile; m, n, k tile multiples.
#include <cuda_fp16.h>

#include <cstdint>

__device__ inline uint32_t smem(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// C (s32, m x n) = sat(A (s8, m x k row-major) * B + C), B given transposed (u8, n x k): the
// int8 fragments are loaded with ldmatrix.x4 (A 16x32) and .x2 (B 32x8 from Bt).
extern "C" __global__ void igemm_s8u8(const int8_t* a, const uint8_t* bt, int* c, int n, int k) {
  __shared__ __align__(16) int8_t sa[16][48];
  __shared__ __align__(16) uint8_t sb[8][48];
  const int lane = threadIdx.x;
  const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
  int acc[4];
  for (int i = 0; i < 4; ++i)
    acc[i] = c[(row0 + (lane >> 2) + (i >> 1) * 8) * n + col0 + (lane & 3) * 2 + (i & 1)];
  for (int k0 = 0; k0 < k; k0 += 32) {
    const int r = lane >> 1, h = (lane & 1) * 16;
    *reinterpret_cast<int4*>(&sa[r][h]) =
        *reinterpret_cast<const int4*>(a + (row0 + r) * k + k0 + h);
    if (lane < 16)
      *reinterpret_cast<int4*>(&sb[r][h]) =
          *reinterpret_cast<const int4*>(bt + (col0 + r) * k + k0 + h);
    __syncwarp();
    uint32_t fa[4], fb[2];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(fa[0]), "=r"(fa[1]), "=r"(fa[2]), "=r"(fa[3])
                 : "r"(smem(&sa[(lane & 7) + ((lane >> 3) & 1) * 8][(lane >> 4) * 16])));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(fb[0]), "=r"(fb[1])
                 : "r"(smem(&sb[lane & 7][((lane >> 3) & 1) * 16])));
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
        : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
    __syncwarp();
  }
  for (int i = 0; i < 4; ++i)
    c[(row0 + (lane >> 2) + (i >> 1) * 8) * n + col0 + (lane & 3) * 2 + (i & 1)] = acc[i];
}

// C (f32) = A * B with tf32 inputs rounded by cvt.rna.tf32.f32; fragments read straight from
// global memory by the ISA's m16n8k8 tf32 layout. A m x k, B k x n, both row-major.
extern "C" __global__ void sgemm_tf32(const float* a, const float* b, float* c, int n, int k) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
  float acc[4] = {};
  for (int k0 = 0; k0 < k; k0 += 8) {
    uint32_t fa[4], fb[2];
    const float av[4] = {a[(row0 + g) * k + k0 + t], a[(row0 + g + 8) * k + k0 + t],
                         a[(row0 + g) * k + k0 + t + 4], a[(row0 + g + 8) * k + k0 + t + 4]};
    const float bv[2] = {b[(k0 + t) * n + col0 + g], b[(k0 + t + 4) * n + col0 + g]};
    for (int i = 0; i < 4; ++i) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(fa[i]) : "f"(av[i]));
    for (int i = 0; i < 2; ++i) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(fb[i]) : "f"(bv[i]));
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
  }
  for (int i = 0; i < 4; ++i) c[(row0 + g + (i >> 1) * 8) * n + col0 + t * 2 + (i & 1)] = acc[i];
}

// C (f64) = A * B + C, m8n8k4 fragments from global memory. Row-major, m, n multiples of 8.
extern "C" __global__ void dgemm_mma(const double* a, const double* b, double* c, int n, int k) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.y * 8, col0 = blockIdx.x * 8;
  double d0 = c[(row0 + g) * n + col0 + 2 * t], d1 = c[(row0 + g) * n + col0 + 2 * t + 1];
  for (int k0 = 0; k0 < k; k0 += 4) {
    const double av = a[(row0 + g) * k + k0 + t], bv = b[(k0 + t) * n + col0 + g];
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
                 : "+d"(d0), "+d"(d1)
                 : "d"(av), "d"(bv));
  }
  c[(row0 + g) * n + col0 + 2 * t] = d0;
  c[(row0 + g) * n + col0 + 2 * t + 1] = d1;
}

// C (f16) = A * B with an f16 accumulator: m16n8k8, A by ldmatrix.x2, B (k x n row-major) by
// ldmatrix.x1.trans.
extern "C" __global__ void hgemm_f16acc(const __half* a, const __half* b, __half* c, int n,
                                        int k) {
  __shared__ __align__(16) __half sa[16][8];
  __shared__ __align__(16) __half sb[8][8];
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
  uint32_t acc[2] = {0, 0};
  for (int k0 = 0; k0 < k; k0 += 8) {
    if (lane < 16)
      *reinterpret_cast<int4*>(&sa[lane][0]) =
          *reinterpret_cast<const int4*>(a + (row0 + lane) * k + k0);
    else if (lane < 24)
      *reinterpret_cast<int4*>(&sb[lane - 16][0]) =
          *reinterpret_cast<const int4*>(b + (k0 + lane - 16) * n + col0);
    __syncwarp();
    uint32_t fa[2], fb;
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(fa[0]), "=r"(fa[1])
                 : "r"(smem(&sa[lane & 15][0])));
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];"
                 : "=r"(fb)
                 : "r"(smem(&sb[lane & 7][0])));
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3}, {%4}, {%0, %1};"
        : "+r"(acc[0]), "+r"(acc[1])
        : "r"(fa[0]), "r"(fa[1]), "r"(fb));
    __syncwarp();
  }
  for (int i = 0; i < 2; ++i) {
    __half2 h = *reinterpret_cast<__half2*>(&acc[i]);
    c[(row0 + g + i * 8) * n + col0 + 2 * t] = __low2half(h);
    c[(row0 + g + i * 8) * n + col0 + 2 * t + 1] = __high2half(h);
  }
}
