// The two GEMM samples' common half (matmul, tensor_gemm): the host reference product and one
// device run of C = A * B. Row-major float matrices, A m x k, B k x n, C m x n; the kernel takes
// (const float* A, const float* B, float* C, int m, int n, int k). Each sample keeps what makes
// it a test of its own: the input values, the kernel, the launch shape and the tolerance.
#pragma once

#include "sample_common.h"

namespace cusnap::samples {

// Accumulated in double, so that the reference is exact or far closer than any tolerance the
// samples use.
inline std::vector<float> host_gemm(const std::vector<float>& a, const std::vector<float>& b,
                                    size_t m, size_t n, size_t k) {
  std::vector<float> c(m * n);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (size_t p = 0; p < k; ++p) acc += double(a[i * k + p]) * double(b[p * n + j]);
      c[i * n + j] = static_cast<float>(acc);
    }
  return c;
}

struct GemmLaunch {
  unsigned grid_x, grid_y, block_x, block_y;
};

// Loads `image`, runs `kernel` once on copies of a and b, and returns C. C starts as NaN, so an
// output the kernel never writes cannot pass a comparison.
inline std::vector<float> run_gemm(EmbeddedImage image, const char* kernel_name,
                                   const std::vector<float>& a, const std::vector<float>& b,
                                   size_t m, size_t n, size_t k, GemmLaunch shape) {
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, image.data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, kernel_name));

  std::vector<float> c(m * n);
  CUdeviceptr d_a, d_b, d_c;
  CU_CHECK(cuMemAlloc(&d_a, a.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_b, b.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_c, c.size() * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_a, a.data(), a.size() * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_b, b.data(), b.size() * sizeof(float)));
  CU_CHECK(cuMemsetD32(d_c, 0x7fc00000u, c.size()));

  int im = int(m), in = int(n), ik = int(k);
  void* params[] = {&d_a, &d_b, &d_c, &im, &in, &ik};
  CU_CHECK(cuLaunchKernel(kernel, shape.grid_x, shape.grid_y, 1, shape.block_x, shape.block_y, 1, 0,
                          nullptr, params, nullptr));
  CU_CHECK(cuCtxSynchronize());
  CU_CHECK(cuMemcpyDtoH(c.data(), d_c, c.size() * sizeof(float)));

  CU_CHECK(cuMemFree(d_a));
  CU_CHECK(cuMemFree(d_b));
  CU_CHECK(cuMemFree(d_c));
  CU_CHECK(cuModuleUnload(module));
  return c;
}

}  // namespace cusnap::samples
