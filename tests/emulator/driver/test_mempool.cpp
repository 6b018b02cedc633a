// Stream-ordered memory pools: default and current pools, created pools, their attributes and
// accounting (emulator/driver/mempool.h), allocations used in stream order, and what is refused.
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

namespace {

uint64_t pages(uint64_t bytes) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

cuuint64_t attribute(CUmemoryPool pool, CUmemPool_attribute attr) {
  cuuint64_t value = ~cuuint64_t{0};
  REQUIRE_CU(cuMemPoolGetAttribute(pool, attr, &value));
  return value;
}

int flag(CUmemoryPool pool, CUmemPool_attribute attr) {
  int value = -1;
  REQUIRE_CU(cuMemPoolGetAttribute(pool, attr, &value));
  return value;
}

CUmemPoolProps device_props() {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  return props;
}

size_t free_memory() {
  size_t free = 0, total = 0;
  REQUIRE_CU(cuMemGetInfo(&free, &total));
  return free;
}

}  // namespace

TEST_CASE("memory pools: default and current pool, locations, what is refused", "[mempool]") {
  primary_context();
  int supported = 0;
  REQUIRE_CU(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
  CHECK(supported == 1);
  CUmemoryPool fallback = nullptr, current = nullptr, by_location = nullptr;
  REQUIRE_CU(cuDeviceGetDefaultMemPool(&fallback, 0));
  REQUIRE(fallback != nullptr);
  REQUIRE_CU(cuDeviceGetMemPool(&current, 0));
  CHECK(current == fallback);
  CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  REQUIRE_CU(cuMemGetDefaultMemPool(&by_location, &device, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(by_location == fallback);
  REQUIRE_CU(cuMemGetMemPool(&by_location, &device, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(by_location == fallback);
  CHECK(cuDeviceGetDefaultMemPool(&current, 1) == CUDA_ERROR_INVALID_DEVICE);
  CHECK(cuDeviceGetDefaultMemPool(nullptr, 0) == CUDA_ERROR_INVALID_VALUE);

  // Host and managed pools are not emulated; a location that is none of them is invalid.
  CUmemLocation host{CU_MEM_LOCATION_TYPE_HOST, 0};
  CHECK(cuMemGetDefaultMemPool(&by_location, &host, CU_MEM_ALLOCATION_TYPE_PINNED) ==
        CUDA_ERROR_NOT_SUPPORTED);
  CHECK(cuMemGetDefaultMemPool(&by_location, &device, CU_MEM_ALLOCATION_TYPE_MANAGED) ==
        CUDA_ERROR_NOT_SUPPORTED);
  CUmemLocation other{CU_MEM_LOCATION_TYPE_DEVICE, 1};
  CHECK(cuMemGetMemPool(&by_location, &other, CU_MEM_ALLOCATION_TYPE_PINNED) ==
        CUDA_ERROR_INVALID_DEVICE);
  CUmemLocation bogus{CU_MEM_LOCATION_TYPE_INVALID, 0};
  CHECK(cuMemGetMemPool(&by_location, &bogus, CU_MEM_ALLOCATION_TYPE_PINNED) ==
        CUDA_ERROR_INVALID_VALUE);

  // Pool creation: IPC-capable handle types are refused on purpose, bad properties are invalid.
  CUmemPoolProps props = device_props();
  CUmemoryPool pool = nullptr;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CHECK(cuMemPoolCreate(&pool, &props) == CUDA_ERROR_NOT_SUPPORTED);
  props = device_props();
  props.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
  CHECK(cuMemPoolCreate(&pool, &props) == CUDA_ERROR_INVALID_VALUE);
  props = device_props();
  props.reserved[3] = 1;
  CHECK(cuMemPoolCreate(&pool, &props) == CUDA_ERROR_INVALID_VALUE);
  props = device_props();
  CHECK(cuMemPoolCreate(nullptr, &props) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemPoolCreate(&pool, nullptr) == CUDA_ERROR_INVALID_VALUE);

  // The default pool cannot be destroyed; a garbage pool handle is an invalid value.
  CHECK(cuMemPoolDestroy(fallback) == CUDA_ERROR_INVALID_VALUE);
  cuuint64_t value = 0;
  CHECK(cuMemPoolGetAttribute(reinterpret_cast<CUmemoryPool>(&value),
                              CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                              &value) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceSetMemPool(0, reinterpret_cast<CUmemoryPool>(&value)) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("memory pools: used and reserved bytes, release threshold, trim, high watermarks",
          "[mempool]") {
  primary_context();
  CUmemPoolProps props = device_props();
  CUmemoryPool pool = nullptr;
  REQUIRE_CU(cuMemPoolCreate(&pool, &props));
  CHECK(flag(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES) == 1);
  CHECK(flag(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC) == 1);
  CHECK(flag(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES) == 1);
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0);
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  CUstream stream = nullptr;
  REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  const size_t before = free_memory();

  // One allocation: used and reserved are its pages, charged against the device.
  CUdeviceptr a = 0;
  REQUIRE_CU(cuMemAllocFromPoolAsync(&a, 10000, pool, stream));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == pages(10000));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == pages(10000));
  CHECK(free_memory() == before - pages(10000));
  CUmemoryPool owner = nullptr;
  REQUIRE_CU(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
  CHECK(owner == pool);
  CUdeviceptr base = 0;
  size_t size = 0;
  REQUIRE_CU(cuMemGetAddressRange(&base, &size, a));
  CHECK(base == a);
  CHECK(size == 10000);  // the accessible range is what was asked for (redzone after it)

  // Freed in stream order; with the default threshold (0) the synchronisation releases it all.
  REQUIRE_CU(cuMemFreeAsync(a, stream));
  REQUIRE_CU(cuStreamSynchronize(stream));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == pages(10000));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == pages(10000));
  CHECK(free_memory() == before);
  CUmemoryPool none = nullptr;
  CHECK(cuPointerGetAttribute(&none, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a) ==
        CUDA_ERROR_INVALID_VALUE);

  // A threshold keeps freed memory reserved (and charged) across synchronisations; the pool's
  // next allocations take it before charging the device again.
  cuuint64_t threshold = ~cuuint64_t{0};
  REQUIRE_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == threshold);
  CUdeviceptr b = 0, c = 0;
  REQUIRE_CU(cuMemAllocFromPoolAsync(&b, 1 << 20, pool, stream));
  REQUIRE_CU(cuMemAllocFromPoolAsync(&c, 1 << 20, pool, stream));
  REQUIRE_CU(cuMemFreeAsync(b, stream));
  REQUIRE_CU(cuMemFreeAsync(c, stream));
  REQUIRE_CU(cuStreamSynchronize(stream));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 2u << 20);
  CHECK(free_memory() == before - (2u << 20));
  REQUIRE_CU(cuMemAllocFromPoolAsync(&b, 1 << 20, pool, stream));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 1u << 20);
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 2u << 20);
  CHECK(free_memory() == before - (2u << 20));

  // Trimming keeps at least what is in use.
  REQUIRE_CU(cuMemPoolTrimTo(pool, 0));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 1u << 20);
  CHECK(free_memory() == before - (1u << 20));

  // High watermarks reset to the current value, and only to zero; current values are read-only.
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 2u << 20);
  cuuint64_t zero = 0, nonzero = 5;
  CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &nonzero) ==
        CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero));
  REQUIRE_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 1u << 20);
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 1u << 20);
  CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &zero) ==
        CUDA_ERROR_INVALID_VALUE);
  int off = 0;
  REQUIRE_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &off));
  CHECK(flag(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC) == 0);

  // cuMemFree (synchronous) returns a pool allocation to its pool too.
  REQUIRE_CU(cuStreamSynchronize(stream));
  REQUIRE_CU(cuMemFree(b));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  REQUIRE_CU(cuMemPoolTrimTo(pool, 0));
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  CHECK(free_memory() == before);
  REQUIRE_CU(cuMemPoolDestroy(pool));
  CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero) ==
        CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuStreamDestroy(stream));
}

TEST_CASE("memory pools: maxSize bounds a pool, the device total bounds every pool", "[mempool]") {
  primary_context();
  CUmemPoolProps props = device_props();
  props.maxSize = 64 * 1024;
  CUmemoryPool pool = nullptr;
  REQUIRE_CU(cuMemPoolCreate(&pool, &props));
  CUdeviceptr a = 0, b = 0;
  REQUIRE_CU(cuMemAllocFromPoolAsync(&a, 60 * 1024, pool, nullptr));
  CHECK(cuMemAllocFromPoolAsync(&b, 8 * 1024, pool, nullptr) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == pages(60 * 1024));
  size_t free = 0, total = 0;
  REQUIRE_CU(cuMemGetInfo(&free, &total));
  CUmemoryPool fallback = nullptr;
  REQUIRE_CU(cuDeviceGetDefaultMemPool(&fallback, 0));
  CHECK(cuMemAllocFromPoolAsync(&b, free + 4096, fallback, nullptr) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(cuMemAllocFromPoolAsync(&b, 0, fallback, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAllocFromPoolAsync(nullptr, 16, fallback, nullptr) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuMemFreeAsync(a, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  REQUIRE_CU(cuMemPoolDestroy(pool));
}

TEST_CASE(
    "memory pools: cuMemAllocAsync takes the current pool, destroying it restores the default",
    "[mempool]") {
  primary_context();
  CUmemPoolProps props = device_props();
  CUmemoryPool pool = nullptr, current = nullptr, fallback = nullptr;
  REQUIRE_CU(cuMemPoolCreate(&pool, &props));
  REQUIRE_CU(cuDeviceGetDefaultMemPool(&fallback, 0));
  REQUIRE_CU(cuDeviceSetMemPool(0, pool));
  REQUIRE_CU(cuDeviceGetMemPool(&current, 0));
  CHECK(current == pool);
  CUdeviceptr a = 0;
  REQUIRE_CU(cuMemAllocAsync(&a, 4096, nullptr));
  CUmemoryPool owner = nullptr;
  REQUIRE_CU(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
  CHECK(owner == pool);
  CHECK(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == pages(4096));

  // Destroyed with an allocation outstanding: the call returns, the default pool is current
  // again, the allocation stays usable until it is freed.
  REQUIRE_CU(cuMemPoolDestroy(pool));
  REQUIRE_CU(cuDeviceGetMemPool(&current, 0));
  CHECK(current == fallback);
  cuuint64_t value = 0;
  CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &value) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceSetMemPool(0, pool) == CUDA_ERROR_INVALID_VALUE);
  std::vector<uint32_t> in(1024, 0x5a5a5a5a), out(1024, 0);
  REQUIRE_CU(cuMemcpyHtoD(a, in.data(), 4096));
  REQUIRE_CU(cuMemcpyDtoH(out.data(), a, 4096));
  CHECK(out == in);
  const size_t before = free_memory();
  REQUIRE_CU(cuMemFreeAsync(a, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  CHECK(free_memory() == before + pages(4096));  // the destroyed pool released everything

  // cuMemSetMemPool is cuDeviceSetMemPool for the device location.
  REQUIRE_CU(cuMemPoolCreate(&pool, &props));
  CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  REQUIRE_CU(cuMemSetMemPool(&device, CU_MEM_ALLOCATION_TYPE_PINNED, pool));
  REQUIRE_CU(cuDeviceGetMemPool(&current, 0));
  CHECK(current == pool);
  REQUIRE_CU(cuDeviceSetMemPool(0, fallback));
  REQUIRE_CU(cuMemPoolDestroy(pool));
}

TEST_CASE("memory pools: access descriptors of the one device", "[mempool]") {
  primary_context();
  CUmemPoolProps props = device_props();
  CUmemoryPool pool = nullptr;
  REQUIRE_CU(cuMemPoolCreate(&pool, &props));
  CUmemAccessDesc desc{};
  desc.location = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  REQUIRE_CU(cuMemPoolSetAccess(pool, &desc, 1));
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  CHECK(cuMemPoolSetAccess(pool, &desc, 1) == CUDA_ERROR_INVALID_VALUE);
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  desc.location.id = 1;
  CHECK(cuMemPoolSetAccess(pool, &desc, 1) == CUDA_ERROR_INVALID_DEVICE);
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  REQUIRE_CU(cuMemPoolGetAccess(&flags, pool, &device));
  CHECK(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  device.id = 2;
  CHECK(cuMemPoolGetAccess(&flags, pool, &device) == CUDA_ERROR_INVALID_DEVICE);
  CHECK(cuMemPoolGetAccess(nullptr, pool, &device) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuMemPoolDestroy(pool));
}

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

// `fill(p, n, v)`: p[i] = v + i for i < n (one thread per element).
const char* kFillPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry fill(.param .u64 p, .param .u32 n, .param .u32 v)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r2, [v];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r6, %r1;
  @%p1 bra DONE;
  add.s32 %r7, %r2, %r6;
  mul.wide.u32 %rd2, %r6, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r7;
DONE:
  ret;
}
)";

}  // namespace

TEST_CASE("memory pools: allocations used in stream order by kernels, a use after the free faults",
          "[mempool]") {
  primary_context();
  CUcontext ctx = nullptr;  // the last launch poisons this one, not the primary context
  REQUIRE_CU(cuCtxCreate(&ctx, nullptr, 0, 0));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kFillPtx));
  CUfunction fill = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&fill, module, "fill"));
  CUstream stream = nullptr;
  REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  unsigned n = 3000, v = 17;
  std::vector<uint32_t> host(n);
  CUdeviceptr a = 0;
  // Allocate, fill, copy out and free, all in the order of one stream.
  REQUIRE_CU(cuMemAllocAsync(&a, n * sizeof(uint32_t), stream));
  void* params[] = {&a, &n, &v};
  REQUIRE_CU(cuLaunchKernel(fill, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, params, nullptr));
  REQUIRE_CU(cuMemcpyDtoHAsync(host.data(), a, n * sizeof(uint32_t), stream));
  REQUIRE_CU(cuMemFreeAsync(a, stream));
  REQUIRE_CU(cuStreamSynchronize(stream));
  for (unsigned i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(host[i] == v + i);
  }
  // The freed range belongs to no allocation: using it is an illegal address.
  REQUIRE_CU(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr));
  CHECK(cuStreamSynchronize(stream) == CUDA_ERROR_ILLEGAL_ADDRESS);
  REQUIRE_CU(cuCtxDestroy(ctx));
  REQUIRE_CU(cuCtxSetCurrent(primary_context()));
}

#endif  // CUSNAP_TEST_HAVE_PTX_ENGINE
