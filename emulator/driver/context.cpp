#include "driver/context.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "driver/mempool.h"
#include "driver/state.h"

namespace cusnap::emu::driver {
namespace {

std::atomic<unsigned long long> g_next_context_id{1};
thread_local std::vector<Context*> t_context_stack;
// Per-thread default streams, keyed by context id (ids are never reused, pointers may be).
thread_local std::unordered_map<unsigned long long, Stream*> t_per_thread_streams;

bool is_sticky(CUresult error) {
  switch (error) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      return true;
    default:
      return false;
  }
}

}  // namespace

Context::Context(unsigned flags, bool primary)
    : primary_(primary), id_(g_next_context_id++), flags_(flags) {
  legacy_ = std::make_unique<Stream>(this, StreamKind::kLegacy, 0, 0);
  heap_ = std::make_unique<DeviceHeap>(this);
  limits_[CU_LIMIT_STACK_SIZE] = 1024;
  limits_[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
  limits_[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
  limits_[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
  limits_[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
  limits_[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64;
  limits_[CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0;
  register_handle(this, HandleKind::kContext);
}

Context::~Context() {
  synchronize();
  std::vector<std::unique_ptr<Stream>> streams;
  {
    std::lock_guard lock(mutex_);
    streams.swap(streams_);
  }
  for (auto& s : streams) {
    // User streams are handles: they die with the context and their handles stay "destroyed".
    if (s->kind() == StreamKind::kUser) destroy_handle(s.release(), HandleKind::kStream);
  }
  streams.clear();
  marker_.reset();
  legacy_.reset();
  heap_.reset();  // after every stream: no kernel uses it any more
}

Stream* Context::per_thread_stream() {
  auto it = t_per_thread_streams.find(id_);
  if (it != t_per_thread_streams.end()) return it->second;
  auto stream = std::make_unique<Stream>(this, StreamKind::kPerThread, 0, 0);
  Stream* raw = stream.get();
  {
    std::lock_guard lock(mutex_);
    streams_.push_back(std::move(stream));
  }
  t_per_thread_streams[id_] = raw;
  return raw;
}

Stream* Context::create_stream(unsigned flags, int priority) {
  auto stream = std::make_unique<Stream>(this, StreamKind::kUser, flags, priority);
  Stream* raw = stream.get();
  {
    std::lock_guard lock(mutex_);
    streams_.push_back(std::move(stream));
  }
  register_handle(raw, HandleKind::kStream);
  return raw;
}

bool Context::destroy_stream(Stream* stream) {
  std::unique_ptr<Stream> owned;
  {
    std::lock_guard lock(mutex_);
    auto it =
        std::find_if(streams_.begin(), streams_.end(), [&](auto& s) { return s.get() == stream; });
    if (it == streams_.end() || stream->kind() != StreamKind::kUser) return false;
    owned = std::move(*it);
    streams_.erase(it);
  }
  destroy_handle(owned.release(), HandleKind::kStream);  // runs the queued work, joins the worker
  return true;
}

uint64_t Context::submit(Stream* stream, Stream::Work work, std::vector<Dependency> extra) {
  std::lock_guard lock(mutex_);
  extra.insert(extra.end(), context_waits_.begin(), context_waits_.end());
  if (stream->kind() == StreamKind::kLegacy) {
    for (auto& s : streams_) {
      if (s->blocking()) extra.push_back(s->tail());
    }
  } else if (stream->blocking()) {
    extra.push_back(legacy_->tail());
  }
  return stream->enqueue(std::move(work), std::move(extra));
}

CUresult Context::submit_and_wait(Stream* stream, Stream::Work work) {
  uint64_t seq = submit(stream, std::move(work));
  stream->wait_for(seq);
  if (CUresult sticky = sticky_error(); sticky != CUDA_SUCCESS) return sticky;
  return CUDA_SUCCESS;
}

Dependency Context::record_all(std::vector<Dependency> extra) {
  std::lock_guard lock(mutex_);
  if (!marker_)
    marker_ = std::make_unique<Stream>(this, StreamKind::kUser, CU_STREAM_NON_BLOCKING, 0);
  std::vector<Dependency> deps = std::move(extra);
  deps.insert(deps.end(), context_waits_.begin(), context_waits_.end());
  deps.push_back(legacy_->tail());
  for (auto& s : streams_) deps.push_back(s->tail());
  const uint64_t seq = marker_->enqueue([] { return uint64_t{0}; }, std::move(deps));
  return Dependency{marker_->tail().timeline, seq};
}

void Context::wait_for_all(Dependency point) {
  std::lock_guard lock(mutex_);
  // Points already reached order nothing any more.
  std::erase_if(context_waits_,
                [](const Dependency& d) { return !d.timeline || d.timeline->reached(d.seq); });
  context_waits_.push_back(std::move(point));
}

CUresult Context::synchronize() {
  std::vector<Dependency> tails;
  {
    std::lock_guard lock(mutex_);
    if (legacy_) tails.push_back(legacy_->tail());
    for (auto& s : streams_) tails.push_back(s->tail());
    // cuCtxRecordEvent's records are work of the context too: the synchronisation waits for
    // them, or an event recorded on the context may still be pending after it returns.
    if (marker_) tails.push_back(marker_->tail());
  }
  for (auto& t : tails) t.timeline->wait_for(t.seq);
  std::fflush(stdout);         // device printf output
  trim_pools_to_thresholds();  // a synchronisation point releases pool memory (mempool.h)
  if (CUresult sticky = sticky_error(); sticky != CUDA_SUCCESS) return sticky;
  return take_async_error();
}

void Context::set_sticky_error(CUresult error) {
  if (!is_sticky(error)) {
    set_async_error(error);
    return;
  }
  CUresult expected = CUDA_SUCCESS;
  sticky_error_.compare_exchange_strong(expected, error);
}

void Context::set_async_error(CUresult error) {
  CUresult expected = CUDA_SUCCESS;
  async_error_.compare_exchange_strong(expected, error);
}

CUresult Context::take_async_error() { return async_error_.exchange(CUDA_SUCCESS); }

void Context::reset_errors() {
  sticky_error_.store(CUDA_SUCCESS);
  async_error_.store(CUDA_SUCCESS);
}

size_t Context::limit(CUlimit which) const {
  std::lock_guard lock(mutex_);
  return limits_[which];
}

bool Context::set_limit(CUlimit which, size_t value) {
  if (static_cast<unsigned>(which) > CU_LIMIT_PERSISTING_L2_CACHE_SIZE) return false;
  std::lock_guard lock(mutex_);
  limits_[which] = value;
  return true;
}

Context* current_context_handle() {
  return t_context_stack.empty() ? nullptr : t_context_stack.back();
}

Context* current_context() {
  Context* top = current_context_handle();
  return is_handle(top, HandleKind::kContext) ? top : nullptr;
}

CUresult require_context_any(Context** out) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Context* ctx = current_context_handle();
  switch (handle_state(ctx, HandleKind::kContext)) {
    case HandleState::kLive:
      *out = ctx;
      return CUDA_SUCCESS;
    case HandleState::kDestroyed:
      // Destroyed by cuCtxDestroy while current to this thread too (another thread's call).
      return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    case HandleState::kUnknown:
      break;
  }
  return CUDA_ERROR_INVALID_CONTEXT;
}

CUresult require_context(Context** out) {
  if (CUresult r = require_context_any(out); r != CUDA_SUCCESS) return r;
  return (*out)->sticky_error();
}

void push_context(Context* context) { t_context_stack.push_back(context); }

Context* pop_context() {
  if (t_context_stack.empty()) return nullptr;
  Context* top = t_context_stack.back();
  t_context_stack.pop_back();
  return top;
}

void set_current_context(Context* context) {
  if (context == nullptr) {
    if (!t_context_stack.empty()) t_context_stack.pop_back();
  } else if (t_context_stack.empty()) {
    t_context_stack.push_back(context);
  } else {
    t_context_stack.back() = context;
  }
}

Context* primary_context(bool create) {
  static std::mutex mutex;
  static Context* primary = nullptr;  // lives for the whole process
  std::lock_guard lock(mutex);
  if (primary == nullptr && create) primary = new Context(0, true);
  return primary;
}

Context* context_from_handle(CUcontext handle) {
  return handle_cast<Context>(handle, HandleKind::kContext);
}

Stream* resolve_stream(Context* context, CUstream handle, bool per_thread_default) {
  if (handle == nullptr)
    return per_thread_default ? context->per_thread_stream() : context->legacy_stream();
  if (handle == CU_STREAM_LEGACY) return context->legacy_stream();
  if (handle == CU_STREAM_PER_THREAD) return context->per_thread_stream();
  return handle_cast<Stream>(handle, HandleKind::kStream);
}

}  // namespace cusnap::emu::driver

namespace cusnap::emu::driver {

CUresult stream_argument(CUstream handle, bool per_thread_default, Context** context,
                         Stream** stream) {
  *context = nullptr;
  *stream = nullptr;
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (handle != nullptr && handle != CU_STREAM_LEGACY && handle != CU_STREAM_PER_THREAD) {
    Stream* s = handle_cast<Stream>(handle, HandleKind::kStream);
    if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    *context = s->context();
    *stream = s;
    return s->context()->sticky_error();
  }
  if (CUresult r = require_context_any(context); r != CUDA_SUCCESS) {
    *context = nullptr;
    return r;
  }
  *stream = resolve_stream(*context, handle, per_thread_default);
  return (*context)->sticky_error();
}

}  // namespace cusnap::emu::driver
