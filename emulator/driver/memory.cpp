#include "driver/memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <mutex>

#include "driver/log.h"
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

uint64_t host_page_size() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

void AllocationTable::insert(Allocation allocation) {
  if (is_managed(allocation) && !allocation.hints) {
    allocation.hints = std::make_shared<ManagedHints>();
    const uint64_t page = host_page_size();
    const uint64_t first = allocation.base / page;
    const uint64_t end = (allocation.base + allocation.size + page - 1) / page;
    allocation.hints->pages.resize(end - first);
  }
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

namespace {

const char* kind_name(AllocationKind kind) {
  switch (kind) {
    case AllocationKind::kDevice:
      return "device allocation";
    case AllocationKind::kHostPinned:
      return "pinned host allocation";
    case AllocationKind::kHostRegistered:
      return "registered host range";
    case AllocationKind::kManaged:
      return "managed allocation";
    case AllocationKind::kModuleVariable:
      return "module variable";
    case AllocationKind::kVmmMapping:
      return "VMM mapping";
  }
  return "allocation";
}

std::string name_of(const Allocation& a) {
  char buf[192];
  std::snprintf(buf, sizeof buf, "the %llu-byte %s%s%s at 0x%llx",
                static_cast<unsigned long long>(a.size), kind_name(a.kind),
                a.name != nullptr ? " " : "", a.name != nullptr ? a.name : "",
                static_cast<unsigned long long>(a.base));
  return buf;
}

// How far from an allocation an access may be and still be reported against it.
constexpr uint64_t kNearBytes = uint64_t{1} << 20;

}  // namespace

std::string AllocationTable::describe(uint64_t address, uint64_t size, bool write) const {
  if (size == 0) size = 1;
  std::shared_lock lock(mutex_);
  auto next = by_base_.upper_bound(address);  // the first allocation starting above `address`
  const Allocation* below = next == by_base_.begin() ? nullptr : &std::prev(next)->second;
  const Allocation* above = next == by_base_.end() ? nullptr : &next->second;
  char buf[320];
  if (below != nullptr && address < below->base + below->size) {
    const uint64_t end = below->base + below->size;
    if (address + size > end) {
      std::snprintf(buf, sizeof buf, "the access runs %llu bytes past the end of %s (offset %llu)",
                    static_cast<unsigned long long>(address + size - end), name_of(*below).c_str(),
                    static_cast<unsigned long long>(address - below->base));
      return buf;
    }
    if (write && !below->device_writable)
      return "a write to read-only " + name_of(*below).substr(4);
    return {};
  }
  const uint64_t past = below != nullptr ? address - (below->base + below->size) : ~uint64_t{0};
  const uint64_t before = above != nullptr ? above->base - address : ~uint64_t{0};
  if (past <= before && past < kNearBytes) {
    std::snprintf(buf, sizeof buf, "%llu bytes past the end of %s (offset %llu)",
                  static_cast<unsigned long long>(past), name_of(*below).c_str(),
                  static_cast<unsigned long long>(address - below->base));
    return buf;
  }
  if (before < past && before < kNearBytes) {
    std::snprintf(buf, sizeof buf, "%llu bytes before the start of %s",
                  static_cast<unsigned long long>(before), name_of(*above).c_str());
    return buf;
  }
  return "not near any allocation";
}

uint64_t redzone_bytes() {
  static const uint64_t bytes = [] {
    const char* text = std::getenv("CUSNAP_EMU_REDZONE");
    if (text == nullptr || *text == '\0') return kDefaultRedzone;
    char* end = nullptr;
    unsigned long long n = std::strtoull(text, &end, 10);
    if (*end != '\0' || text[0] == '-' || n > (uint64_t{1} << 30)) {
      log(LogLevel::kWarn, "CUSNAP_EMU_REDZONE=%s is not a byte count in [0, 1G]; using %llu", text,
          static_cast<unsigned long long>(kDefaultRedzone));
      return kDefaultRedzone;
    }
    return static_cast<uint64_t>(n);
  }();
  return bytes;
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
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap_anonymous(void* base, uint64_t size) { munmap(base, size); }

}  // namespace cusnap::emu::driver
