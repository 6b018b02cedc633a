// vector_add: the smallest complete driver-API program. cuInit, the primary context,
// cuModuleLoadData on an embedded fatbin, cuMemAlloc, a host-to-device copy, one launch, and a
// device-to-host copy checked exactly against the host.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(vector_add_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 14);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");

  std::vector<float> a(n), b(n), c(n), reference(n);
  Lcg rng(1);
  for (size_t i = 0; i < n; ++i) {
    a[i] = rng.next_float(-100.0f, 100.0f);
    b[i] = rng.next_float(-100.0f, 100.0f);
    reference[i] = a[i] + b[i];
  }
  maybe_inject_error(options, reference);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, vector_add_kernels_image().data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "vector_add"));

  const size_t bytes = n * sizeof(float);
  CUdeviceptr d_a, d_b, d_c;
  CU_CHECK(cuMemAlloc(&d_a, bytes));
  CU_CHECK(cuMemAlloc(&d_b, bytes));
  CU_CHECK(cuMemAlloc(&d_c, bytes));
  CU_CHECK(cuMemcpyHtoD(d_a, a.data(), bytes));
  CU_CHECK(cuMemcpyHtoD(d_b, b.data(), bytes));

  int count = static_cast<int>(n);
  void* params[] = {&d_a, &d_b, &d_c, &count};
  const unsigned block = 256;
  CU_CHECK(
      cuLaunchKernel(kernel, blocks_for(n, block), 1, 1, block, 1, 1, 0, nullptr, params, nullptr));
  CU_CHECK(cuMemcpyDtoH(c.data(), d_c, bytes));

  bool ok = compare_exact(reference, c);
  CU_CHECK(cuMemFree(d_a));
  CU_CHECK(cuMemFree(d_b));
  CU_CHECK(cuMemFree(d_c));
  CU_CHECK(cuModuleUnload(module));
  return finish("vector_add", ok, "n=" + std::to_string(n) + ", exact");
}
