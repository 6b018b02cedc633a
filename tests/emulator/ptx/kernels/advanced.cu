// Function pointers and virtual calls, cp.async, redux/elect (sm_80+/sm_90), intra-warp
// producer/consumer that needs independent thread scheduling, local arrays, __syncthreads_or.
#include <cuda_pipeline.h>

__device__ int square(int x) { return x * x; }
__device__ int cube(int x) { return x * x * x; }

struct Shape {
  __device__ virtual int area(int s) const { return s; }
};
struct Square : Shape {
  __device__ int area(int s) const override { return s * s; }
};

extern "C" __global__ void indirect_calls(int* out, int sel) {
  int (*fns[2])(int) = {square, cube};
  int t = threadIdx.x;
  out[t] = fns[(t + sel) & 1](t);
  Shape base;
  Square sq;
  const Shape* shapes[2] = {&base, &sq};
  out[64 + t] = shapes[t & 1]->area(t + 1);
}

extern "C" __global__ void async_copy(const float* in, float* out, int n) {
  __shared__ float s[128];
  int t = threadIdx.x;
  __pipeline_memcpy_async(&s[t], &in[t], sizeof(float));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  if (t < n) out[t] = s[blockDim.x - 1 - t] * 2.0f;
}

extern "C" __global__ void warp_reduce_ops(const unsigned* in, unsigned* out) {
  unsigned v = in[threadIdx.x];
  out[threadIdx.x * 4 + 0] = __reduce_add_sync(0xffffffffu, v);
  out[threadIdx.x * 4 + 1] = __reduce_max_sync(0xffffffffu, v);
  out[threadIdx.x * 4 + 2] = __reduce_xor_sync(0xffffffffu, v);
  out[threadIdx.x * 4 + 3] = __match_any_sync(0xffffffffu, v & 3);
}

extern "C" __global__ void intra_warp_flag(volatile int* flag, int* out) {
  if (threadIdx.x == 0) {
    while (*flag == 0) {
    }
    out[0] = *flag + out[1];
  } else if (threadIdx.x == 1) {
    out[1] = 5;
    __threadfence();
    *flag = 42;
  }
}

extern "C" __global__ void local_array(const int* in, int* out, int n) {
  int buf[24];
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  for (int i = 0; i < 24; ++i) buf[i] = in[t] * i;
  int k = in[t] & 15;  // dynamic index: the array must live in local memory
  int s = 0;
  for (int i = k; i < 24; i += 3) s += buf[i] ^ buf[(i * 7) % 24];
  out[t] = s + __syncthreads_or(k == 3) * 1000000;
}
