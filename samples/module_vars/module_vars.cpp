// module_vars: kernels that communicate through module variables the host never looks up (no
// cuModuleGetGlobal): `bump` adds to a __device__ counter twice, then `use` reads it together
// with a __constant__ table that only the image's initializer sets. The same kernels run from a
// fatbin module and from a PTX module (each module has its own variables); the output is checked
// exactly. A snapshot of `use` must hold the counter and the table, or a standalone replay of
// it reads a fresh module's zero counter.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(module_vars_kernels)
CUSNAP_EMBEDDED_IMAGE(module_vars_ptx)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 12);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");
  static const int kTable[8] = {3, 1, 4, 1, 5, 9, 2, 6};

  PrimaryContext context;
  const void* images[] = {module_vars_kernels_image().data, module_vars_ptx_image().data};
  const char* names[] = {"fatbin", "ptx"};
  CUdeviceptr d_out;
  CU_CHECK(cuMemAlloc(&d_out, n * sizeof(int)));
  int count = static_cast<int>(n);
  const unsigned block = 128;
  bool ok = true;
  for (int m = 0; m < 2; ++m) {
    CUmodule module;
    CU_CHECK(cuModuleLoadData(&module, images[m]));
    CUfunction bump, use;
    CU_CHECK(cuModuleGetFunction(&bump, module, "bump"));
    CU_CHECK(cuModuleGetFunction(&use, module, "use"));
    // Different amounts per module: a replay that mixed up the two counters would show it.
    unsigned adds[2] = {3u + 2u * m, 4u};
    for (unsigned& add : adds) {
      void* params[] = {&add};
      CU_CHECK(cuLaunchKernel(bump, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr));
    }
    void* params[] = {&d_out, &count};
    CU_CHECK(
        cuLaunchKernel(use, blocks_for(n, block), 1, 1, block, 1, 1, 0, nullptr, params, nullptr));
    std::vector<int> found(n), reference(n);
    const int total = static_cast<int>(adds[0] + adds[1]);
    for (size_t i = 0; i < n; ++i) reference[i] = kTable[i % 8] * total;
    maybe_inject_error(options, reference);
    CU_CHECK(cuMemcpyDtoH(found.data(), d_out, n * sizeof(int)));
    if (!compare_exact(reference, found)) {
      std::printf("module_vars: the %s module's output differs\n", names[m]);
      ok = false;
    }
    CU_CHECK(cuModuleUnload(module));
  }
  CU_CHECK(cuMemFree(d_out));
  return finish("module_vars", ok, "n=" + std::to_string(n) + ", fatbin and PTX modules, exact");
}
