// A small library whose kernels ship as SASS only (sm_90, no PTX), linked statically into
// rt_sasslib: the stand-in for a vendor library such as cuBLAS, whose kernels a driver can load
// only on the GPU they were built for and the emulator cannot execute at all. (The toolkit's
// cuBLAS is 52 MiB plus 517 MiB of cublasLt and has no static form here: it cannot be carried
// in the 64 MiB bundle.)
#include "sass_lib.h"

namespace {

// Inclusive prefix sum of one block of up to 1024 elements (Hillis-Steele in shared memory).
__global__ void block_scan(const int* in, int* out, int n) {
  __shared__ int buffer[1024];
  int i = threadIdx.x;
  buffer[i] = i < n ? in[i] : 0;
  __syncthreads();
  for (int step = 1; step < blockDim.x; step *= 2) {
    int add = i >= step ? buffer[i - step] : 0;
    __syncthreads();
    buffer[i] += add;
    __syncthreads();
  }
  if (i < n) out[i] = buffer[i];
}

}  // namespace

cudaError_t sass_lib_prefix_sum(const int* in, int* out, int n, cudaStream_t stream) {
  if (n <= 0 || n > 1024) return cudaErrorInvalidValue;
  block_scan<<<1, 1024, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}
