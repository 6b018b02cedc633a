// Stream, event and host-function entry points. Both the legacy (`cuX`) and the per-thread
// default stream (`cuX_ptsz`) exports share one implementation.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/device.h"
#include "driver/graph.h"
#include "driver/mempool.h"
#include "driver/state.h"

using namespace cusnap::emu::driver;

namespace {

// The range cuCtxGetStreamPriorityRange reports; out-of-range priorities are clamped to it.
int clamp_priority(int priority) { return std::clamp(priority, -5, 0); }

CUresult stream_create(CUstream* phStream, unsigned flags, int priority) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (phStream == nullptr || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  priority = clamp_priority(priority);
  *phStream = reinterpret_cast<CUstream>(ctx->create_stream(flags, priority));
  return CUDA_SUCCESS;
}

CUresult stream_synchronize(CUstream h, bool per_thread) {
  Context* ctx;
  Stream* s;
  CUresult r = stream_argument(h, per_thread, &ctx, &s);
  // A poisoned context still has streams to wait for (then its sticky error is returned); a
  // bad handle or context has none.
  if (s == nullptr) return r;
  if (CUresult c = capture_check_stream_sync(s); c != CUDA_SUCCESS) return c;
  if (CUresult c = capture_check_unsafe_call("cuStreamSynchronize"); c != CUDA_SUCCESS) return c;
  if (s->kind() == StreamKind::kLegacy) {
    // The legacy stream's last operation waits for every blocking stream: queue a marker.
    ctx->submit_and_wait(s, [] { return uint64_t{0}; });
  } else {
    s->synchronize();
  }
  std::fflush(stdout);
  trim_pools_to_thresholds();
  if (CUresult sticky = ctx->sticky_error(); sticky != CUDA_SUCCESS) return sticky;
  return ctx->take_async_error();
}

CUresult stream_query(CUstream h, bool per_thread) {
  Context* ctx;
  Stream* s;
  if (CUresult r = stream_argument(h, per_thread, &ctx, &s); r != CUDA_SUCCESS) return r;
  if (CUresult c = capture_check_stream_sync(s); c != CUDA_SUCCESS) return c;
  if (CUresult c = capture_check_unsafe_call("cuStreamQuery"); c != CUDA_SUCCESS) return c;
  return s->idle() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult stream_wait_event(CUstream h, CUevent hEvent, unsigned flags, bool per_thread) {
  Context* ctx;
  Stream* s;
  if (CUresult r = stream_argument(h, per_thread, &ctx, &s); r != CUDA_SUCCESS) return r;
  auto* event = handle_cast<Event>(hEvent, HandleKind::kEvent);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != CU_EVENT_WAIT_DEFAULT && flags != CU_EVENT_WAIT_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  bool handled = false;
  if (CUresult r = capture_wait_event(s, event, flags, &handled); r != CUDA_SUCCESS || handled)
    return r;
  Dependency point;
  {
    std::lock_guard lock(event->mutex);
    if (!event->recorded) return CUDA_SUCCESS;  // waiting on a never-recorded event is a no-op
    point = event->point;
  }
  ctx->submit(s, [] { return uint64_t{0}; }, {point});
  return CUDA_SUCCESS;
}

template <class Getter>
CUresult stream_get(CUstream h, bool per_thread, Getter&& get) {
  Context* ctx;
  Stream* s;
  CUresult r = stream_argument(h, per_thread, &ctx, &s);
  if (s == nullptr) return r;  // queries answer from a poisoned context too
  return get(ctx, s);
}

CUresult stream_get_attribute(CUstream h, CUstreamAttrID attr, CUstreamAttrValue* out,
                              bool per_thread) {
  Context* ctx;
  Stream* s;
  CUresult r = stream_argument(h, per_thread, &ctx, &s);
  if (s == nullptr) return r;  // queries answer from a poisoned context too
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const StreamHints hints = s->hints();
  CUstreamAttrValue value;
  std::memset(&value, 0, sizeof value);
  switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      value.accessPolicyWindow = hints.access_policy_window;
      break;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      value.syncPolicy = hints.sync_policy;
      break;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      value.priority = s->priority();
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      value.memSyncDomain = hints.mem_sync_domain;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      value.memSyncDomainMap = hints.mem_sync_domain_map;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // a launch attribute that is not a stream attribute
  }
  *out = value;
  return CUDA_SUCCESS;
}

CUresult stream_set_attribute(CUstream h, CUstreamAttrID attr, const CUstreamAttrValue* value,
                              bool per_thread) {
  Context* ctx;
  Stream* s;
  if (CUresult r = stream_argument(h, per_thread, &ctx, &s); r != CUDA_SUCCESS) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  StreamHints hints = s->hints();
  switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
      const CUaccessPolicyWindow& w = value->accessPolicyWindow;
      int max_window = 0;
      device_attribute(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, &max_window);
      // The documented ranges: hitRatio in [0, 1], a miss is normal or streaming.
      if (!(w.hitRatio >= 0.0f && w.hitRatio <= 1.0f) || w.num_bytes > size_t(max_window) ||
          w.hitProp < CU_ACCESS_PROPERTY_NORMAL || w.hitProp > CU_ACCESS_PROPERTY_PERSISTING ||
          (w.missProp != CU_ACCESS_PROPERTY_NORMAL && w.missProp != CU_ACCESS_PROPERTY_STREAMING)) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      hints.access_policy_window = w;
      break;
    }
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      if (value->syncPolicy < CU_SYNC_POLICY_AUTO ||
          value->syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      hints.sync_policy = value->syncPolicy;
      break;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      s->set_priority(clamp_priority(value->priority));
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      if (value->memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT &&
          value->memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      hints.mem_sync_domain = value->memSyncDomain;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: {
      int domains = 0;
      device_attribute(CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, &domains);
      if (value->memSyncDomainMap.default_ >= domains || value->memSyncDomainMap.remote >= domains)
        return CUDA_ERROR_INVALID_VALUE;
      hints.mem_sync_domain_map = value->memSyncDomainMap;
      break;
    }
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  s->set_hints(hints);
  return CUDA_SUCCESS;
}

CUresult stream_copy_attributes(CUstream dst, CUstream src, bool per_thread) {
  Context* dst_ctx;
  Stream* to;
  if (CUresult r = stream_argument(dst, per_thread, &dst_ctx, &to); r != CUDA_SUCCESS) return r;
  Context* src_ctx;
  Stream* from;
  if (CUresult r = stream_argument(src, per_thread, &src_ctx, &from); r != CUDA_SUCCESS) return r;
  if (dst_ctx != src_ctx) return CUDA_ERROR_INVALID_VALUE;  // "must have the same context"
  to->set_hints(from->hints());
  to->set_priority(from->priority());
  return CUDA_SUCCESS;
}

// cuStreamGetCtx_v2: a stream of a green context answers the primary context and the green
// context ("the green context in pGreenCtx and the primary context ... in pCtx").
void stream_contexts(const Stream* s, CUcontext* pctx, CUgreenCtx* pGreenCtx) {
  *pGreenCtx = green_context_handle(s->context());
  Context* primary = *pGreenCtx != nullptr ? primary_context(false) : nullptr;
  *pctx = primary != nullptr ? primary->handle() : s->context()->handle();
}

CUresult launch_host_func(CUstream h, CUhostFn fn, void* user_data, bool per_thread) {
  Context* ctx;
  Stream* s;
  if (CUresult r = stream_argument(h, per_thread, &ctx, &s); r != CUDA_SUCCESS) return r;
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool captured = false;
  if (CUresult r = capture_host_func(s, fn, user_data, &captured); r != CUDA_SUCCESS || captured)
    return r;
  ctx->submit(s, [fn, user_data] {
    fn(user_data);
    return uint64_t{0};
  });
  return CUDA_SUCCESS;
}

CUresult add_callback(CUstream h, CUstreamCallback callback, void* user_data, unsigned flags,
                      bool per_thread) {
  Context* ctx;
  Stream* s;
  if (CUresult r = stream_argument(h, per_thread, &ctx, &s); r != CUDA_SUCCESS) return r;
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  // Not capturable (the driver documents cuLaunchHostFunc as the capturable replacement).
  if (CUresult r = capture_refuse(s, "cuStreamAddCallback", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
      r != CUDA_SUCCESS) {
    return r;
  }
  CUstream reported = h;
  ctx->submit(s, [callback, user_data, reported, ctx] {
    callback(reported, ctx->sticky_error(), user_data);
    return uint64_t{0};
  });
  return CUDA_SUCCESS;
}

CUresult event_record(CUevent hEvent, CUstream h, unsigned flags, bool per_thread) {
  auto* event = handle_cast<Event>(hEvent, HandleKind::kEvent);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != CU_EVENT_RECORD_DEFAULT && flags != CU_EVENT_RECORD_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  Context* ctx;
  Stream* s;
  if (CUresult r = stream_argument(h, per_thread, &ctx, &s); r != CUDA_SUCCESS) return r;
  bool handled = false;
  if (CUresult r = capture_event_record(event, s, flags, &handled); r != CUDA_SUCCESS || handled)
    return r;
  // The marker's completion time is the event's timestamp.
  uint64_t seq = ctx->submit(s, [] { return uint64_t{0}; });
  std::lock_guard lock(event->mutex);
  event->recorded = true;
  event->point = Dependency{s->tail().timeline, seq};
  return CUDA_SUCCESS;
}

CUresult event_elapsed(float* ms, CUevent hStart, CUevent hEnd) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  auto* start = handle_cast<Event>(hStart, HandleKind::kEvent);
  auto* end = handle_cast<Event>(hEnd, HandleKind::kEvent);
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (start == nullptr || end == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  for (Event* e : {start, end}) {
    if (CUresult c = capture_check_event_sync(e); c != CUDA_SUCCESS) return c;
  }
  Dependency a, b;
  {
    std::lock_guard lock(start->mutex);
    if (!start->recorded) return CUDA_ERROR_INVALID_HANDLE;
    a = start->point;
  }
  {
    std::lock_guard lock(end->mutex);
    if (!end->recorded) return CUDA_ERROR_INVALID_HANDLE;
    b = end->point;
  }
  if (!a.timeline->reached(a.seq) || !b.timeline->reached(b.seq)) return CUDA_ERROR_NOT_READY;
  double ns = static_cast<double>(b.timeline->time_of(b.seq)) -
              static_cast<double>(a.timeline->time_of(a.seq));
  *ms = static_cast<float>(ns / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return guarded("cuStreamCreate", [&] { return stream_create(phStream, Flags, 0); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags,
                                                          int priority) {
  return guarded("cuStreamCreateWithPriority",
                 [&] { return stream_create(phStream, flags, priority); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
  return guarded("cuStreamDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Stream* s = handle_cast<Stream>(hStream, HandleKind::kStream);
    if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    return s->context()->destroy_stream(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  });
}

// The pre-CUDA 4.0 ABI, as cuStreamDestroy_v2 (whose stream finishes its queued work before it
// goes, which satisfies the old and the new documentation alike).
CUSNAP_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
  return guarded("cuStreamDestroy", [&] { return cuStreamDestroy_v2(hStream); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  return guarded("cuStreamSynchronize",
                 [&] { return stream_synchronize(hStream, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream) {
  return guarded("cuStreamSynchronize_ptsz",
                 [&] { return stream_synchronize(hStream, kPerThreadDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
  return guarded("cuStreamQuery", [&] { return stream_query(hStream, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream) {
  return guarded("cuStreamQuery_ptsz", [&] { return stream_query(hStream, kPerThreadDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                                                 unsigned int Flags) {
  return guarded("cuStreamWaitEvent",
                 [&] { return stream_wait_event(hStream, hEvent, Flags, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
                                                      unsigned int Flags) {
  return guarded("cuStreamWaitEvent_ptsz",
                 [&] { return stream_wait_event(hStream, hEvent, Flags, kPerThreadDefault); });
}

#define CUSNAP_STREAM_GETTER(out_check, body)       \
  [&](Context* ctx, Stream* s) -> CUresult {        \
    (void)ctx;                                      \
    (void)s;                                        \
    if (out_check) return CUDA_ERROR_INVALID_VALUE; \
    body;                                           \
    return CUDA_SUCCESS;                            \
  }

CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int* priority) {
  return guarded("cuStreamGetPriority", [&] {
    return stream_get(hStream, kLegacyDefault,
                      CUSNAP_STREAM_GETTER(priority == nullptr, *priority = s->priority()));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream hStream, int* priority) {
  return guarded("cuStreamGetPriority_ptsz", [&] {
    return stream_get(hStream, kPerThreadDefault,
                      CUSNAP_STREAM_GETTER(priority == nullptr, *priority = s->priority()));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  return guarded("cuStreamGetFlags", [&] {
    return stream_get(hStream, kLegacyDefault,
                      CUSNAP_STREAM_GETTER(flags == nullptr, *flags = s->flags()));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags) {
  return guarded("cuStreamGetFlags_ptsz", [&] {
    return stream_get(hStream, kPerThreadDefault,
                      CUSNAP_STREAM_GETTER(flags == nullptr, *flags = s->flags()));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetId(CUstream hStream, unsigned long long* streamId) {
  return guarded("cuStreamGetId", [&] {
    return stream_get(hStream, kLegacyDefault,
                      CUSNAP_STREAM_GETTER(streamId == nullptr, *streamId = s->id()));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetId_ptsz(CUstream hStream, unsigned long long* streamId) {
  return guarded("cuStreamGetId_ptsz", [&] {
    return stream_get(hStream, kPerThreadDefault,
                      CUSNAP_STREAM_GETTER(streamId == nullptr, *streamId = s->id()));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  return guarded("cuStreamGetCtx", [&] {
    return stream_get(hStream, kLegacyDefault,
                      CUSNAP_STREAM_GETTER(pctx == nullptr, *pctx = s->context()->handle()));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx) {
  return guarded("cuStreamGetCtx_ptsz", [&] {
    return stream_get(hStream, kPerThreadDefault,
                      CUSNAP_STREAM_GETTER(pctx == nullptr, *pctx = s->context()->handle()));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetCtx_v2(CUstream hStream, CUcontext* pctx,
                                                 CUgreenCtx* pGreenCtx) {
  return guarded("cuStreamGetCtx_v2", [&] {
    return stream_get(hStream, kLegacyDefault,
                      CUSNAP_STREAM_GETTER(pctx == nullptr || pGreenCtx == nullptr,
                                           stream_contexts(s, pctx, pGreenCtx)));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext* pctx,
                                                      CUgreenCtx* pGreenCtx) {
  return guarded("cuStreamGetCtx_v2_ptsz", [&] {
    return stream_get(hStream, kPerThreadDefault,
                      CUSNAP_STREAM_GETTER(pctx == nullptr || pGreenCtx == nullptr,
                                           stream_contexts(s, pctx, pGreenCtx)));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetDevice(CUstream hStream, CUdevice* device) {
  return guarded("cuStreamGetDevice", [&] {
    return stream_get(hStream, kLegacyDefault,
                      CUSNAP_STREAM_GETTER(device == nullptr, *device = 0));
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device) {
  return guarded("cuStreamGetDevice_ptsz", [&] {
    return stream_get(hStream, kPerThreadDefault,
                      CUSNAP_STREAM_GETTER(device == nullptr, *device = 0));
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  return guarded("cuLaunchHostFunc",
                 [&] { return launch_host_func(hStream, fn, userData, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn,
                                                     void* userData) {
  return guarded("cuLaunchHostFunc_ptsz",
                 [&] { return launch_host_func(hStream, fn, userData, kPerThreadDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback,
                                                   void* userData, unsigned int flags) {
  return guarded("cuStreamAddCallback",
                 [&] { return add_callback(hStream, callback, userData, flags, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                                                        void* userData, unsigned int flags) {
  return guarded("cuStreamAddCallback_ptsz", [&] {
    return add_callback(hStream, callback, userData, flags, kPerThreadDefault);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  return guarded("cuEventCreate", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    constexpr unsigned kValid =
        CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (phEvent == nullptr || (Flags & ~kValid) != 0) return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
      return CUDA_ERROR_INVALID_VALUE;
    auto* event = new Event;
    event->flags = Flags;
    event->context = ctx;
    register_handle(event, HandleKind::kEvent);
    *phEvent = reinterpret_cast<CUevent>(event);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent) {
  return guarded("cuEventDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    auto* event = handle_cast<Event>(hEvent, HandleKind::kEvent);
    if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    capture_forget_event(event);
    destroy_handle(event, HandleKind::kEvent);  // recorded points keep their timelines alive
    return CUDA_SUCCESS;
  });
}

// The pre-CUDA 4.0 ABI: the same semantics.
CUSNAP_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  return guarded("cuEventDestroy", [&] { return cuEventDestroy_v2(hEvent); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
  return guarded("cuEventRecord", [&] { return event_record(hEvent, hStream, 0, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  return guarded("cuEventRecord_ptsz",
                 [&] { return event_record(hEvent, hStream, 0, kPerThreadDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream,
                                                      unsigned int flags) {
  return guarded("cuEventRecordWithFlags",
                 [&] { return event_record(hEvent, hStream, flags, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                                           unsigned int flags) {
  return guarded("cuEventRecordWithFlags_ptsz",
                 [&] { return event_record(hEvent, hStream, flags, kPerThreadDefault); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
  return guarded("cuEventQuery", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    auto* event = handle_cast<Event>(hEvent, HandleKind::kEvent);
    if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult c = capture_check_unsafe_call("cuEventQuery"); c != CUDA_SUCCESS) return c;
    if (CUresult c = capture_check_event_sync(event); c != CUDA_SUCCESS) return c;
    std::lock_guard lock(event->mutex);
    if (!event->recorded) return CUDA_SUCCESS;
    return event->point.timeline->reached(event->point.seq) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  return guarded("cuEventSynchronize", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    auto* event = handle_cast<Event>(hEvent, HandleKind::kEvent);
    if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult c = capture_check_unsafe_call("cuEventSynchronize"); c != CUDA_SUCCESS) return c;
    if (CUresult c = capture_check_event_sync(event); c != CUDA_SUCCESS) return c;
    Dependency point;
    {
      std::lock_guard lock(event->mutex);
      if (!event->recorded) return CUDA_SUCCESS;
      point = event->point;
    }
    point.timeline->wait_for(point.seq);
    std::fflush(stdout);
    trim_pools_to_thresholds();
    Context* ctx = current_context();
    return ctx != nullptr ? ctx->sticky_error() : CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart,
                                                  CUevent hEnd) {
  return guarded("cuEventElapsedTime", [&] { return event_elapsed(pMilliseconds, hStart, hEnd); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart,
                                                     CUevent hEnd) {
  return guarded("cuEventElapsedTime_v2",
                 [&] { return event_elapsed(pMilliseconds, hStart, hEnd); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetAttribute(CUstream hStream, CUstreamAttrID attr,
                                                    CUstreamAttrValue* value_out) {
  return guarded("cuStreamGetAttribute",
                 [&] { return stream_get_attribute(hStream, attr, value_out, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr,
                                                         CUstreamAttrValue* value_out) {
  return guarded("cuStreamGetAttribute_ptsz",
                 [&] { return stream_get_attribute(hStream, attr, value_out, kPerThreadDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamSetAttribute(CUstream hStream, CUstreamAttrID attr,
                                                    const CUstreamAttrValue* value) {
  return guarded("cuStreamSetAttribute",
                 [&] { return stream_set_attribute(hStream, attr, value, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamSetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr,
                                                         const CUstreamAttrValue* value) {
  return guarded("cuStreamSetAttribute_ptsz",
                 [&] { return stream_set_attribute(hStream, attr, value, kPerThreadDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamCopyAttributes(CUstream dst, CUstream src) {
  return guarded("cuStreamCopyAttributes",
                 [&] { return stream_copy_attributes(dst, src, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src) {
  return guarded("cuStreamCopyAttributes_ptsz",
                 [&] { return stream_copy_attributes(dst, src, kPerThreadDefault); });
}
