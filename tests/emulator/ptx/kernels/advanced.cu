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

// Vector atomics: on sm_90 nvcc emits atom.global.add.v2.f32 / .v4.f32 for these (an atom even
// where the old value is unused); sm_80 has no vector atomicAdd: one per element.
extern "C" __global__ void vector_atomics(float2* sum2, float4* sum4, float2* old2, float4* old4,
                                          float4* red4, int slots) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int s = t % slots;
  float2 v = make_float2((t + 1) * 0.5f, (t + 1) * 0.25f);
  float4 w = make_float4(t + 1.0f, (t + 1) * 2.0f, (t + 1) * 0.125f, (t + 1) * 4.0f);
#if __CUDA_ARCH__ >= 900
  old2[t] = atomicAdd(sum2 + s, v);
  old4[t] = atomicAdd(sum4 + s, w);
  atomicAdd(red4 + s, w);
#else
  old2[t] = make_float2(atomicAdd(&sum2[s].x, v.x), atomicAdd(&sum2[s].y, v.y));
  old4[t] = make_float4(atomicAdd(&sum4[s].x, w.x), atomicAdd(&sum4[s].y, w.y),
                        atomicAdd(&sum4[s].z, w.z), atomicAdd(&sum4[s].w, w.w));
  atomicAdd(&red4[s].x, w.x);
  atomicAdd(&red4[s].y, w.y);
  atomicAdd(&red4[s].z, w.z);
  atomicAdd(&red4[s].w, w.w);
#endif
}

// alloca: a per-thread buffer of a run-time size, and a callee whose alloca ends with it (called
// in a loop that would overflow the stack if it did not).
__device__ __noinline__ int weighted(int n, int seed) {
  int* buf = static_cast<int*>(alloca(n * sizeof(int)));
  for (int i = 0; i < n; ++i) buf[i] = i * seed;
  int s = 0;
  for (int i = 0; i < n; ++i) s += buf[n - 1 - i] * (i + 1);
  return s;
}

extern "C" __global__ void alloca_sums(int* out, int n, int rounds) {
  int* mine = static_cast<int*>(alloca(n * sizeof(int)));
  for (int i = 0; i < n; ++i) mine[i] = static_cast<int>(threadIdx.x) + i;
  int total = 0;
  for (int r = 0; r < rounds; ++r) total += weighted(n, static_cast<int>(threadIdx.x) + r);
  for (int i = 0; i < n; ++i) total += mine[i];
  out[threadIdx.x] = total;
}
