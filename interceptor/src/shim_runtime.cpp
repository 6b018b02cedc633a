#include "shim_runtime.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <mutex>
#include <new>
#include <string>

#include "log.h"
#include "real_driver.h"
#include "session.h"

namespace cusnap::icpt {
namespace schema = format::schema;

void* g_real[kSymbolCount] = {};
std::atomic<bool> g_slow{true};
thread_local ThreadState t_state;

int64_t monotonic_ns() noexcept {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

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
  recording_ = true;
  thread_ = &state;
  ++state.depth;
  start_ns_ = monotonic_ns();
}

CallScope::~CallScope() {
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
  log_once(LogLevel::kWarn, api_name(), "%s: the real driver (%s) does not export it", api_name(), driver.path.c_str());
  result_ = CUDA_ERROR_NOT_FOUND;
  end_ns_ = monotonic_ns();
  return CUDA_ERROR_NOT_FOUND;
}

void CallScope::returned(CUresult result) noexcept {
  result_ = result;
  end_ns_ = monotonic_ns();
  if (g_stream_captures.load(std::memory_order_relaxed) > 0) {
    // The tool's own calls below must not invalidate (or be refused by) a capture in progress.
    if (auto exchange = CUSNAP_REAL(cuThreadExchangeStreamCaptureMode)) {
      saved_mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
      relaxed_ = exchange(&saved_mode_) == CUDA_SUCCESS;
    }
  }
  CUcontext context = nullptr;
  if (auto get_current = CUSNAP_REAL(cuCtxGetCurrent); get_current != nullptr && get_current(&context) == CUDA_SUCCESS) {
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
    record.setEndNs(end_ns_ != 0 ? end_ns_ : monotonic_ns());
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
