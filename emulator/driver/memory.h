// Device memory: every range device code may touch, in one table.
//
// Device addresses are host addresses (mmap'd), so pointers embedded in data just work. The
// table is the emulator's MMU: the PTX engine asks it (MemoryHost::accessible) before every
// global access, and copies check their device-side ranges against it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "generated_driver_api.h"
#include "ptx/engine.h"

namespace cusnap::emu::driver {

class Context;

struct MemPool;

// What cuMemAdvise and the prefetch calls recorded for one page of a managed allocation: the
// answers of cuMemRangeGetAttribute. On a GPU they steer page migration; here memory never moves,
// so nothing else depends on them.
struct PageHints {
  bool read_mostly = false;
  CUmemLocationType preferred_type = CU_MEM_LOCATION_TYPE_INVALID;
  int preferred_id = 0;
  bool accessed_by_device = false;
  bool accessed_by_host = false;
  CUmemLocationType prefetched_type = CU_MEM_LOCATION_TYPE_INVALID;
  int prefetched_id = 0;
};
struct ManagedHints {
  std::mutex mutex;
  // One per host page the allocation touches, from the page holding its first byte.
  std::vector<PageHints> pages;
};
uint64_t host_page_size();

enum class AllocationKind : uint8_t {
  kDevice,          // cuMemAlloc, cuMemAllocPitch, cuMemAllocAsync
  kHostPinned,      // cuMemAllocHost, cuMemHostAlloc: device pointer == host pointer
  kHostRegistered,  // cuMemHostRegister: the application's memory
  kManaged,         // cuMemAllocManaged
  kModuleVariable,  // module-scope .global / .const
  kVmmMapping,      // cuMemMap + cuMemSetAccess
};

struct Allocation {
  uint64_t base = 0;
  uint64_t size = 0;         // what the caller asked for: the accessible range
  uint64_t mapped_size = 0;  // mmap'd, redzone included (0: not owned, e.g. registered or VMM)
  uint64_t charged = 0;      // bytes charged against the emulated total (refunded at free)
  AllocationKind kind = AllocationKind::kDevice;
  unsigned flags = 0;
  CUcontext context = nullptr;
  unsigned long long buffer_id = 0;
  bool device_writable = true;
  bool counts_as_device_memory = true;  // charged against the emulated total
  // A module variable declared `.attribute(.managed)` (`__managed__`): managed memory the module
  // owns (freed at unload, not by cuMemFree), which the host reads and writes through its address.
  bool managed_variable = false;
  const char* name = nullptr;  // module variables: the variable (lives with its module)
  MemPool* pool = nullptr;     // stream-ordered allocations: the pool charged (mempool.h)
  // Managed memory: the advice per page, shared by every copy of the entry (made at insert).
  std::shared_ptr<ManagedHints> hints;
  // The context's device-side malloc heap (device_heap.h): device memory cuMemFree refuses.
  bool device_heap = false;
};

// Bytes after every allocation the emulator places itself (device, pitched, managed, pinned
// host memory, module variables) that belong to no allocation, so that an access just past the
// end is an illegal address instead of landing in the neighbouring allocation. At least
// CUSNAP_EMU_REDZONE bytes (default kDefaultRedzone, 0 allowed), rounded up so that the mapping
// ends on a page boundary; read once. Registered host memory and VMM mappings are placed by the
// application and get none.
inline constexpr uint64_t kDefaultRedzone = 256;
uint64_t redzone_bytes();

class AllocationTable final : public ptx::MemoryHost {
 public:
  bool accessible(uint64_t address, uint64_t size, bool write) const override;
  // Memcheck detail for an access that is not accessible: the allocation it overflowed or
  // underflowed (the nearest one), with base, size and offset; empty when none is near.
  std::string describe(uint64_t address, uint64_t size, bool write) const override;
  // Texture and surface objects (texture.cpp): the engine's tex/suld/sust read them here.
  bool texture(uint64_t handle, ptx::TextureView* out) const override;
  bool surface(uint64_t handle, ptx::SurfaceView* out) const override;

  void insert(Allocation allocation);
  std::optional<Allocation> erase(uint64_t base);          // by exact base
  std::optional<Allocation> find(uint64_t address) const;  // the allocation containing address
  // True when [address, address + size) is inside one allocation.
  bool contains(uint64_t address, uint64_t size) const;
  uint64_t device_bytes_in_use() const { return device_bytes_.load(); }
  // Reserves `size` bytes of the emulated total; false when it would be exceeded.
  bool charge(uint64_t size);
  void refund(uint64_t size);

 private:
  mutable std::shared_mutex mutex_;
  std::map<uint64_t, Allocation> by_base_;
  std::atomic<uint64_t> device_bytes_{0};
  std::atomic<uint64_t> generation_{1};  // bumped on every change; invalidates lookup caches
};

AllocationTable& allocations();

// Managed memory: cuMemAllocManaged allocations and `__managed__` module variables.
inline bool is_managed(const Allocation& a) {
  return a.kind == AllocationKind::kManaged || a.managed_variable;
}

// A fresh CU_POINTER_ATTRIBUTE_BUFFER_ID: unique for every allocation the process makes.
unsigned long long next_buffer_id();

// mmap-backed anonymous memory (page aligned, zero-filled) and its release.
void* map_anonymous(uint64_t size);
void unmap_anonymous(void* base, uint64_t size);

// Frees an allocation made by cuMemAlloc/cuMemAllocAsync/cuMemAllocFromPoolAsync (the
// stream-ordered free ends here); a pool allocation's bytes go back to its pool.
CUresult free_device_allocation(uint64_t base);

// The memory of a context's device heap (device_heap.h): device memory charged like cuMemAlloc's,
// which only release_device_heap frees.
CUresult allocate_device_heap(Context* ctx, uint64_t size, CUdeviceptr* out);
CUresult release_device_heap(uint64_t base);

}  // namespace cusnap::emu::driver
