// Memory snapshots around selected launches (docs/capture.md, "Memory snapshots").
//
// - Live ranges: every device-reachable range a kernel could touch that the shim saw being made:
//   cuMemAlloc* (plain, pitched, async, from pool), managed memory, VMM ranges once cuMemSetAccess
//   made them accessible, and module variables: those returned by cuModuleGetGlobal /
//   cuLibraryGetGlobal, and every other variable a loaded image defines (track_module_variables).
//   Frees, unmaps and module unloads remove them. Host memory the device reaches (cuMemAllocHost,
//   cuMemHostAlloc, cuMemHostRegister, wherever cuMemHostGetDevicePointer gives an address) is
//   covered too, read on the host with memcpy; cuMemFreeHost / cuMemHostUnregister remove it.
// - Hashing (CUSNAP_SNAPSHOT_HASH): on the device route a kernel of the tool's (chunk_hash.ptx)
//   hashes every chunk, and only chunks whose hash differs from what the last snapshot saw are
//   copied to the host; the host route copies every chunk (docs/capture.md, "Where memory is
//   hashed").
// - Off (no CUSNAP_SNAPSHOT_KERNELS): snapshots_enabled() is false, the allocation hooks do not
//   touch the table and launches do nothing more than before.
// - At a selected launch: before() (pre hook: the stream is checked for graph capture and
//   for a host function it waits on that has not run (host_funcs.h), and synchronised, every range
//   hashed, the chunks not known unchanged read through a bounded staging buffer and stored as
//   blobs); after() (post hook, once the launch record has its seq: synchronise again, hash and
//   read the changed chunks again, append the beforeLaunch and afterLaunch memorySnapshot records).
//   A failure disables snapshots for the rest of the run (one logged line, a skippedReason record);
//   the application's launch and its result are never affected.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "cusnap/fatbin/variables.h"
#include "cusnap/format/kernel_filter_summary.h"
#include "cusnap/format/snapshot_ranges.h"
#include "generated_shim_api.h"

namespace cusnap::capture {
struct CaptureConfig;
}

namespace cusnap::icpt {

class CallScope;
class Session;
struct SnapshotChunk;

// Reads the snapshot configuration (Session::start); false when it is invalid (logged).
bool configure_snapshots(const capture::CaptureConfig& config) noexcept;
// Capture ranges (capture_range.h) need the live range table without launch snapshots: this
// turns the table on (and the chunk size and route of the range's start snapshot).
void configure_range_snapshots(const capture::CaptureConfig& config) noexcept;
// Launch snapshots selected by --snapshot-kernels are on (not only the table).
bool launch_snapshots_enabled() noexcept;
// A new capture file starts (a capture range): what earlier snapshots stored is not in it.
void snapshot_new_file() noexcept;
// The contents of every live range now, after synchronising the current context, stored as
// blobs (chunks in address order); the tool's globalGet records of module variables not yet
// resolved are appended first. Returns "" or why no snapshot could be taken.
std::string snapshot_live_memory(Session& session, std::vector<SnapshotChunk>& chunks) noexcept;
// Snapshots on: a plain global, so that the hooks' test is one relaxed load (no guard, no TLS).
extern std::atomic<bool> g_snapshots_enabled;
inline bool snapshots_enabled() noexcept {
  return g_snapshots_enabled.load(std::memory_order_relaxed);
}

// Live range table (called from the allocation hooks only when snapshots_enabled()); what it
// covers and how chunks tile it is format/snapshot_ranges.h's rule (the one home, shared with
// `cusnap extract --route replay`).
using RangeKind = format::SnapshotRangeKind;
void track_range(uint64_t address, uint64_t size, RangeKind kind, uint64_t module = 0) noexcept;
// Host memory a kernel reaches at `device` (pinned, mapped or registered; under unified addressing
// usually device == host): snapshots cover it and read it on the host, at `host`.
void track_host_range(uint64_t device, uint64_t host, uint64_t size) noexcept;
// A module or library just loaded (snapshots on): the variables its image defines
// (fatbin/variables.h). Their addresses are asked of the real driver (cuModuleGetGlobal,
// cuLibraryGetGlobal) at the first snapshot taken after the load, which records each as a
// globalGet of the tool's (byTool) and covers it from then on like a looked-up variable;
// capture without snapshots never asks. An unload forgets the module's (Release::kModule).
void track_module_variables(uint64_t module, bool is_library,
                            std::vector<fatbin::Variable> variables) noexcept;
// Frees (pre hook, before the real call): removes the range(s) and holds the table's lock across
// the real call, so that no snapshot reads memory while it is being released; release_end (post
// hook) lets go. kRange: the range at `address`; kWithin: every range inside
// [address, address + size) (VMM unmap / address free); kModule: the globals of module `address`;
// kHost: the host range whose host address is `address` (cuMemFreeHost, cuMemHostUnregister).
enum class Release : uint8_t { kRange, kWithin, kModule, kHost };
void release_begin(Release what, uint64_t address, uint64_t size = 0) noexcept;
void release_end() noexcept;

// Overlap detection (while snapshots are on). Every call that may change device memory, by any
// thread, counts itself before the real call (CallScope's constructor: launches, copies,
// memsets, frees, module loads and unloads, graph launches, ...). A snapshot notes the count
// when it starts and compares it when the after-state has been read: any other such call in
// between, or another known stream still busy when the before-state is read, means the
// after-state may hold other work's writes; the afterLaunch record then says so
// (skippedReason) instead of recording an after-state that is not this launch's alone.
// g_device_work_done counts the same calls when they have returned: started minus done is how
// many are in flight, and a snapshot starts only while the launch's own call is the only one.
extern std::atomic<uint64_t> g_device_work;
extern std::atomic<uint64_t> g_device_work_done;
inline void note_device_work() noexcept { g_device_work.fetch_add(1); }
inline void note_device_work_done() noexcept { g_device_work_done.fetch_add(1); }
// True for the driver entry points note_device_work() counts (annotations.json,
// device_work_patterns, made a symbol trait by the generator).
inline bool may_change_device_memory(SymbolId id) noexcept {
  return (kSymbolTraits[id] & kTraitDeviceWork) != 0;
}
// Streams the application created (queried for pending work when a snapshot starts).
void track_stream(CUstream stream, bool created) noexcept;

// Launch hooks. snapshot_before: pre hook of a launch of `function` on `stream`.
void snapshot_before(CallScope& call, CUfunction function, CUstream stream) noexcept;
// Post hook: `seq`/`ordinal` are the launch record's (seq UINT64_MAX: not written).
void snapshot_after(CallScope& call, uint64_t seq, uint64_t ordinal) noexcept;
// Between the two hooks of a launch on this thread: snapshot_before selected it.
bool snapshot_selected_now() noexcept;
// The selection's counts (launches asked about, matched by name, selected: the kernel filter
// summary's), and whether --launch-count were selected already.
format::KernelFilterCounts launch_selection_counts() noexcept;
bool launch_selection_exhausted() noexcept;

// Launch ordinals as the writer assigns them (one per launch record, in append order): while
// snapshots are on, every launch record is appended through this, under one lock, so the
// shim's count is the writer's Launch.ordinal.
std::mutex& launch_order_mutex() noexcept;
uint64_t& launch_ordinal_counter() noexcept;
template <class Commit>
uint64_t commit_counted_launch(Commit&& commit, uint64_t* ordinal) {
  if (!snapshots_enabled()) return commit();
  std::lock_guard lock(launch_order_mutex());
  uint64_t seq = commit();
  if (seq != UINT64_MAX) *ordinal = launch_ordinal_counter()++;
  return seq;
}

}  // namespace cusnap::icpt
