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
thread_local int t_depth = 0;

namespace {

// A reusable first segment per thread: most records fit, so building one allocates nothing.
constexpr size_t kScratchWords = 1024;
thread_local capnp::word t_scratch[kScratchWords];
alignas(capnp::MallocMessageBuilder) thread_local unsigned char t_builder_storage[sizeof(capnp::MallocMessageBuilder)];
thread_local bool t_builder_live = false;
thread_local uint64_t t_thread_id = 0;

}  // namespace

int64_t monotonic_ns() noexcept {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint64_t current_thread_id() noexcept {
  if (t_thread_id == 0) t_thread_id = static_cast<uint64_t>(::syscall(SYS_gettid));
  return t_thread_id;
}

void ensure_initialized() noexcept {
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
}

namespace {
// Initialise when the library is loaded (before the application's first call), so that the
// very first driver call already finds the real driver; calls made earlier still initialise.
__attribute__((constructor)) void initialize_at_load() { ensure_initialized(); }
}  // namespace

CallScope::CallScope(SymbolId id, Mode mode) noexcept : id_(id), custom_(mode == kCustom) {
  ensure_initialized();
  if (t_depth != 0 || !capture_active() || (kSymbolTraits[id] & kTraitNoRecord) != 0) return;
  recording_ = true;
  ++t_depth;
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
    t_builder_live = false;
  }
  --t_depth;
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
    if (t_builder_live) throw std::logic_error("nested record builders on one thread");
    message_ = new (t_builder_storage) capnp::MallocMessageBuilder(kj::arrayPtr(t_scratch, kScratchWords));
    t_builder_live = true;
    auto record = message_->initRoot<schema::CallRecord>();
    record.setThreadId(current_thread_id());
    record.setStartNs(start_ns_);
    record.setEndNs(end_ns_ != 0 ? end_ns_ : monotonic_ns());
    record.setResult(static_cast<int32_t>(result_));
    record.setApiName(api_name());
    record.setContext(context_);
    return record;
  }
  return message_->getRoot<schema::CallRecord>();
}

uint64_t CallScope::commit() {
  committed_ = true;
  if (message_ == nullptr) return UINT64_MAX;
  Session* session = Session::current();
  return session != nullptr ? session->append(*message_) : UINT64_MAX;
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
