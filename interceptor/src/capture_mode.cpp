// Stream capture: the records of cuStreamBeginCapture and friends (schema StreamCapture), and
// stream-capture safety. While any stream is being captured into a graph (mode GLOBAL forbids
// "unsafe" calls from every thread), the recorder's own helper calls run with the calling
// thread's capture mode exchanged to RELAXED (CallScope::returned / ~CallScope), and stream-ordered
// recording work is never enqueued on a capturing stream (stream_order.cpp). These hooks keep the
// count of captures in progress. Work enqueued while capturing is recorded as the node it became
// (graphs.h).
#include <vector>

#include "graphs.h"
#include "hooks.h"

namespace cusnap::icpt {

std::atomic<int> g_stream_captures{0};

namespace {

using Op = schema::StreamCapture::Op;

schema::StreamCapture::Builder capture_record(CallScope& call, Op op, CUstream stream) {
  auto record = call.record().initStreamCapture();
  record.setOp(op);
  record.setStream(handle_value(stream));
  return record;
}

void set_nodes(capnp::List<schema::GraphEdge>::Builder out, const CUgraphNode* nodes,
               const CUgraphEdgeData* data, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    out[i].setFrom(handle_value(nodes[i]));
    if (data != nullptr) {
      out[i].setFromPort(data[i].from_port);
      out[i].setToPort(data[i].to_port);
      out[i].setType(data[i].type);
    }
  }
}

// A capture began: count it, and name the graph it builds and its id (asked right away).
void begun(CallScope& call, Op op, CUstream stream, CUstreamCaptureMode mode, CUgraph to_graph,
           const CUgraphNode* deps, const CUgraphEdgeData* data, size_t count) {
  auto record = capture_record(call, op, stream);
  record.setMode(static_cast<int32_t>(mode));
  record.setGraph(handle_value(to_graph));
  if (deps != nullptr && count > 0)
    set_nodes(record.initDependencies(static_cast<unsigned>(count)), deps, data, count);
  if (call.result() == CUDA_SUCCESS) {
    g_stream_captures.fetch_add(1, std::memory_order_relaxed);
    auto info = call.per_thread_stream() ? CUSNAP_REAL(cuStreamGetCaptureInfo_v2_ptsz)
                                         : CUSNAP_REAL(cuStreamGetCaptureInfo_v2);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph graph = nullptr;
    if (info != nullptr && info(stream, &status, &id, &graph, nullptr, nullptr) == CUDA_SUCCESS) {
      record.setGraph(handle_value(graph));
      record.setCaptureId(id);
    }
  }
  call.commit();
}

void info_record(CallScope& call, CUstream stream, const CUstreamCaptureStatus* status,
                 const cuuint64_t* id, const CUgraph* graph, const CUgraphNode* const* deps,
                 const CUgraphEdgeData* const* data, const size_t* count) {
  auto record = capture_record(call, Op::GET_INFO, stream);
  if (call.result() == CUDA_SUCCESS) {
    if (status != nullptr) record.setStatus(static_cast<int32_t>(*status));
    bool active = status != nullptr && *status != CU_STREAM_CAPTURE_STATUS_NONE;
    if (active && id != nullptr) record.setCaptureId(*id);
    if (active && graph != nullptr) record.setGraph(handle_value(*graph));
    if (active && deps != nullptr && count != nullptr && *deps != nullptr && *count > 0) {
      set_nodes(record.initDependencies(static_cast<unsigned>(*count)), *deps,
                data != nullptr ? *data : nullptr, *count);
    }
  }
  call.commit();
}

void dependencies_record(CallScope& call, CUstream stream, CUgraphNode* deps,
                         const CUgraphEdgeData* data, size_t count, unsigned flags) {
  auto record = capture_record(call, Op::UPDATE_DEPENDENCIES, stream);
  record.setFlags(flags);
  if (deps != nullptr && count > 0)
    set_nodes(record.initDependencies(static_cast<unsigned>(count)), deps, data, count);
  call.commit();
}

thread_local CUstreamCaptureMode t_requested_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

}  // namespace

namespace hooks {

// The hook macros' two parenthesised lists are not stable under clang-format.
// clang-format off

CUSNAP_POST_HOOK(cuStreamBeginCapture)(CallScope& call, CUresult, CUstream hStream) {
  begun(call, Op::BEGIN, hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, nullptr, nullptr, nullptr, 0);
}

CUSNAP_POST_HOOK(cuStreamBeginCapture_v2)(CallScope& call, CUresult, CUstream hStream, CUstreamCaptureMode mode) {
  begun(call, Op::BEGIN, hStream, mode, nullptr, nullptr, nullptr, 0);
}

CUSNAP_POST_HOOK(cuStreamBeginCaptureToGraph)(CallScope& call, CUresult, CUstream hStream, CUgraph hGraph,
                                              const CUgraphNode* dependencies, const CUgraphEdgeData* dependencyData,
                                              size_t numDependencies, CUstreamCaptureMode mode) {
  begun(call, Op::BEGIN_TO_GRAPH, hStream, mode, hGraph, dependencies, dependencyData, numDependencies);
}

CUSNAP_POST_HOOK(cuStreamEndCapture)(CallScope& call, CUresult result, CUstream hStream, CUgraph* phGraph) {
  // Ends the capture whether or not it succeeded (an invalidated capture returns an error).
  if (g_stream_captures.load(std::memory_order_relaxed) > 0) g_stream_captures.fetch_sub(1, std::memory_order_relaxed);
  auto record = capture_record(call, Op::END, hStream);
  if (result == CUDA_SUCCESS && phGraph != nullptr) record.setGraph(handle_value(*phGraph));
  call.commit();
}

CUSNAP_POST_HOOK(cuStreamIsCapturing)(CallScope& call, CUresult result, CUstream hStream,
                                      CUstreamCaptureStatus* captureStatus) {
  auto record = capture_record(call, Op::IS_CAPTURING, hStream);
  if (result == CUDA_SUCCESS && captureStatus != nullptr) record.setStatus(static_cast<int32_t>(*captureStatus));
  call.commit();
}

CUSNAP_POST_HOOK(cuStreamGetCaptureInfo)(CallScope& call, CUresult, CUstream hStream,
                                         CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out) {
  info_record(call, hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr);
}

CUSNAP_POST_HOOK(cuStreamGetCaptureInfo_v2)(CallScope& call, CUresult, CUstream hStream,
                                            CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
                                            CUgraph* graph_out, const CUgraphNode** dependencies_out,
                                            size_t* numDependencies_out) {
  info_record(call, hStream, captureStatus_out, id_out, graph_out, dependencies_out, nullptr, numDependencies_out);
}

CUSNAP_POST_HOOK(cuStreamGetCaptureInfo_v3)(CallScope& call, CUresult, CUstream hStream,
                                            CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
                                            CUgraph* graph_out, const CUgraphNode** dependencies_out,
                                            const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  info_record(call, hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
              numDependencies_out);
}

CUSNAP_POST_HOOK(cuStreamUpdateCaptureDependencies)(CallScope& call, CUresult, CUstream hStream,
                                                    CUgraphNode* dependencies, size_t numDependencies,
                                                    unsigned int flags) {
  dependencies_record(call, hStream, dependencies, nullptr, numDependencies, flags);
}

CUSNAP_POST_HOOK(cuStreamUpdateCaptureDependencies_v2)(CallScope& call, CUresult, CUstream hStream,
                                                       CUgraphNode* dependencies,
                                                       const CUgraphEdgeData* dependencyData,
                                                       size_t numDependencies, unsigned int flags) {
  dependencies_record(call, hStream, dependencies, dependencyData, numDependencies, flags);
}

CUSNAP_PRE_HOOK(cuThreadExchangeStreamCaptureMode)(CallScope&, CUstreamCaptureMode* mode) {
  if (mode != nullptr) t_requested_mode = *mode;
}

CUSNAP_POST_HOOK(cuThreadExchangeStreamCaptureMode)(CallScope& call, CUresult result, CUstreamCaptureMode* mode) {
  auto record = capture_record(call, Op::EXCHANGE_MODE, nullptr);
  record.setMode(static_cast<int32_t>(t_requested_mode));
  if (result == CUDA_SUCCESS && mode != nullptr) record.setPreviousMode(static_cast<int32_t>(*mode));
  call.commit();
}

// clang-format on

}  // namespace hooks
}  // namespace cusnap::icpt
