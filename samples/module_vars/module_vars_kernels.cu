// Module variables the host never touches: a __constant__ table set only by its initializer (in
// the image) and a __device__ counter that only `bump` writes. `use` reads both.
constexpr int kTable = 8;
__constant__ int table[kTable] = {3, 1, 4, 1, 5, 9, 2, 6};
__device__ unsigned counter;

// counter += add (one thread).
extern "C" __global__ void bump(unsigned add) {
  if (blockIdx.x == 0 && threadIdx.x == 0) counter += add;
}

// out[i] = table[i % kTable] * counter.
extern "C" __global__ void use(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = table[i % kTable] * static_cast<int>(counter);
}
