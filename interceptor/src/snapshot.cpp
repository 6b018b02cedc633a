#include "snapshot.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "cusnap/capture/config.h"
#include "cusnap/common/kernel_filter.h"
#include "cusnap/format/blob_id.h"
#include "cusnap/format/snapshot_ranges.h"
#include "handles.h"
#include "log.h"
#include "session.h"
#include "shim_runtime.h"
#include "stream_order.h"

namespace cusnap::icpt {

std::atomic<bool> g_snapshots_enabled{false};
std::atomic<uint64_t> g_device_work{0};
std::atomic<uint64_t> g_device_work_done{0};

namespace {

// Bounded staging: device memory is read through at most this much host memory at a time.
constexpr uint64_t kStagingBytes = 64u << 20;

struct Pending {
  bool active = false;
  std::string skipped;         // non-empty: no snapshot, why
  uint64_t work_at_start = 0;  // g_device_work when the snapshot began (this launch counted)
  CUstream stream = nullptr;
  bool per_thread = false;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // address, size: what `before` covers
  std::vector<SnapshotChunk> before;
};

struct State {
  std::atomic<bool> failed{false};
  std::mutex ranges_mutex;
  format::SnapshotRanges ranges;  // the one rule of what a snapshot covers (format/)
  std::mutex snapshot_mutex;      // selection, staging, the tool stream
  std::optional<common::LaunchSelection> selection;
  uint64_t chunk = capture::CaptureConfig::kDefaultSnapshotChunkBytes;
  bool outputs = false;
  std::vector<uint8_t> staging;
  CUstream tool_stream = nullptr;
  std::mutex order_mutex;
  uint64_t ordinal = 0;
  std::mutex streams_mutex;
  std::vector<CUstream> streams;  // created by the application, not yet destroyed
};

State& state() {
  static State* s = new State();  // never destroyed: hooks may run during exit
  return *s;
}

thread_local Pending* t_pending = nullptr;

// Each thread's pending snapshot stays reachable from here (hooks may run while a thread exits,
// so it is never freed; one per thread that launched a selected kernel).
std::vector<Pending*>& all_pending() {
  static auto* list = new std::vector<Pending*>();
  return *list;
}

Pending& pending() {
  if (t_pending == nullptr) {
    auto owned = std::make_unique<Pending>();
    {
      std::lock_guard lock(state().snapshot_mutex);
      all_pending().push_back(owned.get());
    }
    t_pending = owned.release();
  }
  return *t_pending;
}

struct SnapshotError {
  std::string what;
  bool this_launch_only = false;  // skip this launch's snapshot, keep snapshots on
};

// The thread's capture mode RELAXED while the tool makes its own calls (a capture in GLOBAL mode
// on another stream must not be invalidated by them).
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() {
    if (g_stream_captures.load(std::memory_order_relaxed) == 0) return;
    if (auto exchange = CUSNAP_REAL(cuThreadExchangeStreamCaptureMode)) {
      saved_ = CU_STREAM_CAPTURE_MODE_RELAXED;
      active_ = exchange(&saved_) == CUDA_SUCCESS;
    }
  }
  ~RelaxedCaptureMode() {
    if (active_) CUSNAP_REAL(cuThreadExchangeStreamCaptureMode)(&saved_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  bool active_ = false;
  CUstreamCaptureMode saved_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS)
    throw SnapshotError{std::string(what) + " failed (CUresult " + std::to_string(result) + ")"};
}

// Waits for the launch's stream (the legacy default stream also waits for the blocking streams,
// as the driver defines it); never for other streams.
void synchronize(CUstream stream, bool per_thread) {
  auto sync = per_thread ? CUSNAP_REAL(cuStreamSynchronize_ptsz) : CUSNAP_REAL(cuStreamSynchronize);
  if (sync == nullptr) throw SnapshotError{"the driver has no cuStreamSynchronize"};
  check(sync(stream), "cuStreamSynchronize on the launch's stream");
}

// The live ranges, overlapping ones merged (VMM access set twice over a range), address order.
// The caller holds ranges_mutex.
std::vector<std::pair<uint64_t, uint64_t>> live_ranges() { return state().ranges.live(); }

// True when every range of `ranges` still lies inside a live range (caller holds ranges_mutex).
bool still_live(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  std::vector<std::pair<uint64_t, uint64_t>> now = live_ranges();
  for (const auto& [address, size] : ranges) {
    auto it = std::upper_bound(now.begin(), now.end(), std::make_pair(address, UINT64_MAX));
    if (it == now.begin()) return false;
    --it;
    if (address + size > it->first + it->second) return false;
  }
  return true;
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(value));
  return text;
}

// Reads every range chunk by chunk through the staging buffer; `each` gets (address, bytes).
template <class Each>
void read_ranges(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, Each&& each) {
  State& s = state();
  if (s.tool_stream == nullptr) {
    auto create = CUSNAP_REAL(cuStreamCreate);
    if (create == nullptr) throw SnapshotError{"the driver has no cuStreamCreate"};
    // Non-blocking: the tool's copies never wait for (or make wait) the application's streams.
    check(create(&s.tool_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate for the snapshot copies");
  }
  auto copy = CUSNAP_REAL(cuMemcpyDtoHAsync_v2);
  auto sync = CUSNAP_REAL(cuStreamSynchronize);
  if (copy == nullptr || sync == nullptr)
    throw SnapshotError{"the driver has no cuMemcpyDtoHAsync_v2"};
  uint64_t piece_max = std::max<uint64_t>(s.chunk, kStagingBytes / s.chunk * s.chunk);
  for (const auto& [address, size] : ranges) {
    for (uint64_t offset = 0; offset < size;) {
      uint64_t piece = std::min(piece_max, size - offset);
      if (s.staging.size() < piece) {
        try {
          s.staging.resize(piece);
        } catch (const std::bad_alloc&) {
          throw SnapshotError{"out of host memory for the " + std::to_string(piece) +
                              "-byte staging buffer"};
        }
      }
      CUresult copied = copy(s.staging.data(), address + offset, piece, s.tool_stream);
      if (copied == CUDA_ERROR_INVALID_VALUE) {
        // The range is gone: freed by another thread between the table lookup and this read
        // (the free hook runs after the real free). Not a reason to stop snapshotting.
        throw SnapshotError{"the range at 0x" + hex(address) +
                                " could not be read (freed meanwhile by another thread?)",
                            true};
      }
      check(copied, "cuMemcpyDtoHAsync (snapshot read)");
      check(sync(s.tool_stream), "cuStreamSynchronize (snapshot read)");
      // Every piece but the last is a multiple of the chunk size: the same tiling as one read.
      format::for_each_snapshot_chunk(
          address + offset, std::span<const uint8_t>(s.staging.data(), piece), s.chunk, each);
      offset += piece;
    }
  }
}

// A stream other than the launch's that still has work queued (its writes could land while the
// snapshots are read), named for the record; empty when every known stream is idle. The legacy
// default stream is queried unless the launch is on it (its synchronisation covered it).
// Another thread's per-thread default stream cannot be queried from here (a known gap).
std::string busy_stream(CUstream launch_stream, bool per_thread) {
  auto query = CUSNAP_REAL(cuStreamQuery);
  if (query == nullptr) return "";
  std::vector<CUstream> streams;
  {
    std::lock_guard lock(state().streams_mutex);
    streams = state().streams;
  }
  bool on_legacy = !per_thread && (launch_stream == nullptr || launch_stream == CU_STREAM_LEGACY);
  if (!on_legacy) streams.push_back(CU_STREAM_LEGACY);
  for (CUstream stream : streams) {
    if (stream == launch_stream) continue;
    if (query(stream) == CUDA_ERROR_NOT_READY) {
      return stream == CU_STREAM_LEGACY ? std::string("the legacy default stream")
                                        : "stream 0x" + hex(reinterpret_cast<uint64_t>(stream));
    }
  }
  return "";
}

void fail_snapshots(Pending& p, const std::string& why) {
  State& s = state();
  p.skipped = "snapshot failed, snapshots disabled for the rest of the run: " + why;
  p.before.clear();
  if (!s.failed.exchange(true)) {
    log(LogLevel::kError, "memory snapshots disabled: %s (the application continues)", why.c_str());
  }
}

void fail_or_skip(Pending& p, const SnapshotError& e) {
  if (!e.this_launch_only) {
    fail_snapshots(p, e.what);
    return;
  }
  p.skipped = "snapshot not taken: " + e.what;
  p.before.clear();
  log_once(LogLevel::kWarn, "snapshot-range-gone", "a memory snapshot was skipped: %s",
           e.what.c_str());
}

std::string function_name(CUfunction function) {
  uint64_t handle = reinterpret_cast<uint64_t>(function);
  if (const LaunchFacts* facts = HandleTable::instance().lookup_cached(handle); facts != nullptr) {
    if (!facts->info.name.empty()) return facts->info.name;
    return query_function_name(handle, facts->info.is_kernel);
  }
  return query_function_name(handle, false);
}

}  // namespace

bool configure_snapshots(const capture::CaptureConfig& config) noexcept {
  if (!config.snapshots()) return false;
  try {
    State& s = state();
    auto base = common::parse_kernel_name_base(config.snapshot_kernel_base);
    if (!base) {
      log(LogLevel::kError,
          "CUSNAP_SNAPSHOT_KERNEL_BASE '%s': expected function, demangled or mangled; "
          "no snapshots",
          config.snapshot_kernel_base.c_str());
      return false;
    }
    std::string error;
    // "regex:" alone (or any filter) selects by name; the filter "*" is not special (Nsight).
    auto filter = common::KernelFilter::create(config.snapshot_kernels, *base, &error);
    if (!filter) {
      log(LogLevel::kError, "CUSNAP_SNAPSHOT_KERNELS %s; no snapshots", error.c_str());
      return false;
    }
    s.selection.emplace(std::move(*filter), config.launch_skip, config.launch_count);
    s.chunk = config.snapshot_chunk_bytes;
    s.outputs = config.snapshot_outputs;
    g_snapshots_enabled.store(true);
    return true;
  } catch (...) {
    log(LogLevel::kError, "cannot configure memory snapshots: out of memory");
    return false;
  }
}

void track_range(uint64_t address, uint64_t size, RangeKind kind, uint64_t module) noexcept {
  if (address == 0 || size == 0) return;
  try {
    State& s = state();
    std::lock_guard lock(s.ranges_mutex);
    s.ranges.track(address, size, kind, module);
  } catch (...) {
  }
}

namespace {
thread_local bool t_release_locked = false;  // this thread holds ranges_mutex across a free
}  // namespace

void release_begin(Release what, uint64_t address, uint64_t size) noexcept {
  State& s = state();
  if (t_release_locked) return;  // (never nested: the shim does not record its own calls)
  s.ranges_mutex.lock();
  t_release_locked = true;
  switch (what) {
    case Release::kRange:
      s.ranges.release_range(address);
      break;
    case Release::kWithin:
      s.ranges.release_within(address, size);
      break;
    case Release::kModule:
      s.ranges.release_module(address);
      break;
  }
}

void release_end() noexcept {
  if (!t_release_locked) return;
  t_release_locked = false;
  state().ranges_mutex.unlock();
}

std::mutex& launch_order_mutex() noexcept { return state().order_mutex; }
uint64_t& launch_ordinal_counter() noexcept { return state().ordinal; }

void track_stream(CUstream stream, bool created) noexcept {
  try {
    State& s = state();
    std::lock_guard lock(s.streams_mutex);
    auto it = std::find(s.streams.begin(), s.streams.end(), stream);
    if (created && it == s.streams.end()) s.streams.push_back(stream);
    if (!created && it != s.streams.end()) s.streams.erase(it);
  } catch (...) {
    // Out of memory: the stream is not queried; overlap detection then relies on the counter.
  }
}

void snapshot_before(CallScope& call, CUfunction function, CUstream stream) noexcept {
  if (!snapshots_enabled()) return;
  State& s = state();
  if (s.failed.load(std::memory_order_relaxed)) return;
  try {
    Pending& p = pending();
    p = Pending{};
    {
      std::lock_guard lock(s.snapshot_mutex);
      if (s.selection->exhausted() || !s.selection->select(function_name(function))) return;
    }
    p.active = true;
    p.stream = stream;
    p.per_thread = call.per_thread_stream();
    // Done first, then started: the difference can only overstate what is in flight.
    const uint64_t done_at_start = g_device_work_done.load();
    p.work_at_start = g_device_work.load();  // this launch has counted itself already
    RelaxedCaptureMode relaxed;
    if (stream_is_capturing(stream, p.per_thread)) {
      p.skipped =
          "the launch's stream is being captured into a graph (the launch does not run now)";
      return;
    }
    try {
      // Another thread between counting a call and returning from it may be enqueuing work the
      // stream query below cannot see yet.
      if (uint64_t in_flight = p.work_at_start - done_at_start; in_flight > 1) {
        p.skipped = "snapshot not taken: other device work overlapped the launch (" +
                    std::to_string(in_flight - 1) +
                    " call(s) of other threads that may change device memory were in progress)";
        return;
      }
      // Not under the snapshot lock: the stream's work may wait for another thread's progress
      // (a host function, an event it records after its own launch), and that thread may be
      // about to take a snapshot itself.
      synchronize(stream, p.per_thread);
      // Work still queued elsewhere could write while the memory is read: the snapshot would
      // not be the launch's alone. Idle now and nothing new enqueued (the counter) stays idle.
      if (std::string busy = busy_stream(stream, p.per_thread); !busy.empty()) {
        p.skipped = "snapshot not taken: other device work overlapped the launch (" + busy +
                    " still had work queued)";
        return;
      }
      Session* session = Session::current();
      if (session == nullptr) throw SnapshotError{"no capture session"};
      std::lock_guard lock(s.snapshot_mutex);  // the staging buffer and the tool's stream
      std::lock_guard memory(s.ranges_mutex);  // no free runs while the ranges are read
      p.ranges = live_ranges();
      read_ranges(p.ranges, [&](uint64_t address, std::span<const uint8_t> bytes) {
        format::BlobId id = session->put_blob(bytes);
        if (id.is_null()) throw SnapshotError{"a snapshot chunk could not be stored"};
        p.before.push_back(SnapshotChunk{address, bytes.size(), id, false});
      });
      if (uint64_t others = g_device_work.load() - p.work_at_start; others != 0) {
        p.before.clear();
        p.skipped = "snapshot not taken: other device work overlapped the launch (" +
                    std::to_string(others) +
                    " call(s) of other threads that may change device memory ran while it was "
                    "read)";
      }
    } catch (const SnapshotError& e) {
      fail_or_skip(p, e);
    }
  } catch (...) {
    if (t_pending != nullptr) fail_snapshots(*t_pending, "out of host memory");
  }
}

void snapshot_after(CallScope& call, uint64_t seq, uint64_t ordinal) noexcept {
  if (!snapshots_enabled()) return;  // before touching the thread_local: the launch hot path
  if (t_pending == nullptr || !t_pending->active) return;
  Pending& p = *t_pending;
  p.active = false;
  Session* session = Session::current();
  if (session == nullptr || seq == UINT64_MAX) return;
  // The driver refused the launch: nothing ran, and the replayer skips the failed call, so a
  // snapshot of it would name a launch replay never makes (it refuses such a capture).
  if (call.result() != CUDA_SUCCESS) return;
  State& s = state();
  try {
    if (!p.skipped.empty()) {
      session->memory_snapshot(false, seq, ordinal, {}, p.skipped);
      return;
    }
    std::vector<SnapshotChunk> after;
    after.reserve(p.before.size());
    try {
      RelaxedCaptureMode relaxed;
      synchronize(p.stream, p.per_thread);  // unlocked, as in snapshot_before
      std::lock_guard lock(s.snapshot_mutex);
      std::lock_guard memory(s.ranges_mutex);
      if (!still_live(p.ranges)) {
        throw SnapshotError{"another thread freed memory the launch could reach while it ran",
                            true};
      }
      size_t index = 0;
      read_ranges(p.ranges, [&](uint64_t address, std::span<const uint8_t> bytes) {
        const SnapshotChunk* was = index < p.before.size() ? &p.before[index] : nullptr;
        ++index;
        format::BlobId id = format::hash_blob(bytes);
        bool unchanged = was != nullptr && was->address == address && was->blob == id;
        if (s.outputs && !unchanged) {
          id = session->put_blob(bytes);
          if (id.is_null()) throw SnapshotError{"a snapshot chunk could not be stored"};
        }
        // An unchanged chunk's bytes are in the file already (the before snapshot stored them).
        after.push_back(SnapshotChunk{address, bytes.size(), id, !s.outputs && !unchanged});
      });
    } catch (const SnapshotError& e) {
      fail_or_skip(p, e);
      session->memory_snapshot(false, seq, ordinal, {}, p.skipped);
      return;
    }
    session->memory_snapshot(false, seq, ordinal, p.before, "");
    if (uint64_t others = g_device_work.load() - p.work_at_start; others != 0) {
      // The inputs were read alone, the outputs were not: record no after-state rather than
      // one that holds other work's writes.
      session->memory_snapshot(
          true, seq, ordinal, {},
          "after-state not recorded: other device work overlapped the launch (" +
              std::to_string(others) +
              " call(s) of other threads that may change device memory ran "
              "before it was read)");
    } else {
      session->memory_snapshot(true, seq, ordinal, after, "");
    }
  } catch (...) {
    fail_snapshots(p, "out of host memory");
  }
  p.before.clear();
  p.before.shrink_to_fit();
}

}  // namespace cusnap::icpt
