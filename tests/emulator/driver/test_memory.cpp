#include <cstring>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

TEST_CASE("cuMemAlloc: alignment, address range, info accounting, free", "[memory]") {
  primary_context();
  size_t free_before = 0, total = 0;
  REQUIRE_CU(cuMemGetInfo(&free_before, &total));
  CHECK(free_before <= total);

  CUdeviceptr a = 0, b = 0;
  REQUIRE_CU(cuMemAlloc(&a, 1000));
  REQUIRE_CU(cuMemAlloc(&b, 3 << 20));
  CHECK(a % 256 == 0);
  CHECK(b % 256 == 0);
  size_t free_after = 0;
  REQUIRE_CU(cuMemGetInfo(&free_after, &total));
  CHECK(free_before - free_after >= 1000 + (3u << 20));

  CUdeviceptr base = 0;
  size_t size = 0;
  REQUIRE_CU(cuMemGetAddressRange(&base, &size, a + 500));
  CHECK(base == a);
  CHECK(size == 1000);
  CHECK(cuMemGetAddressRange(&base, &size, a + 1000) == CUDA_ERROR_NOT_FOUND);

  // Device memory is host memory at the same address, zero-filled.
  CHECK(reinterpret_cast<unsigned char*>(a)[999] == 0);

  CHECK(cuMemFree(a + 8) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuMemFree(a));
  CHECK(cuMemFree(a) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuMemFree(b));
  REQUIRE_CU(cuMemGetInfo(&free_after, &total));
  CHECK(free_after == free_before);
  CHECK(cuMemAlloc(&a, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAlloc(&a, total + 1) == CUDA_ERROR_OUT_OF_MEMORY);
}

TEST_CASE("cuMemAllocPitch rounds the pitch up", "[memory]") {
  primary_context();
  CUdeviceptr p = 0;
  size_t pitch = 0;
  REQUIRE_CU(cuMemAllocPitch(&p, &pitch, 100, 7, 4));
  CHECK(pitch >= 100);
  CHECK(pitch % 256 == 0);
  CUdeviceptr base = 0;
  size_t size = 0;
  REQUIRE_CU(cuMemGetAddressRange(&base, &size, p));
  CHECK(size == pitch * 7);
  REQUIRE_CU(cuMemFree(p));
}

TEST_CASE("pointer attributes for device, pinned, registered and managed memory", "[memory]") {
  CUcontext ctx = primary_context();
  CUdeviceptr d = 0;
  REQUIRE_CU(cuMemAlloc(&d, 4096));
  unsigned type = 0;
  REQUIRE_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 16));
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  CUcontext owner = nullptr;
  REQUIRE_CU(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d));
  CHECK(owner == ctx);
  CUdeviceptr start = 0;
  size_t range = 0;
  REQUIRE_CU(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 100));
  REQUIRE_CU(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 100));
  CHECK(start == d);
  CHECK(range == 4096);
  unsigned long long id1 = 0, id2 = 0;
  REQUIRE_CU(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, d));

  void* pinned = nullptr;
  REQUIRE_CU(cuMemHostAlloc(&pinned, 512, CU_MEMHOSTALLOC_DEVICEMAP));
  REQUIRE_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   reinterpret_cast<CUdeviceptr>(pinned)));
  CHECK(type == CU_MEMORYTYPE_HOST);
  REQUIRE_CU(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                   reinterpret_cast<CUdeviceptr>(pinned)));
  CHECK(id1 != id2);
  CUdeviceptr mapped = 0;
  REQUIRE_CU(cuMemHostGetDevicePointer(&mapped, pinned, 0));
  CHECK(mapped == reinterpret_cast<CUdeviceptr>(pinned));
  unsigned host_flags = 0;
  REQUIRE_CU(cuMemHostGetFlags(&host_flags, pinned));
  CHECK(host_flags == CU_MEMHOSTALLOC_DEVICEMAP);

  std::vector<char> user(8192);
  REQUIRE_CU(cuMemHostRegister(user.data(), user.size(), 0));
  CHECK(cuMemHostRegister(user.data() + 10, 10, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  REQUIRE_CU(cuMemHostGetDevicePointer(&mapped, user.data(), 0));
  CHECK(mapped == reinterpret_cast<CUdeviceptr>(user.data()));
  REQUIRE_CU(cuMemHostUnregister(user.data()));
  CHECK(cuMemHostUnregister(user.data()) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);

  CUdeviceptr managed = 0;
  REQUIRE_CU(cuMemAllocManaged(&managed, 256, CU_MEM_ATTACH_GLOBAL));
  bool is_managed = false;
  REQUIRE_CU(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed));
  CHECK(is_managed);
  reinterpret_cast<int*>(managed)[3] = 42;  // host access to managed memory
  CHECK(reinterpret_cast<int*>(managed)[3] == 42);

  // Not a CUDA pointer: the single query fails, the multi query reports "nothing".
  int local = 0;
  CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                              reinterpret_cast<CUdeviceptr>(&local)) == CUDA_ERROR_INVALID_VALUE);
  CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  unsigned t = 99;
  int ordinal = 99;
  void* data[2] = {&t, &ordinal};
  REQUIRE_CU(cuPointerGetAttributes(2, attrs, data, reinterpret_cast<CUdeviceptr>(&local)));
  CHECK(t == 0);
  CHECK(ordinal == -1);
  REQUIRE_CU(cuPointerGetAttributes(2, attrs, data, d));
  CHECK(t == CU_MEMORYTYPE_DEVICE);
  CHECK(ordinal == 0);

  REQUIRE_CU(cuMemFree(managed));
  REQUIRE_CU(cuMemFreeHost(pinned));
  REQUIRE_CU(cuMemFree(d));
}

TEST_CASE("stream-ordered allocation frees in stream order", "[memory]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p = 0;
  REQUIRE_CU(cuMemAllocAsync(&p, 1 << 16, s));
  REQUIRE_CU(cuMemsetD32Async(p, 0xabcd1234u, (1 << 16) / 4, s));
  REQUIRE_CU(cuMemFreeAsync(p, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  CUdeviceptr base = 0;
  size_t size = 0;
  CHECK(cuMemGetAddressRange(&base, &size, p) == CUDA_ERROR_NOT_FOUND);
  REQUIRE_CU(cuStreamDestroy(s));
}
