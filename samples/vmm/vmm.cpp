// vmm: virtual memory management. Reserves one address range, backs it with four physical
// allocations (cuMemCreate) mapped next to each other, grants access (cuMemSetAccess), runs
// kernels on windows that straddle the seams, then unmaps and releases everything. Then the
// stream-ordered allocator: cuMemAllocAsync / cuMemsetD32Async / kernel / cuMemFreeAsync on one
// stream.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(vmm_kernels)

using namespace cusnap::samples;

namespace {

unsigned pattern(size_t i, unsigned seed) { return static_cast<unsigned>(i) * 2654435761u ^ seed; }

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 16384, " (elements per kernel window)");
  const size_t n = options.size;
  if (n > (size_t(1) << 30)) fail_usage("--size must be at most 2^30");
  const unsigned kSeed = 0x5eed1234u;

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, vmm_kernels_image().data));
  CUfunction fill, add;
  CU_CHECK(cuModuleGetFunction(&fill, module, "fill_pattern"));
  CU_CHECK(cuModuleGetFunction(&add, module, "add_neighbour"));

  int vmm_supported = 0;
  CU_CHECK(cuDeviceGetAttribute(
      &vmm_supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, context.device()));
  if (!vmm_supported) {
    std::fprintf(stderr, "error: device does not support virtual memory management\n");
    return 2;
  }

  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = context.device();
  size_t granularity = 0;
  CU_CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  // Each piece holds at least half a window, so a window centred on a seam fits. The kernels
  // touch only the windows: the pieces may be large (2 MiB granules on real GPUs).
  const size_t window_bytes = n * sizeof(unsigned);
  const size_t piece = (window_bytes / 2 + granularity) / granularity * granularity;
  const size_t total = 2 * piece;

  CUdeviceptr base;
  CU_CHECK(cuMemAddressReserve(&base, 2 * total, 0, 0, 0));
  CUmemGenericAllocationHandle handles[4];
  for (int h = 0; h < 4; ++h) {
    CU_CHECK(cuMemCreate(&handles[h], piece, &prop, 0));
    CU_CHECK(cuMemMap(base + h * piece, piece, 0, handles[h], 0));
  }
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_CHECK(cuMemSetAccess(base, 2 * total, &access, 1));

  // The input window straddles pieces 0|1, the output window pieces 2|3.
  const size_t half = (n / 2) * sizeof(unsigned);
  CUdeviceptr d_in = base + piece - half, d_out = base + 3 * piece - half;
  unsigned seed = kSeed;
  void* fill_params[] = {&d_in, const_cast<size_t*>(&n), &seed};
  CU_CHECK(cuLaunchKernel(fill, 64, 1, 1, 256, 1, 1, 0, nullptr, fill_params, nullptr));
  void* add_params[] = {&d_in, &d_out, const_cast<size_t*>(&n)};
  CU_CHECK(cuLaunchKernel(add, 64, 1, 1, 256, 1, 1, 0, nullptr, add_params, nullptr));
  std::vector<unsigned> found(n);
  CU_CHECK(cuMemcpyDtoH(found.data(), d_out, window_bytes));

  std::vector<unsigned> reference(n);
  for (size_t i = 0; i < n; ++i) reference[i] = pattern(i, kSeed) + pattern((i + 1) % n, kSeed);
  maybe_inject_error(options, reference);
  bool ok = compare_exact(reference, found);

  for (int h = 0; h < 4; ++h) {
    CU_CHECK(cuMemUnmap(base + h * piece, piece));
    CU_CHECK(cuMemRelease(handles[h]));
  }
  CU_CHECK(cuMemAddressFree(base, 2 * total));

  // Stream-ordered allocation: everything below is ordered by the stream alone.
  if (ok) {
    CUstream stream;
    CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    const size_t m = 10007;
    CUdeviceptr d_a, d_b;
    CU_CHECK(cuMemAllocAsync(&d_a, m * sizeof(unsigned), stream));
    CU_CHECK(cuMemAllocAsync(&d_b, m * sizeof(unsigned), stream));
    CU_CHECK(cuMemsetD32Async(d_a, 0x01010101u, m, stream));
    void* params[] = {&d_a, &d_b, const_cast<size_t*>(&m)};
    CU_CHECK(cuLaunchKernel(add, 8, 1, 1, 128, 1, 1, 0, stream, params, nullptr));
    std::vector<unsigned> async_found(m);
    CU_CHECK(cuMemcpyDtoHAsync(async_found.data(), d_b, m * sizeof(unsigned), stream));
    CU_CHECK(cuMemFreeAsync(d_a, stream));
    CU_CHECK(cuMemFreeAsync(d_b, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    CU_CHECK(cuStreamDestroy(stream));
    std::vector<unsigned> async_reference(m, 0x02020202u);
    ok = compare_exact(async_reference, async_found);
  }

  CU_CHECK(cuModuleUnload(module));
  char detail[160];
  std::snprintf(detail, sizeof(detail),
                "n=%zu across 4 x %zu KiB mapped pieces, stream-ordered alloc/free, exact", n,
                piece / 1024);
  return finish("vmm", ok, detail);
}
