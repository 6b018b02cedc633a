// Virtual memory management: reserve at a hint, map one physical allocation twice (aliasing),
// access control, unmap.
#include <sys/mman.h>

#include <cstring>

#include "test_helpers.h"

using namespace cusnap_test;

TEST_CASE("VMM: reserve at a hint, map twice, aliasing, unmap, free", "[vmm]") {
  primary_context();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  REQUIRE_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CHECK(granularity == (size_t{2} << 20));
  const size_t size = granularity;

  // Find a free, aligned range to use as the hint, then release it.
  void* probe = mmap(nullptr, 8 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(probe != MAP_FAILED);
  munmap(probe, 8 * size);
  CUdeviceptr hint = (reinterpret_cast<CUdeviceptr>(probe) + size - 1) / size * size;

  CUdeviceptr va = 0;
  REQUIRE_CU(cuMemAddressReserve(&va, 2 * size, 0, hint, 0));
  CHECK(va == hint);
  // The same hint again is taken: the reservation lands elsewhere.
  CUdeviceptr va2 = 0;
  REQUIRE_CU(cuMemAddressReserve(&va2, 2 * size, 0, hint, 0));
  CHECK(va2 != hint);
  CHECK(va2 % size == 0);
  CHECK(cuMemAddressReserve(&va2, size + 1, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE);

  CUmemGenericAllocationHandle handle = 0;
  REQUIRE_CU(cuMemCreate(&handle, size, &prop, 0));
  REQUIRE_CU(cuMemMap(va, size, 0, handle, 0));
  REQUIRE_CU(cuMemMap(va + size, size, 0, handle, 0));  // the same physical memory twice
  CHECK(cuMemMap(va, size, 0, handle, 0) == CUDA_ERROR_INVALID_VALUE);  // already mapped

  // Not accessible before cuMemSetAccess.
  CHECK(cuMemsetD8(va, 1, 16) == CUDA_ERROR_INVALID_VALUE);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  REQUIRE_CU(cuMemSetAccess(va, 2 * size, &access, 1));
  unsigned long long flags = 0;
  REQUIRE_CU(cuMemGetAccess(&flags, &prop.location, va + 100));
  CHECK(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

  const char message[] = "aliased through two mappings";
  REQUIRE_CU(cuMemcpyHtoD(va + 123, message, sizeof message));
  char back[sizeof message] = {};
  REQUIRE_CU(cuMemcpyDtoH(back, va + size + 123, sizeof message));
  CHECK(std::string(back) == message);
  REQUIRE_CU(cuMemsetD32(va + size, 0x01010101u, 4));
  CHECK(reinterpret_cast<unsigned*>(va)[0] == 0x01010101u);  // host sees it at the other mapping
  // A copy spanning both mappings works: SetAccess made one accessible range.
  REQUIRE_CU(cuMemsetD8(va + size - 8, 0x7f, 16));

  CUmemGenericAllocationHandle retained = 0;
  REQUIRE_CU(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(va + size + 5)));
  CHECK(retained == handle);
  REQUIRE_CU(cuMemRelease(retained));
  CUmemAllocationProp back_prop{};
  REQUIRE_CU(cuMemGetAllocationPropertiesFromHandle(&back_prop, handle));
  CHECK(back_prop.type == CU_MEM_ALLOCATION_TYPE_PINNED);

  REQUIRE_CU(cuMemRelease(handle));  // mappings keep the memory alive
  CHECK(std::string(reinterpret_cast<const char*>(va + size + 123)) == message);
  CHECK(cuMemAddressFree(va, 2 * size) == CUDA_ERROR_INVALID_VALUE);  // still mapped
  REQUIRE_CU(cuMemUnmap(va, 2 * size));
  CHECK(cuMemsetD8(va, 1, 16) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuMemAddressFree(va, 2 * size));
  REQUIRE_CU(cuMemAddressFree(va2, 2 * size));
}
