// softmax: numerically stable row softmax (max, expf, sum, scale) with warp-shuffle block
// reductions. Compared with a double-precision host softmax within a tolerance.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(softmax_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 64, " (rows; cols = 333)");
  const size_t rows = options.size, cols = 333;
  if (rows > 0x7fffffff) fail_usage("--size must fit in an int");

  std::vector<float> in(rows * cols), out(rows * cols);
  Lcg rng(6);
  for (float& v : in) v = rng.next_float(-20.0f, 20.0f);
  std::vector<float> reference(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    const float* x = &in[r * cols];
    double mx = x[0];
    for (size_t c = 1; c < cols; ++c) mx = std::max(mx, double(x[c]));
    double sum = 0.0;
    for (size_t c = 0; c < cols; ++c) sum += std::exp(double(x[c]) - mx);
    for (size_t c = 0; c < cols; ++c)
      reference[r * cols + c] = float(std::exp(double(x[c]) - mx) / sum);
  }
  maybe_inject_error(options, reference);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, softmax_kernels_image().data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "softmax_rows"));

  const size_t bytes = in.size() * sizeof(float);
  CUdeviceptr d_in, d_out;
  CU_CHECK(cuMemAlloc(&d_in, bytes));
  CU_CHECK(cuMemAlloc(&d_out, bytes));
  CU_CHECK(cuMemcpyHtoD(d_in, in.data(), bytes));
  int icols = static_cast<int>(cols);
  void* params[] = {&d_in, &d_out, &icols};
  CU_CHECK(cuLaunchKernel(kernel, static_cast<unsigned>(rows), 1, 1, 128, 1, 1, 0, nullptr, params,
                          nullptr));
  CU_CHECK(cuMemcpyDtoH(out.data(), d_out, bytes));

  // ex2.approx.ftz has ~2 ulp relative error, plus float sums over 333 terms: 1e-5 relative is
  // comfortably above that and far below any real bug. Tiny probabilities may flush to zero.
  double max_error = 0.0;
  bool ok = compare_close(reference, out, 1e-7, 1e-5, &max_error);
  if (ok) {
    for (size_t r = 0; r < rows && ok; ++r) {
      double sum = 0.0;
      for (size_t c = 0; c < cols; ++c) sum += out[r * cols + c];
      if (std::fabs(sum - 1.0) > 1e-4) {
        std::printf("MISMATCH at row %zu: probabilities sum to %.9g\n", r, sum);
        ok = false;
      }
    }
  }

  CU_CHECK(cuMemFree(d_in));
  CU_CHECK(cuMemFree(d_out));
  CU_CHECK(cuModuleUnload(module));
  char detail[128];
  std::snprintf(detail, sizeof(detail), "%zu rows x %zu cols, max abs error %.3g", rows, cols,
                max_error);
  return finish("softmax", ok, detail);
}
