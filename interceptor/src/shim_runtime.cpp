#include "shim_runtime.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "capture_range.h"
#include "launch_filter.h"
#include "log.h"
#include "real_driver.h"
#include "session.h"
#include "snapshot.h"

namespace cusnap::icpt {
namespace schema = format::schema;

void* g_real[kSymbolCount] = {};
std::atomic<bool> g_slow{true};
constinit thread_local ThreadState t_state{};

namespace {
int64_t exact_monotonic_ns() noexcept {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The TSC call clock (see monotonic_ns in the header).
constexpr int64_t kCalibrateNs = 20'000'000;  // measure the TSC rate over at least this long
constexpr int64_t kAnchorNs = 1'000'000;      // re-anchor a thread's extrapolation this often
enum TscState : int { kTscOff, kTscCalibrating, kTscFinishing, kTscOn };
std::atomic<int> g_tsc_state{kTscOff};
uint64_t g_cal_tsc = 0;  // calibration start (written before kTscCalibrating is published)
int64_t g_cal_ns = 0;
uint64_t g_ns_per_tick_q32 = 0;  // ns per TSC tick, 32.32 fixed point (written before kTscOn)
uint64_t g_anchor_ticks = 0;     // kAnchorNs in ticks

#if defined(__x86_64__)
inline uint64_t read_tsc() noexcept { return __rdtsc(); }
#else
inline uint64_t read_tsc() noexcept { return 0; }  // never used: the TSC clock stays off
#endif

// An exact reading and the TSC at (about) the same instant: the midpoint of two rdtsc around it.
int64_t exact_with_tsc(uint64_t* tsc) noexcept {
  uint64_t before = read_tsc();
  int64_t ns = exact_monotonic_ns();
  uint64_t after = read_tsc();
  *tsc = before + (after - before) / 2;
  return ns;
}

// Only where the kernel keeps CLOCK_MONOTONIC on the TSC itself: it then trusts the TSC to be
// invariant and synchronised across CPUs (otherwise it would have switched clocksources).
void start_tsc_calibration() noexcept {
#if defined(__x86_64__)
  char name[32] = {};
  if (FILE* f =
          std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re")) {
    size_t n = std::fread(name, 1, sizeof name - 1, f);
    std::fclose(f);
    name[n] = 0;
  }
  if (std::strcmp(name, "tsc\n") != 0 || std::getenv("CUSNAP_EXACT_CLOCK") != nullptr) return;
  g_cal_ns = exact_with_tsc(&g_cal_tsc);
  g_tsc_state.store(kTscCalibrating, std::memory_order_release);
#endif
}

// `ns` (exact, at TSC `tsc`) is at least kCalibrateNs after the calibration start: one thread
// computes the rate and publishes it; an implausible rate leaves the exact clock in use.
void finish_tsc_calibration(int64_t ns, uint64_t tsc) noexcept {
  int expected = kTscCalibrating;
  if (!g_tsc_state.compare_exchange_strong(expected, kTscFinishing, std::memory_order_acquire))
    return;
  uint64_t ticks = tsc - g_cal_tsc;
  auto elapsed = static_cast<uint64_t>(ns - g_cal_ns);
  // Plausible TSC rates: 100 MHz .. 20 GHz.
  if (tsc <= g_cal_tsc || ticks < elapsed / 10 || ticks > elapsed * 20) {
    g_tsc_state.store(kTscOff, std::memory_order_release);
    return;
  }
  g_ns_per_tick_q32 =
      static_cast<uint64_t>((static_cast<unsigned __int128>(elapsed) << 32) / ticks);
  g_anchor_ticks =
      static_cast<uint64_t>((static_cast<unsigned __int128>(kAnchorNs) << 32) / g_ns_per_tick_q32);
  g_tsc_state.store(kTscOn, std::memory_order_release);
}

int64_t clock_ns(ThreadState& state) noexcept {
  int64_t ns;
  int mode = g_tsc_state.load(std::memory_order_acquire);
  if (mode == kTscOn) {
    // Unsigned: a TSC behind the anchor (another CPU) also re-anchors.
    uint64_t delta = read_tsc() - state.anchor_tsc;
    if (state.anchor_tsc != 0 && delta < g_anchor_ticks) {
      ns = state.anchor_ns +
           static_cast<int64_t>((static_cast<unsigned __int128>(delta) * g_ns_per_tick_q32) >> 32);
    } else {
      ns = exact_with_tsc(&state.anchor_tsc);
      state.anchor_ns = ns;
    }
  } else if (mode == kTscCalibrating) {
    uint64_t tsc;
    ns = exact_with_tsc(&tsc);
    if (ns - g_cal_ns >= kCalibrateNs) finish_tsc_calibration(ns, tsc);
  } else {
    ns = exact_monotonic_ns();
  }
  if (ns < state.last_ns) ns = state.last_ns;
  state.last_ns = ns;
  return ns;
}
}  // namespace

int64_t monotonic_ns() noexcept { return clock_ns(t_state); }

namespace {
uint64_t thread_id_of(ThreadState& state) noexcept {
  if (state.thread_id == 0) state.thread_id = static_cast<uint64_t>(::syscall(SYS_gettid));
  return state.thread_id;
}
}  // namespace

uint64_t current_thread_id() noexcept { return thread_id_of(t_state); }

namespace {
// Set once initialisation has completed: every recorded call asks, and std::call_once alone costs
// several TLS look-ups (libstdc++ publishes the callable in thread-locals) even when done.
std::atomic<bool> g_initialized{false};
}  // namespace

void ensure_initialized() noexcept {
  if (g_initialized.load(std::memory_order_acquire)) return;
  static std::once_flag once;
  try {
    std::call_once(once, [] {
      start_tsc_calibration();
      load_real_driver();
      CaptureConfig config = CaptureConfig::from_env();
      Session::start(config);
      if (!capture_active()) g_slow.store(false);
    });
  } catch (...) {
    g_slow.store(false);
  }
  g_initialized.store(true, std::memory_order_release);
}

namespace {
// Initialise when the library is loaded (before the application's first call), so that the
// very first driver call already finds the real driver; calls made earlier still initialise.
__attribute__((constructor)) void initialize_at_load() { ensure_initialized(); }
}  // namespace

CallScope::CallScope(SymbolId id, Mode mode) noexcept : id_(id), custom_(mode == kCustom) {
  ensure_initialized();
  if (!capture_active() || (kSymbolTraits[id] & kTraitNoRecord) != 0) return;
  ThreadState& state = t_state;
  if (state.depth != 0) return;
  if (g_ranges_configured) {
    // Capture ranges: a SIGUSR1 toggles here; outside a range only state calls are recorded.
    if (g_range_attention.load(std::memory_order_relaxed)) range_attention();
    if (range_skips(id) || !capture_active()) return;
  }
  if (g_kernel_filtered && launch_filter_skips(id)) {
    // Kernel-filtered capture (launch_filter.h): passed through unrecorded, but still counted
    // for the snapshots' overlap detection.
    if (may_change_device_memory(id)) {
      note_device_work();
      device_work_ = true;
    }
    return;
  }
  recording_ = true;
  thread_ = &state;
  ++state.depth;
  // Counted before the real call, so that a snapshot in progress on another thread sees it, and
  // again when the wrapper ends (the destructor), so that one starting now sees it in flight.
  if (snapshots_enabled() && may_change_device_memory(id)) {
    note_device_work();
    device_work_ = true;
  }
  start_ns_ = clock_ns(state);
}

CallScope::~CallScope() {
  if (device_work_) note_device_work_done();
  if (!recording_) return;
  if (!committed_ && !custom_) commit_generic();
  if (relaxed_) {
    if (auto exchange = CUSNAP_REAL(cuThreadExchangeStreamCaptureMode)) exchange(&saved_mode_);
  }
  if (message_ != nullptr) {
    message_->~MallocMessageBuilder();
    thread_->builder_live = false;
  }
  --thread_->depth;
}

CUresult CallScope::missing() noexcept {
  const RealDriver& driver = load_real_driver();
  if (!driver.loaded) {
    log_once(LogLevel::kError, "no-driver", "no real driver: %s", driver.error.c_str());
    return CUDA_ERROR_NO_DEVICE;
  }
  log_once(LogLevel::kWarn, api_name(), "%s: the real driver (%s) does not export it", api_name(),
           driver.path.c_str());
  result_ = CUDA_ERROR_NOT_FOUND;
  end_ns_ = monotonic_ns();
  return CUDA_ERROR_NOT_FOUND;
}

void CallScope::returned(CUresult result) noexcept {
  result_ = result;
  end_ns_ = thread_ != nullptr ? clock_ns(*thread_) : monotonic_ns();
  if (g_stream_captures.load(std::memory_order_relaxed) > 0) {
    // The tool's own calls below must not invalidate (or be refused by) a capture in progress.
    if (auto exchange = CUSNAP_REAL(cuThreadExchangeStreamCaptureMode)) {
      saved_mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
      relaxed_ = exchange(&saved_mode_) == CUDA_SUCCESS;
    }
  }
  CUcontext context = nullptr;
  if (auto get_current = CUSNAP_REAL(cuCtxGetCurrent);
      get_current != nullptr && get_current(&context) == CUDA_SUCCESS) {
    context_ = reinterpret_cast<uint64_t>(context);
  }
  if (id_ == k_cuInit && result == CUDA_SUCCESS) {
    if (Session* session = Session::current()) session->on_driver_initialized();
  }
}

void CallScope::fail(const char* what) noexcept {
  try {
    if (Session* session = Session::current()) {
      session->disable(std::string("internal error while recording ") + api_name() + ": " + what);
    }
  } catch (...) {
    stop_recording();
  }
  committed_ = true;
}

schema::CallRecord::Builder CallScope::record() {
  if (message_ == nullptr) {
    if (thread_ == nullptr) throw std::logic_error("record() outside a recorded call");
    ThreadState& state = *thread_;
    if (state.builder_live) throw std::logic_error("nested record builders on one thread");
    message_ = new (state.builder_storage)
        capnp::MallocMessageBuilder(kj::arrayPtr(state.scratch, ThreadState::kScratchWords));
    state.builder_live = true;
    root_ = message_->initRoot<schema::CallRecord>();
    auto record = root_;
    record.setThreadId(thread_id_of(state));
    record.setStartNs(start_ns_);
    record.setEndNs(end_ns_ != 0 ? end_ns_ : clock_ns(state));
    record.setResult(static_cast<int32_t>(result_));
    record.setApiName(api_name());
    record.setContext(context_);
    return record;
  }
  return root_;
}

uint64_t CallScope::commit() {
  committed_ = true;
  if (message_ == nullptr) return UINT64_MAX;
  Session* session = Session::current();
  return session != nullptr ? session->append(*message_, root_) : UINT64_MAX;
}

uint64_t CallScope::commit_launch(format::LaunchFields& fields) {
  committed_ = true;
  if (thread_ == nullptr) throw std::logic_error("commit_launch() outside a recorded call");
  ThreadState& state = *thread_;
  fields.thread_id = thread_id_of(state);
  fields.start_ns = start_ns_;
  fields.end_ns = end_ns_ != 0 ? end_ns_ : clock_ns(state);
  fields.result = static_cast<int32_t>(result_);
  fields.api_name = api_name();
  fields.context = context_;
  Session* session = Session::current();
  return session != nullptr ? session->append_launch(fields) : UINT64_MAX;
}

void CallScope::commit_generic() noexcept {
  try {
    // Not a pure query (annotations.json): replaying without modelling it may diverge.
    record().initGeneric().setAffectsDeviceState((kSymbolTraits[id_] & kTraitQuery) == 0);
    commit();
  } catch (const std::exception& e) {
    fail(e.what());
  } catch (...) {
    fail("unknown exception");
  }
}

}  // namespace cusnap::icpt
