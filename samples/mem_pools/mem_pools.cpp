// mem_pools: stream-ordered allocation from explicit memory pools. A pool is created with
// cuMemPoolCreate (pinned device memory of device 0), given a release threshold and a reuse
// policy (cuMemPoolSetAttribute, read back with cuMemPoolGetAttribute and checked), access
// (cuMemPoolSetAccess) and made the device's current pool (cuDeviceSetMemPool, checked with
// cuDeviceGetMemPool). Buffers come from it with cuMemAllocFromPoolAsync and from the current pool
// with cuMemAllocAsync; a kernel runs over them twice, the pool is trimmed (cuMemPoolTrimTo), the
// default pool restored and the pool destroyed. Every kernel result is checked exactly.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(mem_pools_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 12, " (elements per buffer)");
  const size_t n = options.size;
  if (n > (1u << 24)) fail_usage("--size must be at most 16777216");

  std::vector<unsigned> in(n), first(n), second(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<unsigned>(i * 2654435761u);
  for (size_t i = 0; i < n; ++i) first[i] = in[i] * 3u + 11u;
  for (size_t i = 0; i < n; ++i) second[i] = first[i] * 5u + 7u;
  maybe_inject_error(options, second);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, mem_pools_kernels_image().data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "scale_add"));
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  CUmemoryPool default_pool;
  CU_CHECK(cuDeviceGetDefaultMemPool(&default_pool, context.device()));
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = context.device();
  CUmemoryPool pool;
  CU_CHECK(cuMemPoolCreate(&pool, &props));
  cuuint64_t threshold = 1 << 20;
  CU_CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  int opportunistic = 0;
  CU_CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &opportunistic));
  cuuint64_t threshold_back = 0;
  CU_CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold_back));
  int opportunistic_back = 1;
  CU_CHECK(
      cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &opportunistic_back));
  bool ok = threshold_back == threshold && opportunistic_back == 0;
  if (!ok) std::printf("MISMATCH in the pool's attributes read back\n");
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = context.device();
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_CHECK(cuMemPoolSetAccess(pool, &access, 1));
  CU_CHECK(cuDeviceSetMemPool(context.device(), pool));
  CUmemoryPool current;
  CU_CHECK(cuDeviceGetMemPool(&current, context.device()));
  if (current != pool) {
    std::printf("MISMATCH: the device's current pool is not the one set\n");
    ok = false;
  }

  const size_t bytes = n * sizeof(unsigned);
  CUdeviceptr d_in, d_mid, d_out;
  CU_CHECK(cuMemAllocFromPoolAsync(&d_in, bytes, pool, stream));
  CU_CHECK(cuMemAllocFromPoolAsync(&d_mid, bytes, pool, stream));
  CU_CHECK(cuMemAllocAsync(&d_out, bytes, stream));  // from the current pool: `pool`
  CU_CHECK(cuMemcpyHtoDAsync(d_in, in.data(), bytes, stream));
  int count = static_cast<int>(n);
  unsigned mul = 3, add = 11;
  void* params1[] = {&d_mid, &d_in, &count, &mul, &add};
  const unsigned block = 128;
  CU_CHECK(
      cuLaunchKernel(kernel, blocks_for(n, block), 1, 1, block, 1, 1, 0, stream, params1, nullptr));
  unsigned mul2 = 5, add2 = 7;
  void* params2[] = {&d_out, &d_mid, &count, &mul2, &add2};
  CU_CHECK(
      cuLaunchKernel(kernel, blocks_for(n, block), 1, 1, block, 1, 1, 0, stream, params2, nullptr));
  std::vector<unsigned> mid(n), out(n);
  CU_CHECK(cuMemcpyDtoHAsync(mid.data(), d_mid, bytes, stream));
  CU_CHECK(cuMemcpyDtoHAsync(out.data(), d_out, bytes, stream));
  CU_CHECK(cuMemFreeAsync(d_in, stream));
  CU_CHECK(cuMemFreeAsync(d_mid, stream));
  CU_CHECK(cuMemFreeAsync(d_out, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  ok = compare_exact(first, mid) && ok;
  ok = compare_exact(second, out) && ok;

  CU_CHECK(cuMemPoolTrimTo(pool, 0));
  CU_CHECK(cuDeviceSetMemPool(context.device(), default_pool));
  CU_CHECK(cuMemPoolDestroy(pool));
  CU_CHECK(cuStreamDestroy(stream));
  CU_CHECK(cuModuleUnload(module));
  return finish("mem_pools", ok,
                "n=" + std::to_string(n) + ", pool with release threshold " +
                    std::to_string(threshold_back) + ", 3 stream-ordered allocations, trimmed");
}
