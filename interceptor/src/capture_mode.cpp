// Stream-capture safety. While any stream is being captured into a graph (mode GLOBAL forbids
// "unsafe" calls from every thread), the recorder's own helper calls run with the calling
// thread's capture mode exchanged to RELAXED (CallScope::returned / ~CallScope), and stream-ordered
// recording work is never enqueued on a capturing stream (stream_order.cpp). These hooks keep the
// count of captures in progress; the calls themselves are recorded generically.
#include "hooks.h"

namespace cusnap::icpt {

std::atomic<int> g_stream_captures{0};

namespace {
void begun(CUresult result) {
  if (result == CUDA_SUCCESS) g_stream_captures.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

namespace hooks {

// The hook macros' two parenthesised lists are not stable under clang-format.
// clang-format off

CUSNAP_POST_HOOK(cuStreamBeginCapture)(CallScope&, CUresult result, CUstream) { begun(result); }

CUSNAP_POST_HOOK(cuStreamBeginCapture_v2)(CallScope&, CUresult result, CUstream, CUstreamCaptureMode) {
  begun(result);
}

CUSNAP_POST_HOOK(cuStreamBeginCaptureToGraph)(CallScope&, CUresult result, CUstream, CUgraph, const CUgraphNode*,
                                              const CUgraphEdgeData*, size_t, CUstreamCaptureMode) {
  begun(result);
}

CUSNAP_POST_HOOK(cuStreamEndCapture)(CallScope&, CUresult, CUstream, CUgraph*) {
  // Ends the capture whether or not it succeeded (an invalidated capture returns an error).
  if (g_stream_captures.load(std::memory_order_relaxed) > 0) g_stream_captures.fetch_sub(1, std::memory_order_relaxed);
}

// clang-format on

}  // namespace hooks
}  // namespace cusnap::icpt
