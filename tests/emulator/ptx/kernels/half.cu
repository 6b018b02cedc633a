#include <cuda_fp16.h>
extern "C" __global__ void half_axpy(const __half* x, __half* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2half(a * __half2float(x[i]) + __half2float(y[i]));
}
extern "C" __global__ void half2_mul(const __half2* x, const __half2* y, __half2* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __hmul2(x[i], y[i]);
}
extern "C" __global__ void half_fma(const __half* x, const __half* y, __half* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __hfma(x[i], y[i], __float2half(1.0f));
}
