// Relocatable device code for the driver linker tests: link_a uses what link_b defines.
// Both have a static `twist` and a printf (a `$str` each): private names the link must keep apart.
#include <cstdio>

extern __device__ int bias;
__device__ int scale(int x);

static __device__ __noinline__ int twist(int x) { return x ^ 1; }

extern "C" __global__ void linked_kernel(int* out, int verbose) {
  int t = threadIdx.x;
  out[t] = scale(t) + bias + twist(0);
  if (verbose && t == 0) printf("a: %d\n", out[t]);
}
