#include "snapshot.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "chunk_hash.h"
#include "cusnap/capture/config.h"
#include "cusnap/common/hex.h"
#include "cusnap/common/kernel_filter.h"
#include "cusnap/format/blob_id.h"
#include "cusnap/format/snapshot_ranges.h"
#include "graphs.h"
#include "handles.h"
#include "host_funcs.h"
#include "launch_filter.h"
#include "log.h"
#include "session.h"
#include "shim_runtime.h"
#include "stream_order.h"

namespace cusnap::icpt {

std::atomic<bool> g_snapshots_enabled{false};
std::atomic<uint64_t> g_device_work{0};
std::atomic<uint64_t> g_device_work_done{0};

namespace {

constexpr const char* kWaitsOnHostFunc =
    "the launch's stream waits on a host function that has not run yet";
// Bounded staging: device memory is read through at most this much host memory at a time.
constexpr uint64_t kStagingBytes = 64u << 20;
// Device route: at most this many bytes of changed, not stored after-launch chunks are kept on
// the host until the next snapshot, which stores them from there if they are still unchanged.
constexpr uint64_t kKeptBytes = 64u << 20;

// A covered range of a snapshot: `size` bytes at device address `address`; `host` != 0: host
// memory the device reaches there, read at that host address.
using Span = format::SnapshotSpan;

// One snapshot chunk: `size` bytes at `address`, inside live range `range` (an index into the
// snapshot's merged ranges; copies never span two ranges).
struct Chunk {
  uint64_t address = 0;
  uint64_t size = 0;
  size_t range = 0;
  uint64_t host = 0;  // host memory: its bytes are at this host address
};

// Where chunks are hashed (CUSNAP_SNAPSHOT_HASH; docs/capture.md, "Where memory is hashed").
enum class HashRoute : uint8_t { kDevice, kHost };

// What the last snapshot saw in a chunk of device memory (device route): its device hash, and
// its content id and whether those bytes are in the capture file.
struct Seen {
  uint64_t size = 0;
  ChunkHash hash;
  format::BlobId blob;
  bool stored = false;
};

struct Pending {
  bool active = false;
  std::string skipped;         // non-empty: no snapshot, why
  uint64_t work_at_start = 0;  // g_device_work when the snapshot began (this launch counted)
  CUstream stream = nullptr;
  bool per_thread = false;
  std::vector<Span> ranges;           // what `before` covers
  std::vector<Chunk> chunks;          // the ranges' chunks, address order
  std::vector<SnapshotChunk> before;  // one per chunk
  bool device = false;                // `before` was taken on the device route
  std::vector<ChunkHash> hashes;      // then: each chunk's device hash before the launch
  CUevent marker = nullptr;           // this thread's: marks the stream's work to wait for
};

// The device route's kernel and buffers, on the context current at the first snapshot.
struct DeviceHasher {
  bool tried = false;  // the module load was attempted (it is not retried)
  CUfunction function = nullptr;
  CUdeviceptr table = 0;   // (address, length) per chunk
  CUdeviceptr hashes = 0;  // (low, high) per chunk
  uint64_t capacity = 0;   // chunks the two buffers hold
  std::vector<uint64_t> host_table;
};

// A loaded module's variables, addresses not asked for yet (track_module_variables).
struct ModuleVariables {
  bool is_library = false;
  std::vector<fatbin::Variable> variables;
};

struct State {
  std::atomic<bool> failed{false};
  std::mutex ranges_mutex;
  format::SnapshotRanges ranges;  // the one rule of what a snapshot covers (format/)
  std::mutex snapshot_mutex;      // selection, staging, the tool stream
  std::optional<common::LaunchSelection> selection;
  uint64_t launches_seen = 0;  // under snapshot_mutex: launches selection was asked about
  uint64_t chunk = capture::CaptureConfig::kDefaultSnapshotChunkBytes;
  bool outputs = false;
  std::vector<uint8_t> staging;
  CUstream tool_stream = nullptr;
  HashRoute route = HashRoute::kDevice;
  DeviceHasher hasher;
  const Session* seen_session = nullptr;    // the file whose blobs `seen` names
  std::unordered_map<uint64_t, Seen> seen;  // chunk address -> the last snapshot's view of it
  // Device route: the bytes of chunks the last after-launch snapshot copied back but did not
  // store (hashOnly), by address, at most kKeptBytes in all.
  std::unordered_map<uint64_t, std::vector<uint8_t>> kept;
  uint64_t kept_bytes = 0;
  std::mutex order_mutex;
  uint64_t ordinal = 0;
  std::mutex streams_mutex;
  std::vector<CUstream> streams;  // created by the application, not yet destroyed
  // Under ranges_mutex: loaded modules whose variables no snapshot has resolved yet.
  std::map<uint64_t, ModuleVariables> unresolved;
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

// Test-only (CUSNAP_TEST_HOST_FUNC_CHECKED names a function the application exports, docs/
// capture.md "Tests"): called between the host-function check and the marker, the window in
// which another thread may enqueue a host function on the launch's stream; never set otherwise.
void test_hook_host_func_checked() {
  using Hook = void (*)();
  static Hook hook = [] {
    const char* name = std::getenv("CUSNAP_TEST_HOST_FUNC_CHECKED");
    return name != nullptr && *name != '\0' ? reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, name))
                                            : nullptr;
  }();
  if (hook != nullptr) hook();
}

// Waits for the work enqueued on the launch's stream so far (for the legacy default stream that
// includes the blocking streams', as the driver defines it; never other streams'), unless that
// work could wait on an application host function that has not run (false: nothing waited for).
// The check and the wait are not one step: another thread may enqueue a host function on the
// stream (or on one it waits on) right after the check. So the wait is for an event of this
// thread's recorded on the stream after the check, not for the stream, and the check is made
// again after the record: a host function whose enqueue began before the re-check is pending
// then (host_funcs.h tracks it, and a stream's wait on an event, before the real call), and one
// enqueued after it comes after the event in stream order, which the event does not wait for.
bool synchronize_unless_host_func(Pending& p) {
  if (waits_on_pending_host_func(p.stream, p.per_thread)) return false;
  test_hook_host_func_checked();
  auto create = CUSNAP_REAL(cuEventCreate);
  auto record = p.per_thread ? CUSNAP_REAL(cuEventRecord_ptsz) : CUSNAP_REAL(cuEventRecord);
  auto wait = CUSNAP_REAL(cuEventSynchronize);
  if (create == nullptr || record == nullptr || wait == nullptr) {
    // A driver without events (test fakes): the stream itself, checked once more just before.
    auto sync =
        p.per_thread ? CUSNAP_REAL(cuStreamSynchronize_ptsz) : CUSNAP_REAL(cuStreamSynchronize);
    if (sync == nullptr) throw SnapshotError{"the driver has no cuStreamSynchronize"};
    if (waits_on_pending_host_func(p.stream, p.per_thread)) return false;
    check(sync(p.stream), "cuStreamSynchronize on the launch's stream");
    return true;
  }
  if (p.marker == nullptr)
    check(create(&p.marker, CU_EVENT_DISABLE_TIMING), "cuEventCreate for the snapshot marker");
  check(record(p.marker, p.stream), "cuEventRecord on the launch's stream");
  if (waits_on_pending_host_func(p.stream, p.per_thread)) return false;
  check(wait(p.marker), "cuEventSynchronize on the launch's stream");
  return true;
}

// The live ranges, overlapping device ones merged (VMM access set twice over a range), address
// order. Host ranges are never merged (their host addresses need not be contiguous). The caller
// holds ranges_mutex.
std::vector<Span> live_ranges() { return state().ranges.spans(); }

// True when every range of `ranges` still lies inside a live range (caller holds ranges_mutex).
bool still_live(const std::vector<Span>& ranges) {
  std::vector<Span> now = live_ranges();
  for (const Span& r : ranges) {
    auto it = std::upper_bound(now.begin(), now.end(), r.address,
                               [](uint64_t a, const Span& b) { return a < b.address; });
    if (it == now.begin()) return false;
    --it;
    if (r.address + r.size > it->address + it->size || r.host != it->host) return false;
  }
  return true;
}

std::string hex(uint64_t value) { return common::hex_digits(value); }

void ensure_tool_stream() {
  State& s = state();
  if (s.tool_stream != nullptr) return;
  auto create = CUSNAP_REAL(cuStreamCreate);
  if (create == nullptr) throw SnapshotError{"the driver has no cuStreamCreate"};
  // Non-blocking: the tool's copies never wait for (or make wait) the application's streams.
  check(create(&s.tool_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate for the snapshot copies");
}

// The ranges tiled from their starts in chunks of the configured size.
std::vector<Chunk> tile(const std::vector<Span>& ranges) {
  const uint64_t chunk = state().chunk;
  std::vector<Chunk> out;
  for (size_t r = 0; r < ranges.size(); ++r) {
    const Span& span = ranges[r];
    for (uint64_t at = 0; at < span.size; at += chunk) {
      out.push_back(Chunk{span.address + at, std::min(chunk, span.size - at), r,
                          span.host != 0 ? span.host + at : 0});
    }
  }
  return out;
}

// Copies the chunks `which` (ascending indexes into `chunks`; null: all of them) to the host
// through the staging buffer, neighbours in one range in one copy (host memory: a memcpy, so
// that the bytes hashed are the bytes stored even if the application writes them meanwhile);
// `each` gets (index, bytes).
template <class Each>
void read_chunks(const std::vector<Chunk>& chunks, const std::vector<size_t>* which, Each&& each) {
  State& s = state();
  ensure_tool_stream();
  auto copy = CUSNAP_REAL(cuMemcpyDtoHAsync_v2);
  auto sync = CUSNAP_REAL(cuStreamSynchronize);
  if (copy == nullptr || sync == nullptr)
    throw SnapshotError{"the driver has no cuMemcpyDtoHAsync_v2"};
  const uint64_t piece_max = std::max<uint64_t>(s.chunk, kStagingBytes / s.chunk * s.chunk);
  const size_t count = which != nullptr ? which->size() : chunks.size();
  auto index_at = [&](size_t k) { return which != nullptr ? (*which)[k] : k; };
  for (size_t k = 0; k < count;) {
    // The run of chunks [k, end) that one copy reads.
    const Chunk& first = chunks[index_at(k)];
    uint64_t piece = first.size;
    size_t end = k + 1;
    while (end < count) {
      const Chunk& next = chunks[index_at(end)];
      if (next.range != first.range || next.address != first.address + piece ||
          piece + next.size > piece_max)
        break;
      piece += next.size;
      ++end;
    }
    if (s.staging.size() < piece) {
      try {
        s.staging.resize(piece);
      } catch (const std::bad_alloc&) {
        throw SnapshotError{"out of host memory for the " + std::to_string(piece) +
                            "-byte staging buffer"};
      }
    }
    if (first.host != 0) {
      std::memcpy(s.staging.data(), reinterpret_cast<const void*>(first.host), piece);
      uint64_t at = 0;
      for (size_t j = k; j < end; ++j) {
        const Chunk& chunk = chunks[index_at(j)];
        each(index_at(j), std::span<const uint8_t>(s.staging.data() + at, chunk.size));
        at += chunk.size;
      }
      k = end;
      continue;
    }
    CUresult copied = copy(s.staging.data(), first.address, piece, s.tool_stream);
    if (copied == CUDA_ERROR_INVALID_VALUE) {
      // The range is gone: freed by another thread between the table lookup and this read
      // (the free hook runs after the real free). Not a reason to stop snapshotting.
      throw SnapshotError{"the range at 0x" + hex(first.address) +
                              " could not be read (freed meanwhile by another thread?)",
                          true};
    }
    check(copied, "cuMemcpyDtoHAsync (snapshot read)");
    check(sync(s.tool_stream), "cuStreamSynchronize (snapshot read)");
    uint64_t at = 0;
    for (size_t j = k; j < end; ++j) {
      const Chunk& chunk = chunks[index_at(j)];
      each(index_at(j), std::span<const uint8_t>(s.staging.data() + at, chunk.size));
      at += chunk.size;
    }
    k = end;
  }
}

// Device route, once: loads the hashing kernel into a module of the tool's own on the current
// context. False (logged once; the host route for the rest of the run) when the driver cannot
// load it, e.g. one without a PTX JIT.
bool load_hasher() {
  State& s = state();
  DeviceHasher& h = s.hasher;
  if (h.tried) return h.function != nullptr;
  h.tried = true;
  auto load = CUSNAP_REAL(cuModuleLoadData);
  auto get = CUSNAP_REAL(cuModuleGetFunction);
  CUmodule module = nullptr;
  CUresult result = load == nullptr || get == nullptr ? CUDA_ERROR_NOT_SUPPORTED
                                                      : load(&module, chunk_hash_ptx().data());
  if (result == CUDA_SUCCESS) result = get(&h.function, module, kChunkHashKernel);
  if (result != CUDA_SUCCESS) {
    h.function = nullptr;
    s.route = HashRoute::kHost;
    log(LogLevel::kWarn,
        "the snapshot hashing kernel did not load (CUresult %d): memory snapshots copy every "
        "chunk and hash it on the host",
        static_cast<int>(result));
    return false;
  }
  log(LogLevel::kDebug, "memory snapshots hash chunks on the device");
  return true;
}

// A device-route step failed: the rest of the run hashes on the host (logged once).
void device_route_failed(const char* what, CUresult result) {
  State& s = state();
  s.route = HashRoute::kHost;
  log(LogLevel::kWarn,
      "snapshot hashing on the device: %s failed (CUresult %d); hashing on the host from now on",
      what, static_cast<int>(result));
}

// Every range of `ranges` is one the driver knows as allocated memory (the kernel must never read
// an address that is not: on a GPU that would be a fault in the application's context). The
// ranges are those of the table, which frees keep up to date; this guards what it cannot see.
bool driver_knows(const std::vector<Span>& ranges) {
  auto query = CUSNAP_REAL(cuMemGetAddressRange_v2);
  if (query == nullptr) return false;
  for (const auto& [address, size, host] : ranges) {
    if (host != 0) continue;  // not read by the kernel
    CUdeviceptr base = 0;
    size_t extent = 0;
    if (query(&base, &extent, address) != CUDA_SUCCESS) return false;
    if (address < base || address + size > base + extent) return false;
  }
  return true;
}

// Device route: each device chunk's ChunkHash, computed by the kernel on the tool's stream (host
// memory's chunks get none: they are always read, by memcpy, and their content id compared, so
// that what is compared is what is stored even if the application writes them meanwhile);
// nullopt when the device route is not (or no longer) usable, and the caller uses the host route.
std::optional<std::vector<ChunkHash>> device_hashes(const std::vector<Span>& ranges,
                                                    const std::vector<Chunk>& chunks) {
  State& s = state();
  if (s.route != HashRoute::kDevice || !load_hasher()) return std::nullopt;
  if (!driver_knows(ranges)) {
    log_once(LogLevel::kWarn, "snapshot-hash-unknown-range",
             "a memory snapshot covers a range the driver does not report as allocated: that "
             "snapshot is hashed on the host");
    return std::nullopt;
  }
  ensure_tool_stream();
  DeviceHasher& h = s.hasher;
  std::vector<ChunkHash> out(chunks.size());
  std::vector<size_t> on_device;  // indexes of the chunks the kernel hashes
  for (size_t i = 0; i < chunks.size(); ++i)
    if (chunks[i].host == 0) on_device.push_back(i);
  if (on_device.empty()) return out;
  const uint64_t n = on_device.size();
  const uint64_t bytes = n * 2 * sizeof(uint64_t);
  if (h.capacity < n) {
    auto alloc = CUSNAP_REAL(cuMemAlloc_v2);
    auto free = CUSNAP_REAL(cuMemFree_v2);
    if (alloc == nullptr || free == nullptr) {
      device_route_failed("cuMemAlloc", CUDA_ERROR_NOT_SUPPORTED);
      return std::nullopt;
    }
    if (h.table != 0) free(h.table);
    if (h.hashes != 0) free(h.hashes);
    h.table = h.hashes = 0;
    h.capacity = 0;
    const uint64_t want = std::max<uint64_t>(n, 1024);
    CUresult result = alloc(&h.table, want * 2 * sizeof(uint64_t));
    if (result == CUDA_SUCCESS) result = alloc(&h.hashes, want * 2 * sizeof(uint64_t));
    if (result != CUDA_SUCCESS) {
      device_route_failed("cuMemAlloc for the chunk table", result);
      return std::nullopt;
    }
    h.capacity = want;
  }
  h.host_table.resize(n * 2);
  for (size_t k = 0; k < n; ++k) {
    h.host_table[2 * k] = chunks[on_device[k]].address;
    h.host_table[2 * k + 1] = chunks[on_device[k]].size;
  }
  std::vector<ChunkHash> device(n);
  auto upload = CUSNAP_REAL(cuMemcpyHtoDAsync_v2);
  auto launch = CUSNAP_REAL(cuLaunchKernel);
  auto download = CUSNAP_REAL(cuMemcpyDtoHAsync_v2);
  auto sync = CUSNAP_REAL(cuStreamSynchronize);
  if (upload == nullptr || launch == nullptr || download == nullptr || sync == nullptr) {
    device_route_failed("finding the copy and launch entry points", CUDA_ERROR_NOT_SUPPORTED);
    return std::nullopt;
  }
  check(upload(h.table, h.host_table.data(), bytes, s.tool_stream),
        "cuMemcpyHtoDAsync (snapshot chunk table)");
  auto count = static_cast<unsigned>(n);
  void* params[] = {&h.table, &h.hashes, &count};
  auto blocks = static_cast<unsigned>(std::min<uint64_t>(n, 65535));
  CUresult result =
      launch(h.function, blocks, 1, 1, kChunkHashThreads, 1, 1, 0, s.tool_stream, params, nullptr);
  if (result != CUDA_SUCCESS) {
    device_route_failed("cuLaunchKernel of the hashing kernel", result);
    return std::nullopt;
  }
  check(download(device.data(), h.hashes, bytes, s.tool_stream),
        "cuMemcpyDtoHAsync (chunk hashes)");
  check(sync(s.tool_stream), "cuStreamSynchronize (chunk hashes)");
  for (size_t k = 0; k < n; ++k) out[on_device[k]] = device[k];
  return out;
}

// The `seen` table belongs to one capture file (a forked child writes another).
std::unordered_map<uint64_t, Seen>& seen_for(const Session* session) {
  State& s = state();
  if (s.seen_session != session) {
    s.seen.clear();
    s.kept.clear();
    s.kept_bytes = 0;
    s.seen_session = session;
  }
  return s.seen;
}

// Device route: what this snapshot saw becomes `seen` (chunks no longer covered are forgotten).
void remember(const Session* session, const std::vector<Chunk>& chunks,
              const std::vector<ChunkHash>& hashes, const std::vector<SnapshotChunk>& recorded) {
  std::unordered_map<uint64_t, Seen>& seen = seen_for(session);
  seen.clear();
  seen.reserve(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].host != 0) continue;
    seen[chunks[i].address] =
        Seen{chunks[i].size, hashes[i], recorded[i].blob, !recorded[i].hash_only};
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

// Before a snapshot reads the table (caller holds ranges_mutex, so no unload runs meanwhile):
// asks the real driver where the variables of every module loaded since the last snapshot are,
// records each as a globalGet of the tool's (before the launch record, so that the record-side
// rule, SnapshotRanges::apply, covers it too) and tracks it. A variable the driver does not find
// (another context current, a name it does not export) is left out, logged once.
void resolve_module_variables(Session& session) {
  State& s = state();
  if (s.unresolved.empty()) return;
  auto module_get = CUSNAP_REAL(cuModuleGetGlobal_v2);
  auto library_get = CUSNAP_REAL(cuLibraryGetGlobal);
  // A variable the application looked up already has its record and range: no second record.
  std::vector<format::AddressRange> live = s.ranges.live();
  auto covered = [&live](uint64_t address) {
    return std::any_of(live.begin(), live.end(),
                       [address](const format::AddressRange& r) { return r.first == address; });
  };
  for (const auto& [module, pending] : s.unresolved) {
    for (const fatbin::Variable& v : pending.variables) {
      CUdeviceptr address = 0;
      size_t size = 0;
      CUresult result = CUDA_ERROR_NOT_SUPPORTED;
      if (pending.is_library && library_get != nullptr) {
        result = library_get(&address, &size, reinterpret_cast<CUlibrary>(module), v.name.c_str());
      } else if (!pending.is_library && module_get != nullptr) {
        result = module_get(&address, &size, reinterpret_cast<CUmodule>(module), v.name.c_str());
      }
      if (result != CUDA_SUCCESS || address == 0 || size == 0) {
        log_once(LogLevel::kInfo, "snapshot-variable-not-found",
                 "a module variable the image defines was not found by the driver (%s: CUresult "
                 "%d): snapshots do not cover it",
                 v.name.c_str(), static_cast<int>(result));
        continue;
      }
      if (covered(address)) continue;
      session.tool_global_get(module, pending.is_library, v.name, address, size);
      s.ranges.track(address, size, RangeKind::kGlobal, module);
    }
  }
  s.unresolved.clear();
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
    if (config.snapshot_hash != "device" && config.snapshot_hash != "host") {
      log(LogLevel::kError, "CUSNAP_SNAPSHOT_HASH '%s': expected device or host; no snapshots",
          config.snapshot_hash.c_str());
      return false;
    }
    s.route = config.snapshot_hash == "host" ? HashRoute::kHost : HashRoute::kDevice;
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

void configure_range_snapshots(const capture::CaptureConfig& config) noexcept {
  State& s = state();
  if (!s.selection) {
    s.chunk = config.snapshot_chunk_bytes;
    s.route = config.snapshot_hash == "host" ? HashRoute::kHost : HashRoute::kDevice;
  }
  g_snapshots_enabled.store(true);
}

bool launch_snapshots_enabled() noexcept {
  return snapshots_enabled() && state().selection.has_value();
}

void snapshot_new_file() noexcept {
  State& s = state();
  {
    std::lock_guard lock(s.snapshot_mutex);
    s.seen.clear();
    s.kept.clear();
    s.kept_bytes = 0;
    s.seen_session = nullptr;
  }
  std::lock_guard order(s.order_mutex);
  s.ordinal = 0;  // the new file's launch ordinals start again at 0
}

std::string snapshot_live_memory(Session& session, std::vector<SnapshotChunk>& out) noexcept {
  State& s = state();
  out.clear();
  try {
    RelaxedCaptureMode relaxed;
    // Every queued write of the application lands before the memory is read.
    auto sync = CUSNAP_REAL(cuCtxSynchronize);
    if (sync == nullptr) return "the driver has no cuCtxSynchronize";
    if (CUresult r = sync(); r != CUDA_SUCCESS) {
      return "cuCtxSynchronize failed (CUresult " + std::to_string(static_cast<int>(r)) +
             "): no context current on the thread that started the range?";
    }
    std::lock_guard lock(s.snapshot_mutex);
    std::lock_guard memory(s.ranges_mutex);
    resolve_module_variables(session);
    std::vector<Span> ranges = live_ranges();
    std::vector<Chunk> chunks = tile(ranges);
    out.assign(chunks.size(), SnapshotChunk{});
    read_chunks(chunks, nullptr, [&](size_t i, std::span<const uint8_t> bytes) {
      format::BlobId id = session.put_blob(bytes);
      if (id.is_null()) throw SnapshotError{"a snapshot chunk could not be stored"};
      out[i] = SnapshotChunk{chunks[i].address, bytes.size(), id, false};
    });
    return "";
  } catch (const SnapshotError& e) {
    out.clear();
    log(LogLevel::kError, "capture range start snapshot: %s", e.what.c_str());
    return "range start snapshot failed: " + e.what;
  } catch (...) {
    out.clear();
    return "range start snapshot failed: out of host memory";
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

void track_module_variables(uint64_t module, bool is_library,
                            std::vector<fatbin::Variable> variables) noexcept {
  if (module == 0 || variables.empty()) return;
  try {
    State& s = state();
    std::lock_guard lock(s.ranges_mutex);
    s.unresolved[module] = ModuleVariables{is_library, std::move(variables)};
  } catch (...) {
  }
}

void track_host_range(uint64_t device, uint64_t host, uint64_t size) noexcept {
  if (device == 0 || host == 0 || size == 0) return;
  try {
    State& s = state();
    std::lock_guard lock(s.ranges_mutex);
    s.ranges.track_host(device, host, size);
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
    case Release::kHost:
      s.ranges.release_host(address);
      break;
    case Release::kModule:
      s.ranges.release_module(address);
      s.unresolved.erase(address);
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
  if (s.failed.load(std::memory_order_relaxed) || !s.selection) return;  // ranges: table only
  try {
    Pending& p = pending();
    CUevent marker = p.marker;  // kept: one per thread, for the thread's life
    p = Pending{};
    p.marker = marker;
    const bool per_thread = call.per_thread_stream();
    // A kernel-filtered capture records no graph: a launch captured into one (it does not run
    // now) is not a launch it can select.
    if (g_kernel_filtered && capture_possible() && stream_is_capturing(stream, per_thread)) return;
    {
      std::lock_guard lock(s.snapshot_mutex);
      ++s.launches_seen;
      if (s.selection->exhausted() || !s.selection->select(function_name(function))) return;
    }
    p.active = true;
    p.stream = stream;
    p.per_thread = per_thread;
    // Done first, then started: the difference can only overstate what is in flight.
    const uint64_t done_at_start = g_device_work_done.load();
    p.work_at_start = g_device_work.load();  // this launch has counted itself already
    RelaxedCaptureMode relaxed;
    if (stream_is_capturing(stream, p.per_thread)) {
      p.skipped =
          "the launch's stream is being captured into a graph (the launch does not run now)";
      return;
    }
    // A host function the stream waits on may wait for this thread's progress after the launch
    // returns: synchronising would deadlock the application (checked again in the try below).
    if (waits_on_pending_host_func(stream, p.per_thread)) {
      p.skipped = kWaitsOnHostFunc;
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
      if (!synchronize_unless_host_func(p)) {
        p.skipped = kWaitsOnHostFunc;
        return;
      }
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
      resolve_module_variables(*session);
      p.ranges = live_ranges();
      p.chunks = tile(p.ranges);
      p.before.assign(p.chunks.size(), SnapshotChunk{});
      auto store = [&](size_t i, std::span<const uint8_t> bytes) {
        format::BlobId id = session->put_blob(bytes);
        if (id.is_null()) throw SnapshotError{"a snapshot chunk could not be stored"};
        p.before[i] = SnapshotChunk{p.chunks[i].address, bytes.size(), id, false};
      };
      if (auto hashes = device_hashes(p.ranges, p.chunks)) {
        // A chunk whose device hash is the one the last snapshot saw, with its bytes in the
        // file, names that blob without being copied; only the others cross the bus.
        // One the last after-launch snapshot copied back without storing it is stored from the
        // bytes kept then, also without a copy.
        std::unordered_map<uint64_t, Seen>& seen = seen_for(session);
        std::vector<size_t> copy;
        for (size_t i = 0; i < p.chunks.size(); ++i) {
          const Chunk& c = p.chunks[i];
          auto it = c.host != 0 ? seen.end() : seen.find(c.address);
          bool same =
              it != seen.end() && it->second.size == c.size && it->second.hash == (*hashes)[i];
          auto kept = same && !it->second.stored ? s.kept.find(c.address) : s.kept.end();
          if (same && it->second.stored) {
            p.before[i] = SnapshotChunk{c.address, c.size, it->second.blob, false};
          } else if (kept != s.kept.end() && kept->second.size() == c.size) {
            store(i, kept->second);
          } else {
            copy.push_back(i);
          }
        }
        s.kept.clear();
        s.kept_bytes = 0;
        read_chunks(p.chunks, &copy, store);
        p.device = true;
        p.hashes = std::move(*hashes);
        remember(session, p.chunks, p.hashes, p.before);
      } else {
        read_chunks(p.chunks, nullptr, store);
      }
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

bool snapshot_selected_now() noexcept { return t_pending != nullptr && t_pending->active; }

format::KernelFilterCounts launch_selection_counts() noexcept {
  State& s = state();
  format::KernelFilterCounts counts;
  std::lock_guard lock(s.snapshot_mutex);
  counts.seen = s.launches_seen;
  if (s.selection) {
    counts.matched = s.selection->matched();
    counts.recorded = s.selection->selected();
  }
  return counts;
}

bool launch_selection_exhausted() noexcept {
  State& s = state();
  std::lock_guard lock(s.snapshot_mutex);
  return s.selection && s.selection->exhausted();
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
    std::vector<SnapshotChunk> after(p.chunks.size());
    try {
      RelaxedCaptureMode relaxed;
      if (!synchronize_unless_host_func(p)) {  // unlocked, as in snapshot_before
        // Another thread enqueued one since the before-state was read: that one stands.
        session->memory_snapshot(false, seq, ordinal, p.before, "");
        session->memory_snapshot(true, seq, ordinal, {},
                                 std::string("after-state not recorded: ") + kWaitsOnHostFunc);
        p.before.clear();
        p.before.shrink_to_fit();
        return;
      }
      std::lock_guard lock(s.snapshot_mutex);
      std::lock_guard memory(s.ranges_mutex);
      if (!still_live(p.ranges)) {
        throw SnapshotError{"another thread freed memory the launch could reach while it ran",
                            true};
      }
      auto take = [&](size_t i, std::span<const uint8_t> bytes) {
        format::BlobId id = format::hash_blob(bytes);
        bool unchanged = p.before[i].blob == id;
        if (s.outputs && !unchanged) {
          id = session->put_blob(bytes);
          if (id.is_null()) throw SnapshotError{"a snapshot chunk could not be stored"};
        }
        // An unchanged chunk's bytes are in the file already (the before snapshot stored them).
        after[i] = SnapshotChunk{p.chunks[i].address, bytes.size(), id, !s.outputs && !unchanged};
        if (p.device && !s.outputs && !unchanged && p.chunks[i].host == 0 &&
            s.kept_bytes + bytes.size() <= kKeptBytes) {
          s.kept[p.chunks[i].address].assign(bytes.begin(), bytes.end());
          s.kept_bytes += bytes.size();
        }
      };
      s.kept.clear();
      s.kept_bytes = 0;
      std::optional<std::vector<ChunkHash>> hashes;
      if (p.device) hashes = device_hashes(p.ranges, p.chunks);
      if (hashes) {
        // Only the chunks whose device hash changed are copied back and get their content id.
        std::vector<size_t> copy;
        for (size_t i = 0; i < p.chunks.size(); ++i) {
          if (p.chunks[i].host == 0 && (*hashes)[i] == p.hashes[i]) {
            after[i] = p.before[i];
          } else {
            copy.push_back(i);
          }
        }
        read_chunks(p.chunks, &copy, take);
        remember(session, p.chunks, *hashes, after);
      } else {
        read_chunks(p.chunks, nullptr, take);
      }
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
