// Managed-memory hints: cuMemAdvise[_v2], cuMemPrefetchAsync[_v2] and the batch forms,
// cuMemDiscard*, cuMemRangeGetAttribute(s), cuStreamAttachMemAsync. Memory never migrates in the
// emulator; what is checked is what the driver documents as observable: argument checks, and the
// attributes a range reports after the advice.
#include <cudaTypedefs.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

namespace {

int range_int(CUmem_range_attribute a, CUdeviceptr p, size_t n) {
  int v = -100;
  REQUIRE_CU(cuMemRangeGetAttribute(&v, sizeof v, a, p, n));
  return v;
}
CUmemLocationType range_type(CUmem_range_attribute a, CUdeviceptr p, size_t n) {
  CUmemLocationType v = CU_MEM_LOCATION_TYPE_MAX;
  REQUIRE_CU(cuMemRangeGetAttribute(&v, sizeof v, a, p, n));
  return v;
}
// The CUDA 8 ABIs (a CUdevice, CU_DEVICE_CPU for the host), which cuda.h no longer binds to.
PFN_cuMemAdvise_v8000 old_advise() {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  REQUIRE_CU(cuGetProcAddress("cuMemAdvise", &fn, 8000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  REQUIRE(fn != nullptr);
  return reinterpret_cast<PFN_cuMemAdvise_v8000>(fn);
}
PFN_cuMemPrefetchAsync_v8000 old_prefetch() {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  REQUIRE_CU(
      cuGetProcAddress("cuMemPrefetchAsync", &fn, 8000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  REQUIRE(fn != nullptr);
  return reinterpret_cast<PFN_cuMemPrefetchAsync_v8000>(fn);
}

CUmemLocation device0() { return CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0}; }
CUmemLocation host() { return CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0}; }

}  // namespace

TEST_CASE("cuMemRangeGetAttribute reports what was advised, page by page", "[managed][hints]") {
  primary_context();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  CUdeviceptr m = 0;
  REQUIRE_CU(cuMemAllocManaged(&m, 4 * page, CU_MEM_ATTACH_GLOBAL));
  // Nothing advised yet.
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 4 * page) == 0);
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 4 * page) == CU_DEVICE_INVALID);
  CHECK(range_type(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, 4 * page) ==
        CU_MEM_LOCATION_TYPE_INVALID);
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 4 * page) == CU_DEVICE_INVALID);

  // Read-mostly on the first two pages (a range inside page 1 widens to the whole page).
  REQUIRE_CU(cuMemAdvise_v2(m, page + 1, CU_MEM_ADVISE_SET_READ_MOSTLY, host()));
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 2 * page) == 1);
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m + page + 100, 8) == 1);
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 3 * page) == 0);  // not all pages
  REQUIRE_CU(cuMemAdvise_v2(m, page, CU_MEM_ADVISE_UNSET_READ_MOSTLY, host()));
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 2 * page) == 0);
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m + page, page) == 1);

  // Preferred location: the device on pages 0-1, the host on pages 2-3 (the old ABI's CPU).
  REQUIRE_CU(cuMemAdvise_v2(m, 2 * page, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, device0()));
  REQUIRE_CU(
      old_advise()(m + 2 * page, 2 * page, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU));
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 2 * page) == 0);
  CHECK(range_type(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, 2 * page) ==
        CU_MEM_LOCATION_TYPE_DEVICE);
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, m, 2 * page) == 0);
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m + 2 * page, 2 * page) ==
        CU_DEVICE_CPU);
  CHECK(range_type(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m + 2 * page, page) ==
        CU_MEM_LOCATION_TYPE_HOST);
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 4 * page) == CU_DEVICE_INVALID);
  REQUIRE_CU(cuMemAdvise_v2(m, 4 * page, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, device0()));
  CHECK(range_type(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, 4 * page) ==
        CU_MEM_LOCATION_TYPE_INVALID);

  // Accessed-by: the list of processors advised for the whole range, padded with INVALID.
  REQUIRE_CU(cuMemAdvise_v2(m, 4 * page, CU_MEM_ADVISE_SET_ACCESSED_BY, device0()));
  REQUIRE_CU(cuMemAdvise_v2(m, page, CU_MEM_ADVISE_SET_ACCESSED_BY, host()));
  int ids[3] = {7, 7, 7};
  REQUIRE_CU(
      cuMemRangeGetAttribute(ids, sizeof ids, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, 4 * page));
  CHECK(ids[0] == 0);
  CHECK(ids[1] == CU_DEVICE_INVALID);
  CHECK(ids[2] == CU_DEVICE_INVALID);
  REQUIRE_CU(cuMemRangeGetAttribute(ids, sizeof ids, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, page));
  CHECK(ids[0] == 0);
  CHECK(ids[1] == CU_DEVICE_CPU);
  REQUIRE_CU(old_advise()(m, 4 * page, CU_MEM_ADVISE_UNSET_ACCESSED_BY, 0));
  REQUIRE_CU(cuMemRangeGetAttribute(ids, sizeof ids, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, page));
  CHECK(ids[0] == CU_DEVICE_CPU);
  CHECK(ids[1] == CU_DEVICE_INVALID);

  // Several attributes at once.
  int read_mostly = -1;
  CUmemLocationType type = CU_MEM_LOCATION_TYPE_MAX;
  void* data[] = {&read_mostly, &type};
  size_t sizes[] = {sizeof read_mostly, sizeof type};
  CUmem_range_attribute attrs[] = {CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                   CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE};
  REQUIRE_CU(cuMemRangeGetAttributes(data, sizes, attrs, 2, m + page, page));
  CHECK(read_mostly == 1);
  CHECK(type == CU_MEM_LOCATION_TYPE_INVALID);
  CHECK_CU(cuMemFree(m));
}

TEST_CASE("prefetches record the last requested location in stream order", "[managed][hints]") {
  primary_context();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr m = 0;
  REQUIRE_CU(cuMemAllocManaged(&m, 3 * page, CU_MEM_ATTACH_GLOBAL));
  REQUIRE_CU(cuMemPrefetchAsync_v2(m, 3 * page, device0(), 0, s));
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 3 * page) == 0);
  CHECK(range_type(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m, 3 * page) ==
        CU_MEM_LOCATION_TYPE_DEVICE);
  REQUIRE_CU(old_prefetch()(m + page, page, CU_DEVICE_CPU, s));  // the old ABI
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m + page, page) == CU_DEVICE_CPU);
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 3 * page) == CU_DEVICE_INVALID);

  // Batch: page 0 and 1 to the host, page 2 to the device (locations by first index).
  CUdeviceptr ptrs[] = {m, m + page, m + 2 * page};
  size_t sizes[] = {page, page, page};
  CUmemLocation locs[] = {host(), device0()};
  size_t idxs[] = {0, 2};
  REQUIRE_CU(cuMemPrefetchBatchAsync(ptrs, sizes, 3, locs, idxs, 2, 0, s));
  CHECK(range_type(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m, 2 * page) ==
        CU_MEM_LOCATION_TYPE_HOST);
  CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m + 2 * page, page) == 0);
  REQUIRE_CU(cuMemDiscardAndPrefetchBatchAsync(ptrs, sizes, 3, locs, idxs, 1, 0, s));
  CHECK(range_type(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m, 3 * page) ==
        CU_MEM_LOCATION_TYPE_HOST);

  // A discard keeps the memory usable: writing it again gives what was written.
  REQUIRE_CU(cuMemDiscardBatchAsync(ptrs, sizes, 3, 0, s));
  REQUIRE_CU(cuMemsetD32Async(m, 0x5a5a5a5a, 3 * page / 4, s));
  REQUIRE_CU(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE));
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK(reinterpret_cast<const uint32_t*>(m)[page / 4] == 0x5a5a5a5au);
  CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuMemFree(m));
}

TEST_CASE("managed-memory hints check their arguments", "[managed][hints]") {
  primary_context();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  CUdeviceptr m = 0, plain = 0;
  REQUIRE_CU(cuMemAllocManaged(&m, 2 * page, CU_MEM_ATTACH_GLOBAL));
  REQUIRE_CU(cuMemAlloc(&plain, page));
  CUmemLocation bad_device{CU_MEM_LOCATION_TYPE_DEVICE, 1};
  CUmemLocation numa{CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  CUmemLocation invalid{CU_MEM_LOCATION_TYPE_INVALID, 0};
  // Advice: managed memory only, inside one allocation, valid advice and locations.
  CHECK(cuMemAdvise_v2(plain, page, CU_MEM_ADVISE_SET_READ_MOSTLY, host()) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAdvise_v2(m, 2 * page + 1, CU_MEM_ADVISE_SET_READ_MOSTLY, host()) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAdvise_v2(m, 0, CU_MEM_ADVISE_SET_READ_MOSTLY, host()) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAdvise_v2(m, page, static_cast<CUmem_advise>(7), host()) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAdvise_v2(m, page, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, bad_device) ==
        CUDA_ERROR_INVALID_DEVICE);
  CHECK(old_advise()(m, page, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 3) ==
        CUDA_ERROR_INVALID_DEVICE);
  CHECK(cuMemAdvise_v2(m, page, CU_MEM_ADVISE_SET_ACCESSED_BY, numa) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAdvise_v2(m, page, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, numa) ==
        CUDA_ERROR_NOT_SUPPORTED);
  CHECK(cuMemAdvise_v2(m, page, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, invalid) ==
        CUDA_ERROR_INVALID_VALUE);
  // The ignored location of read-mostly may be anything.
  CHECK_CU(cuMemAdvise_v2(m, page, CU_MEM_ADVISE_SET_READ_MOSTLY, bad_device));
  // Prefetch: flags 0, a valid location and stream.
  CHECK(cuMemPrefetchAsync_v2(m, page, device0(), 1, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemPrefetchAsync_v2(m, page, bad_device, 0, s) == CUDA_ERROR_INVALID_DEVICE);
  CHECK(cuMemPrefetchAsync_v2(plain, page, device0(), 0, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemPrefetchAsync_v2(m, page, device0(), 0, reinterpret_cast<CUstream>(0x1234)) ==
        CUDA_ERROR_INVALID_HANDLE);
  CHECK(old_prefetch()(m, page, 5, s) == CUDA_ERROR_INVALID_DEVICE);
  // Batches: not the legacy stream; location indices start at 0, increase, stay below count.
  CUdeviceptr ptrs[] = {m, m + page};
  size_t sizes[] = {page, page};
  CUmemLocation locs[] = {host(), device0()};
  size_t from_one[] = {1};
  size_t unordered[] = {0, 0};
  size_t past[] = {0, 2};
  CHECK(cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, from_one, 1, 0, s) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, unordered, 2, 0, s) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, past, 2, 0, s) == CUDA_ERROR_INVALID_VALUE);
  size_t zero[] = {0};
  CHECK(cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, zero, 1, 0, nullptr) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemDiscardBatchAsync(ptrs, sizes, 2, 0, CU_STREAM_LEGACY) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemDiscardBatchAsync(ptrs, sizes, 2, 1, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, zero, 1, 0, s));
  // Range queries: the documented sizes.
  int v = 0;
  CHECK(cuMemRangeGetAttribute(&v, 8, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, page) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemRangeGetAttribute(&v, 0, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, page) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, plain, page) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemRangeGetAttribute(nullptr, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, page) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemRangeGetAttribute(&v, 4, static_cast<CUmem_range_attribute>(99), m, page) ==
        CUDA_ERROR_INVALID_VALUE);
  // Attach: the whole allocation, a valid flag, never singly to the NULL stream.
  CHECK(cuStreamAttachMemAsync(s, m, page, CU_MEM_ATTACH_GLOBAL) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamAttachMemAsync(s, m + page, 0, CU_MEM_ATTACH_GLOBAL) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamAttachMemAsync(s, m, 0, 3) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamAttachMemAsync(nullptr, m, 0, CU_MEM_ATTACH_SINGLE) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamAttachMemAsync(s, plain, 0, CU_MEM_ATTACH_GLOBAL) == CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuStreamAttachMemAsync(s, m, 2 * page, CU_MEM_ATTACH_HOST));
  CHECK_CU(cuStreamAttachMemAsync(nullptr, m, 0, CU_MEM_ATTACH_GLOBAL));
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuMemFree(m));
  CHECK_CU(cuMemFree(plain));
}
