// Kernels of the host_mapped sample: they write and read page-locked host memory directly.

// out[i] = i * k + 7, written straight into host memory mapped into the device's address space.
extern "C" __global__ void fill(int* out, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i * k + 7;
}

// twice[i] = 2 * in[i]: reads the mapped host memory back into device memory.
extern "C" __global__ void twice(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2 * in[i];
}
