// Contexts: the primary context and created ones, the per-thread current-context stack, the
// streams a context owns and its error state.
//
// Launch failures that poison a GPU context (illegal address, assert, trap, ...) are recorded
// as the context's sticky error: from then on every call that needs the context returns it, as
// the real driver does. Other asynchronous failures are reported once, at the next
// synchronisation point.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "driver/device_heap.h"
#include "driver/stream.h"
#include "generated_driver_api.h"

namespace cusnap::emu::driver {

class Context {
 public:
  Context(unsigned flags, bool primary);
  ~Context();  // synchronises and destroys every stream the context owns
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  CUcontext handle() { return reinterpret_cast<CUcontext>(this); }
  bool primary() const { return primary_; }
  unsigned long long id() const { return id_; }
  unsigned flags() const { return flags_.load(); }
  void set_flags(unsigned flags) { flags_.store(flags); }

  Stream* legacy_stream() { return legacy_.get(); }
  Stream* per_thread_stream();  // the calling thread's default stream in this context
  Stream* create_stream(unsigned flags, int priority);
  bool destroy_stream(Stream* stream);

  // Queues work on `stream` with the default-stream rules: work on the legacy stream waits for
  // all blocking streams, work on a blocking stream waits for the legacy stream.
  uint64_t submit(Stream* stream, Stream::Work work, std::vector<Dependency> extra = {});
  // Queues work and waits for it (synchronous API calls). Returns the context's error state.
  CUresult submit_and_wait(Stream* stream, Stream::Work work);
  // Waits for every stream; returns the sticky error or a pending asynchronous error.
  CUresult synchronize();
  // cuCtxRecordEvent: a point that completes once all work queued so far on any stream of the
  // context has (a marker on a private stream that depends on every stream's tail).
  Dependency record_all(std::vector<Dependency> extra = {});
  // cuCtxWaitEvent: all work submitted from now on, on any stream, waits for `point` first.
  void wait_for_all(Dependency point);

  CUresult sticky_error() const { return sticky_error_.load(); }
  void set_sticky_error(CUresult error);
  void set_async_error(CUresult error);
  CUresult take_async_error();  // the pending non-sticky error, cleared
  void reset_errors();

  // Per-context limits (cuCtxGetLimit / cuCtxSetLimit).
  size_t limit(CUlimit which) const;
  bool set_limit(CUlimit which, size_t value);
  // Device-side malloc/free (device_heap.h): made with the context, its memory at the first
  // malloc; CU_LIMIT_MALLOC_HEAP_SIZE cannot change after that.
  DeviceHeap* device_heap() { return heap_.get(); }
  CUfunc_cache cache_config = CU_FUNC_CACHE_PREFER_NONE;
  // The deprecated usage count of cuCtxAttach/cuCtxDetach: 1 for a created context (its
  // creation), 0 for the primary context, whose lifetime retain/release governs instead.
  std::atomic<unsigned> usage_count{0};
  CUsharedconfig shared_config = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;

 private:
  bool primary_;
  unsigned long long id_;
  std::atomic<unsigned> flags_;
  std::atomic<CUresult> sticky_error_{CUDA_SUCCESS};
  std::atomic<CUresult> async_error_{CUDA_SUCCESS};
  mutable std::mutex mutex_;  // streams_, limits_; held while collecting dependencies + enqueueing
  std::unique_ptr<Stream> legacy_;
  std::vector<std::unique_ptr<Stream>> streams_;  // user and per-thread streams
  size_t limits_[16] = {};
  std::vector<Dependency> context_waits_;  // cuCtxWaitEvent points, added to every submission
  std::unique_ptr<Stream> marker_;         // cuCtxRecordEvent's markers (made on first use)
  std::unique_ptr<DeviceHeap> heap_;
};

// The calling thread's current context (top of its stack) if it is alive, else null.
Context* current_context();
// The top of the calling thread's stack as it is, possibly a context destroyed meanwhile (by
// another thread): only to be compared or handed back, never dereferenced.
Context* current_context_handle();
// Validates initialisation and the current context and returns the context's sticky error, so
// that entry points can start with `Context* ctx; if (auto r = require_context(&ctx)) return r;`.
CUresult require_context(Context** out);
// Like require_context but ignores the sticky error (destroy, query and free paths).
CUresult require_context_any(Context** out);

void push_context(Context* context);
Context* pop_context();
void set_current_context(Context* context);  // replaces the top; null pops

Context* primary_context(bool create);
// Green contexts (green_context.cpp): the contexts of the live ones (the primary context's record,
// wait and synchronisation include them), and the green context a context was converted from.
std::vector<Context*> green_contexts_of_primary();
CUgreenCtx green_context_handle(const Context* context);
Context* context_from_handle(CUcontext handle);

// Resolves a stream argument: NULL is the legacy stream (or the per-thread one for _ptsz/_ptds
// entry points), CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are honoured, anything else must be a
// stream handle. Returns null for an invalid handle.
Stream* resolve_stream(Context* context, CUstream handle, bool per_thread_default);

// The stream and its context for an entry point's stream argument: a stream handle brings its
// own context, the special handles use the current one. Returns the error to report (including
// the context's sticky error), CUDA_ERROR_INVALID_HANDLE for a bad or destroyed handle. Both
// outputs are always written: null unless the stream was resolved, and set (with the sticky
// error returned) when the stream is valid but its context is poisoned, so that paths which
// ignore the sticky error (synchronize, queries) may still use them.
CUresult stream_argument(CUstream handle, bool per_thread_default, Context** context,
                         Stream** stream);

// Per-thread-default-stream flag of an entry point, for the PTSZ macro pattern.
inline constexpr bool kLegacyDefault = false;
inline constexpr bool kPerThreadDefault = true;

}  // namespace cusnap::emu::driver
