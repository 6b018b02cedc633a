#include "cusnap/format/snapshot_ranges.h"

#include <algorithm>

namespace cusnap::format {

void SnapshotRanges::track(uint64_t address, uint64_t size, SnapshotRangeKind kind,
                           uint64_t module) {
  if (address == 0 || size == 0) return;
  ranges_[address] = Range{size, kind, module};
}

void SnapshotRanges::track_host(uint64_t device, uint64_t host, uint64_t size) {
  if (device == 0 || host == 0 || size == 0) return;
  ranges_[device] = Range{size, SnapshotRangeKind::kHost, 0, host};
}

void SnapshotRanges::release_range(uint64_t address) { ranges_.erase(address); }

void SnapshotRanges::release_host(uint64_t host) {
  for (auto it = ranges_.begin(); it != ranges_.end();) {
    it = it->second.kind == SnapshotRangeKind::kHost && it->second.host == host ? ranges_.erase(it)
                                                                                : std::next(it);
  }
}

void SnapshotRanges::release_within(uint64_t address, uint64_t size) {
  for (auto it = ranges_.lower_bound(address); it != ranges_.end() && it->first < address + size;)
    it = ranges_.erase(it);
}

void SnapshotRanges::release_module(uint64_t module) {
  for (auto it = ranges_.begin(); it != ranges_.end();) {
    it = it->second.kind == SnapshotRangeKind::kGlobal && it->second.module == module
             ? ranges_.erase(it)
             : std::next(it);
  }
}

void SnapshotRanges::apply(schema::CallRecord::Reader record) {
  using Alloc = schema::MemAlloc::Kind;
  using Free = schema::MemFree::Kind;
  const bool ok = record.getResult() == 0;
  switch (record.which()) {
    case schema::CallRecord::MEM_ALLOC: {
      auto a = record.getMemAlloc();
      if (!ok) break;
      switch (a.getKind()) {
        case Alloc::DEVICE:
        case Alloc::PITCH:  // the record's size is pitch x height, as the shim tracks it
        case Alloc::ASYNC:
        case Alloc::FROM_POOL:
        case Alloc::MANAGED:
          track(a.getAddress(), a.getSize(), SnapshotRangeKind::kAllocation);
          break;
        case Alloc::VMM_SET_ACCESS:
          track(a.getAddress(), a.getSize(), SnapshotRangeKind::kVmm);
          break;
        case Alloc::HOST:
        case Alloc::HOST_ALLOC:
        case Alloc::HOST_REGISTER:
          // Host memory: what host code wrote there is in no record (unreadable(), below).
          if (a.getAddress() != 0 && a.getSize() != 0)
            ranges_[a.getAddress()] = Range{a.getSize(), SnapshotRangeKind::kHost, 0, 0};
          break;
        default:
          break;
      }
      break;
    }
    case schema::CallRecord::GLOBAL_GET: {
      auto g = record.getGlobalGet();
      if (ok) track(g.getAddress(), g.getSize(), SnapshotRangeKind::kGlobal, g.getModule());
      break;
    }
    case schema::CallRecord::MEM_FREE: {
      auto f = record.getMemFree();
      switch (f.getKind()) {
        case Free::DEVICE:
        case Free::ASYNC:
          release_range(f.getAddress());
          break;
        case Free::HOST:
        case Free::HOST_UNREGISTER: {  // host memory only, never a device range
          auto it = ranges_.find(f.getAddress());
          if (it != ranges_.end() && it->second.kind == SnapshotRangeKind::kHost) ranges_.erase(it);
          break;
        }
        case Free::VMM_UNMAP:
        case Free::VMM_ADDRESS_FREE:
          release_within(f.getAddress(), f.getSize());
          break;
        default:
          break;
      }
      break;
    }
    case schema::CallRecord::MODULE_UNLOAD:
      release_module(record.getModuleUnload().getHandle());
      break;
    default:
      break;
  }
}

std::vector<SnapshotSpan> SnapshotRanges::spans() const {
  std::vector<SnapshotSpan> out;
  for (const auto& [address, range] : ranges_) {
    if (range.size == 0) continue;
    const bool host = range.kind == SnapshotRangeKind::kHost;
    if (host && range.host == 0) continue;  // apply()'s host memory: unreadable()
    if (!out.empty() && !host && out.back().host == 0 &&
        address < out.back().address + out.back().size) {
      uint64_t end = std::max(out.back().address + out.back().size, address + range.size);
      out.back().size = end - out.back().address;
    } else {
      out.push_back(SnapshotSpan{address, range.size, host ? range.host : 0});
    }
  }
  return out;
}

std::vector<AddressRange> SnapshotRanges::unreadable() const {
  std::vector<AddressRange> out;
  for (const auto& [address, range] : ranges_)
    if (range.kind == SnapshotRangeKind::kHost && range.host == 0 && range.size != 0)
      out.emplace_back(address, range.size);
  return out;
}

std::vector<AddressRange> SnapshotRanges::live() const {
  std::vector<AddressRange> out;
  for (const SnapshotSpan& s : spans()) out.emplace_back(s.address, s.size);
  return out;
}

std::vector<AddressRange> snapshot_chunk_tiles(const std::vector<AddressRange>& ranges,
                                               uint64_t chunk_bytes) {
  std::vector<AddressRange> out;
  if (chunk_bytes == 0) return out;
  for (const auto& [address, size] : ranges)
    for (uint64_t at = 0; at < size; at += chunk_bytes)
      out.emplace_back(address + at, std::min(chunk_bytes, size - at));
  return out;
}

}  // namespace cusnap::format
