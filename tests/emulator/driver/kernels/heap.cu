// Device-side malloc and free (test_device_heap.cpp): each thread allocates a block, fills it,
// a second kernel reads the blocks through the stored pointers, a third frees them.
extern "C" __global__ void heap_fill(int** out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int* p = static_cast<int*>(malloc(n * sizeof(int)));
  if (p != nullptr)
    for (int i = 0; i < n; ++i) p[i] = t * 1000 + i;
  out[t] = p;
}

extern "C" __global__ void heap_sum(int* const* in, long long* sums, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int* p = in[t];
  long long s = -1;
  if (p != nullptr) {
    s = 0;
    for (int i = 0; i < n; ++i) s += p[i];
  }
  sums[t] = s;
}

extern "C" __global__ void heap_release(int** in) {
  free(in[blockIdx.x * blockDim.x + threadIdx.x]);
}
