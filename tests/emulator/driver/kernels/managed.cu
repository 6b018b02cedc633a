// `__managed__` module variables (test_managed.cpp): nvcc declares them
// `.global .attribute(.managed)`; the host reads and writes them through the address
// cuModuleGetGlobal returns, kernels update the same bytes.

__managed__ unsigned counter = 7;
__managed__ int histogram[8] = {1, 2, 3, 4, 5, 6, 7, 8};
__device__ int plain = 3;  // an ordinary module variable, for contrast

// Adds each input value into the histogram bin of its low three bits and counts the launches.
extern "C" __global__ void accumulate(const int* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&histogram[in[i] & 7], in[i]);
  if (i == 0) atomicAdd(&counter, 1u);
}

// Each bin times (counter + plain), read from the managed counter the host may have written.
extern "C" __global__ void scale() {
  if (threadIdx.x < 8) histogram[threadIdx.x] *= static_cast<int>(counter) + plain;
}
