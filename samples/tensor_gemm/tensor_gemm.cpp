// tensor_gemm: an sm_80 tensor-core GEMM (ldmatrix + mma.sync m16n8k16 f16 -> f32) on a 2-D grid
// of 32x32 tiles, with sizes that are not tile multiples. The inputs are multiples of 1/64 in
// [-1, 1], exact in f16, so every product and partial sum is exact in f32 (k <= 4096): the result
// must equal the host GEMM bit for bit, whatever order the tensor cores accumulate in.
#include <cmath>

#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(tensor_gemm_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 80, " (m; n = m + 24, k = m + 40)");
  const size_t m = options.size, n = m + 24, k = m + 40;
  if (k > 4096) fail_usage("--size must be at most 4056 (exact f32 sums need k <= 4096)");

  std::vector<float> a(m * k), b(k * n), c(m * n);
  Lcg rng(11);
  auto sixty_fourths = [&] { return std::round(rng.next_float(-64.0f, 64.0f)) / 64.0f; };
  for (float& v : a) v = sixty_fourths();
  for (float& v : b) v = sixty_fourths();
  std::vector<float> reference(m * n);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (size_t p = 0; p < k; ++p) acc += double(a[i * k + p]) * double(b[p * n + j]);
      reference[i * n + j] = static_cast<float>(acc);
    }
  maybe_inject_error(options, reference);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, tensor_gemm_kernels_image().data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "hgemm_mma"));

  CUdeviceptr d_a, d_b, d_c;
  CU_CHECK(cuMemAlloc(&d_a, a.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_b, b.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_c, c.size() * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_a, a.data(), a.size() * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_b, b.data(), b.size() * sizeof(float)));
  CU_CHECK(cuMemsetD32(d_c, 0x7fc00000u, c.size()));  // NaN: unwritten outputs cannot pass

  int im = int(m), in = int(n), ik = int(k);
  void* params[] = {&d_a, &d_b, &d_c, &im, &in, &ik};
  CU_CHECK(cuLaunchKernel(kernel, blocks_for(n, 32), blocks_for(m, 32), 1, 128, 1, 1, 0, nullptr,
                          params, nullptr));
  CU_CHECK(cuCtxSynchronize());
  CU_CHECK(cuMemcpyDtoH(c.data(), d_c, c.size() * sizeof(float)));
  double max_error = 0.0;
  bool ok = compare_close(reference, c, 0.0, 0.0, &max_error);

  CU_CHECK(cuMemFree(d_a));
  CU_CHECK(cuMemFree(d_b));
  CU_CHECK(cuMemFree(d_c));
  CU_CHECK(cuModuleUnload(module));
  char detail[160];
  std::snprintf(detail, sizeof(detail), "%zux%zux%zu f16 mma.sync, max abs error %.3g (exact)", m,
                n, k, max_error);
  return finish("tensor_gemm", ok, detail);
}
