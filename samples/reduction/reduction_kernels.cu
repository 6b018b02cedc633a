// Two-pass block reductions: a grid-stride accumulation per thread, a shared-memory tree down to
// one warp (dynamic shared memory, sized by the launch), then warp shuffles. Pass 1 writes one
// partial per block, pass 2 (one block) reduces the partials.
struct SumOp {
  __device__ static unsigned identity() { return 0u; }
  __device__ static unsigned combine(unsigned a, unsigned b) { return a + b; }  // wraps mod 2^32
};

struct MaxOp {
  __device__ static int identity() { return -2147483647 - 1; }
  __device__ static int combine(int a, int b) { return a > b ? a : b; }
};

template <typename Op, typename T>
__device__ void block_reduce(const T* in, T* out, int n) {
  extern __shared__ unsigned char shared_bytes[];
  T* shared = reinterpret_cast<T*>(shared_bytes);
  T value = Op::identity();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    value = Op::combine(value, in[i]);
  }
  shared[threadIdx.x] = value;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride >= 32; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] = Op::combine(shared[threadIdx.x], shared[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    value = shared[threadIdx.x];
    for (int offset = 16; offset > 0; offset /= 2) {
      value = Op::combine(value, __shfl_down_sync(0xffffffffu, value, offset));
    }
    if (threadIdx.x == 0) out[blockIdx.x] = value;
  }
}

// blockDim.x must be a power of two >= 64 (the host launches 256 and 64).
extern "C" __global__ void reduce_sum_u32(const unsigned* in, unsigned* out, int n) {
  block_reduce<SumOp>(in, out, n);
}

extern "C" __global__ void reduce_max_i32(const int* in, int* out, int n) {
  block_reduce<MaxOp>(in, out, n);
}
