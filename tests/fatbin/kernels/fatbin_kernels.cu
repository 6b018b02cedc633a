// Kernels for the fatbin library tests (tests/fatbin): only their compiled form matters.
struct Window {
  int begin;
  int end;
  float scale;
};

__device__ float g_bias;

__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i] + g_bias;
}

__global__ void scale_window(float* data, Window window) {
  int i = window.begin + blockIdx.x * blockDim.x + threadIdx.x;
  if (i < window.end) data[i] *= window.scale;
}
