// The GEMM samples' common half (matmul, tensor_gemm, wgmma_gemm): the host reference product and
// one device run of C = A * B. Row-major float matrices, A m x k, B k x n, C m x n; the kernel
// takes (const float* A, const float* B, float* C, int m, int n, int k). Each sample keeps what
// makes it a test of its own: the input values, the kernel, the launch shape and the tolerance.
#pragma once

#include <cmath>
#include <cstdio>

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

// The tensor-core samples (tensor_gemm, wgmma_gemm): m from --size (default 80), n = m + 24,
// k = m + 40, inputs multiples of 1/64 in [-1, 1] (exact in f16, so every product and partial
// sum is exact in f32 for k <= 4096), tiles of `tile` x `tile` on `threads` threads; the result
// must equal the host GEMM bit for bit. `what` names the instruction in the report.
inline int exact_f16_gemm_sample(int argc, char** argv, const char* name, EmbeddedImage image,
                                 const char* kernel, unsigned tile, unsigned threads, uint32_t seed,
                                 const char* what) {
  Options options = parse_options(argc, argv, 80, " (m; n = m + 24, k = m + 40)");
  const size_t m = options.size, n = m + 24, k = m + 40;
  if (k > 4096) fail_usage("--size must be at most 4056 (exact f32 sums need k <= 4096)");
  std::vector<float> a(m * k), b(k * n);
  Lcg rng(seed);
  auto sixty_fourths = [&] { return std::round(rng.next_float(-64.0f, 64.0f)) / 64.0f; };
  for (float& v : a) v = sixty_fourths();
  for (float& v : b) v = sixty_fourths();
  std::vector<float> reference = host_gemm(a, b, m, n, k);
  maybe_inject_error(options, reference);
  PrimaryContext context;
  std::vector<float> c = run_gemm(image, kernel, a, b, m, n, k,
                                  {blocks_for(n, tile), blocks_for(m, tile), threads, 1});
  double max_error = 0.0;
  bool ok = compare_close(reference, c, 0.0, 0.0, &max_error);
  char detail[160];
  std::snprintf(detail, sizeof(detail), "%zux%zux%zu %s, max abs error %.3g (exact)", m, n, k, what,
                max_error);
  return finish(name, ok, detail);
}

}  // namespace cusnap::samples
