// What a memory snapshot covers and how it is cut into chunks: the one rule shared by the
// interceptor (snapshots taken at capture time, interceptor/src/snapshot.cpp) and by
// `cusnap extract --route replay` (snapshots taken while replaying the capture), so that both
// produce the same chunks with the same hashes (docs/format.md, "Memory snapshots").
//
// - Ranges: every device-reachable range a kernel could touch: cuMemAlloc, cuMemAllocPitch
//   (pitch x height), cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemAllocManaged, VMM ranges
//   once cuMemSetAccess made them accessible, and module variables: every globalGet record, the
//   application's (cuModuleGetGlobal, cuLibraryGetGlobal) and the interceptor's (byTool: every
//   other variable a loaded image defines, looked up at the first snapshot after the load).
//   cuMemFree/cuMemFreeAsync remove the range at the address, cuMemUnmap
//   and cuMemAddressFree every range inside theirs, a module or library unload its variables.
//   Host memory a kernel can reach (cuMemAllocHost, cuMemHostAlloc, cuMemHostRegister, at the
//   device address cuMemHostGetDevicePointer gives) is tracked by the interceptor only
//   (track_host): its contents are what host code wrote, which no replay reproduces, so the
//   record-side form (apply) leaves it out and `cusnap extract --route replay` says so.
// - Snapshot: the live ranges in address order, overlapping device ones merged (host ones never:
//   their host addresses need not be contiguous).
// - Chunks: each range is tiled from its start in pieces of the chunk size (the last shorter);
//   a chunk's id is format::hash_blob of its bytes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "cusnap/format/capture.capnp.h"  // generated from format/schema/capture.capnp

namespace cusnap::format {

// The chunk size a capture uses when none is given (CaptureOptions.snapshotChunkBytes).
inline constexpr uint64_t kDefaultSnapshotChunkBytes = 64u << 10;

enum class SnapshotRangeKind : uint8_t { kAllocation, kVmm, kGlobal, kHost };

using AddressRange = std::pair<uint64_t, uint64_t>;  // (address, size)

// One range of a snapshot: `size` bytes at device address `address`; `host` != 0: host memory
// the device reaches there, read on the host at that address.
struct SnapshotSpan {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t host = 0;
};

// The live range table. Not thread-safe (the interceptor holds its own lock around it).
class SnapshotRanges {
 public:
  // A range a kernel can reach from now on (address or size 0: ignored).
  void track(uint64_t address, uint64_t size, SnapshotRangeKind kind, uint64_t module = 0);
  // Host memory the device reaches at `device`, read on the host at `host` (0 values: ignored).
  void track_host(uint64_t device, uint64_t host, uint64_t size);
  void release_range(uint64_t address);                  // cuMemFree, cuMemFreeAsync
  void release_within(uint64_t address, uint64_t size);  // cuMemUnmap, cuMemAddressFree
  void release_module(uint64_t module);                  // cuModuleUnload, cuLibraryUnload
  void release_host(uint64_t host);  // cuMemFreeHost, cuMemHostUnregister: by host address

  // The record-side form of the rule: what the interceptor's hooks do for the call this record
  // describes (a successful allocation or variable lookup adds its range, a free, unmap or
  // unload removes ranges whatever its result, as the shim removes them before the real call).
  // Other records change nothing. Applied to every record before a launch, in seq order, the
  // table holds what a capture-time snapshot of that launch covered, but for host memory: its
  // allocations are kept apart (unreadable()), since no record holds what host code wrote there.
  void apply(schema::CallRecord::Reader record);
  // The host allocations apply() saw live (cuMemAllocHost, cuMemHostAlloc, cuMemHostRegister):
  // a replay cannot snapshot them as the application had them.
  std::vector<AddressRange> unreadable() const;

  // The snapshot's ranges: live ranges in address order, overlapping device ones merged.
  std::vector<SnapshotSpan> spans() const;
  // The same, without the host addresses.
  std::vector<AddressRange> live() const;

 private:
  struct Range {
    uint64_t size = 0;
    SnapshotRangeKind kind = SnapshotRangeKind::kAllocation;
    uint64_t module = 0;
    uint64_t host = 0;  // kHost
  };
  std::map<uint64_t, Range> ranges_;
};

// Calls each(address, bytes) for every chunk of `bytes`, memory read at `address`, tiled from its
// start in pieces of `chunk_bytes` (the last one shorter). A range read in several pieces gives
// the same chunks as one read when every piece but the last is a multiple of chunk_bytes.
template <class Each>
void for_each_snapshot_chunk(uint64_t address, std::span<const uint8_t> bytes, uint64_t chunk_bytes,
                             Each&& each) {
  for (uint64_t at = 0; at < bytes.size(); at += chunk_bytes) {
    uint64_t n = bytes.size() - at < chunk_bytes ? bytes.size() - at : chunk_bytes;
    each(address + at, bytes.subspan(at, n));
  }
}

// The chunks of `ranges` as (address, size), without their bytes: the tiling above.
std::vector<AddressRange> snapshot_chunk_tiles(const std::vector<AddressRange>& ranges,
                                               uint64_t chunk_bytes);

}  // namespace cusnap::format
