// Streams, events, waits, host functions and synchronisation: enough to reconstruct the order in
// which work was enqueued and waited for.
#include "graphs.h"
#include "hooks.h"
#include "host_funcs.h"
#include "session.h"
#include "snapshot.h"
#include "stream_order.h"

namespace cusnap::icpt {
namespace {

void record_stream_create(CallScope& call, CUresult result, CUstream* stream, unsigned flags,
                          int priority) {
  auto create = call.record().initStreamCreate();
  if (result == CUDA_SUCCESS && stream != nullptr) create.setStream(handle_value(*stream));
  create.setFlags(flags);
  create.setPriority(priority);
  call.commit();
  if (result == CUDA_SUCCESS && stream != nullptr && snapshots_enabled()) {
    track_stream(*stream, true);
    host_funcs_stream_created(*stream, flags);
  }
}

// On a capturing stream the host function becomes a host node of the graph (graphs.h).
void record_host_func(CallScope& call, CUstream stream, const void* function, void* user_data) {
  CapturedNode captured;
  if (call.result() == CUDA_SUCCESS && capture_possible() &&
      captured_node(stream, call.per_thread_stream(), &captured)) {
    auto node =
        init_node_record(call, schema::GraphNode::Kind::HOST, captured.graph, captured.node);
    set_captured(node, captured);
    node.setHostFunction(handle_value(function));
    node.setUserData(handle_value(user_data));
    call.commit();
    return;
  }
  auto host = call.record().initHostFunc();
  host.setStream(handle_value(stream));
  host.setFunction(handle_value(function));
  host.setUserData(handle_value(user_data));
  call.commit();
}

// Host functions are enqueued wrapped while snapshots are on (host_funcs.h), except on a stream
// being captured into a graph; the record names the application's function and data.
bool track_host_funcs(CallScope& call, CUstream stream) {
  return snapshots_enabled() && !stream_is_capturing(stream, call.per_thread_stream());
}

}  // namespace

namespace hooks {

CUSNAP_POST_HOOK(cuStreamCreate)
(CallScope& call, CUresult result, CUstream* phStream, unsigned int Flags) {
  record_stream_create(call, result, phStream, Flags, 0);
}

CUSNAP_POST_HOOK(cuStreamCreateWithPriority)
(CallScope& call, CUresult result, CUstream* phStream, unsigned int flags, int priority) {
  record_stream_create(call, result, phStream, flags, priority);
}

CUSNAP_POST_HOOK(cuStreamDestroy_v2)(CallScope& call, CUresult, CUstream hStream) {
  if (snapshots_enabled()) {
    track_stream(hStream, false);
    host_funcs_stream_destroyed(hStream);
  }
  call.record().initStreamDestroy().setStream(handle_value(hStream));
  call.commit();
}

// Before the real call: from the moment the stream waits on the event, a snapshot's check of
// its host functions must see what the event carries (a snapshot that checked before this
// marks the stream's work with its own event before re-checking, so the wait comes after that
// mark; host_funcs.h). A refused wait only adds a wait until those host functions finish.
CUSNAP_PRE_HOOK(cuStreamWaitEvent)
(CallScope& call, CUstream hStream, CUevent hEvent, unsigned int) {
  if (snapshots_enabled()) host_funcs_stream_waits(hStream, call.per_thread_stream(), hEvent);
}

CUSNAP_POST_HOOK(cuStreamWaitEvent)
(CallScope& call, CUresult, CUstream hStream, CUevent hEvent, unsigned int Flags) {
  auto wait = call.record().initStreamWaitEvent();
  wait.setStream(handle_value(hStream));
  wait.setEvent(handle_value(hEvent));
  wait.setFlags(Flags);
  call.commit();
}

CUSNAP_POST_HOOK(cuStreamSynchronize)(CallScope& call, CUresult, CUstream hStream) {
  call.record().initStreamSynchronize().setStream(handle_value(hStream));
  call.commit();
}

CUSNAP_POST_HOOK(cuStreamQuery)(CallScope& call, CUresult, CUstream hStream) {
  call.record().initStreamQuery().setStream(handle_value(hStream));
  call.commit();
}

CUSNAP_POST_HOOK(cuCtxSynchronize)(CallScope& call, CUresult) {
  call.record().initContextSynchronize();
  call.commit();
}

// CUDA 13: a given context (what cudart 13's cudaDeviceSynchronize calls, on an H200); the
// replayer has one context per device, so it is the same synchronization.
CUSNAP_POST_HOOK(cuCtxSynchronize_v2)(CallScope& call, CUresult, CUcontext) {
  call.record().initContextSynchronize();
  call.commit();
}

CUSNAP_POST_HOOK(cuEventCreate)
(CallScope& call, CUresult result, CUevent* phEvent, unsigned int Flags) {
  auto create = call.record().initEventCreate();
  if (result == CUDA_SUCCESS && phEvent != nullptr) create.setEvent(handle_value(*phEvent));
  create.setFlags(Flags);
  call.commit();
}

CUSNAP_POST_HOOK(cuEventRecord)
(CallScope& call, CUresult result, CUevent hEvent, CUstream hStream) {
  if (result == CUDA_SUCCESS && snapshots_enabled())
    host_funcs_event_recorded(hEvent, hStream, call.per_thread_stream());
  auto record = call.record().initEventRecord();
  record.setEvent(handle_value(hEvent));
  record.setStream(handle_value(hStream));
  call.commit();
}

CUSNAP_POST_HOOK(cuEventRecordWithFlags)
(CallScope& call, CUresult result, CUevent hEvent, CUstream hStream, unsigned int flags) {
  if (result == CUDA_SUCCESS && snapshots_enabled())
    host_funcs_event_recorded(hEvent, hStream, call.per_thread_stream());
  auto record = call.record().initEventRecord();
  record.setEvent(handle_value(hEvent));
  record.setStream(handle_value(hStream));
  record.setFlags(flags);
  call.commit();
}

CUSNAP_POST_HOOK(cuEventSynchronize)(CallScope& call, CUresult, CUevent hEvent) {
  call.record().initEventSynchronize().setEvent(handle_value(hEvent));
  call.commit();
}

CUSNAP_POST_HOOK(cuEventQuery)(CallScope& call, CUresult, CUevent hEvent) {
  call.record().initEventQuery().setEvent(handle_value(hEvent));
  call.commit();
}

CUSNAP_POST_HOOK(cuEventDestroy_v2)(CallScope& call, CUresult result, CUevent hEvent) {
  if (result == CUDA_SUCCESS && snapshots_enabled()) host_funcs_event_destroyed(hEvent);
  call.record().initEventDestroy().setEvent(handle_value(hEvent));
  call.commit();
}

CUSNAP_POST_HOOK(cuEventElapsedTime)
(CallScope& call, CUresult result, float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  auto elapsed = call.record().initEventElapsedTime();
  elapsed.setStart(handle_value(hStart));
  elapsed.setEnd(handle_value(hEnd));
  if (result == CUDA_SUCCESS && pMilliseconds != nullptr) elapsed.setMilliseconds(*pMilliseconds);
  call.commit();
}

CUSNAP_POST_HOOK(cuEventElapsedTime_v2)
(CallScope& call, CUresult result, float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  post_cuEventElapsedTime(call, result, pMilliseconds, hStart, hEnd);
}

CUSNAP_CUSTOM(cuLaunchHostFunc)
(CallScope& call, CUstream hStream, CUhostFn function, void* userData) {
  auto real = reinterpret_cast<fn::cuLaunchHostFunc>(g_real[call.id()]);
  if (real == nullptr) return call.missing();
  CUresult result =
      track_host_funcs(call, hStream)
          ? launch_tracked_host_func(real, hStream, call.per_thread_stream(), function, userData)
          : real(hStream, function, userData);
  if (call.recording()) {
    call.returned(result);
    call.guard([&] {
      record_host_func(call, hStream, reinterpret_cast<const void*>(function), userData);
    });
  }
  return result;
}

CUSNAP_CUSTOM(cuStreamAddCallback)
(CallScope& call, CUstream hStream, CUstreamCallback callback, void* userData, unsigned int flags) {
  auto real = reinterpret_cast<fn::cuStreamAddCallback>(g_real[call.id()]);
  if (real == nullptr) return call.missing();
  CUresult result =
      track_host_funcs(call, hStream)
          ? add_tracked_callback(real, hStream, call.per_thread_stream(), callback, userData, flags)
          : real(hStream, callback, userData, flags);
  if (call.recording()) {
    call.returned(result);
    call.guard([&] {
      record_host_func(call, hStream, reinterpret_cast<const void*>(callback), userData);
    });
  }
  return result;
}

}  // namespace hooks
}  // namespace cusnap::icpt
