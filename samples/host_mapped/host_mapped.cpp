// host_mapped: kernels that write into page-locked host memory no copy ever touches, for every
// kind of host allocation a device can reach: cuMemAllocHost, cuMemHostAlloc with
// DEVICEMAP | PORTABLE | WRITECOMBINED, and cuMemHostRegister'd memory with DEVICEMAP, each
// reached through the address cuMemHostGetDevicePointer gives. For each, `fill` writes the
// memory (checked on the host, in place), then `twice` reads it into device memory, which is
// copied back and checked: the only copy of the run reads device memory.
#include <cstdlib>

#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(host_mapped_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 12);
  const size_t n = options.size;
  if (n > 0x3fffffff) fail_usage("--size must fit in an int");
  const size_t bytes = n * sizeof(int);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, host_mapped_kernels_image().data));
  CUfunction fill, twice;
  CU_CHECK(cuModuleGetFunction(&fill, module, "fill"));
  CU_CHECK(cuModuleGetFunction(&twice, module, "twice"));

  // The three kinds of host memory.
  void* allocated = nullptr;
  CU_CHECK(cuMemAllocHost(&allocated, bytes));
  void* mapped = nullptr;
  CU_CHECK(cuMemHostAlloc(
      &mapped, bytes,
      CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED));
  const size_t page = 4096;
  const size_t registered_bytes = (bytes + page - 1) / page * page;
  void* registered = std::aligned_alloc(page, registered_bytes);
  if (registered == nullptr) fail_usage("out of host memory");
  CU_CHECK(cuMemHostRegister(registered, registered_bytes, CU_MEMHOSTREGISTER_DEVICEMAP));
  struct Kind {
    const char* name;
    void* host;
  } kinds[] = {
      {"cuMemAllocHost", allocated}, {"cuMemHostAlloc", mapped}, {"cuMemHostRegister", registered}};

  CUdeviceptr d_out;
  CU_CHECK(cuMemAlloc(&d_out, bytes * 3));
  int count = static_cast<int>(n);
  const unsigned block = 128;
  bool ok = true;
  std::vector<int> reference(n * 3), found(n * 3);
  for (int k = 0; k < 3; ++k) {
    CUdeviceptr device = 0;
    CU_CHECK(cuMemHostGetDevicePointer(&device, kinds[k].host, 0));
    int factor = k + 2;
    void* fill_params[] = {&device, &count, &factor};
    CU_CHECK(cuLaunchKernel(fill, blocks_for(n, block), 1, 1, block, 1, 1, 0, nullptr, fill_params,
                            nullptr));
    CU_CHECK(cuCtxSynchronize());
    // The kernel's writes, read in place.
    std::vector<int> expected(n), in_place(n);
    for (size_t i = 0; i < n; ++i) expected[i] = static_cast<int>(i) * factor + 7;
    std::memcpy(in_place.data(), kinds[k].host, bytes);
    if (!compare_exact(expected, in_place)) {
      std::printf("(in the %s memory)\n", kinds[k].name);
      ok = false;
    }
    CUdeviceptr slice = d_out + k * bytes;
    void* twice_params[] = {&device, &slice, &count};
    CU_CHECK(cuLaunchKernel(twice, blocks_for(n, block), 1, 1, block, 1, 1, 0, nullptr,
                            twice_params, nullptr));
    for (size_t i = 0; i < n; ++i) reference[k * n + i] = 2 * expected[i];
  }
  maybe_inject_error(options, reference);
  CU_CHECK(cuMemcpyDtoH(found.data(), d_out, bytes * 3));
  ok = compare_exact(reference, found) && ok;

  CU_CHECK(cuMemFree(d_out));
  CU_CHECK(cuMemHostUnregister(registered));
  std::free(registered);
  CU_CHECK(cuMemFreeHost(mapped));
  CU_CHECK(cuMemFreeHost(allocated));
  CU_CHECK(cuModuleUnload(module));
  return finish("host_mapped", ok, "n=" + std::to_string(n) + " x 3 host allocation kinds, exact");
}
