// matmul: tiled shared-memory SGEMM on a 2-D grid of 16x16 blocks, with sizes that are not
// multiples of the tile. Compared against a double-precision host product with a tolerance
// (the device accumulates in float with fused multiply-adds).
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(matmul_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  // --size scales m; n and k follow so that the default stays small for the emulator.
  Options options = parse_options(argc, argv, 72, " (m; n = m + 13, k = m + 25)");
  const size_t m = options.size, n = m + 13, k = m + 25;
  if (m > 16384) fail_usage("--size must be at most 16384");

  std::vector<float> a(m * k), b(k * n), c(m * n);
  Lcg rng(4);
  for (float& v : a) v = rng.next_float(-1.0f, 1.0f);
  for (float& v : b) v = rng.next_float(-1.0f, 1.0f);
  std::vector<float> reference(m * n);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (size_t p = 0; p < k; ++p) acc += double(a[i * k + p]) * double(b[p * n + j]);
      reference[i * n + j] = static_cast<float>(acc);
    }
  }
  maybe_inject_error(options, reference);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, matmul_kernels_image().data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "sgemm_tiled"));

  CUdeviceptr d_a, d_b, d_c;
  CU_CHECK(cuMemAlloc(&d_a, a.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_b, b.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_c, c.size() * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_a, a.data(), a.size() * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_b, b.data(), b.size() * sizeof(float)));
  CU_CHECK(cuMemsetD32(d_c, 0x7fc00000u, c.size()));  // NaN: unwritten outputs cannot pass

  int im = int(m), in = int(n), ik = int(k);
  void* params[] = {&d_a, &d_b, &d_c, &im, &in, &ik};
  CU_CHECK(cuLaunchKernel(kernel, blocks_for(n, 16), blocks_for(m, 16), 1, 16, 16, 1, 0, nullptr,
                          params, nullptr));
  CU_CHECK(cuCtxSynchronize());
  CU_CHECK(cuMemcpyDtoH(c.data(), d_c, c.size() * sizeof(float)));

  // Float accumulation of k products of magnitude <= 1: the worst-case rounding error grows like
  // k * 2^-24 * (partial sums of a few units); 1e-5 * k stays above that and far below the O(1)
  // error of a dropped or misplaced tile.
  const double tolerance = 1e-5 * double(k);
  double max_error = 0.0;
  bool ok = compare_close(reference, c, tolerance, 0.0, &max_error);

  CU_CHECK(cuMemFree(d_a));
  CU_CHECK(cuMemFree(d_b));
  CU_CHECK(cuMemFree(d_c));
  CU_CHECK(cuModuleUnload(module));
  char detail[160];
  std::snprintf(detail, sizeof(detail), "%zux%zux%zu, max abs error %.3g (tolerance %.3g)", m, n, k,
                max_error, tolerance);
  return finish("matmul", ok, detail);
}
