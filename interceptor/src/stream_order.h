// Work the recorder must do in stream order rather than at call time: checksumming what an
// asynchronous device-to-host copy delivered, and re-reading pinned host memory that an async
// host-to-device copy reads when it executes. Done with a host function enqueued through the
// real driver right after the copy -- but never on a stream that is being captured into a graph
// (that would add a node to the application's graph); there the call-time view is recorded and a
// note says so.
#pragma once

#include <cstdint>
#include <functional>

#include "generated_shim_api.h"

namespace cusnap::icpt {

// True when `stream` (as the application named it; per_thread: a _ptsz/_ptds call) is capturing.
bool stream_is_capturing(CUstream stream, bool per_thread) noexcept;

// Runs `work` after everything enqueued so far on `stream`. False (nothing enqueued) when the
// stream is capturing or the driver refuses; the caller then falls back to call time.
bool run_in_stream_order(CUstream stream, bool per_thread, std::function<void()> work) noexcept;

}  // namespace cusnap::icpt
