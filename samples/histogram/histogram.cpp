// histogram: byte histograms with shared-memory atomics (privatised per block) and with global
// atomics (atomicAdd, atomicMax); both compared exactly with the host.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(histogram_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 16);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");
  constexpr int kBins = 256;

  // Skewed data (many hits on few bins) so that atomics really collide.
  std::vector<unsigned char> data(n);
  Lcg rng(5);
  for (size_t i = 0; i < n; ++i) {
    uint32_t r = rng.next_u32();
    data[i] = static_cast<unsigned char>((r & 3) == 0 ? (r >> 8) & 0xff : (r >> 8) & 0x7);
  }
  // Layout of both reference and result: shared-variant bins, global-variant bins, last index.
  std::vector<int> reference(3 * kBins, 0);
  for (int b = 0; b < kBins; ++b) reference[2 * kBins + b] = -1;
  for (size_t i = 0; i < n; ++i) {
    reference[data[i]] += 1;
    reference[kBins + data[i]] += 1;
    reference[2 * kBins + data[i]] = static_cast<int>(i);
  }
  maybe_inject_error(options, reference);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, histogram_kernels_image().data));
  CUfunction shared_kernel, global_kernel;
  CU_CHECK(cuModuleGetFunction(&shared_kernel, module, "histogram_shared"));
  CU_CHECK(cuModuleGetFunction(&global_kernel, module, "histogram_global"));

  CUdeviceptr d_data, d_out;
  CU_CHECK(cuMemAlloc(&d_data, n));
  CU_CHECK(cuMemAlloc(&d_out, 3 * kBins * sizeof(int)));
  CU_CHECK(cuMemcpyHtoD(d_data, data.data(), n));
  CU_CHECK(cuMemsetD32(d_out, 0, 2 * kBins));
  CU_CHECK(cuMemsetD32(d_out + 2 * kBins * sizeof(int), 0xffffffffu, kBins));

  int count = static_cast<int>(n);
  CUdeviceptr d_shared_bins = d_out, d_global_bins = d_out + kBins * sizeof(int);
  CUdeviceptr d_last = d_out + 2 * kBins * sizeof(int);
  const unsigned blocks = std::min<unsigned>(blocks_for(n, 256), 32);
  void* shared_params[] = {&d_data, &count, &d_shared_bins};
  CU_CHECK(
      cuLaunchKernel(shared_kernel, blocks, 1, 1, 256, 1, 1, 0, nullptr, shared_params, nullptr));
  void* global_params[] = {&d_data, &count, &d_global_bins, &d_last};
  CU_CHECK(
      cuLaunchKernel(global_kernel, blocks, 1, 1, 256, 1, 1, 0, nullptr, global_params, nullptr));
  std::vector<int> found(3 * kBins);
  CU_CHECK(cuMemcpyDtoH(found.data(), d_out, found.size() * sizeof(int)));
  bool ok = compare_exact(reference, found);

  CU_CHECK(cuMemFree(d_data));
  CU_CHECK(cuMemFree(d_out));
  CU_CHECK(cuModuleUnload(module));
  return finish("histogram", ok, "n=" + std::to_string(n) + ", 256 bins, exact");
}
