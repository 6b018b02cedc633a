// Shared by the runtime-API programs: every runtime call is checked, and a program exits 2 on a
// CUDA error (naming the call), 1 when a result differs from its host reference, 0 after
// printing "PASSED". Same exit-code contract as the driver-API samples (samples/README.md).
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define RT_CHECK(call)                                                                    \
  do {                                                                                    \
    cudaError_t rt_check_error = (call);                                                  \
    if (rt_check_error != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,      \
                   cudaGetErrorName(rt_check_error), cudaGetErrorString(rt_check_error)); \
      std::exit(2);                                                                       \
    }                                                                                     \
  } while (0)

// The launch itself reports through cudaGetLastError.
#define RT_CHECK_LAUNCH() RT_CHECK(cudaGetLastError())

// Counts mismatches and reports the first few; returns the process exit code.
inline int rt_finish(const char* program, long mismatches) {
  if (mismatches != 0) {
    std::printf("%s: %ld MISMATCHES\n", program, mismatches);
    return 1;
  }
  std::printf("%s: PASSED\n", program);
  return 0;
}

inline void rt_report_mismatch(long& mismatches, const char* what, long index, double got,
                               double expected) {
  if (mismatches++ < 5) {
    std::printf("MISMATCH in %s at index %ld: got %.9g, expected %.9g\n", what, index, got,
                expected);
  }
}
