// Test kernels for the emulator's driver layer. Compiled at test build time with nvcc into
// fatbins (every --compress-mode), a SASS-only fatbin and PTX text.
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__device__ int counter_value = 7;

extern "C" __global__ void scale_and_count(float* data, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    data[i] *= factor;
    atomicAdd(&counter_value, 1);
  }
}
