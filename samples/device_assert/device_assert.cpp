// device_assert: a program that trips a device-side assert on purpose and checks that the
// driver reports it the documented way. A kernel computes y = 3x + 1 (copied back and checked
// exactly), then a second kernel asserts that every y is positive while one element is not; the
// next cuCtxSynchronize must return CUDA_ERROR_ASSERT, and the error must be sticky (a later
// copy fails with it too). The run passes when both the results and the error are as expected.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(device_assert_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 12);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");

  // x is positive except for one element, so that y there is 3 * -1 + 1 = -2.
  std::vector<int> x(n), y(n), reference(n);
  Lcg rng(7);
  for (size_t i = 0; i < n; ++i) x[i] = 1 + static_cast<int>(rng.next_u32() % 1000);
  const size_t bad = n / 3;
  x[bad] = -1;
  for (size_t i = 0; i < n; ++i) reference[i] = 3 * x[i] + 1;
  maybe_inject_error(options, reference);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, device_assert_kernels_image().data));
  CUfunction affine, require_positive;
  CU_CHECK(cuModuleGetFunction(&affine, module, "affine"));
  CU_CHECK(cuModuleGetFunction(&require_positive, module, "require_positive"));

  const size_t bytes = n * sizeof(int);
  CUdeviceptr d_x, d_y;
  CU_CHECK(cuMemAlloc(&d_x, bytes));
  CU_CHECK(cuMemAlloc(&d_y, bytes));
  CU_CHECK(cuMemcpyHtoD(d_x, x.data(), bytes));
  int count = static_cast<int>(n);
  const unsigned block = 128;
  void* affine_params[] = {&d_x, &d_y, &count};
  CU_CHECK(cuLaunchKernel(affine, blocks_for(n, block), 1, 1, block, 1, 1, 0, nullptr,
                          affine_params, nullptr));
  CU_CHECK(cuMemcpyDtoH(y.data(), d_y, bytes));
  bool ok = compare_exact(reference, y);

  // The assert, on purpose: y[bad] is -2.
  void* check_params[] = {&d_y, &count};
  CU_CHECK(cuLaunchKernel(require_positive, blocks_for(n, block), 1, 1, block, 1, 1, 0, nullptr,
                          check_params, nullptr));
  CUresult sync = cuCtxSynchronize();
  if (sync != CUDA_ERROR_ASSERT) {
    std::printf(
        "MISMATCH: cuCtxSynchronize after the assert returned %s, expected "
        "CUDA_ERROR_ASSERT\n",
        error_name(sync).c_str());
    ok = false;
  }
  // Sticky: the context stays unusable.
  int probe = 0;
  CUresult after = cuMemcpyDtoH(&probe, d_y, sizeof probe);
  if (after != CUDA_ERROR_ASSERT) {
    std::printf("MISMATCH: a copy after the assert returned %s, expected CUDA_ERROR_ASSERT\n",
                error_name(after).c_str());
    ok = false;
  }
  // The context is dead: nothing is freed (the process ends, which releases everything).
  return finish("device_assert", ok,
                "n=" + std::to_string(n) + ", exact, assert reported as CUDA_ERROR_ASSERT");
}
