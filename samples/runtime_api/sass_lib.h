// The SASS-only library's one entry point (see sass_lib.cu).
#pragma once
#include <cuda_runtime.h>

// out[i] = in[0] + ... + in[i], for 0 < n <= 1024, on `stream`.
cudaError_t sass_lib_prefix_sum(const int* in, int* out, int n, cudaStream_t stream);
