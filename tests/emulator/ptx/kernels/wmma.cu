// WMMA (<mma.h>) kernels as CUDA C++ writes them, compiled by nvcc for sm_80 and run by the
// emulator against host GEMMs (test_kernels_tensor.cpp). One warp computes one tile:
// D = alpha * (A * B + C), the scaling applied elementwise to the accumulator fragment (which
// any consistent fragment layout must survive). Leading dimensions are parameters, so strided
// loads and stores are exercised.
#include <mma.h>

using namespace nvcuda;

template <int M, int N, int K, typename T, typename Acc, typename LA, typename LB, typename LC>
__device__ void tile(const T* a, const T* b, const Acc* c, Acc* d, int lda, int ldb, int ldc,
                     Acc alpha) {
  wmma::fragment<wmma::matrix_a, M, N, K, T, LA> fa;
  wmma::fragment<wmma::matrix_b, M, N, K, T, LB> fb;
  wmma::fragment<wmma::accumulator, M, N, K, Acc> fc;
  wmma::load_matrix_sync(fa, a, lda);
  wmma::load_matrix_sync(fb, b, ldb);
  wmma::load_matrix_sync(fc, c, ldc, LC::value);
  wmma::mma_sync(fc, fa, fb, fc);
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = fc.x[i] * alpha;
  wmma::store_matrix_sync(d, fc, ldc, LC::value);
}

struct RowC {
  static constexpr wmma::layout_t value = wmma::mem_row_major;
};
struct ColC {
  static constexpr wmma::layout_t value = wmma::mem_col_major;
};

extern "C" __global__ void wmma_f16_16x16x16(const __half* a, const __half* b, const float* c,
                                             float* d, int lda, int ldb, int ldc, float alpha) {
  tile<16, 16, 16, __half, float, wmma::row_major, wmma::col_major, RowC>(a, b, c, d, lda, ldb,
                                                                          ldc, alpha);
}
extern "C" __global__ void wmma_f16_32x8x16(const __half* a, const __half* b, const __half* c,
                                            __half* d, int lda, int ldb, int ldc, __half alpha) {
  tile<32, 8, 16, __half, __half, wmma::col_major, wmma::row_major, ColC>(a, b, c, d, lda, ldb,
                                                                          ldc, alpha);
}
extern "C" __global__ void wmma_bf16_8x32x16(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                             const float* c, float* d, int lda, int ldb, int ldc,
                                             float alpha) {
  tile<8, 32, 16, __nv_bfloat16, float, wmma::row_major, wmma::row_major, ColC>(a, b, c, d, lda,
                                                                                ldb, ldc, alpha);
}
extern "C" __global__ void wmma_s8_16x16x16(const signed char* a, const signed char* b,
                                            const int* c, int* d, int lda, int ldb, int ldc,
                                            int alpha) {
  tile<16, 16, 16, signed char, int, wmma::row_major, wmma::col_major, RowC>(a, b, c, d, lda, ldb,
                                                                             ldc, alpha);
}
extern "C" __global__ void wmma_f64_8x8x4(const double* a, const double* b, const double* c,
                                          double* d, int lda, int ldb, int ldc, double alpha) {
  tile<8, 8, 4, double, double, wmma::col_major, wmma::row_major, RowC>(a, b, c, d, lda, ldb, ldc,
                                                                        alpha);
}
// tf32: float inputs converted in the fragments with __float_to_tf32 (cvt.rna.tf32.f32).
extern "C" __global__ void wmma_tf32_16x16x8(const float* a, const float* b, const float* c,
                                             float* d, int lda, int ldb, int ldc, float alpha) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
  wmma::load_matrix_sync(fa, a, lda);
  wmma::load_matrix_sync(fb, b, ldb);
  for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
  for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
  wmma::load_matrix_sync(fc, c, ldc, wmma::mem_row_major);
  wmma::mma_sync(fc, fa, fb, fc);
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = fc.x[i] * alpha;
  wmma::store_matrix_sync(d, fc, ldc, wmma::mem_row_major);
}
