// The virtual memory management API. Reservations are PROT_NONE anonymous mappings (at the
// caller's hint when that range is free: MAP_FIXED_NOREPLACE), physical allocations are memfds,
// and cuMemMap maps a memfd MAP_SHARED over the reservation, so two mappings of one allocation
// alias exactly as on a GPU. cuMemSetAccess makes a range readable/writable for the host (mprotect)
// and for device code (the allocation table).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/memory.h"
#include "driver/state.h"
#include "driver/stats.h"

using namespace cusnap::emu::driver;

namespace {

constexpr size_t kGranularity = size_t{2} << 20;  // what GPUs report, minimum and recommended

struct Physical {
  int fd = -1;
  size_t size = 0;
  CUmemAllocationProp prop{};
  unsigned references = 1;  // the handle itself + one per mapping / retain
};

struct Mapping {
  size_t size = 0;
  size_t offset = 0;
  Physical* physical = nullptr;
};

struct VmmState {
  std::mutex mutex;
  std::map<uint64_t, size_t> reservations;  // base -> size
  std::map<uint64_t, Mapping> mappings;     // base -> mapping
};

VmmState& vmm() {
  static VmmState* state = new VmmState;
  return *state;
}

void drop_reference(Physical* p) {
  if (--p->references != 0) return;
  close(p->fd);
  allocations().refund(p->size);
  destroy_handle(p, HandleKind::kPhysicalMemory);
}

bool inside_reservation(VmmState& s, uint64_t ptr, size_t size) {
  auto it = s.reservations.upper_bound(ptr);
  if (it == s.reservations.begin()) return false;
  --it;
  return ptr >= it->first && ptr + size <= it->first + it->second;
}

// Removes [lo, hi) from the allocation table, keeping the parts of entries outside it.
void table_erase_range(uint64_t lo, uint64_t hi) {
  for (uint64_t cursor = lo; cursor < hi;) {
    auto a = allocations().find(cursor);
    if (!a) {
      ++cursor;
      // Skip quickly to the next mapping boundary we know of.
      auto& s = vmm();
      auto next = s.mappings.lower_bound(cursor);
      if (next == s.mappings.end() || next->first >= hi) break;
      cursor = next->first;
      continue;
    }
    allocations().erase(a->base);
    if (a->base < lo) {
      Allocation left = *a;
      left.size = lo - a->base;
      allocations().insert(left);
    }
    if (a->base + a->size > hi) {
      Allocation right = *a;
      right.base = hi;
      right.size = a->base + a->size - hi;
      allocations().insert(right);
    }
    cursor = a->base + a->size;
  }
}

bool location_ok(const CUmemLocation& location) {
  return location.type == CU_MEM_LOCATION_TYPE_DEVICE && location.id == 0;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(
    size_t* granularity, const CUmemAllocationProp* prop, CUmemAllocationGranularity_flags option) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (granularity == nullptr || prop == nullptr || !location_ok(prop->location))
    return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
      option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                                   CUdeviceptr addr, unsigned long long flags) {
  return guarded("cuMemAddressReserve", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (ptr == nullptr || size == 0 || size % kGranularity != 0 || flags != 0)
      return CUDA_ERROR_INVALID_VALUE;
    if (alignment == 0) alignment = kGranularity;
    if ((alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
    // CUSNAP_EMU_VA_HINT_ROUND=N (bytes, a power of two): take a hint as NVIDIA's driver 580 was
    // seen to on an H200 - rounded up to a multiple of N (32 MiB there; docs/hardware.md) - so
    // tests can check what the replayer does about it. Unset: the hint as given.
    static const uint64_t hint_round = [] {
      const char* v = std::getenv("CUSNAP_EMU_VA_HINT_ROUND");
      const uint64_t n = v != nullptr ? std::strtoull(v, nullptr, 0) : 0;
      return n > 1 && (n & (n - 1)) == 0 ? n : 0;
    }();
    if (addr != 0 && hint_round != 0) addr = (addr + hint_round - 1) / hint_round * hint_round;
    constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    void* base = MAP_FAILED;
    if (addr != 0 && addr % alignment == 0) {
      base =
          mmap(reinterpret_cast<void*>(addr), size, PROT_NONE, kFlags | MAP_FIXED_NOREPLACE, -1, 0);
      if (base != MAP_FAILED &&
          base != reinterpret_cast<void*>(addr)) {  // kernel without NOREPLACE
        munmap(base, size);
        base = MAP_FAILED;
      }
      if (base == MAP_FAILED) {
        log(LogLevel::kInfo,
            "cuMemAddressReserve: hint 0x%llx (%zu bytes) is taken; reserving elsewhere", addr,
            size);
      }
    }
    if (base == MAP_FAILED) {
      // Over-reserve and trim to honour the alignment.
      void* raw = mmap(nullptr, size + alignment, PROT_NONE, kFlags, -1, 0);
      if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
      uint64_t start = reinterpret_cast<uint64_t>(raw);
      uint64_t aligned = (start + alignment - 1) / alignment * alignment;
      if (aligned > start) munmap(raw, aligned - start);
      uint64_t tail = start + size + alignment - (aligned + size);
      if (tail > 0) munmap(reinterpret_cast<void*>(aligned + size), tail);
      base = reinterpret_cast<void*>(aligned);
    }
    std::lock_guard lock(vmm().mutex);
    vmm().reservations[reinterpret_cast<uint64_t>(base)] = size;
    *ptr = reinterpret_cast<CUdeviceptr>(base);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return guarded("cuMemAddressFree", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(vmm().mutex);
    auto it = vmm().reservations.find(ptr);
    if (it == vmm().reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
    auto m = vmm().mappings.lower_bound(ptr);
    if (m != vmm().mappings.end() && m->first < ptr + size)
      return CUDA_ERROR_INVALID_VALUE;  // still mapped
    munmap(reinterpret_cast<void*>(ptr), size);
    vmm().reservations.erase(it);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                           const CUmemAllocationProp* prop,
                                           unsigned long long flags) {
  return guarded("cuMemCreate", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (handle == nullptr || prop == nullptr || size == 0 || size % kGranularity != 0 ||
        flags != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || !location_ok(prop->location))
      return CUDA_ERROR_INVALID_VALUE;
    if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE) return CUDA_ERROR_NOT_SUPPORTED;
    if (!allocations().charge(size)) return CUDA_ERROR_OUT_OF_MEMORY;
    int fd = memfd_create("cusnap-emu-vmm", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
      if (fd >= 0) close(fd);
      allocations().refund(size);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    auto* p = new Physical;
    p->fd = fd;
    p->size = size;
    p->prop = *prop;
    register_handle(p, HandleKind::kPhysicalMemory);
    note_allocation(AllocationKind::kVmmMapping, size);
    *handle = reinterpret_cast<CUmemGenericAllocationHandle>(p);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  return guarded("cuMemRelease", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(vmm().mutex);
    auto* p = handle_cast<Physical>(reinterpret_cast<void*>(handle), HandleKind::kPhysicalMemory);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    note_free(AllocationKind::kVmmMapping, p->size);
    drop_reference(p);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                        CUmemGenericAllocationHandle handle,
                                        unsigned long long flags) {
  return guarded("cuMemMap", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(vmm().mutex);
    auto* p = handle_cast<Physical>(reinterpret_cast<void*>(handle), HandleKind::kPhysicalMemory);
    if (p == nullptr || flags != 0 || size == 0 || size % kGranularity != 0 ||
        offset % kGranularity != 0 || offset + size > p->size ||
        !inside_reservation(vmm(), ptr, size)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    auto next = vmm().mappings.lower_bound(ptr);
    if (next != vmm().mappings.end() && next->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
    if (next != vmm().mappings.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second.size > ptr) return CUDA_ERROR_INVALID_VALUE;
    }
    void* mapped = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED,
                        p->fd, static_cast<off_t>(offset));
    if (mapped == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    ++p->references;
    vmm().mappings[ptr] = Mapping{size, offset, p};
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return guarded("cuMemUnmap", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (Context* ctx = current_context()) ctx->synchronize();
    std::lock_guard lock(vmm().mutex);
    auto first = vmm().mappings.find(ptr);
    if (first == vmm().mappings.end()) return CUDA_ERROR_INVALID_VALUE;
    // The range must consist of whole mappings.
    uint64_t cursor = ptr;
    auto it = first;
    while (cursor < ptr + size) {
      if (it == vmm().mappings.end() || it->first != cursor) return CUDA_ERROR_INVALID_VALUE;
      cursor += it->second.size;
      ++it;
    }
    if (cursor != ptr + size) return CUDA_ERROR_INVALID_VALUE;
    table_erase_range(ptr, ptr + size);
    mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    for (auto m = first; m != it;) {
      drop_reference(m->second.physical);
      m = vmm().mappings.erase(m);
    }
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                              const CUmemAccessDesc* desc, size_t count) {
  return guarded("cuMemSetAccess", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (desc == nullptr || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
    CUmemAccess_flags access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    for (size_t i = 0; i < count; ++i) {
      if (!location_ok(desc[i].location)) return CUDA_ERROR_INVALID_DEVICE;
      access = desc[i].flags;
    }
    std::lock_guard lock(vmm().mutex);
    // The whole range must be mapped.
    uint64_t cursor = ptr;
    auto it = vmm().mappings.upper_bound(ptr);
    if (it == vmm().mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
    --it;
    while (cursor < ptr + size) {
      if (it == vmm().mappings.end() || it->first > cursor ||
          it->first + it->second.size <= cursor) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      cursor = it->first + it->second.size;
      ++it;
    }
    int prot = access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
               : access == CU_MEM_ACCESS_FLAGS_PROT_READ    ? PROT_READ
                                                            : PROT_NONE;
    if (mprotect(reinterpret_cast<void*>(ptr), size, prot) != 0) return CUDA_ERROR_INVALID_VALUE;
    table_erase_range(ptr, ptr + size);
    if (prot != PROT_NONE) {
      Allocation a;
      a.base = ptr;
      a.size = size;
      a.kind = AllocationKind::kVmmMapping;
      a.context = ctx->handle();
      a.device_writable = (prot & PROT_WRITE) != 0;
      a.counts_as_device_memory = false;  // charged at cuMemCreate
      allocations().insert(a);
    }
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemGetAccess(unsigned long long* flags,
                                              const CUmemLocation* location, CUdeviceptr ptr) {
  return guarded("cuMemGetAccess", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (flags == nullptr || location == nullptr || !location_ok(*location))
      return CUDA_ERROR_INVALID_VALUE;
    auto a = allocations().find(ptr);
    *flags = !a                   ? CU_MEM_ACCESS_FLAGS_PROT_NONE
             : a->device_writable ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                  : CU_MEM_ACCESS_FLAGS_PROT_READ;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle,
                                                           void* addr) {
  return guarded("cuMemRetainAllocationHandle", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(vmm().mutex);
    uint64_t address = reinterpret_cast<uint64_t>(addr);
    auto it = vmm().mappings.upper_bound(address);
    if (it == vmm().mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
    --it;
    if (address >= it->first + it->second.size) return CUDA_ERROR_INVALID_VALUE;
    ++it->second.physical->references;
    *handle = reinterpret_cast<CUmemGenericAllocationHandle>(it->second.physical);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(
    CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle) {
  return guarded("cuMemGetAllocationPropertiesFromHandle", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(vmm().mutex);
    auto* p = handle_cast<Physical>(reinterpret_cast<void*>(handle), HandleKind::kPhysicalMemory);
    if (p == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *prop = p->prop;
    return CUDA_SUCCESS;
  });
}
