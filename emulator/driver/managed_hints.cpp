// Managed-memory hints: cuMemAdvise, the prefetch and discard calls, cuMemRangeGetAttribute(s)
// and cuStreamAttachMemAsync.
//
// Managed memory is host memory the device reads and writes in place, so no page ever migrates
// and none of these calls changes what a program computes. What they do observably is checked
// and kept: the advice and the last requested prefetch location of every page (memory.h
// PageHints), which cuMemRangeGetAttribute answers as the driver documents. Prefetches, discards
// and attaches are stream operations, ordered like any other (a discard leaves the contents as
// they were: "indeterminate" includes unchanged).
#include <algorithm>
#include <cstring>
#include <vector>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/graph.h"
#include "driver/memory.h"
#include "driver/state.h"

using namespace cusnap::emu::driver;

namespace {

// The managed allocation holding all of [ptr, ptr + count) and the page range it covers.
struct ManagedRange {
  std::shared_ptr<ManagedHints> hints;
  size_t first = 0;
  size_t end = 0;
};

CUresult managed_range(CUdeviceptr ptr, size_t count, ManagedRange* out) {
  if (ptr == 0 || count == 0) return CUDA_ERROR_INVALID_VALUE;
  std::optional<Allocation> a = allocations().find(ptr);
  if (!a || !is_managed(*a) || !a->hints || count > a->base + a->size - ptr)
    return CUDA_ERROR_INVALID_VALUE;
  // The range is widened to whole host pages, as documented.
  const uint64_t page = host_page_size();
  const uint64_t base_page = a->base / page;
  out->hints = a->hints;
  out->first = ptr / page - base_page;
  out->end = std::min<size_t>((ptr + count + page - 1) / page - base_page, a->hints->pages.size());
  return CUDA_SUCCESS;
}

// A location as the hints store it: the device (id 0) or the host. Host NUMA nodes do not exist
// here (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID is -1).
CUresult check_location(const CUmemLocation& loc, const char* call) {
  switch (loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return loc.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      log(LogLevel::kError, "%s: host NUMA locations are not emulated (no NUMA node)", call);
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// The old ABI's CUdevice argument: a device ordinal or CU_DEVICE_CPU.
CUresult location_of_device(CUdevice device, CUmemLocation* out) {
  if (device == CU_DEVICE_CPU) {
    *out = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0};
    return CUDA_SUCCESS;
  }
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  *out = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  return CUDA_SUCCESS;
}

CUresult advise(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUmemLocation loc) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  ManagedRange range;
  if (CUresult r = managed_range(ptr, count, &range); r != CUDA_SUCCESS) return r;
  switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
      break;  // "The location argument is ignored for this advice"
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
      if (CUresult r = check_location(loc, "cuMemAdvise"); r != CUDA_SUCCESS) return r;
      break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
      // "All other location types are invalid."
      if (loc.type != CU_MEM_LOCATION_TYPE_DEVICE && loc.type != CU_MEM_LOCATION_TYPE_HOST)
        return CUDA_ERROR_INVALID_VALUE;
      if (CUresult r = check_location(loc, "cuMemAdvise"); r != CUDA_SUCCESS) return r;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  const bool device = loc.type == CU_MEM_LOCATION_TYPE_DEVICE;
  std::lock_guard lock(range.hints->mutex);
  for (size_t i = range.first; i < range.end; ++i) {
    PageHints& p = range.hints->pages[i];
    switch (advice) {
      case CU_MEM_ADVISE_SET_READ_MOSTLY:
        p.read_mostly = true;
        break;
      case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
        p.read_mostly = false;
        break;
      case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
        p.preferred_type = loc.type;
        p.preferred_id = device ? loc.id : 0;
        break;
      case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
        p.preferred_type = CU_MEM_LOCATION_TYPE_INVALID;
        p.preferred_id = 0;
        break;
      case CU_MEM_ADVISE_SET_ACCESSED_BY:
      case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
        (device ? p.accessed_by_device : p.accessed_by_host) =
            advice == CU_MEM_ADVISE_SET_ACCESSED_BY;
        break;
      default:
        break;
    }
  }
  return CUDA_SUCCESS;
}

// Records the requested location now ("the last location that the application requested") and
// queues the (empty) migration in stream order.
void record_prefetch(const ManagedRange& range, const CUmemLocation& loc) {
  std::lock_guard lock(range.hints->mutex);
  for (size_t i = range.first; i < range.end; ++i) {
    range.hints->pages[i].prefetched_type = loc.type;
    range.hints->pages[i].prefetched_id = loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? loc.id : 0;
  }
}

CUresult resolve_queue(CUstream h, bool per_thread, bool legacy_allowed, const char* call,
                       Context** ctx, Stream** s) {
  if (CUresult r = stream_argument(h, per_thread, ctx, s); r != CUDA_SUCCESS) return r;
  // The batch calls: "Must not be legacy NULL stream".
  if (!legacy_allowed && (*s)->kind() == StreamKind::kLegacy) return CUDA_ERROR_INVALID_VALUE;
  // Under capture a GPU's driver makes these nodes; the emulator has none for them.
  return capture_refuse(*s, call, CUDA_ERROR_NOT_SUPPORTED);
}

void queue_nothing(Context* ctx, Stream* s) {
  ctx->submit(s, [] { return uint64_t{0}; });
}

CUresult prefetch(CUdeviceptr ptr, size_t count, CUmemLocation loc, unsigned flags, CUstream h,
                  bool per_thread) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  ManagedRange range;
  if (CUresult r = managed_range(ptr, count, &range); r != CUDA_SUCCESS) return r;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;  // "must be zero now"
  if (CUresult r = check_location(loc, "cuMemPrefetchAsync"); r != CUDA_SUCCESS) return r;
  Context* ctx;
  Stream* s;
  if (CUresult r = resolve_queue(h, per_thread, true, "cuMemPrefetchAsync", &ctx, &s);
      r != CUDA_SUCCESS) {
    return r;
  }
  record_prefetch(range, loc);
  queue_nothing(ctx, s);
  return CUDA_SUCCESS;
}

// The batch calls: every range checked, then (for prefetches) the location of each operation
// from prefetchLocs / prefetchLocIdxs as documented: the first index 0, strictly increasing,
// each below count, numPrefetchLocs at most count.
CUresult batch(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* locs,
               size_t* loc_idxs, size_t num_locs, unsigned long long flags, CUstream h,
               bool per_thread, bool discard, bool prefetch, const char* call) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (dptrs == nullptr || sizes == nullptr || count == 0 || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::vector<ManagedRange> ranges(count);
  for (size_t i = 0; i < count; ++i) {
    if (CUresult r = managed_range(dptrs[i], sizes[i], &ranges[i]); r != CUDA_SUCCESS) return r;
  }
  std::vector<CUmemLocation> where(count);
  if (prefetch) {
    if (locs == nullptr || loc_idxs == nullptr || num_locs == 0 || num_locs > count ||
        loc_idxs[0] != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t k = 0; k < num_locs; ++k) {
      if (k > 0 && loc_idxs[k] <= loc_idxs[k - 1]) return CUDA_ERROR_INVALID_VALUE;
      if (loc_idxs[k] >= count) return CUDA_ERROR_INVALID_VALUE;
      if (CUresult r = check_location(locs[k], call); r != CUDA_SUCCESS) return r;
      const size_t end = k + 1 < num_locs ? loc_idxs[k + 1] : count;
      for (size_t i = loc_idxs[k]; i < end; ++i) where[i] = locs[k];
    }
  }
  Context* ctx;
  Stream* s;
  if (CUresult r = resolve_queue(h, per_thread, false, call, &ctx, &s); r != CUDA_SUCCESS) return r;
  (void)discard;  // the contents become indeterminate: leaving them as they are is one choice
  if (prefetch) {
    for (size_t i = 0; i < count; ++i) record_prefetch(ranges[i], where[i]);
  }
  queue_nothing(ctx, s);
  return CUDA_SUCCESS;
}

// One attribute over the range's pages; `data` has dataSize bytes.
CUresult range_attribute(void* data, size_t size, CUmem_range_attribute attribute,
                         const ManagedRange& range) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(range.hints->mutex);
  const PageHints* first = &range.hints->pages[range.first];
  auto all = [&](auto&& pred) {
    for (size_t i = range.first; i < range.end; ++i) {
      if (!pred(range.hints->pages[i])) return false;
    }
    return true;
  };
  auto put_int = [&](int value) {
    if (size != sizeof(int)) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(data, &value, sizeof value);
    return CUDA_SUCCESS;
  };
  auto put_type = [&](CUmemLocationType value) {
    if (size != sizeof(CUmemLocationType)) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(data, &value, sizeof value);
    return CUDA_SUCCESS;
  };
  // The location every page agrees on, or INVALID.
  auto common = [&](CUmemLocationType PageHints::*type, int PageHints::*id) {
    const CUmemLocationType t = first->*type;
    const int i = first->*id;
    if (all([&](const PageHints& p) { return p.*type == t && p.*id == i; })) return std::pair{t, i};
    return std::pair{CU_MEM_LOCATION_TYPE_INVALID, 0};
  };
  // The old CUdevice form: the device ordinal, CU_DEVICE_CPU for the host, else INVALID.
  auto as_device = [](std::pair<CUmemLocationType, int> loc) {
    if (loc.first == CU_MEM_LOCATION_TYPE_DEVICE) return loc.second;
    if (loc.first == CU_MEM_LOCATION_TYPE_HOST) return int{CU_DEVICE_CPU};
    return int{CU_DEVICE_INVALID};
  };
  switch (attribute) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
      return put_int(all([](const PageHints& p) { return p.read_mostly; }) ? 1 : 0);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
      return put_int(as_device(common(&PageHints::preferred_type, &PageHints::preferred_id)));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
      return put_type(common(&PageHints::preferred_type, &PageHints::preferred_id).first);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
      return put_int(common(&PageHints::preferred_type, &PageHints::preferred_id).second);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
      return put_int(as_device(common(&PageHints::prefetched_type, &PageHints::prefetched_id)));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
      return put_type(common(&PageHints::prefetched_type, &PageHints::prefetched_id).first);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
      return put_int(common(&PageHints::prefetched_type, &PageHints::prefetched_id).second);
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
      // "a non-zero multiple of 4": the processors advised for the whole range, then
      // CU_DEVICE_INVALID in the extra space.
      if (size == 0 || size % sizeof(int) != 0) return CUDA_ERROR_INVALID_VALUE;
      std::vector<int> ids;
      if (all([](const PageHints& p) { return p.accessed_by_device; })) ids.push_back(0);
      if (all([](const PageHints& p) { return p.accessed_by_host; })) ids.push_back(CU_DEVICE_CPU);
      const size_t n = size / sizeof(int);
      ids.resize(std::max(n, ids.size()), CU_DEVICE_INVALID);
      std::memcpy(data, ids.data(), size);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult attach(CUstream h, CUdeviceptr ptr, size_t length, unsigned flags, bool per_thread) {
  Context* ctx;
  Stream* s;
  if (CUresult r = stream_argument(h, per_thread, &ctx, &s); r != CUDA_SUCCESS) return r;
  std::optional<Allocation> a = allocations().find(ptr);
  if (!a || !is_managed(*a)) return CUDA_ERROR_INVALID_VALUE;  // pageable memory: not accessible
  // "length must be either zero or the entire allocation's size".
  if (ptr != a->base || (length != 0 && length != a->size)) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
    return CUDA_ERROR_INVALID_VALUE;
  // "It is illegal to attach singly to the NULL stream".
  if (flags == CU_MEM_ATTACH_SINGLE && s->kind() != StreamKind::kUser)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = capture_refuse(s, "cuStreamAttachMemAsync", CUDA_ERROR_NOT_SUPPORTED);
      r != CUDA_SUCCESS) {
    return r;
  }
  // CONCURRENT_MANAGED_ACCESS is 1, so the association restricts nothing: an ordered no-op.
  queue_nothing(ctx, s);
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                           CUdevice device) {
  return guarded("cuMemAdvise", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    CUmemLocation loc{};
    const bool uses_location = advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
                               advice == CU_MEM_ADVISE_SET_ACCESSED_BY ||
                               advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY;
    if (uses_location) {
      if (CUresult r = location_of_device(device, &loc); r != CUDA_SUCCESS) return r;
    }
    return advise(devPtr, count, advice, loc);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                              CUmemLocation location) {
  return guarded("cuMemAdvise_v2", [&] { return advise(devPtr, count, advice, location); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count,
                                                  CUdevice dstDevice, CUstream hStream) {
  return guarded("cuMemPrefetchAsync", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    CUmemLocation loc{};
    if (CUresult r = location_of_device(dstDevice, &loc); r != CUDA_SUCCESS) return r;
    return prefetch(devPtr, count, loc, 0, hStream, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count,
                                                       CUdevice dstDevice, CUstream hStream) {
  return guarded("cuMemPrefetchAsync_ptsz", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    CUmemLocation loc{};
    if (CUresult r = location_of_device(dstDevice, &loc); r != CUDA_SUCCESS) return r;
    return prefetch(devPtr, count, loc, 0, hStream, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count,
                                                     CUmemLocation location, unsigned int flags,
                                                     CUstream hStream) {
  return guarded("cuMemPrefetchAsync_v2",
                 [&] { return prefetch(devPtr, count, location, flags, hStream, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count,
                                                          CUmemLocation location,
                                                          unsigned int flags, CUstream hStream) {
  return guarded("cuMemPrefetchAsync_v2_ptsz", [&] {
    return prefetch(devPtr, count, location, flags, hStream, kPerThreadDefault);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes,
                                                       size_t count, CUmemLocation* prefetchLocs,
                                                       size_t* prefetchLocIdxs,
                                                       size_t numPrefetchLocs,
                                                       unsigned long long flags, CUstream hStream) {
  return guarded("cuMemPrefetchBatchAsync", [&] {
    return batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
                 hStream, kLegacyDefault, false, true, "cuMemPrefetchBatchAsync");
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemPrefetchBatchAsync_ptsz(
    CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
    size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
  return guarded("cuMemPrefetchBatchAsync_ptsz", [&] {
    return batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
                 hStream, kPerThreadDefault, false, true, "cuMemPrefetchBatchAsync");
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemDiscardBatchAsync(CUdeviceptr* dptrs, size_t* sizes,
                                                      size_t count, unsigned long long flags,
                                                      CUstream hStream) {
  return guarded("cuMemDiscardBatchAsync", [&] {
    return batch(dptrs, sizes, count, nullptr, nullptr, 0, flags, hStream, kLegacyDefault, true,
                 false, "cuMemDiscardBatchAsync");
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemDiscardBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes,
                                                           size_t count, unsigned long long flags,
                                                           CUstream hStream) {
  return guarded("cuMemDiscardBatchAsync_ptsz", [&] {
    return batch(dptrs, sizes, count, nullptr, nullptr, 0, flags, hStream, kPerThreadDefault, true,
                 false, "cuMemDiscardBatchAsync");
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemDiscardAndPrefetchBatchAsync(
    CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
    size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
  return guarded("cuMemDiscardAndPrefetchBatchAsync", [&] {
    return batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
                 hStream, kLegacyDefault, true, true, "cuMemDiscardAndPrefetchBatchAsync");
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemDiscardAndPrefetchBatchAsync_ptsz(
    CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
    size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
  return guarded("cuMemDiscardAndPrefetchBatchAsync_ptsz", [&] {
    return batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
                 hStream, kPerThreadDefault, true, true, "cuMemDiscardAndPrefetchBatchAsync");
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemRangeGetAttribute(void* data, size_t dataSize,
                                                      CUmem_range_attribute attribute,
                                                      CUdeviceptr devPtr, size_t count) {
  return guarded("cuMemRangeGetAttribute", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    ManagedRange range;
    if (CUresult r = managed_range(devPtr, count, &range); r != CUDA_SUCCESS) return r;
    return range_attribute(data, dataSize, attribute, range);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemRangeGetAttributes(void** data, size_t* dataSizes,
                                                       CUmem_range_attribute* attributes,
                                                       size_t numAttributes, CUdeviceptr devPtr,
                                                       size_t count) {
  return guarded("cuMemRangeGetAttributes", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (data == nullptr || dataSizes == nullptr || attributes == nullptr || numAttributes == 0)
      return CUDA_ERROR_INVALID_VALUE;
    ManagedRange range;
    if (CUresult r = managed_range(devPtr, count, &range); r != CUDA_SUCCESS) return r;
    for (size_t i = 0; i < numAttributes; ++i) {
      if (CUresult r = range_attribute(data[i], dataSizes[i], attributes[i], range);
          r != CUDA_SUCCESS) {
        return r;
      }
    }
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr,
                                                      size_t length, unsigned int flags) {
  return guarded("cuStreamAttachMemAsync",
                 [&] { return attach(hStream, dptr, length, flags, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr,
                                                           size_t length, unsigned int flags) {
  return guarded("cuStreamAttachMemAsync_ptsz",
                 [&] { return attach(hStream, dptr, length, flags, kPerThreadDefault); });
}
