// Stream-ordered memory pools (cuMemPool*, cuMemAllocAsync, cuMemAllocFromPoolAsync).
//
// The one device has a default pool and a current pool (the default until cuDeviceSetMemPool).
// A pool's accounting follows the driver's documented model, in pages (the unit in which the
// emulator charges device memory):
//   used     bytes of the pool's live allocations;
//   reserved used + bytes freed back to the pool and still held, charged against the device
//            total (cuMemGetInfo's free memory shrinks with it) until the pool releases them: a
//            later allocation from the pool takes them first; cuMemPoolTrimTo releases them;
//            every stream, event and context synchronisation releases what exceeds the pool's
//            CU_MEMPOOL_ATTR_RELEASE_THRESHOLD (default 0).
// Addresses are never recycled: every allocation is a fresh mapping with its redzone, so a use
// after cuMemFreeAsync is an illegal address, as memcheck wants, whatever the pool holds.
#pragma once

#include <cstdint>

#include "generated_driver_api.h"

namespace cusnap::emu::driver {

struct MemPool;

MemPool* default_pool();
MemPool* current_pool();
// A live pool handle, else null.
MemPool* pool_from_handle(CUmemoryPool handle);
inline CUmemoryPool pool_handle(MemPool* pool) { return reinterpret_cast<CUmemoryPool>(pool); }

// Reserves `bytes` for a new allocation from `pool`: bytes the pool holds first, the rest
// charged against the device total. False (nothing reserved) when the device memory or the
// pool's maxSize would be exceeded.
bool pool_reserve(MemPool* pool, uint64_t bytes);
// An allocation of `bytes` left `pool` (freed, or never mapped): the bytes stay reserved by the
// pool. The last allocation of a destroyed pool releases everything and the pool itself.
void pool_release(MemPool* pool, uint64_t bytes);
// The properties `pool` was created with (the default pool's: pinned memory of device 0).
CUmemPoolProps pool_properties(const MemPool* pool);
// A synchronisation point: every pool releases the bytes it holds beyond its release threshold.
void trim_pools_to_thresholds();

}  // namespace cusnap::emu::driver
