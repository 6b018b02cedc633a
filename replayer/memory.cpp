#include "replayer/memory.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cusnap/common/hex.h"
#include "cusnap/format/launch_params.h"

namespace cusnap::replayer {
namespace {

uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

using common::hex;

CUmemAllocationProp device_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace

std::vector<MemoryRange> DeviceMemory::widen(const std::vector<MemoryRange>& ranges,
                                             uint64_t granularity) {
  std::vector<MemoryRange> out;
  for (const MemoryRange& r : ranges) {
    uint64_t base = align_down(r.base, granularity);
    uint64_t end = align_up(r.end(), granularity);
    if (!out.empty() && base <= out.back().end()) {
      out.back().size = std::max(out.back().end(), end) - out.back().base;
    } else {
      out.push_back({base, end - base});
    }
  }
  return out;
}

uint64_t DeviceMemory::bytes_needed(const std::vector<MemoryRange>& ranges, uint64_t granularity) {
  uint64_t total = 0;
  for (const MemoryRange& r : widen(ranges, granularity)) total += r.size;
  return total;
}

Expected<std::unique_ptr<DeviceMemory>> DeviceMemory::create(const Driver& driver, int device,
                                                             const std::vector<MemoryRange>& ranges,
                                                             AddressMode mode) {
  std::unique_ptr<DeviceMemory> memory(new DeviceMemory(driver));
  uint64_t granularity = 0;
  if (driver.has_vmm()) {
    CUmemAllocationProp prop = device_prop(device);
    size_t g = 0;
    if (driver.api().cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
            CUDA_SUCCESS &&
        g > 0 && (g & (g - 1)) == 0) {
      granularity = g;
    }
  }
  // Without VMM each range is a cuMemAlloc of its own: page granularity is enough.
  std::vector<MemoryRange> widened = widen(ranges, granularity != 0 ? granularity : 4096);
  for (const MemoryRange& range : widened) {
    if (auto e = memory->place(range, device, mode, granularity)) return *e;
  }
  return memory;
}

MaybeError DeviceMemory::place(const MemoryRange& range, int device, AddressMode mode,
                               uint64_t granularity) {
  const DriverApi& api = driver_.api();
  PlacedRange placed;
  placed.captured_base = range.base;
  placed.size = range.size;
  if (granularity != 0) {
    CUdeviceptr base = mode == AddressMode::kSame
                           ? reserve_at(range.base, range.size, granularity, &placed.in_region)
                           : 0;
    if (base == 0) {
      if (CUresult r = api.cuMemAddressReserve(&base, range.size, 0, 0, 0); r != CUDA_SUCCESS) {
        return driver_.failure("cuMemAddressReserve of " + std::to_string(range.size) + " bytes", r)
            .with_address(range.base);
      }
    }
    CUmemAllocationProp prop = device_prop(device);
    CUmemGenericAllocationHandle handle = 0;
    auto free_reservation = [&] {
      if (!placed.in_region) api.cuMemAddressFree(base, range.size);
    };
    if (CUresult r = api.cuMemCreate(&handle, range.size, &prop, 0); r != CUDA_SUCCESS) {
      free_reservation();
      return driver_.failure("cuMemCreate of " + std::to_string(range.size) + " bytes", r)
          .with_address(range.base);
    }
    if (CUresult r = api.cuMemMap(base, range.size, 0, handle, 0); r != CUDA_SUCCESS) {
      api.cuMemRelease(handle);
      free_reservation();
      return driver_.failure("cuMemMap", r).with_address(range.base);
    }
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (CUresult r = api.cuMemSetAccess(base, range.size, &access, 1); r != CUDA_SUCCESS) {
      api.cuMemUnmap(base, range.size);
      api.cuMemRelease(handle);
      free_reservation();
      return driver_.failure("cuMemSetAccess", r).with_address(range.base);
    }
    placed.live_base = base;
    placed.backing = PlacedRange::Backing::kVmm;
    placed.physical = handle;
  } else {
    CUdeviceptr base = 0;
    if (CUresult r = api.cuMemAlloc(&base, range.size); r != CUDA_SUCCESS) {
      return driver_.failure("cuMemAlloc of " + std::to_string(range.size) + " bytes", r)
          .with_address(range.base);
    }
    placed.live_base = base;
    placed.backing = PlacedRange::Backing::kAlloc;
  }
  if (placed.relocated()) ++relocated_count_;
  placed_.push_back(placed);
  return std::nullopt;
}

uint64_t DeviceMemory::reserve_at(uint64_t address, uint64_t size, uint64_t granularity,
                                  bool* in_region) {
  const DriverApi& api = driver_.api();
  *in_region = true;
  // Inside a wider reservation made for an earlier range.
  for (const auto& [start, length] : regions_)
    if (address >= start && address + size <= start + length) return address;
  *in_region = false;
  CUdeviceptr base = 0;
  if (api.cuMemAddressReserve(&base, size, 0, address, 0) == CUDA_SUCCESS) {
    if (base == address) return address;
    api.cuMemAddressFree(base, size);
  }
  // NVIDIA's driver 580 (an H200, scripts/gpu-check's address-hint question) placed hinted
  // reservations at the hint rounded up to 32 MiB: ask for that boundary below the address.
  constexpr uint64_t kHintUnit = uint64_t{32} << 20;
  const uint64_t start = align_down(address, kHintUnit);
  if (start == address) return 0;
  const uint64_t end = align_up(address + size, granularity);
  const uint64_t length = end - start;
  for (const auto& [s, l] : regions_)
    if (start < s + l && s < end) return 0;  // overlaps a region of ours
  if (api.cuMemAddressReserve(&base, length, 0, start, 0) != CUDA_SUCCESS) return 0;
  if (base != start) {
    api.cuMemAddressFree(base, length);
    return 0;
  }
  regions_.emplace_back(start, length);
  *in_region = true;
  return address;
}

DeviceMemory::~DeviceMemory() {
  const DriverApi& api = driver_.api();
  for (const PlacedRange& p : placed_) {
    if (p.backing == PlacedRange::Backing::kVmm) {
      api.cuMemUnmap(p.live_base, p.size);
      api.cuMemRelease(p.physical);
      if (!p.in_region) api.cuMemAddressFree(p.live_base, p.size);
    } else if (p.backing == PlacedRange::Backing::kAlloc) {
      api.cuMemFree(p.live_base);
    }
  }
  for (const auto& [start, size] : regions_) api.cuMemAddressFree(start, size);
}

const PlacedRange* DeviceMemory::find(uint64_t address) const {
  // Globals first: a captured global can sit inside the granularity padding of a placed range
  // (the driver put the module's data next to the application's allocations), and there the
  // address means the global.
  auto g = globals_.upper_bound(address);
  if (g != globals_.begin()) {
    const PlacedRange& p = std::prev(g)->second;
    if (address - p.captured_base < std::max<uint64_t>(p.size, 1)) return &p;
  }
  auto it = std::upper_bound(placed_.begin(), placed_.end(), address,
                             [](uint64_t a, const PlacedRange& p) { return a < p.captured_base; });
  if (it != placed_.begin()) {
    const PlacedRange& p = *std::prev(it);
    if (address - p.captured_base < p.size) return &p;
  }
  return nullptr;
}

std::optional<uint64_t> DeviceMemory::translate(uint64_t address, uint64_t size) const {
  const PlacedRange* p = find(address);
  if (p == nullptr) return std::nullopt;
  uint64_t offset = address - p->captured_base;
  uint64_t extent = std::max<uint64_t>(size, 1);
  if (extent > p->size - offset) return std::nullopt;
  return p->live_base + offset;
}

std::vector<std::pair<uint64_t, uint64_t>> DeviceMemory::captured_pieces(uint64_t live,
                                                                         uint64_t size) const {
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  const uint64_t end = live + size;
  auto cut = [&](const PlacedRange& p) {
    const uint64_t lo = std::max(live, p.live_base);
    const uint64_t hi = std::min(end, p.live_base + p.size);
    if (lo < hi) pieces.emplace_back(p.captured_base + (lo - p.live_base), hi - lo);
  };
  for (const PlacedRange& p : placed_) cut(p);
  for (const auto& [captured, p] : globals_) cut(p);
  std::sort(pieces.begin(), pieces.end());
  return pieces;
}

void DeviceMemory::forget_globals_of(uint64_t module) {
  std::erase_if(globals_, [module](const auto& g) {
    return g.second.backing == PlacedRange::Backing::kGlobal && g.second.physical == module;
  });
  globals_moved_ = std::any_of(globals_.begin(), globals_.end(),
                               [](const auto& g) { return g.second.relocated(); });
}

void DeviceMemory::add_global(uint64_t module, uint64_t captured, uint64_t size, uint64_t live) {
  PlacedRange p;
  p.physical = module;
  p.captured_base = captured;
  p.size = size;
  p.live_base = live;
  p.backing = PlacedRange::Backing::kGlobal;
  globals_[captured] = p;
  // Recomputed: a global replaced at the same captured address may have stopped moving.
  globals_moved_ = std::any_of(globals_.begin(), globals_.end(),
                               [](const auto& g) { return g.second.relocated(); });
}

void DeviceMemory::add_host(uint64_t captured, uint64_t size, uint64_t live) {
  PlacedRange p;
  p.captured_base = captured;
  p.size = size;
  p.live_base = live;
  p.backing = PlacedRange::Backing::kHost;
  globals_[captured] = p;
  globals_moved_ = std::any_of(globals_.begin(), globals_.end(),
                               [](const auto& g) { return g.second.relocated(); });
}

void DeviceMemory::forget_host(uint64_t captured) {
  auto it = globals_.find(captured);
  if (it != globals_.end() && it->second.backing == PlacedRange::Backing::kHost) globals_.erase(it);
  globals_moved_ = std::any_of(globals_.begin(), globals_.end(),
                               [](const auto& g) { return g.second.relocated(); });
}

unsigned DeviceMemory::rewrite_pointers(std::vector<uint8_t>& params,
                                        const std::vector<ParamSlot>& layout) const {
  if (relocated_count_ == 0 && !globals_moved_) return 0;
  unsigned rewritten = 0;
  auto rewrite_at = [&](size_t offset) {
    if (offset + 8 > params.size()) return;
    uint64_t value;
    std::memcpy(&value, params.data() + offset, 8);
    const PlacedRange* p = find(value);
    if (p == nullptr || !p->relocated()) return;
    uint64_t live = p->live_base + (value - p->captured_base);
    std::memcpy(params.data() + offset, &live, 8);
    ++rewritten;
  };
  format::for_each_word_slot(params.size(), layout, !layout.empty(), rewrite_at);
  return rewritten;
}

uint64_t DeviceMemory::mapped_bytes() const {
  uint64_t total = 0;
  for (const PlacedRange& p : placed_) total += p.size;
  return total;
}

std::string DeviceMemory::relocation_summary() const {
  if (relocated_count_ == 0) return {};
  std::string out = "RELOCATED: " + std::to_string(relocated_count_) + " of " +
                    std::to_string(placed_.size()) +
                    " device ranges could not be placed at their captured addresses (";
  unsigned shown = 0;
  for (const PlacedRange& p : placed_) {
    if (!p.relocated()) continue;
    if (shown++ == 3) {
      out += ", ...";
      break;
    }
    out += (shown > 1 ? ", " : "") + hex(p.captured_base) + " -> " + hex(p.live_base);
  }
  out +=
      "). Pointer-sized kernel parameters are rewritten, but pointers stored inside device memory "
      "still point at the captured addresses: results may be wrong.";
  return out;
}

}  // namespace cusnap::replayer
