// Memory pool objects and their entry points (the allocations themselves: memory_api.cpp).
#include "driver/mempool.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "driver/api.h"
#include "driver/memory.h"
#include "driver/state.h"

namespace cusnap::emu::driver {

struct MemPool {
  bool is_default = false;
  uint64_t max_size = 0;  // CUmemPoolProps::maxSize; 0: bounded by the device total only
  CUmemPoolProps props{};
  std::mutex mutex;  // everything below
  int reuse_follow_event_dependencies = 1;
  int reuse_allow_opportunistic = 1;
  int reuse_allow_internal_dependencies = 1;
  uint64_t release_threshold = 0;
  uint64_t used = 0, used_high = 0;
  uint64_t reserved = 0, reserved_high = 0;  // used + bytes held
  uint64_t live = 0;                         // outstanding allocations
  bool destroyed = false;
};

namespace {

struct Pools {
  std::mutex mutex;  // taken before any MemPool::mutex
  std::vector<MemPool*> all;
  MemPool* current = nullptr;
  MemPool* fallback = nullptr;  // the default pool
};

Pools& pools() {
  static Pools* instance = [] {
    auto* p = new Pools;  // never destroyed: allocations may be freed at exit
    auto* pool = new MemPool;
    pool->is_default = true;
    pool->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pool->props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0};
    register_handle(pool, HandleKind::kMemPool);
    p->all.push_back(pool);
    p->current = p->fallback = pool;
    return p;
  }();
  return *instance;
}

// Releases held bytes until the pool reserves at most max(keep, used). Caller holds pool->mutex.
void trim_locked(MemPool* pool, uint64_t keep) {
  const uint64_t target = std::max(keep, pool->used);
  if (pool->reserved <= target) return;
  allocations().refund(pool->reserved - target);
  pool->reserved = target;
}

// A destroyed pool without allocations: everything it reserved goes back to the device, and the
// object's memory is quarantined with its (already destroyed) handle.
void finalize(MemPool* pool) {
  {
    Pools& p = pools();
    std::lock_guard lock(p.mutex);
    p.all.erase(std::remove(p.all.begin(), p.all.end(), pool), p.all.end());
  }
  allocations().refund(pool->reserved);
  pool->~MemPool();
  quarantine_storage(pool);
}

}  // namespace

MemPool* default_pool() { return pools().fallback; }

MemPool* current_pool() {
  Pools& p = pools();
  std::lock_guard lock(p.mutex);
  return p.current;
}

MemPool* pool_from_handle(CUmemoryPool handle) {
  (void)pools();  // the default pool's handle exists before anyone asks for it
  return handle_cast<MemPool>(handle, HandleKind::kMemPool);
}

bool pool_reserve(MemPool* pool, uint64_t bytes) {
  std::lock_guard lock(pool->mutex);
  const uint64_t held = pool->reserved - pool->used;
  const uint64_t extra = bytes - std::min(held, bytes);
  if (pool->max_size != 0 && pool->reserved + extra > pool->max_size) return false;
  if (extra != 0 && !allocations().charge(extra)) return false;
  pool->reserved += extra;
  pool->used += bytes;
  pool->live += 1;
  pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  pool->used_high = std::max(pool->used_high, pool->used);
  return true;
}

void pool_release(MemPool* pool, uint64_t bytes) {
  bool last = false;
  {
    std::lock_guard lock(pool->mutex);
    pool->used -= std::min(bytes, pool->used);
    pool->live -= 1;
    last = pool->destroyed && pool->live == 0;
  }
  if (last) finalize(pool);
}

CUmemPoolProps pool_properties(const MemPool* pool) { return pool->props; }

void trim_pools_to_thresholds() {
  Pools& p = pools();
  std::lock_guard lock(p.mutex);
  for (MemPool* pool : p.all) {
    std::lock_guard pool_lock(pool->mutex);
    trim_locked(pool, pool->release_threshold);
  }
}

}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;

namespace {

// The emulated device's pinned-memory location is the only one with pools. Host, host-NUMA and
// managed pools are refused as not supported (CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED is
// 0); anything else is not a valid location/type pair.
CUresult check_pool_location(const CUmemLocation* location, CUmemAllocationType type) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (location == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (type == CU_MEM_ALLOCATION_TYPE_MANAGED) return CUDA_ERROR_NOT_SUPPORTED;
  if (type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  switch (location->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return location->id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult set_current(MemPool* pool) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Pools& p = pools();
  std::lock_guard lock(p.mutex);
  p.current = pool;
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  return guarded("cuDeviceGetDefaultMemPool", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pool_out = pool_handle(default_pool());
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  return guarded("cuDeviceGetMemPool", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pool = pool_handle(current_pool());
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  return guarded("cuDeviceSetMemPool", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    return set_current(pool_from_handle(pool));
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool* pool_out,
                                                      CUmemLocation* location,
                                                      CUmemAllocationType type) {
  return guarded("cuMemGetDefaultMemPool", [&] {
    if (CUresult r = check_pool_location(location, type); r != CUDA_SUCCESS) return r;
    if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pool_out = pool_handle(default_pool());
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location,
                                               CUmemAllocationType type) {
  return guarded("cuMemGetMemPool", [&] {
    if (CUresult r = check_pool_location(location, type); r != CUDA_SUCCESS) return r;
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pool = pool_handle(current_pool());
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type,
                                               CUmemoryPool pool) {
  return guarded("cuMemSetMemPool", [&] {
    if (CUresult r = check_pool_location(location, type); r != CUDA_SUCCESS) return r;
    return set_current(pool_from_handle(pool));
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool,
                                               const CUmemPoolProps* poolProps) {
  return guarded("cuMemPoolCreate", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pool == nullptr || poolProps == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const CUmemPoolProps& props = *poolProps;
    if (CUresult r = check_pool_location(&props.location, props.allocType); r != CUDA_SUCCESS)
      return r;
    // Shareable handles are inter-process (IPC) pools: not emulated, refused on purpose.
    if (props.handleTypes != CU_MEM_HANDLE_TYPE_NONE) return CUDA_ERROR_NOT_SUPPORTED;
    if (props.win32SecurityAttributes != nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (props.usage & CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS) return CUDA_ERROR_NOT_SUPPORTED;
    if (props.usage != 0) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned char byte : props.reserved) {
      if (byte != 0) return CUDA_ERROR_INVALID_VALUE;
    }
    auto* created = new MemPool;
    created->props = props;
    created->max_size = props.maxSize;
    register_handle(created, HandleKind::kMemPool);
    {
      Pools& p = pools();
      std::lock_guard lock(p.mutex);
      p.all.push_back(created);
    }
    *pool = pool_handle(created);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  return guarded("cuMemPoolDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    MemPool* target = pool_from_handle(pool);
    // A device's default pool cannot be destroyed (documented).
    if (target == nullptr || target->is_default) return CUDA_ERROR_INVALID_VALUE;
    {
      Pools& p = pools();
      std::lock_guard lock(p.mutex);
      if (p.current == target) p.current = p.fallback;
    }
    mark_destroyed(target, HandleKind::kMemPool);
    bool idle;
    {
      std::lock_guard lock(target->mutex);
      target->destroyed = true;
      idle = target->live == 0;
    }
    // Otherwise the pool goes when its last allocation is freed (documented).
    if (idle) finalize(target);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  return guarded("cuMemPoolTrimTo", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    MemPool* target = pool_from_handle(pool);
    if (target == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(target->mutex);
    trim_locked(target, minBytesToKeep);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                                     void* value) {
  return guarded("cuMemPoolSetAttribute", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    MemPool* target = pool_from_handle(pool);
    if (target == nullptr || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    int flag = 0;
    cuuint64_t bytes = 0;
    std::memcpy(&flag, value, sizeof flag);
    std::lock_guard lock(target->mutex);
    switch (attr) {
      // The reuse policies only decide which freed memory a GPU pool may hand out again; the
      // emulator never recycles addresses (mempool.h), so they are kept and reported only.
      case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        target->reuse_follow_event_dependencies = flag != 0;
        return CUDA_SUCCESS;
      case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        target->reuse_allow_opportunistic = flag != 0;
        return CUDA_SUCCESS;
      case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        target->reuse_allow_internal_dependencies = flag != 0;
        return CUDA_SUCCESS;
      case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        std::memcpy(&bytes, value, sizeof bytes);
        target->release_threshold = bytes;
        return CUDA_SUCCESS;
      case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        std::memcpy(&bytes, value, sizeof bytes);
        if (bytes != 0) return CUDA_ERROR_INVALID_VALUE;  // a high watermark only resets
        target->reserved_high = target->reserved;
        return CUDA_SUCCESS;
      case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        std::memcpy(&bytes, value, sizeof bytes);
        if (bytes != 0) return CUDA_ERROR_INVALID_VALUE;
        target->used_high = target->used;
        return CUDA_SUCCESS;
      default:
        return CUDA_ERROR_INVALID_VALUE;  // the current values are read-only
    }
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                                     void* value) {
  return guarded("cuMemPoolGetAttribute", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    MemPool* target = pool_from_handle(pool);
    if (target == nullptr || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(target->mutex);
    auto put_int = [&](int v) { std::memcpy(value, &v, sizeof v); };
    auto put_bytes = [&](cuuint64_t v) { std::memcpy(value, &v, sizeof v); };
    switch (attr) {
      case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        put_int(target->reuse_follow_event_dependencies);
        break;
      case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        put_int(target->reuse_allow_opportunistic);
        break;
      case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        put_int(target->reuse_allow_internal_dependencies);
        break;
      case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        put_bytes(target->release_threshold);
        break;
      case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        put_bytes(target->reserved);
        break;
      case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        put_bytes(target->reserved_high);
        break;
      case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        put_bytes(target->used);
        break;
      case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        put_bytes(target->used_high);
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  });
}

// One device owns every pool and always has read-write access to it; there is no peer to grant
// access to. A descriptor for another device is INVALID_DEVICE, one that would take the owner's
// access away is INVALID_VALUE.
CUSNAP_EXPORT CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map,
                                                  size_t count) {
  return guarded("cuMemPoolSetAccess", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pool_from_handle(pool) == nullptr || (map == nullptr && count > 0))
      return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
      if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
      if (map[i].location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
      if (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool,
                                                  CUmemLocation* location) {
  return guarded("cuMemPoolGetAccess", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (flags == nullptr || location == nullptr || pool_from_handle(memPool) == nullptr) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (location->id != 0) return CUDA_ERROR_INVALID_DEVICE;
    *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return CUDA_SUCCESS;
  });
}
