// reduction: sum (mod 2^32) and maximum of an integer array, each in two passes (many blocks to
// partials, then one block), i.e. four launches with dynamic shared memory and warp shuffles.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(reduction_kernels)

using namespace cusnap::samples;

namespace {

// Pass 1 with `blocks` x 256 threads into d_partial, pass 2 with one block of 64 threads into
// d_result. Returns the single value.
template <typename T>
T two_pass(CUfunction kernel, CUdeviceptr d_in, CUdeviceptr d_partial, CUdeviceptr d_result, int n,
           unsigned blocks) {
  const unsigned block1 = 256, block2 = 64;
  int count = n;
  void* params1[] = {&d_in, &d_partial, &count};
  CU_CHECK(cuLaunchKernel(kernel, blocks, 1, 1, block1, 1, 1, block1 * sizeof(T), nullptr, params1,
                          nullptr));
  int partials = static_cast<int>(blocks);
  void* params2[] = {&d_partial, &d_result, &partials};
  CU_CHECK(
      cuLaunchKernel(kernel, 1, 1, 1, block2, 1, 1, block2 * sizeof(T), nullptr, params2, nullptr));
  T result;
  CU_CHECK(cuMemcpyDtoH(&result, d_result, sizeof(T)));
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 100000);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");

  std::vector<int> data(n);
  Lcg rng(3);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<int>(rng.next_u32() % 2000001u) - 1000000;
  // The maximum sits at a known place so that a reduction that skips elements is caught.
  data[n - 1] = 1000001;

  std::vector<unsigned> reference(2, 0u);
  int max_value = data[0];
  for (int v : data) {
    reference[0] += static_cast<unsigned>(v);
    max_value = std::max(max_value, v);
  }
  reference[1] = static_cast<unsigned>(max_value);
  maybe_inject_error(options, reference);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, reduction_kernels_image().data));
  CUfunction sum_kernel, max_kernel;
  CU_CHECK(cuModuleGetFunction(&sum_kernel, module, "reduce_sum_u32"));
  CU_CHECK(cuModuleGetFunction(&max_kernel, module, "reduce_max_i32"));

  const unsigned blocks = std::min<unsigned>(blocks_for(n, 256), 48);
  CUdeviceptr d_in, d_partial, d_result;
  CU_CHECK(cuMemAlloc(&d_in, n * sizeof(int)));
  CU_CHECK(cuMemAlloc(&d_partial, blocks * sizeof(int)));
  CU_CHECK(cuMemAlloc(&d_result, sizeof(int)));
  CU_CHECK(cuMemcpyHtoD(d_in, data.data(), n * sizeof(int)));

  std::vector<unsigned> found(2);
  found[0] = two_pass<unsigned>(sum_kernel, d_in, d_partial, d_result, static_cast<int>(n), blocks);
  found[1] = static_cast<unsigned>(
      two_pass<int>(max_kernel, d_in, d_partial, d_result, static_cast<int>(n), blocks));
  bool ok = compare_exact(reference, found);

  CU_CHECK(cuMemFree(d_in));
  CU_CHECK(cuMemFree(d_partial));
  CU_CHECK(cuMemFree(d_result));
  CU_CHECK(cuModuleUnload(module));
  return finish("reduction", ok,
                "n=" + std::to_string(n) + ", sum=" + std::to_string(found[0]) +
                    ", max=" + std::to_string(static_cast<int>(found[1])) + ", exact");
}
