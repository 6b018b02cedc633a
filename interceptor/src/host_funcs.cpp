#include "host_funcs.h"

#include <algorithm>
#include <compare>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "shim_runtime.h"

namespace cusnap::icpt {
namespace {

// A stream as the waits see it: an application stream by handle, the legacy default stream, or
// one thread's per-thread default stream.
struct StreamKey {
  uint64_t stream = 0;
  uint64_t thread = 0;  // per-thread default stream: its thread
  auto operator<=>(const StreamKey&) const = default;
};
constexpr uint64_t kLegacyHandle = 1;     // CU_STREAM_LEGACY
constexpr uint64_t kPerThreadHandle = 2;  // CU_STREAM_PER_THREAD
constexpr StreamKey kLegacy{kLegacyHandle, 0};

StreamKey key_of(CUstream stream, bool per_thread) {
  auto handle = reinterpret_cast<uint64_t>(stream);
  if (handle == kPerThreadHandle || (handle == 0 && per_thread))
    return StreamKey{kPerThreadHandle, current_thread_id()};
  if (handle == 0 || handle == kLegacyHandle) return kLegacy;
  return StreamKey{handle, 0};
}

using Tokens = std::vector<uint64_t>;  // tracked host functions, by token

struct State {
  std::mutex mutex;
  uint64_t next_token = 1;
  std::unordered_set<uint64_t> pending;         // enqueued, not finished
  std::map<StreamKey, Tokens> waits;            // what work enqueued now on a stream waits for
  std::unordered_map<uint64_t, Tokens> events;  // what an event's last record waits for
  std::unordered_set<uint64_t> non_blocking;    // streams created CU_STREAM_NON_BLOCKING
};

State& state() {
  static State* s = new State();  // never destroyed: host functions may run during exit
  return *s;
}

// Caller holds the mutex. Drops the finished tokens of `tokens`.
void prune(State& s, Tokens& tokens) {
  std::erase_if(tokens, [&](uint64_t t) { return !s.pending.contains(t); });
}

bool blocking(const State& s, const StreamKey& key) {
  return key.stream == kPerThreadHandle || key == kLegacy || !s.non_blocking.contains(key.stream);
}

// Caller holds the mutex. The unfinished host functions work enqueued now on `key` waits for:
// its own and those it inherited through events; a blocking stream also waits for the legacy
// default stream, and the legacy default stream (or a blocking stream, while the legacy default
// stream is busy, `legacy_busy`: its queued work may wait for them) for every blocking stream.
Tokens reachable(State& s, const StreamKey& key, bool legacy_busy) {
  Tokens out;
  auto add = [&](const StreamKey& k) {
    auto it = s.waits.find(k);
    if (it == s.waits.end()) return;
    for (uint64_t t : it->second)
      if (s.pending.contains(t)) out.push_back(t);
  };
  add(key);
  if (blocking(s, key)) {
    if (key != kLegacy) add(kLegacy);
    if (key == kLegacy || legacy_busy) {
      for (const auto& [other, tokens] : s.waits)
        if (other != key && other != kLegacy && blocking(s, other)) add(other);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Work queued on the legacy default stream may itself wait for blocking streams' host functions.
// Asked without the lock (a driver call).
bool legacy_stream_busy() {
  auto query = CUSNAP_REAL(cuStreamQuery);
  return query != nullptr && query(CU_STREAM_LEGACY) == CUDA_ERROR_NOT_READY;
}

// 0: not tracked (out of memory).
uint64_t enqueue_begin(CUstream stream, bool per_thread) noexcept {
  try {
    State& s = state();
    StreamKey key = key_of(stream, per_thread);
    std::lock_guard lock(s.mutex);
    uint64_t token = s.next_token++;
    s.pending.insert(token);
    Tokens& tokens = s.waits[key];
    prune(s, tokens);
    try {
      tokens.push_back(token);
    } catch (...) {
      s.pending.erase(token);
      throw;
    }
    return token;
  } catch (...) {
    return 0;
  }
}

void finished(uint64_t token) noexcept {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.pending.erase(token);
  if (s.pending.empty()) {
    // Nothing left to wait for: what the streams and events inherited is all finished.
    s.waits.clear();
    s.events.clear();
  }
}

// One wrapped host function; freed by its trampoline before the application's function runs.
struct HostCall {
  CUhostFn fn = nullptr;
  CUstreamCallback callback = nullptr;
  void* user_data = nullptr;
  uint64_t token = 0;
};

// Marks the host function finished when the application's function has returned.
struct FinishOnExit {
  uint64_t token;
  ~FinishOnExit() { finished(token); }
};

void CUDA_CB run_host_fn(void* data) {
  HostCall call = *static_cast<HostCall*>(data);
  delete static_cast<HostCall*>(data);
  FinishOnExit finish{call.token};
  call.fn(call.user_data);
}

void CUDA_CB run_callback(CUstream stream, CUresult status, void* data) {
  HostCall call = *static_cast<HostCall*>(data);
  delete static_cast<HostCall*>(data);
  FinishOnExit finish{call.token};
  call.callback(stream, status, call.user_data);
}

}  // namespace

CUresult launch_tracked_host_func(fn::cuLaunchHostFunc real, CUstream stream, bool per_thread,
                                  CUhostFn fn, void* user_data) noexcept {
  if (fn == nullptr) return real(stream, fn, user_data);  // the driver's error, untracked
  uint64_t token = enqueue_begin(stream, per_thread);
  auto* call = token != 0 ? new (std::nothrow) HostCall{fn, nullptr, user_data, token} : nullptr;
  if (call == nullptr) {
    if (token != 0) finished(token);
    return real(stream, fn, user_data);
  }
  CUresult result = real(stream, run_host_fn, call);
  if (result != CUDA_SUCCESS) {
    delete call;
    finished(token);
  }
  return result;
}

CUresult add_tracked_callback(fn::cuStreamAddCallback real, CUstream stream, bool per_thread,
                              CUstreamCallback callback, void* user_data, unsigned flags) noexcept {
  if (callback == nullptr) return real(stream, callback, user_data, flags);
  uint64_t token = enqueue_begin(stream, per_thread);
  auto* call =
      token != 0 ? new (std::nothrow) HostCall{nullptr, callback, user_data, token} : nullptr;
  if (call == nullptr) {
    if (token != 0) finished(token);
    return real(stream, callback, user_data, flags);
  }
  CUresult result = real(stream, run_callback, call, flags);
  if (result != CUDA_SUCCESS) {
    delete call;
    finished(token);
  }
  return result;
}

void host_funcs_stream_created(CUstream stream, unsigned flags) noexcept {
  try {
    State& s = state();
    std::lock_guard lock(s.mutex);
    auto handle = reinterpret_cast<uint64_t>(stream);
    if ((flags & CU_STREAM_NON_BLOCKING) != 0) {
      s.non_blocking.insert(handle);
    } else {
      s.non_blocking.erase(handle);  // (a handle reused by the driver)
    }
  } catch (...) {
    // Out of memory: the stream counts as blocking, which only adds waits.
  }
}

void host_funcs_stream_destroyed(CUstream stream) noexcept {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto handle = reinterpret_cast<uint64_t>(stream);
  s.non_blocking.erase(handle);
  s.waits.erase(StreamKey{handle, 0});
}

void host_funcs_event_recorded(CUevent event, CUstream stream, bool per_thread) noexcept {
  try {
    State& s = state();
    StreamKey key = key_of(stream, per_thread);
    auto handle = reinterpret_cast<uint64_t>(event);
    bool ask_legacy = false;
    {
      std::lock_guard lock(s.mutex);
      if (s.pending.empty()) {
        s.events.erase(handle);
        return;
      }
      ask_legacy = key != kLegacy && blocking(s, key);
    }
    bool legacy_busy = ask_legacy && legacy_stream_busy();
    std::lock_guard lock(s.mutex);
    Tokens tokens = reachable(s, key, legacy_busy);
    if (tokens.empty()) {
      s.events.erase(handle);
    } else {
      s.events[handle] = std::move(tokens);
    }
  } catch (...) {
  }
}

void host_funcs_stream_waits(CUstream stream, bool per_thread, CUevent event) noexcept {
  try {
    State& s = state();
    StreamKey key = key_of(stream, per_thread);
    std::lock_guard lock(s.mutex);
    auto it = s.events.find(reinterpret_cast<uint64_t>(event));
    if (it == s.events.end()) return;
    prune(s, it->second);
    if (it->second.empty()) return;
    Tokens& tokens = s.waits[key];
    prune(s, tokens);
    tokens.insert(tokens.end(), it->second.begin(), it->second.end());
  } catch (...) {
  }
}

void host_funcs_event_destroyed(CUevent event) noexcept {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.events.erase(reinterpret_cast<uint64_t>(event));
}

bool waits_on_pending_host_func(CUstream stream, bool per_thread) noexcept {
  try {
    State& s = state();
    StreamKey key = key_of(stream, per_thread);
    bool ask_legacy = false;
    {
      std::lock_guard lock(s.mutex);
      if (s.pending.empty()) return false;
      if (!reachable(s, key, false).empty()) return true;
      ask_legacy = key != kLegacy && blocking(s, key);
    }
    if (!ask_legacy || !legacy_stream_busy()) return false;
    std::lock_guard lock(s.mutex);
    return !reachable(s, key, true).empty();
  } catch (...) {
    return true;  // cannot tell: not waiting is the safe side
  }
}

}  // namespace cusnap::icpt
