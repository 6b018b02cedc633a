// 256-bin byte histograms, two ways: per-block private histograms in shared memory merged with
// global atomics, and every increment straight to global memory.
constexpr int kBins = 256;

extern "C" __global__ void histogram_shared(const unsigned char* data, int n, unsigned* bins) {
  __shared__ unsigned local[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    atomicAdd(&local[data[i]], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
    if (local[b] != 0) atomicAdd(&bins[b], local[b]);
  }
}

// Also tracks the largest index seen per bin, to exercise atomicMax on global memory.
extern "C" __global__ void histogram_global(const unsigned char* data, int n, unsigned* bins,
                                            int* last_index) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    atomicAdd(&bins[data[i]], 1u);
    atomicMax(&last_index[data[i]], i);
  }
}
