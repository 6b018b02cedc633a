// Kernels of the device_assert sample.
#include <cassert>

// y[i] = 3 * x[i] + 1: exact integer work, checked against the host.
extern "C" __global__ void affine(const int* x, int* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 3 * x[i] + 1;
}

// Every element must be positive; a device-side assert (nvcc: a call to __assertfail) stops the
// kernel otherwise, and the context's next synchronisation fails with CUDA_ERROR_ASSERT.
extern "C" __global__ void require_positive(const int* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) assert(y[i] > 0);
}
