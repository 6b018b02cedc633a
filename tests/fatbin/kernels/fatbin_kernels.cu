// Kernels for the fatbin library tests (tests/fatbin): only their compiled form matters.
struct Window {
  int begin;
  int end;
  float scale;
};

__device__ float g_bias;
// Module variables (tests/fatbin/test_variables.cpp): an initialised constant table and a static
// two-dimensional array; g_bias above is the third.
__constant__ int g_table[5] = {2, 3, 5, 7, 11};
static __device__ double g_grid[3][4];

__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i] + g_bias;
}

__global__ void scale_window(float* data, Window window) {
  int i = window.begin + blockIdx.x * blockDim.x + threadIdx.x;
  if (i < window.end)
    data[i] *= window.scale * g_table[i % 5] + static_cast<float>(g_grid[i % 3][i % 4]);
  if (i == 0) g_grid[0][0] += 1.0;
}
