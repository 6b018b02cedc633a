// launch_ex: cuLaunchKernelEx with launch attributes (cooperative, priority) on a
// prioritised stream, and cuLaunchCooperativeKernel, for a kernel that synchronises the whole
// grid with cooperative_groups::this_grid().sync(). Device printf output is flushed at
// synchronisation and checked by the test.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(launch_ex_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 4000);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");
  // Few blocks, so that all of them are co-resident on any GPU (a cooperative launch requires it).
  constexpr unsigned kBlocks = 4, kThreads = 128;
  const int salt_ex = 11, salt_coop = 29;

  std::vector<int> reference(2 * n);
  for (size_t i = 0; i < n; ++i) {
    int mirrored = static_cast<int>(n - 1 - i);
    reference[i] = (mirrored * 3 + salt_ex) - (static_cast<int>(i) * 3 + salt_ex);
    reference[n + i] = (mirrored * 3 + salt_coop) - (static_cast<int>(i) * 3 + salt_coop);
  }
  maybe_inject_error(options, reference);

  PrimaryContext context;
  int cooperative = 0;
  CU_CHECK(
      cuDeviceGetAttribute(&cooperative, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, context.device()));
  if (!cooperative) {
    std::fprintf(stderr, "error: device does not support cooperative launches\n");
    return 2;
  }
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, launch_ex_kernels_image().data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "two_phase"));

  int least_priority = 0, greatest_priority = 0;
  CU_CHECK(cuCtxGetStreamPriorityRange(&least_priority, &greatest_priority));
  CUstream stream;
  CU_CHECK(cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, greatest_priority));

  CUdeviceptr d_scratch, d_out;
  CU_CHECK(cuMemAlloc(&d_scratch, n * sizeof(int)));
  CU_CHECK(cuMemAlloc(&d_out, 2 * n * sizeof(int)));

  // 1) cuLaunchKernelEx with attributes.
  CUdeviceptr out_ex = d_out;
  int count = static_cast<int>(n), salt = salt_ex;
  void* params_ex[] = {&d_scratch, &out_ex, &count, &salt};
  CUlaunchAttribute attributes[2] = {};
  attributes[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attributes[0].value.cooperative = 1;
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attributes[1].value.priority = greatest_priority;
  CUlaunchConfig config = {};
  config.gridDimX = kBlocks;
  config.gridDimY = 1;
  config.gridDimZ = 1;
  config.blockDimX = kThreads;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = 0;
  config.hStream = stream;
  config.attrs = attributes;
  config.numAttrs = 2;
  CU_CHECK(cuLaunchKernelEx(&config, kernel, params_ex, nullptr));

  // 2) The older cooperative entry point, same stream (so it is ordered after the first).
  CUdeviceptr out_coop = d_out + n * sizeof(int);
  int salt2 = salt_coop;
  void* params_coop[] = {&d_scratch, &out_coop, &count, &salt2};
  CU_CHECK(
      cuLaunchCooperativeKernel(kernel, kBlocks, 1, 1, kThreads, 1, 1, 0, stream, params_coop));
  CU_CHECK(cuStreamSynchronize(stream));
  std::fflush(stdout);  // device printf lines come first in the output

  std::vector<int> found(2 * n);
  CU_CHECK(cuMemcpyDtoH(found.data(), d_out, found.size() * sizeof(int)));
  bool ok = compare_exact(reference, found);

  CU_CHECK(cuMemFree(d_scratch));
  CU_CHECK(cuMemFree(d_out));
  CU_CHECK(cuStreamDestroy(stream));
  CU_CHECK(cuModuleUnload(module));
  return finish("launch_ex", ok,
                "n=" + std::to_string(n) + ", " + std::to_string(kBlocks) + " blocks, priority " +
                    std::to_string(greatest_priority) + ", exact");
}
