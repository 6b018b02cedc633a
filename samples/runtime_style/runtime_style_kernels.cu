// C++ (mangled) kernel and __device__ variables, the way a runtime-API program declares them;
// the host side finds them by name through the library API, as the CUDA runtime does.
__device__ float g_offset;             // set by the host before the launches
__device__ unsigned g_launch_count;    // incremented once per launch

__global__ void scale_and_offset(float* data, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * factor + g_offset;
  if (i == 0) atomicAdd(&g_launch_count, 1u);
}
