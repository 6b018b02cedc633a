#include "session.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "capture_range.h"
#include "cusnap/format/header_info.h"
#include "launch_filter.h"
#include "log.h"
#include "real_driver.h"
#include "shim_runtime.h"
#include "snapshot.h"

namespace cusnap::icpt {
namespace schema = format::schema;

namespace {

std::atomic<Session*> g_session{nullptr};
std::atomic<bool> g_recording{false};
// Records kept before the file exists (an application that never calls cuInit successfully).
constexpr size_t kMaxPendingRecords = 100000;

// Opens `name` exclusively; when it exists and overwriting is not allowed, tries <stem>.<n><ext>.
// The file is format::kCaptureFileMode (0600: it holds the application's data), also when an
// existing file is overwritten.
int create_output(const std::string& name, bool force, std::string& chosen) {
  if (force) {
    chosen = name;
    int fd =
        ::open(name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, format::kCaptureFileMode);
    if (fd >= 0) (void)::fchmod(fd, format::kCaptureFileMode);
    return fd;
  }
  size_t slash = name.rfind('/');
  size_t dot = name.rfind('.');
  bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  std::string stem = has_ext ? name.substr(0, dot) : name;
  std::string ext = has_ext ? name.substr(dot) : "";
  for (int attempt = 0; attempt < 1000; ++attempt) {
    chosen = attempt == 0 ? name : stem + "." + std::to_string(attempt) + ext;
    int fd =
        ::open(chosen.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, format::kCaptureFileMode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

// Writing the capture never lets SIGXFSZ (a write beyond RLIMIT_FSIZE) reach the application,
// whose default action would kill it: the writer's threads are created with every signal blocked
// (they inherit the creating thread's mask), and the writes made on an application thread (the
// header when the file opens, the footer at close) run with SIGXFSZ blocked, a SIGXFSZ they
// raised consumed before the mask is restored. The write then fails with EFBIG instead, which
// disables the capture with that reason (like ENOSPC); the application continues unaffected.
class SignalShield {
 public:
  enum Blocked { kFileSizeSignal, kEverySignal };
  explicit SignalShield(Blocked blocked) noexcept {
    sigset_t set;
    if (blocked == kEverySignal) {
      sigfillset(&set);
    } else {
      sigemptyset(&set);
      sigaddset(&set, SIGXFSZ);
    }
    pthread_sigmask(SIG_BLOCK, &set, &old_);
    was_pending_ = file_size_signal_pending();
  }
  ~SignalShield() {
    if (!was_pending_ && file_size_signal_pending()) {
      sigset_t xfsz;
      sigemptyset(&xfsz);
      sigaddset(&xfsz, SIGXFSZ);
      struct timespec zero {};
      (void)sigtimedwait(&xfsz, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalShield(const SignalShield&) = delete;
  SignalShield& operator=(const SignalShield&) = delete;

 private:
  static bool file_size_signal_pending() noexcept {
    sigset_t pending;
    return sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1;
  }

  sigset_t old_;
  bool was_pending_ = false;
};

void fill_devices(schema::CaptureHeader::Builder header) {
  auto get_count = CUSNAP_REAL(cuDeviceGetCount);
  int count = 0;
  if (get_count == nullptr || get_count(&count) != CUDA_SUCCESS || count <= 0) return;
  auto devices = header.initDevices(static_cast<unsigned>(count));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    auto out = devices[ordinal];
    out.setOrdinal(ordinal);
    CUdevice device = 0;
    auto device_get = CUSNAP_REAL(cuDeviceGet);
    if (device_get == nullptr || device_get(&device, ordinal) != CUDA_SUCCESS) continue;
    char name[256] = {};
    if (auto f = CUSNAP_REAL(cuDeviceGetName);
        f && f(name, sizeof name - 1, device) == CUDA_SUCCESS) {
      out.setName(name);
    }
    CUuuid uuid{};
    if (auto f = CUSNAP_REAL(cuDeviceGetUuid_v2); f && f(&uuid, device) == CUDA_SUCCESS) {
      out.setUuid(
          capnp::Data::Reader(reinterpret_cast<const uint8_t*>(uuid.bytes), sizeof uuid.bytes));
    }
    size_t total = 0;
    if (auto f = CUSNAP_REAL(cuDeviceTotalMem_v2); f && f(&total, device) == CUDA_SUCCESS) {
      out.setTotalMemoryBytes(total);
    }
    char bus[64] = {};
    if (auto f = CUSNAP_REAL(cuDeviceGetPCIBusId);
        f && f(bus, sizeof bus - 1, device) == CUDA_SUCCESS) {
      out.setPciBusId(bus);
    }
    auto attribute = CUSNAP_REAL(cuDeviceGetAttribute);
    if (attribute == nullptr) continue;
    int value = 0;
    if (attribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) == CUDA_SUCCESS) {
      out.setComputeCapabilityMajor(value);
    }
    if (attribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) == CUDA_SUCCESS) {
      out.setComputeCapabilityMinor(value);
    }
    if (attribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device) == CUDA_SUCCESS) {
      out.setMultiprocessorCount(value);
    }
    // Attributes a replay on another device would want to compare.
    static const CUdevice_attribute kRecorded[] = {
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_WARP_SIZE,
        CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
        CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
        CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
        CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
        CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
        CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY};
    std::vector<std::pair<int, int>> values;
    for (auto id : kRecorded) {
      if (attribute(&value, id, device) == CUDA_SUCCESS) values.emplace_back(id, value);
    }
    auto list = out.initAttributes(static_cast<unsigned>(values.size()));
    for (size_t i = 0; i < values.size(); ++i) {
      list[i].setId(values[i].first);
      list[i].setValue(values[i].second);
    }
  }
}

// ---- fatal signals: close the capture, then let the previous disposition act.
//
// A handler may only do async-signal-safe work: closing the writer (locks, allocation,
// compression) is not, so it is done by a flusher thread that waits on a pipe with every signal
// blocked. The handler writes one byte to it and poll()s for its answer for at most
// kFlushWaitMs (bounded without alarm(), which would replace the application's own alarm; if
// the interrupted thread holds a lock the close needs, the wait ends and the file is still
// readable up to its last complete frame). Signals the application handles itself are passed
// to its handler untouched, without flushing: it may well survive them (and if it exits, exit
// closes the capture). A fatal signal raised while the handler runs on the same thread (a fault
// in the handler) goes straight to the previous disposition.
const int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL,  SIGFPE, SIGABRT,
                             SIGTERM, SIGINT, SIGQUIT, SIGHUP};
constexpr int kFlushWaitMs = 10000;
struct sigaction g_previous[65];
// Set once the handlers are installed, in this process or the one it was fork()ed from.
std::atomic<bool> g_handlers_installed{false};
std::atomic<pid_t> g_handling_thread{0};  // the thread inside on_fatal_signal, 0 when none

struct Flusher {
  int request[2] = {-1, -1};  // handler -> flusher thread
  int done[2] = {-1, -1};     // flusher thread -> handler(s)
  pid_t owner = 0;            // the process whose thread reads `request`
};
Flusher g_flusher;

void* flusher_main(void*) {
  char byte = 0;
  while (true) {
    ssize_t n = ::read(g_flusher.request[0], &byte, 1);
    if (n == 1) break;
    if (n < 0 && errno == EINTR) continue;
    return nullptr;  // the pipe is gone
  }
  if (Session* session = Session::current()) session->close();
  // One byte wakes every waiting handler: none of them consumes it.
  ssize_t ignored = ::write(g_flusher.done[1], &byte, 1);
  (void)ignored;
  return nullptr;
}

void close_pair(int (&pair)[2]) {
  for (int& fd : pair) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

// Starts this process's flusher thread (again in a fork()ed child: threads do not survive fork).
void start_flusher() {
  pid_t self = ::getpid();
  if (g_flusher.owner == self) return;
  close_pair(g_flusher.request);  // the parent's: its thread, not ours, reads them
  close_pair(g_flusher.done);
  if (::pipe2(g_flusher.request, O_CLOEXEC) != 0) return;
  if (::pipe2(g_flusher.done, O_CLOEXEC) != 0) {
    close_pair(g_flusher.request);
    return;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // inherited by the thread: no signal reaches it
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  bool started = pthread_create(&thread, &attr, flusher_main, nullptr) == 0;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!started) {
    close_pair(g_flusher.request);
    close_pair(g_flusher.done);
    return;
  }
  g_flusher.owner = self;
}

// Async-signal-safe: asks the flusher thread to close the capture and waits, bounded.
void close_capture_from_handler() {
  if (g_flusher.owner != ::getpid() || g_flusher.request[1] < 0) return;
  char byte = 1;
  ssize_t ignored = ::write(g_flusher.request[1], &byte, 1);
  (void)ignored;
  struct pollfd wait_for {
    g_flusher.done[0], POLLIN, 0
  };
  while (::poll(&wait_for, 1, kFlushWaitMs) < 0 && errno == EINTR) {
  }
}

void on_fatal_signal(int signal, siginfo_t* info, void* context);

bool is_ours(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) != 0 && action.sa_sigaction == &on_fatal_signal;
}

void on_fatal_signal(int signal, siginfo_t* info, void* context) {
  int saved_errno = errno;
  const struct sigaction& previous = g_previous[signal];
  bool app_handles = (previous.sa_flags & SA_SIGINFO)
                         ? previous.sa_sigaction != nullptr
                         : (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN);
  if (app_handles) {
    // The application's own handler, exactly as without the shim (it may recover: siglongjmp).
    errno = saved_errno;
    if (previous.sa_flags & SA_SIGINFO) {
      previous.sa_sigaction(signal, info, context);
    } else {
      previous.sa_handler(signal);
    }
    return;
  }
  if (previous.sa_handler == SIG_IGN) return;
  pid_t thread = static_cast<pid_t>(::syscall(SYS_gettid));
  pid_t none = 0;
  if (g_handling_thread.compare_exchange_strong(none, thread)) {
    if (Session::current() != nullptr) close_capture_from_handler();
  } else if (none != thread) {
    // Another thread is closing the capture: wait for it as it waits (bounded), then die.
    struct pollfd wait_for {
      g_flusher.done[0], POLLIN, 0
    };
    if (g_flusher.owner == ::getpid()) {
      while (::poll(&wait_for, 1, kFlushWaitMs) < 0 && errno == EINTR) {
      }
    }
  }
  // else: a fault inside this handler on this thread: no second attempt.
  errno = saved_errno;
  ::sigaction(signal, &previous, nullptr);  // SIG_DFL again
  ::raise(signal);  // pending until we return for a synchronous fault, then the fault repeats
}

// Installed once per process: a fork()ed child inherits both the handlers and g_previous, and
// must not record its own handler as "the previous one" (it would call itself forever).
void install_signal_handlers() {
  start_flusher();
  if (g_handlers_installed.exchange(true)) return;
  for (int signal : kFatalSignals) {
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    struct sigaction previous {};
    ::sigaction(signal, &action, &previous);
    if (!is_ours(previous)) g_previous[signal] = previous;
  }
}

void on_fork_child() {
  Session* parent = g_session.load();
  if (parent == nullptr) return;
  // The parent's writer threads do not exist here: abandon it (leaked on purpose) and start a
  // new session, which names its file after this process.
  g_session.store(new Session(parent->config()));
}

__attribute__((destructor)) void close_at_exit() {
  if (Session* session = g_session.load()) session->close();
}

}  // namespace

Session::Session(CaptureConfig config) : config_(std::move(config)) {}

Session* Session::current() noexcept { return g_session.load(std::memory_order_acquire); }

void Session::start(const CaptureConfig& config) noexcept {
  if (!config.enabled) return;
  try {
    if (!configure_ranges(config)) return;
    if (!configure_launch_filter(config)) return;
    CaptureConfig effective = config;
    // A kernel-filtered capture selects its launches with the snapshots' selection.
    if (config.kernel_filtered()) effective.snapshot_kernels = config.kernel_name;
    if (!configure_snapshots(effective) && config.kernel_filtered()) {
      log(LogLevel::kError, "the kernel filter could not be configured; nothing is recorded");
      return;
    }
    if (g_ranges_configured) configure_range_snapshots(effective);
    g_session.store(new Session(effective));
    g_recording.store(true);
    ::pthread_atfork(nullptr, nullptr, on_fork_child);
  } catch (...) {
    log(LogLevel::kError, "cannot start the capture session: out of memory");
  }
}

bool capture_active() noexcept { return g_recording.load(std::memory_order_relaxed); }

void stop_recording() noexcept {
  g_recording.store(false);
  g_slow.store(false);
}

bool Session::open_locked() {
  if (writer_.load() != nullptr) return true;
  if (failed_open_.load() || closed_.load()) return false;
  long pid = static_cast<long>(::getpid());
  std::string name = g_ranges_configured
                         ? range_output_name(config_, range_settings(), pid, range_number_)
                         : process_output_name(config_, pid);
  int fd = create_output(name, config_.force_overwrite, file_name_);
  if (fd < 0) {
    log(LogLevel::kError, "cannot create capture file %s: %s; recording disabled", name.c_str(),
        std::strerror(errno));
    failed_open_.store(true);
    return false;
  }
  capnp::MallocMessageBuilder header_message;
  auto header = header_message.initRoot<schema::CaptureHeader>();
  format::fill_process_info(header, format::default_env_prefixes());
  const RealDriver& driver = load_real_driver();
  header.setDriverPath(driver.path);
  if (device_header_ != nullptr) {
    // Capture ranges: what the driver said when cuInit returned (a range's file may open at
    // exit, when the driver may already be going away).
    auto known = device_header_->getRoot<schema::CaptureHeader>().asReader();
    header.setDriverVersion(known.getDriverVersion());
    header.setDevices(known.getDevices());
  } else {
    int version = 0;
    if (auto f = CUSNAP_REAL(cuDriverGetVersion); f && f(&version) == CUDA_SUCCESS)
      header.setDriverVersion(version);
    fill_devices(header);
  }
  auto options = header.initOptions();
  if (g_ranges_configured) {
    const capture::RangeSettings& ranges = range_settings();
    auto range = header.initRange();
    using Trigger = capture::RangeSettings::Trigger;
    range.setTrigger(ranges.trigger == Trigger::kNvtx ? schema::RangeInfo::Trigger::NVTX
                     : ranges.trigger == Trigger::kSignal
                         ? schema::RangeInfo::Trigger::SIGNAL
                         : schema::RangeInfo::Trigger::CUDA_PROFILER_API);
    range.setNumber(range_number_);
    range.setEndMode(config_.capture_range_end.empty() ? "stop" : config_.capture_range_end);
    if (ranges.trigger == Trigger::kNvtx) range.setNvtxCapture(config_.nvtx_capture);
    // The range's start snapshot is tiled in chunks of this size.
    options.setSnapshotChunkBytes(config_.snapshot_chunk_bytes);
  }
  if (launch_snapshots_enabled()) {
    options.setMode(schema::CaptureOptions::CaptureMode::SNAPSHOT);
    options.setKernelRegex(config_.snapshot_kernels);
    options.setLaunchSkip(config_.launch_skip);
    options.setLaunchCount(config_.launch_count);
    options.setSnapshotChunkBytes(config_.snapshot_chunk_bytes);
    options.setKernelFiltered(g_kernel_filtered);
  } else {
    options.setMode(schema::CaptureOptions::CaptureMode::STREAM);
  }
  options.setCompressionLevel(config_.compress_level);
  options.setRecordDeviceToHostChecksums(config_.dtoh_checksums);
  auto extra = options.initExtra(launch_snapshots_enabled() ? 4 : 2);
  extra[0].setKey("queuePolicy");
  extra[0].setValue(config_.drop_when_full ? "drop" : "block");
  extra[1].setKey("maxQueuedBytes");
  extra[1].setValue(std::to_string(config_.max_queued_bytes));
  if (launch_snapshots_enabled()) {
    extra[2].setKey("snapshotKernelNameBase");
    extra[2].setValue(config_.snapshot_kernel_base);
    extra[3].setKey("snapshotOutputs");
    extra[3].setValue(config_.snapshot_outputs ? "1" : "0");
  }

  format::WriterOptions writer_options;
  writer_options.compression_level = config_.compress_level;
  writer_options.compression_threads = config_.compress_threads;
  writer_options.max_queued_bytes = config_.max_queued_bytes;
  // The application thread must not wait for compression: a payload is copied into the bounded
  // queue and the call returns (the queue policy decides what happens when it is full).
  writer_options.zero_copy_min_bytes = SIZE_MAX;
  // A note left by an earlier capture of this name is not about this one.
  (void)::unlink(format::incomplete_note_path(file_name_).c_str());
  auto created = [&] {
    SignalShield shield(SignalShield::kEverySignal);  // also the mask the writer's threads inherit
    return format::Writer::create_fd(fd, file_name_, header_message, writer_options);
  }();
  if (!created) {
    log(LogLevel::kError, "cannot start writing %s: %s; recording disabled", file_name_.c_str(),
        created.status().to_string().c_str());
    note_incomplete("starting the capture failed: " + created.status().to_string());
    failed_open_.store(true);
    return false;
  }
  format::Writer* writer = std::move(created).value().release();
  for (auto& record : pending_) (void)writer->append_call(*record);
  pending_.clear();
  writer_.store(writer, std::memory_order_release);
  install_signal_handlers();
  log(LogLevel::kInfo, "capturing to %s", file_name_.c_str());
  return true;
}

format::Writer* Session::ensure_open() noexcept {
  if (format::Writer* writer = writer_.load(std::memory_order_acquire)) return writer;
  if (g_ranges_configured) return nullptr;  // a range's file opens when the range starts
  try {
    std::lock_guard lock(mutex_);
    if (!open_locked()) {
      stop_recording();
      return nullptr;
    }
  } catch (const std::exception& e) {
    log(LogLevel::kError, "cannot open the capture: %s; recording disabled", e.what());
    failed_open_.store(true);
    stop_recording();
    return nullptr;
  }
  return writer_.load();
}

uint64_t Session::append(capnp::MessageBuilder& record) noexcept {
  try {
    return append(record, record.getRoot<schema::CallRecord>());
  } catch (const std::exception& e) {
    disable(std::string("recording failed: ") + e.what());
    return UINT64_MAX;
  }
}

// The writer, or nullptr when the file is not open: then `keep_pending` stores a copy of the
// record (before cuInit, a handful of records; bounded anyway) unless nothing will be written.
template <class KeepPending>
format::Writer* Session::writer_or_pending(KeepPending&& keep_pending) {
  format::Writer* writer = writer_.load(std::memory_order_acquire);
  if (writer != nullptr) return writer;
  if (g_ranges_configured) return nullptr;  // between ranges: nothing waits for a file
  std::lock_guard lock(mutex_);
  writer = writer_.load();
  if (writer != nullptr) return writer;
  if (closed_.load() || failed_open_.load() || pending_.size() >= kMaxPendingRecords)
    return nullptr;
  auto copy = std::make_unique<capnp::MallocMessageBuilder>();
  keep_pending(*copy);
  pending_.push_back(std::move(copy));
  return nullptr;
}

uint64_t Session::appended(const format::Result<uint64_t>& seq) noexcept {
  if (seq) return seq.value();
  if (seq.status().code() != format::ErrorCode::kClosed) {
    disable("writing a call record failed: " + seq.status().to_string());
  }
  return UINT64_MAX;
}

uint64_t Session::append(capnp::MessageBuilder& record, schema::CallRecord::Builder root) noexcept {
  try {
    if (g_ranges_configured) {
      // Every state record, in a range or not, keeps the log true for the next range's start.
      range_note_record(root.asReader());
      if (!g_in_range.load(std::memory_order_acquire)) return UINT64_MAX;
    }
    format::Writer* writer = writer_or_pending(
        [&](capnp::MallocMessageBuilder& copy) { copy.setRoot(root.asReader()); });
    return writer != nullptr ? appended(writer->append_call(record, root)) : UINT64_MAX;
  } catch (const std::exception& e) {
    disable(std::string("recording failed: ") + e.what());
    return UINT64_MAX;
  }
}

uint64_t Session::append_launch(const format::LaunchFields& fields) noexcept {
  if (g_ranges_configured && !g_in_range.load(std::memory_order_acquire)) return UINT64_MAX;
  try {
    format::Writer* writer = writer_or_pending([&](capnp::MallocMessageBuilder& copy) {
      format::build_launch_record(fields, copy.initRoot<schema::CallRecord>());
    });
    return writer != nullptr ? appended(writer->append_launch(fields)) : UINT64_MAX;
  } catch (const std::exception& e) {
    disable(std::string("recording failed: ") + e.what());
    return UINT64_MAX;
  }
}

format::BlobId Session::put_image(std::span<const uint8_t> bytes) noexcept {
  if (!g_ranges_configured) return put_blob(bytes);
  format::BlobId id = format::hash_blob(bytes);
  range_keep_image(bytes, id);
  if (g_in_range.load(std::memory_order_acquire)) return put_blob(bytes);
  return id;
}

format::BlobId Session::put_blob(std::span<const uint8_t> bytes) noexcept {
  if (g_ranges_configured && !g_in_range.load(std::memory_order_acquire)) return {};
  format::Writer* writer = ensure_open();
  if (writer == nullptr) return {};
  auto id = config_.drop_when_full ? writer->try_put_blob(bytes) : writer->put_blob(bytes);
  if (id) return id.value();
  if (id.status().code() == format::ErrorCode::kWouldBlock) {
    uint64_t dropped = ++dropped_payloads_;
    if ((dropped & (dropped - 1)) == 0) {  // 1, 2, 4, 8...: bounded event volume
      tool_event(5 /* recordsDropped */, std::to_string(dropped) +
                                             " payload(s) not stored so far: the disk could not "
                                             "keep up (CUSNAP_QUEUE_POLICY=drop)");
    }
    return {};
  }
  if (id.status().code() != format::ErrorCode::kClosed) {
    disable("storing a blob failed: " + id.status().to_string());
  }
  return {};
}

template <class Fill>
void Session::append_tool_record(Fill&& fill) noexcept {
  try {
    capnp::MallocMessageBuilder message_builder;
    auto record = message_builder.initRoot<schema::CallRecord>();
    record.setThreadId(current_thread_id());
    record.setStartNs(monotonic_ns());
    record.setEndNs(record.getStartNs());
    record.setApiName("cusnap");
    fill(record);
    if (g_ranges_configured) {
      (void)append(message_builder);  // through the state log (a tool's globalGet is state)
    } else if (format::Writer* writer = writer_.load()) {
      (void)writer->append_call(message_builder);
    } else {
      (void)append(message_builder);
    }
  } catch (...) {
  }
}

void Session::tool_event(uint16_t kind, const std::string& message, uint64_t related_seq) noexcept {
  append_tool_record([&](schema::CallRecord::Builder record) {
    auto event = record.initToolEvent();
    event.setKind(static_cast<schema::ToolEvent::Kind>(kind));
    event.setMessage(message);
    if (related_seq != UINT64_MAX) {
      event.setRelatedSeq(related_seq);
      event.setHasRelatedSeq(true);
    }
  });
}

void Session::deferred_result(const DeferredResult& result) noexcept {
  append_tool_record([&](schema::CallRecord::Builder record) {
    auto deferred = record.initDeferredResult();
    deferred.setCallSeq(result.call_seq);
    if (result.has_host_checksum) {
      deferred.setHostChecksum(result.host_checksum);
      deferred.setHasHostChecksum(true);
    }
    if (!result.payload.is_null()) {
      auto id = deferred.initPayload();
      id.setHigh(result.payload.high);
      id.setLow(result.payload.low);
    }
    if (!result.missing.empty()) deferred.setMissing(result.missing);
    deferred.setGraphNode(result.graph_node);
  });
}

// A memorySnapshot record's chunk list, from the chunks the snapshot machinery took.
static void set_chunks(schema::MemorySnapshot::Builder snapshot,
                       const std::vector<SnapshotChunk>& chunks) {
  auto list = snapshot.initChunks(static_cast<unsigned>(chunks.size()));
  for (unsigned i = 0; i < list.size(); ++i) {
    list[i].setAddress(chunks[i].address);
    list[i].setSize(chunks[i].size);
    auto id = list[i].initBlob();
    id.setHigh(chunks[i].blob.high);
    id.setLow(chunks[i].blob.low);
    list[i].setHashOnly(chunks[i].hash_only);
  }
}

void Session::memory_snapshot(bool after_launch, uint64_t launch_seq, uint64_t launch_ordinal,
                              const std::vector<SnapshotChunk>& chunks,
                              const std::string& skipped) noexcept {
  append_tool_record([&](schema::CallRecord::Builder record) {
    auto snapshot = record.initMemorySnapshot();
    snapshot.setPhase(after_launch ? schema::MemorySnapshot::Phase::AFTER_LAUNCH
                                   : schema::MemorySnapshot::Phase::BEFORE_LAUNCH);
    snapshot.setLaunchSeq(launch_seq);
    snapshot.setLaunchOrdinal(launch_ordinal);
    if (!skipped.empty()) snapshot.setSkippedReason(skipped);
    set_chunks(snapshot, chunks);
  });
}

void Session::range_snapshot(const std::vector<SnapshotChunk>& chunks,
                             const std::string& skipped) noexcept {
  append_tool_record([&](schema::CallRecord::Builder record) {
    auto snapshot = record.initMemorySnapshot();
    snapshot.setPhase(schema::MemorySnapshot::Phase::RANGE_START);
    if (!skipped.empty()) snapshot.setSkippedReason(skipped);
    set_chunks(snapshot, chunks);
  });
}

format::Writer* Session::open_range(uint32_t number) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (writer_.load() != nullptr || closed_.load()) return nullptr;
    range_number_ = number;
    failed_open_.store(false);
    noted_incomplete_.store(false);
    if (!open_locked()) return nullptr;
    return writer_.load();
  } catch (...) {
    return nullptr;
  }
}

void Session::close_range() noexcept {
  format::Writer* writer = writer_.exchange(nullptr);
  if (writer == nullptr) return;
  // Never deleted: another thread may still hold it (its appends then fail as closed).
  SignalShield shield(SignalShield::kFileSizeSignal);
  format::Status status = writer->close();
  if (!status) {
    log(LogLevel::kError, "closing %s failed: %s; the capture is incomplete", file_name_.c_str(),
        status.to_string().c_str());
    note_incomplete("closing the capture failed: " + status.to_string());
  }
}

void Session::tool_global_get(uint64_t module, bool is_library, const std::string& name,
                              uint64_t address, uint64_t size) noexcept {
  append_tool_record([&](schema::CallRecord::Builder record) {
    auto global = record.initGlobalGet();
    global.setModule(module);
    global.setIsLibrary(is_library);
    global.setName(name);
    global.setAddress(address);
    global.setSize(size);
    global.setByTool(true);
  });
}

void Session::on_driver_initialized() noexcept {
  if (g_ranges_configured) {
    try {
      std::lock_guard lock(mutex_);
      if (device_header_ != nullptr) return;
      auto message = std::make_unique<capnp::MallocMessageBuilder>();
      auto header = message->initRoot<schema::CaptureHeader>();
      int version = 0;
      if (auto f = CUSNAP_REAL(cuDriverGetVersion); f && f(&version) == CUDA_SUCCESS)
        header.setDriverVersion(version);
      fill_devices(header);
      device_header_ = std::move(message);
    } catch (...) {
    }
    return;
  }
  (void)ensure_open();
}

void Session::note_incomplete(const std::string& why) noexcept {
  if (file_name_.empty() || noted_incomplete_.exchange(true)) return;
  SignalShield shield(SignalShield::kFileSizeSignal);
  std::string note = format::incomplete_note_path(file_name_);
  int fd = ::open(note.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, format::kCaptureFileMode);
  if (fd < 0) return;  // best effort: a full disk may refuse this too (the log still says why)
  std::string line = why + "\n";
  ssize_t ignored = ::write(fd, line.data(), line.size());
  (void)ignored;
  ::close(fd);
}

void Session::disable(const std::string& why) noexcept {
  static std::atomic<bool> once{false};
  stop_recording();
  if (writer_.load() != nullptr) note_incomplete(why);
  if (once.exchange(true)) return;
  log(LogLevel::kError, "capture disabled: %s (the application continues)", why.c_str());
  tool_event(3 /* captureDisabled */, why);
  close();
}

void Session::flush() noexcept {
  SignalShield shield(SignalShield::kFileSizeSignal);
  if (format::Writer* writer = writer_.load()) (void)writer->flush();
}

void Session::close() noexcept {
  if (g_ranges_configured && !closed_.load()) ranges_at_exit();
  if (g_kernel_filtered && !closed_.load()) launch_filter_at_close();
  if (closed_.exchange(true)) return;
  try {
    {
      std::lock_guard lock(mutex_);
      if (writer_.load() == nullptr && !pending_.empty()) {
        closed_.store(false);
        open_locked();
        closed_.store(true);
      }
    }
    if (format::Writer* writer = writer_.load()) {
      SignalShield shield(SignalShield::kFileSizeSignal);
      format::Status status = writer->close();
      if (!status) {
        log(LogLevel::kError, "closing %s failed: %s; the capture is incomplete (%s)",
            file_name_.c_str(), status.to_string().c_str(),
            format::incomplete_note_path(file_name_).c_str());
        note_incomplete("closing the capture failed: " + status.to_string());
      }
    }
  } catch (...) {
  }
  stop_recording();
}

}  // namespace cusnap::icpt
