// Host functions the application enqueued (cuLaunchHostFunc, cuStreamAddCallback) that have not
// finished yet, and which streams' later work waits for them: a snapshot must not synchronise a
// stream that waits on one, because the host function may itself wait for the application
// thread's progress after the launch returns (docs/capture.md, "How a snapshot is taken").
//
// Tracked only while snapshots are on. Each such call is enqueued with a trampoline of the
// shim's in place of the application's function: the trampoline calls the application's function
// with the application's arguments, then marks it finished and frees its state. Calls on a stream
// being captured into a graph are not wrapped (the graph would keep the trampoline, run it any
// number of times). Waits are followed across streams: an event recorded on a stream carries the
// host functions that stream waited on then; a stream that waits on that event inherits them.
// The legacy default stream waits on every blocking stream (the per-thread default streams
// included) and they on it, as the driver defines it.
#pragma once

#include <cstdint>

#include "generated_shim_api.h"

namespace cusnap::icpt {

// Enqueues the application's host function `fn(user_data)` on `stream` through `real` (the real
// cuLaunchHostFunc or its _ptsz twin), wrapped in the tracking trampoline; returns the real
// call's result (a refused call leaves nothing tracked).
CUresult launch_tracked_host_func(fn::cuLaunchHostFunc real, CUstream stream, bool per_thread,
                                  CUhostFn fn, void* user_data) noexcept;
// The same for cuStreamAddCallback (or its _ptsz twin): `callback(stream, status, user_data)`.
CUresult add_tracked_callback(fn::cuStreamAddCallback real, CUstream stream, bool per_thread,
                              CUstreamCallback callback, void* user_data, unsigned flags) noexcept;

// Stream and event facts the cross-stream waits need (called after the real call succeeded,
// but host_funcs_stream_waits: before the real cuStreamWaitEvent, so that no snapshot's check
// can miss a wait the stream already has; a refused wait only adds a wait).
void host_funcs_stream_created(CUstream stream, unsigned flags) noexcept;
void host_funcs_stream_destroyed(CUstream stream) noexcept;
void host_funcs_event_recorded(CUevent event, CUstream stream, bool per_thread) noexcept;
void host_funcs_stream_waits(CUstream stream, bool per_thread, CUevent event) noexcept;
void host_funcs_event_destroyed(CUevent event) noexcept;

// True when work enqueued now on `stream` could wait on a tracked host function that has not
// finished: synchronising the stream could then wait for the application itself. A host
// function counts from before its real enqueue (launch_tracked_host_func), so a caller that gets
// false, then records an event on the stream and gets false again, may wait for that event.
bool waits_on_pending_host_func(CUstream stream, bool per_thread) noexcept;

}  // namespace cusnap::icpt
