// The runtime every generated wrapper calls into: the real driver's entry points, the fast-path
// switch, and CallScope (one recorded call: re-entrancy guard, timing, record building).
//
// Fast path contract: while nothing is being recorded, a wrapper costs one relaxed atomic load
// (g_slow) and the indirect call. g_slow is true until the shim has initialised and then only
// while a capture is active; a thread that is already inside a recorded call (a host callback
// that re-enters the driver) always takes the fast path, so the tool never records itself.
#pragma once

#include <capnp/message.h>

#include <atomic>
#include <cstdint>
#include <exception>

#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/launch_record.h"
#include "generated_shim_api.h"

namespace cusnap::icpt {

// Real driver entry points by SymbolId (nullptr: the real driver lacks the symbol).
extern void* g_real[kSymbolCount];
extern std::atomic<bool> g_slow;
// Streams being captured into graphs right now (capture_mode.cpp).
extern std::atomic<int> g_stream_captures;

// Everything the slow path keeps per thread, in one thread_local: the shim is a shared object,
// so each distinct thread_local costs a __tls_get_addr call per access, and a recorded call now
// pays for one. Trivial on purpose (zero-initialised by the loader, no TLS wrapper, no guard).
struct ThreadState {
  static constexpr size_t kScratchWords = 1024;
  int depth;           // > 0: inside a recorded call on this thread (re-entrant calls pass through)
  bool builder_live;   // builder_storage holds a live message builder
  uint64_t thread_id;  // cached gettid(), 0 until first asked
  // Call clock (monotonic_ns): the exact CLOCK_MONOTONIC reading this thread extrapolates from
  // with the TSC, and the last value it returned (so that a thread's times never go back).
  uint64_t anchor_tsc;  // 0: no anchor yet
  int64_t anchor_ns;
  int64_t last_ns;
  // A reusable first segment: most records fit, so building one allocates nothing. It must be
  // zero whenever no builder uses it (MallocMessageBuilder's destructor zeroes what it used).
  alignas(capnp::MallocMessageBuilder) unsigned char builder_storage[sizeof(
      capnp::MallocMessageBuilder)];
  capnp::word scratch[kScratchWords];
};
// constinit: zero-initialised, so accesses from other files need no TLS init wrapper (_ZTH).
extern thread_local constinit ThreadState t_state;

inline bool slow_path_wanted() noexcept {
  return g_slow.load(std::memory_order_relaxed) && t_state.depth == 0;
}

// The real driver's `symbol` as a typed pointer (may be nullptr): for the tool's own calls,
// which must never go through the exported wrappers.
#define CUSNAP_REAL(symbol) \
  reinterpret_cast<::cusnap::icpt::fn::symbol>(::cusnap::icpt::g_real[::cusnap::icpt::k_##symbol])

// Loads the real driver and reads the configuration, once per process; cheap afterwards.
void ensure_initialized() noexcept;

// One slow-path call. Constructed by the generated wrapper before the real call.
class CallScope {
 public:
  enum Mode { kNormal, kCustom };
  explicit CallScope(SymbolId id, Mode mode = kNormal) noexcept;
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  bool recording() const noexcept { return recording_; }
  SymbolId id() const noexcept { return id_; }
  const char* api_name() const noexcept { return kSymbolNames[id_]; }
  bool per_thread_stream() const noexcept {
    return (kSymbolTraits[id_] & kTraitPerThreadStream) != 0;
  }
  CUresult result() const noexcept { return result_; }

  // What a wrapper returns when the real driver lacks the symbol (logged once).
  CUresult missing() noexcept;
  // The real call returned `result`: stops the clock and notes the current context.
  void returned(CUresult result) noexcept;

  // Runs a hook; an exception disables the capture (logged once, recorded) instead of escaping.
  template <class Hook>
  void guard(Hook&& hook) noexcept {
    try {
      hook();
    } catch (const std::exception& e) {
      fail(e.what());
    } catch (...) {
      fail("unknown exception");
    }
  }

  // The record of this call with the common fields filled in; the hook fills the union member
  // and calls commit(). A call whose hook does not commit gets a generic record.
  format::schema::CallRecord::Builder record();
  // Appends the record (see Session::append). Returns its seq, or UINT64_MAX when not written.
  uint64_t commit();
  // Commits this call as a launch given as plain fields (the recording hot path: no message is
  // built on this thread); fills in the common fields. Returns its seq, or UINT64_MAX.
  uint64_t commit_launch(format::LaunchFields& fields);
  // Marks the call as deliberately not recorded (no generic record either).
  void skip() noexcept { committed_ = true; }

 private:
  void fail(const char* what) noexcept;
  void commit_generic() noexcept;

  SymbolId id_;
  bool recording_ = false;
  bool committed_ = false;
  bool custom_ = false;
  CUresult result_ = CUDA_SUCCESS;
  int64_t start_ns_ = 0;
  int64_t end_ns_ = 0;
  uint64_t context_ = 0;
  bool relaxed_ = false;      // capture mode exchanged to RELAXED for helper calls
  bool device_work_ = false;  // counted in g_device_work: counts itself done when it ends
  CUstreamCaptureMode saved_mode_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
  ThreadState* thread_ = nullptr;  // this thread's state, set while recording
  capnp::MallocMessageBuilder* message_ = nullptr;
  format::schema::CallRecord::Builder root_{nullptr};  // message_'s root, once built
};

// CLOCK_MONOTONIC in ns for record times, non-decreasing per thread. Where the kernel itself keeps
// CLOCK_MONOTONIC on the TSC, this extrapolates from an exact reading taken at most ~1 ms earlier
// on the same thread with the TSC rate measured against CLOCK_MONOTONIC over the first ~20 ms:
// one rdtsc (~15 ns here) instead of clock_gettime (~43 ns on this VM), twice per recorded call.
// Deviation from clock_gettime: the rate error times at most 1 ms (nanoseconds when the clock is
// not being slewed; under 0.5 us at the kernel's 500 ppm slew limit). Elsewhere: clock_gettime.
int64_t monotonic_ns() noexcept;
uint64_t current_thread_id() noexcept;

}  // namespace cusnap::icpt
