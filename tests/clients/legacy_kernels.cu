// Kernels of the legacy-launch client (legacy_launch.c), compiled to PTX by nvcc at build time.

extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// Reverses each block's slice of data in dynamic shared memory (sized by cuFuncSetSharedSize).
extern "C" __global__ void reverse_blocks(int* data) {
  extern __shared__ int slice[];
  int t = threadIdx.x;
  int base = blockIdx.x * blockDim.x;
  slice[t] = data[base + t];
  __syncthreads();
  data[base + t] = slice[blockDim.x - 1 - t];
}
