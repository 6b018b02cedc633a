#include "driver/memory.h"

#include <sys/mman.h>

#include <mutex>

#include "driver/state.h"

namespace cusnap::emu::driver {
namespace {

// A per-thread memo of the last allocation the engine hit, valid while the table's generation
// is unchanged: the common case (a kernel streaming through one buffer) takes no lock.
struct LookupCache {
  uint64_t generation = 0;
  uint64_t begin = 0, end = 0;
  bool writable = false;
};
thread_local LookupCache t_cache;

}  // namespace

bool AllocationTable::accessible(uint64_t address, uint64_t size, bool write) const {
  if (size == 0) size = 1;
  uint64_t end = address + size;
  if (end < address) return false;
  uint64_t generation = generation_.load(std::memory_order_acquire);
  if (t_cache.generation == generation && address >= t_cache.begin && end <= t_cache.end &&
      (!write || t_cache.writable)) {
    return true;
  }
  std::shared_lock lock(mutex_);
  auto it = by_base_.upper_bound(address);
  if (it == by_base_.begin()) return false;
  --it;
  const Allocation& a = it->second;
  if (address < a.base || end > a.base + a.size) return false;
  if (write && !a.device_writable) return false;
  t_cache = LookupCache{generation, a.base, a.base + a.size, a.device_writable};
  return true;
}

void AllocationTable::insert(Allocation allocation) {
  std::unique_lock lock(mutex_);
  by_base_[allocation.base] = allocation;
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

std::optional<Allocation> AllocationTable::erase(uint64_t base) {
  std::unique_lock lock(mutex_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) return std::nullopt;
  Allocation a = it->second;
  by_base_.erase(it);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return a;
}

std::optional<Allocation> AllocationTable::find(uint64_t address) const {
  std::shared_lock lock(mutex_);
  auto it = by_base_.upper_bound(address);
  if (it == by_base_.begin()) return std::nullopt;
  --it;
  const Allocation& a = it->second;
  if (address >= a.base + (a.size == 0 ? 1 : a.size)) return std::nullopt;
  return a;
}

bool AllocationTable::contains(uint64_t address, uint64_t size) const {
  auto a = find(address);
  return a && address + size >= address && address + size <= a->base + a->size;
}

bool AllocationTable::charge(uint64_t size) {
  uint64_t total = device_config().total_memory;
  uint64_t used = device_bytes_.load();
  do {
    if (used + size > total || used + size < used) return false;
  } while (!device_bytes_.compare_exchange_weak(used, used + size));
  return true;
}

void AllocationTable::refund(uint64_t size) { device_bytes_.fetch_sub(size); }

AllocationTable& allocations() {
  static AllocationTable* table = new AllocationTable;  // outlives every static destructor
  return *table;
}

void* map_anonymous(uint64_t size) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap_anonymous(void* base, uint64_t size) { munmap(base, size); }

}  // namespace cusnap::emu::driver
