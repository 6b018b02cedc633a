// many_launches: thousands of tiny dependent launches on one stream, synchronised once at the
// end; the input for replay-overhead benchmarks. Reports launches per second (submission and
// completion together) and checks the recurrence exactly.
#include <chrono>

#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(many_launches_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 2000, " (number of launches)");
  const size_t launches = options.size;
  if (launches > 0xffffffffu) fail_usage("--size must fit in 32 bits");
  constexpr int kElements = 64;

  std::vector<unsigned> reference(kElements);
  for (int i = 0; i < kElements; ++i) reference[i] = static_cast<unsigned>(i) * 7u;
  std::vector<unsigned> initial = reference;
  for (size_t k = 0; k < launches; ++k) {
    for (int i = 0; i < kElements; ++i)
      reference[i] = reference[i] * 3u + unsigned(k) + unsigned(i);
  }
  maybe_inject_error(options, reference);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, many_launches_kernels_image().data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "step"));
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));

  CUdeviceptr d_state;
  CU_CHECK(cuMemAlloc(&d_state, kElements * sizeof(unsigned)));
  CU_CHECK(cuMemcpyHtoD(d_state, initial.data(), kElements * sizeof(unsigned)));

  int n = kElements;
  unsigned index = 0;
  void* params[] = {&d_state, &n, &index};
  auto start = std::chrono::steady_clock::now();
  for (size_t k = 0; k < launches; ++k) {
    index = static_cast<unsigned>(k);  // parameters are copied at launch time
    CU_CHECK(cuLaunchKernel(kernel, 1, 1, 1, kElements, 1, 1, 0, stream, params, nullptr));
  }
  CU_CHECK(cuStreamSynchronize(stream));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<unsigned> found(kElements);
  CU_CHECK(cuMemcpyDtoH(found.data(), d_state, kElements * sizeof(unsigned)));
  bool ok = compare_exact(reference, found);

  CU_CHECK(cuMemFree(d_state));
  CU_CHECK(cuStreamDestroy(stream));
  CU_CHECK(cuModuleUnload(module));
  char detail[128];
  std::snprintf(detail, sizeof(detail), "%zu launches in %.3f s (%.0f launches/s), exact", launches,
                seconds, seconds > 0 ? double(launches) / seconds : 0.0);
  return finish("many_launches", ok, detail);
}
