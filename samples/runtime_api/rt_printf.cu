// Device-side printf: 4 blocks of 8 threads print one line each ("rt_printf: block B thread T
// value V"); the runtime flushes the device buffer at cudaDeviceSynchronize. scripts/gpu-check
// counts the lines (32) in the program's stdout; their order is not defined.
#include <cstdio>

#include "rt_check.h"

__global__ void speak(int base) {
  printf("rt_printf: block %d thread %d value %d\n", blockIdx.x, threadIdx.x,
         base + blockIdx.x * 100 + threadIdx.x);
}

int main() {
  speak<<<4, 8>>>(5000);
  RT_CHECK_LAUNCH();
  RT_CHECK(cudaDeviceSynchronize());
  std::fflush(stdout);
  return rt_finish("rt_printf", 0);
}
