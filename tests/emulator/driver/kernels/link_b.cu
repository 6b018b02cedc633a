// Relocatable device code for the driver linker tests: what link_a.cu uses.
#include <cstdio>

__device__ int bias = 100;

static __device__ __noinline__ int twist(int x) { return x ^ 2; }

__device__ int scale(int x) {
  if (x == 1000) printf("b: %d\n", x);
  return 3 * x + twist(0);
}
