// printf, noinline calls, constant memory, cooperative groups, syncwarp, assert, bad access.
#include <cassert>
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__constant__ float coeffs[8];
__device__ int counter;
__device__ float table[4] = {1.5f, 2.5f, 3.5f, 4.5f};
__device__ float* table_ptr = table;

__device__ __noinline__ float poly(float x, int degree) {
  float r = 0.0f;
  for (int d = degree; d >= 0; --d) r = r * x + coeffs[d];
  return r;
}

__device__ __noinline__ int factorial(int n) { return n <= 1 ? 1 : n * factorial(n - 1); }

extern "C" __global__ void use_constant(const float* x, float* y, int* facts, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = poly(x[i], 7) + table_ptr[i & 3];
    facts[i] = factorial(i % 10);
    atomicAdd(&counter, 1);
  }
}

extern "C" __global__ void say_hello(int base, double d, const char* who) {
  printf("hello %d from block %d thread %d: %.3f %s %c %5.1e|%-4d|%x|%lld\n", base, blockIdx.x,
         threadIdx.x, d, who, 'A' + threadIdx.x, d * 1000.0, threadIdx.x, 255 + base,
         (long long)base * 1000000000LL);
}

extern "C" __global__ void grid_sync_sum(const int* in, int* partial, int* out, int n) {
  cg::grid_group grid = cg::this_grid();
  int i = grid.thread_rank();
  int v = i < n ? in[i] : 0;
  // Each block writes its sum; after the grid barrier block 0 adds up all partial sums.
  __shared__ int s;
  if (threadIdx.x == 0) s = 0;
  __syncthreads();
  atomicAdd(&s, v);
  __syncthreads();
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
  grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    int t = 0;
    for (int b = 0; b < gridDim.x; ++b) t += partial[b];
    *out = t;
  }
}

extern "C" __global__ void syncwarp_exchange(int* out) {
  __shared__ int buf[64];
  int lane = threadIdx.x & 31;
  // Independent-thread-scheduling style: the two halves of the warp take different paths,
  // each writes, and a __syncwarp on each path makes the writes visible to the other half.
  if (lane < 16) {
    buf[threadIdx.x] = lane * 3;
    __syncwarp();
    out[threadIdx.x] = buf[threadIdx.x ^ 16];
  } else {
    buf[threadIdx.x] = lane * 5;
    __syncwarp();
    out[threadIdx.x] = buf[threadIdx.x ^ 16];
  }
  unsigned active = __activemask();
  int idx = __shfl_sync(0xffffffffu, lane * 7, 3);
  int up = __shfl_up_sync(0xffffffffu, lane, 1);
  int bcount = __syncthreads_count(lane & 1);
  out[64 + threadIdx.x] = idx + up * 1000 + (active == 0xffffffffu ? 100000 : 0) + bcount * 10000000;
}

extern "C" __global__ void checked(const int* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) assert(in[i] >= 0);
}

extern "C" __global__ void out_of_bounds(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  p[i + n] = 1.0f;  // past the end for every thread when n is the allocation size
}

extern "C" __global__ void math_mix(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i * 4 + 0] = __fdividef(v, 3.0f) + v / 7.0f;
    y[i * 4 + 1] = __sinf(v) + __logf(v + 2.0f);
    y[i * 4 + 2] = rsqrtf(v + 1.0f) + sqrtf(v);
    y[i * 4 + 3] = fminf(v, 0.5f) + copysignf(1.0f, v - 0.5f) + fabsf(v - 1.0f);
  }
}
