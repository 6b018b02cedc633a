// Stream capture (graph.h): capture sequences, the streams that joined them, events recorded in
// them, the per-thread capture interaction mode, and the entry points.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/graph.h"
#include "driver/state.h"

namespace cusnap::emu::driver {
namespace {

struct CaptureSession {
  unsigned long long id = 0;
  Graph* graph = nullptr;
  bool user_graph = false;  // cuStreamBeginCaptureToGraph: the application's graph
  Stream* origin = nullptr;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  bool invalidated = false;
  bool ended = false;
  std::vector<Stream*> streams;  // the origin and every stream that joined
};

// A stream's place in a capture: the nodes the next captured operation depends on.
struct StreamCapture {
  std::shared_ptr<CaptureSession> session;
  std::vector<GraphNode*> deps;
};

// An event recorded in a capture: the nodes a stream waiting for it joins after.
struct EventCapture {
  std::weak_ptr<CaptureSession> session;
  std::vector<GraphNode*> deps;
};

std::atomic<unsigned long long> g_next_capture_id{1};
// All guarded by graph_mutex().
std::unordered_map<const Stream*, StreamCapture> g_streams;
std::unordered_map<const Event*, EventCapture> g_events;
std::vector<std::shared_ptr<CaptureSession>> g_sessions;  // active (not ended) sequences
// g_streams.size(), readable without the lock: launches and copies outside any capture (the
// common case) skip the lock. A capture begun concurrently by another thread is unordered with
// them anyway.
std::atomic<size_t> g_capturing{0};

void update_capturing() { g_capturing.store(g_streams.size()); }
// g_events.size(), likewise: events whose last record was in a capture.
std::atomic<size_t> g_captured_events{0};
void update_captured_events() { g_captured_events.store(g_events.size()); }

thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

StreamCapture* capture_of(const Stream* s) {
  auto it = g_streams.find(s);
  return it == g_streams.end() ? nullptr : &it->second;
}

void invalidate(CaptureSession& session, const char* why) {
  if (!session.invalidated) {
    log(LogLevel::kWarn, "stream capture %llu invalidated: %s", session.id, why);
  }
  session.invalidated = true;
}

// The legacy stream synchronises with every blocking stream: one that is capturing makes any
// use of the legacy stream an implicit dependency on the capture, which the driver refuses.
CUresult check_legacy(Stream* stream) {
  if (stream->kind() != StreamKind::kLegacy) return CUDA_SUCCESS;
  CUresult result = CUDA_SUCCESS;
  for (auto& [s, capture] : g_streams) {
    if (s->context() == stream->context() && s->blocking()) {
      invalidate(*capture.session, "the legacy stream was used while a blocking stream captured");
      result = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
  }
  return result;
}

// A capture's dependencies the application may have destroyed since (cuGraphDestroyNode on a
// node of the capture's graph) are dropped: they cannot be depended on any more.
void drop_destroyed(std::vector<GraphNode*>* deps) {
  deps->erase(std::remove_if(deps->begin(), deps->end(),
                             [](GraphNode* n) { return !is_handle(n, HandleKind::kGraphNode); }),
              deps->end());
}

CUresult add_captured(StreamCapture& c, NodeSpec node) {
  drop_destroyed(&c.deps);
  GraphNode* n = nullptr;
  std::vector<CUgraphNode> deps(c.deps.size());
  for (size_t i = 0; i < deps.size(); ++i) deps[i] = reinterpret_cast<CUgraphNode>(c.deps[i]);
  if (CUresult r = attach_node(c.session->graph, std::move(node), deps.data(), deps.size(), &n);
      r != CUDA_SUCCESS) {
    return r;
  }
  c.deps = {n};
  return CUDA_SUCCESS;
}

void end_session(const std::shared_ptr<CaptureSession>& session) {
  session->ended = true;
  for (Stream* s : session->streams) g_streams.erase(s);
  update_capturing();
  g_sessions.erase(std::find(g_sessions.begin(), g_sessions.end(), session));
}

// Every node `from` reaches backwards (itself included).
void ancestors(GraphNode* from, std::unordered_set<const GraphNode*>* out) {
  if (!is_handle(from, HandleKind::kGraphNode) || !out->insert(from).second) return;
  for (GraphNode* d : from->deps) ancestors(d, out);
}

}  // namespace

CUresult capture_node(Stream* stream, bool synchronous, const std::function<NodeSpec()>& make,
                      bool* captured) {
  *captured = false;
  if (g_capturing.load() == 0) return CUDA_SUCCESS;
  std::lock_guard lock(graph_mutex());
  StreamCapture* c = capture_of(stream);
  if (c == nullptr) return check_legacy(stream);
  if (c->session->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (synchronous) {
    invalidate(*c->session, "a synchronous call was made on a capturing stream");
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (CUresult r = add_captured(*c, make()); r != CUDA_SUCCESS) return r;
  *captured = true;
  return CUDA_SUCCESS;
}

bool capture_active(const Stream* stream) {
  if (g_capturing.load() == 0) return false;
  std::lock_guard lock(graph_mutex());
  return capture_of(stream) != nullptr;
}

CUresult capture_launch(Stream* stream, const PreparedLaunch& launch, bool* captured) {
  return capture_node(
      stream, false, [&] { return kernel_node(launch); }, captured);
}

CUresult capture_host_func(Stream* stream, CUhostFn fn, void* user_data, bool* handled) {
  return capture_node(
      stream, false,
      [&] {
        auto node = std::make_unique<GraphNode>();
        node->type = CU_GRAPH_NODE_TYPE_HOST;
        node->host.fn = fn;
        node->host.userData = user_data;
        return node;
      },
      handled);
}

CUresult capture_refuse(Stream* stream, const char* what, CUresult error) {
  if (g_capturing.load() == 0) return CUDA_SUCCESS;
  std::lock_guard lock(graph_mutex());
  StreamCapture* c = capture_of(stream);
  if (c == nullptr) return check_legacy(stream);
  if (c->session->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  log(LogLevel::kError, "%s cannot be captured by the emulator", what);
  invalidate(*c->session, what);
  return error;
}

CUresult capture_refuse_context(const Context* context, const Event* event, const char* what) {
  if (g_capturing.load() == 0 && g_captured_events.load() == 0) return CUDA_SUCCESS;
  std::lock_guard lock(graph_mutex());
  bool refused = false;
  for (auto& [stream, capture] : g_streams) {
    if (stream->context() != context) continue;
    invalidate(*capture.session, what);
    refused = true;
  }
  if (event != nullptr) {
    auto it = g_events.find(event);
    if (it != g_events.end()) {
      if (auto session = it->second.session.lock(); session && !session->ended) {
        invalidate(*session, what);
        refused = true;
      }
    }
  }
  if (!refused) return CUDA_SUCCESS;
  log(LogLevel::kError, "%s while a stream of the context captures", what);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult capture_event_record(Event* event, Stream* stream, unsigned flags, bool* handled) {
  *handled = false;
  if (g_capturing.load() == 0 && g_captured_events.load() == 0) return CUDA_SUCCESS;
  std::lock_guard lock(graph_mutex());
  StreamCapture* c = capture_of(stream);
  if (c == nullptr) {
    if (CUresult r = check_legacy(stream); r != CUDA_SUCCESS) return r;
    g_events.erase(event);  // recorded outside capture again
    update_captured_events();
    return CUDA_SUCCESS;
  }
  if (c->session->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  *handled = true;
  if (flags & CU_EVENT_RECORD_EXTERNAL) {
    auto node = std::make_unique<GraphNode>();
    node->type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    node->event = reinterpret_cast<CUevent>(event);
    return add_captured(*c, std::move(node));
  }
  g_events[event] = EventCapture{c->session, c->deps};
  update_captured_events();
  return CUDA_SUCCESS;
}

CUresult capture_wait_event(Stream* stream, Event* event, unsigned flags, bool* handled) {
  *handled = false;
  if (g_capturing.load() == 0 && g_captured_events.load() == 0) return CUDA_SUCCESS;
  std::lock_guard lock(graph_mutex());
  StreamCapture* c = capture_of(stream);
  auto it = g_events.find(event);
  const bool captured_event = it != g_events.end();  // last recorded in a capture
  std::shared_ptr<CaptureSession> recorded_in;
  if (captured_event) recorded_in = it->second.session.lock();
  if (recorded_in && recorded_in->ended) recorded_in.reset();
  if (c == nullptr) {
    if (CUresult r = check_legacy(stream); r != CUDA_SUCCESS) return r;
    if (!captured_event) return CUDA_SUCCESS;  // an ordinary wait
    // Recorded in a capture that has ended: there is no record on any stream to wait for.
    if (!recorded_in) return CUDA_ERROR_CAPTURED_EVENT;
    if (stream->kind() == StreamKind::kLegacy) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (recorded_in->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    // The stream joins the capture the event was recorded in (a fork).
    g_streams[stream] = StreamCapture{recorded_in, it->second.deps};
    update_capturing();
    recorded_in->streams.push_back(stream);
    *handled = true;
    return CUDA_SUCCESS;
  }
  if (c->session->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  *handled = true;
  if (flags & CU_EVENT_WAIT_EXTERNAL) {
    auto node = std::make_unique<GraphNode>();
    node->type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
    node->event = reinterpret_cast<CUevent>(event);
    return add_captured(*c, std::move(node));
  }
  if (recorded_in && recorded_in != c->session) {
    invalidate(*c->session, "a capturing stream waited for an event of another capture");
    return CUDA_ERROR_STREAM_CAPTURE_MERGE;
  }
  if (recorded_in != c->session) {
    // Recorded outside any active capture: the dependency would cross the capture's boundary
    // (CU_EVENT_WAIT_EXTERNAL makes it an event wait node instead).
    invalidate(*c->session, "a capturing stream waited for an event recorded outside the capture");
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  for (GraphNode* n : it->second.deps) {
    if (std::find(c->deps.begin(), c->deps.end(), n) == c->deps.end()) c->deps.push_back(n);
  }
  return CUDA_SUCCESS;
}

CUresult capture_check_stream_sync(Stream* stream) {
  if (g_capturing.load() == 0) return CUDA_SUCCESS;
  std::lock_guard lock(graph_mutex());
  StreamCapture* c = capture_of(stream);
  if (c == nullptr) return check_legacy(stream);
  invalidate(*c->session, "a capturing stream was synchronised or queried");
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult capture_check_event_sync(Event* event) {
  if (g_captured_events.load() == 0) return CUDA_SUCCESS;
  std::lock_guard lock(graph_mutex());
  auto it = g_events.find(event);
  if (it == g_events.end()) return CUDA_SUCCESS;
  auto session = it->second.session.lock();
  if (session && !session->ended) {
    invalidate(*session, "an event recorded in the capture was synchronised or queried");
  }
  return CUDA_ERROR_CAPTURED_EVENT;  // last recorded in a capture, whether or not it has ended
}

CUresult capture_check_unsafe_call(const char* name) {
  if (t_mode == CU_STREAM_CAPTURE_MODE_RELAXED || g_capturing.load() == 0) return CUDA_SUCCESS;
  std::lock_guard lock(graph_mutex());
  const auto me = std::this_thread::get_id();
  CUresult result = CUDA_SUCCESS;
  for (auto& s : g_sessions) {
    // The calling thread's own non-relaxed captures, and in global mode other threads' global
    // ones, prohibit potentially unsafe calls (cuThreadExchangeStreamCaptureMode).
    const bool own = s->thread == me && s->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    const bool other = s->thread != me && t_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                       s->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (own || other) {
      log(LogLevel::kWarn, "%s is not permitted during stream capture %llu (capture mode)", name,
          s->id);
      invalidate(*s, "a potentially unsafe API call was made during capture");
      result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  }
  return result;
}

void capture_forget_stream(const Stream* stream) {
  if (g_capturing.load() == 0) return;
  std::lock_guard lock(graph_mutex());
  auto it = g_streams.find(stream);
  if (it == g_streams.end()) return;
  auto session = it->second.session;
  invalidate(*session, "a capturing stream was destroyed");
  auto& streams = session->streams;
  streams.erase(std::remove(streams.begin(), streams.end(), stream), streams.end());
  g_streams.erase(it);
  update_capturing();
}

bool capture_uses_graph(const Graph* graph) {
  return std::any_of(g_sessions.begin(), g_sessions.end(),
                     [&](const auto& session) { return session->graph == graph; });
}

void capture_forget_event(const Event* event) {
  std::lock_guard lock(graph_mutex());
  g_events.erase(event);
  update_captured_events();
}

}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;

namespace {

bool valid_mode(int mode) {
  return mode == CU_STREAM_CAPTURE_MODE_GLOBAL || mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
         mode == CU_STREAM_CAPTURE_MODE_RELAXED;
}

CUresult begin_capture(CUstream hStream, CUgraph hGraph, const CUgraphNode* deps,
                       const CUgraphEdgeData* data, size_t count, CUstreamCaptureMode mode,
                       bool per_thread) {
  Context* ctx;
  Stream* stream;
  if (CUresult r = stream_argument(hStream, per_thread, &ctx, &stream); r != CUDA_SUCCESS) return r;
  int raw_mode = 0;
  std::memcpy(&raw_mode, &mode, sizeof raw_mode);
  if (!valid_mode(raw_mode)) return CUDA_ERROR_INVALID_VALUE;
  if (stream->kind() == StreamKind::kLegacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::lock_guard lock(graph_mutex());
  if (capture_of(stream) != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  auto session = std::make_shared<CaptureSession>();
  std::vector<GraphNode*> initial;
  if (hGraph != nullptr) {
    auto* g = handle_cast<Graph>(hGraph, HandleKind::kGraph);
    if (g == nullptr || (count > 0 && deps == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
      auto* n = handle_cast<GraphNode>(deps[i], HandleKind::kGraphNode);
      if (n == nullptr || n->graph != g) return CUDA_ERROR_INVALID_VALUE;
      if (data != nullptr && (data[i].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT ||
                              data[i].from_port != 0 || data[i].to_port != 0)) {
        log(LogLevel::kError,
            "cuStreamBeginCaptureToGraph: edge data other than the default is not supported by "
            "the emulator");
        return CUDA_ERROR_NOT_SUPPORTED;
      }
      initial.push_back(n);
    }
    session->graph = g;
    session->user_graph = true;
  } else {
    session->graph = new_graph(true);
  }
  session->id = g_next_capture_id++;
  session->origin = stream;
  session->mode = mode;
  session->thread = std::this_thread::get_id();
  session->streams.push_back(stream);
  g_sessions.push_back(session);
  g_streams[stream] = StreamCapture{session, initial};
  update_capturing();
  return CUDA_SUCCESS;
}

CUresult end_capture(CUstream hStream, CUgraph* phGraph, bool per_thread) {
  Context* ctx;
  Stream* stream;
  if (CUresult r = stream_argument(hStream, per_thread, &ctx, &stream); r != CUDA_SUCCESS) return r;
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graph_mutex());
  StreamCapture* c = capture_of(stream);
  if (c == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  std::shared_ptr<CaptureSession> session = c->session;
  if (session->origin != stream) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  if (session->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
      session->thread != std::this_thread::get_id()) {
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  // Every stream that joined must have been joined back: its last nodes must be ancestors of
  // the origin stream's.
  CUresult result = CUDA_SUCCESS;
  if (session->invalidated) {
    result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else {
    std::unordered_set<const GraphNode*> joined;
    for (GraphNode* n : c->deps) ancestors(n, &joined);
    for (Stream* s : session->streams) {
      if (s == stream) continue;
      drop_destroyed(&capture_of(s)->deps);
      for (GraphNode* n : capture_of(s)->deps) {
        if (joined.count(n) == 0) result = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
      }
    }
  }
  end_session(session);
  if (result != CUDA_SUCCESS) {
    if (!session->user_graph) free_graph(session->graph);
    *phGraph = nullptr;
    return result;
  }
  *phGraph = reinterpret_cast<CUgraph>(session->graph);
  return CUDA_SUCCESS;
}

CUresult is_capturing(CUstream hStream, CUstreamCaptureStatus* status, bool per_thread) {
  Context* ctx;
  Stream* stream;
  CUresult r = stream_argument(hStream, per_thread, &ctx, &stream);
  if (stream == nullptr) return r;  // queries answer from a poisoned context too
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graph_mutex());
  StreamCapture* c = capture_of(stream);
  if (c == nullptr) {
    if (stream->kind() == StreamKind::kLegacy) {
      for (auto& [s, capture] : g_streams) {
        (void)capture;
        if (s->context() == ctx && s->blocking()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
    }
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  *status = c->session->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                    : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

CUresult capture_info(CUstream hStream, CUstreamCaptureStatus* status, cuuint64_t* id,
                      CUgraph* graph, const CUgraphNode** deps, const CUgraphEdgeData** data,
                      size_t* count, bool per_thread) {
  if (CUresult r = is_capturing(hStream, status, per_thread); r != CUDA_SUCCESS) return r;
  Context* ctx;
  Stream* stream;
  stream_argument(hStream, per_thread, &ctx, &stream);
  std::lock_guard lock(graph_mutex());
  StreamCapture* c = capture_of(stream);
  if (c == nullptr) return CUDA_SUCCESS;  // the other outputs are undefined when not capturing
  drop_destroyed(&c->deps);
  if (id != nullptr) *id = c->session->id;
  if (graph != nullptr) *graph = reinterpret_cast<CUgraph>(c->session->graph);
  if (deps != nullptr) *deps = reinterpret_cast<const CUgraphNode*>(c->deps.data());
  if (data != nullptr) *data = nullptr;  // every captured edge is a default one
  if (count != nullptr) *count = c->deps.size();
  return CUDA_SUCCESS;
}

CUresult update_dependencies(CUstream hStream, CUgraphNode* deps, const CUgraphEdgeData* data,
                             size_t count, unsigned flags, bool per_thread) {
  Context* ctx;
  Stream* stream;
  if (CUresult r = stream_argument(hStream, per_thread, &ctx, &stream); r != CUDA_SUCCESS) return r;
  if (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES)
    return CUDA_ERROR_INVALID_VALUE;
  if (count > 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graph_mutex());
  StreamCapture* c = capture_of(stream);
  if (c == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  if (c->session->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  std::vector<GraphNode*> nodes;
  for (size_t i = 0; i < count; ++i) {
    auto* n = handle_cast<GraphNode>(deps[i], HandleKind::kGraphNode);
    if (n == nullptr || n->graph != c->session->graph) return CUDA_ERROR_INVALID_VALUE;
    if (data != nullptr && (data[i].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT ||
                            data[i].from_port != 0 || data[i].to_port != 0)) {
      log(LogLevel::kError,
          "cuStreamUpdateCaptureDependencies: edge data other than the default is not supported "
          "by the emulator");
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    nodes.push_back(n);
  }
  if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) c->deps.clear();
  for (GraphNode* n : nodes) {
    if (std::find(c->deps.begin(), c->deps.end(), n) == c->deps.end()) c->deps.push_back(n);
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream) {
  return guarded("cuStreamBeginCapture", [&] {
    return begin_capture(hStream, nullptr, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL,
                         kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream) {
  return guarded("cuStreamBeginCapture_ptsz", [&] {
    return begin_capture(hStream, nullptr, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL,
                         kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return guarded("cuStreamBeginCapture_v2", [&] {
    return begin_capture(hStream, nullptr, nullptr, nullptr, 0, mode, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream,
                                                            CUstreamCaptureMode mode) {
  return guarded("cuStreamBeginCapture_v2_ptsz", [&] {
    return begin_capture(hStream, nullptr, nullptr, nullptr, 0, mode, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                                           const CUgraphNode* dependencies,
                                                           const CUgraphEdgeData* dependencyData,
                                                           size_t numDependencies,
                                                           CUstreamCaptureMode mode) {
  return guarded("cuStreamBeginCaptureToGraph", [&] {
    if (hGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return begin_capture(hStream, hGraph, dependencies, dependencyData, numDependencies, mode,
                         kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(
    CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
    const CUgraphEdgeData* dependencyData, size_t numDependencies, CUstreamCaptureMode mode) {
  return guarded("cuStreamBeginCaptureToGraph_ptsz", [&] {
    if (hGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return begin_capture(hStream, hGraph, dependencies, dependencyData, numDependencies, mode,
                         kPerThreadDefault);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  return guarded("cuStreamEndCapture",
                 [&] { return end_capture(hStream, phGraph, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  return guarded("cuStreamEndCapture_ptsz",
                 [&] { return end_capture(hStream, phGraph, kPerThreadDefault); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream,
                                                   CUstreamCaptureStatus* captureStatus) {
  return guarded("cuStreamIsCapturing",
                 [&] { return is_capturing(hStream, captureStatus, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream,
                                                        CUstreamCaptureStatus* captureStatus) {
  return guarded("cuStreamIsCapturing_ptsz",
                 [&] { return is_capturing(hStream, captureStatus, kPerThreadDefault); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream,
                                                      CUstreamCaptureStatus* captureStatus_out,
                                                      cuuint64_t* id_out) {
  return guarded("cuStreamGetCaptureInfo", [&] {
    return capture_info(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr,
                        kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream hStream,
                                                           CUstreamCaptureStatus* captureStatus_out,
                                                           cuuint64_t* id_out) {
  return guarded("cuStreamGetCaptureInfo_ptsz", [&] {
    return capture_info(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr,
                        kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream,
                                                         CUstreamCaptureStatus* captureStatus_out,
                                                         cuuint64_t* id_out, CUgraph* graph_out,
                                                         const CUgraphNode** dependencies_out,
                                                         size_t* numDependencies_out) {
  return guarded("cuStreamGetCaptureInfo_v2", [&] {
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                        numDependencies_out, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(
    CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
    CUgraph* graph_out, const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
  return guarded("cuStreamGetCaptureInfo_v2_ptsz", [&] {
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                        numDependencies_out, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream hStream,
                                                         CUstreamCaptureStatus* captureStatus_out,
                                                         cuuint64_t* id_out, CUgraph* graph_out,
                                                         const CUgraphNode** dependencies_out,
                                                         const CUgraphEdgeData** edgeData_out,
                                                         size_t* numDependencies_out) {
  return guarded("cuStreamGetCaptureInfo_v3", [&] {
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(
    CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
    CUgraph* graph_out, const CUgraphNode** dependencies_out, const CUgraphEdgeData** edgeData_out,
    size_t* numDependencies_out) {
  return guarded("cuStreamGetCaptureInfo_v3_ptsz", [&] {
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out, kPerThreadDefault);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream hStream,
                                                                 CUgraphNode* dependencies,
                                                                 size_t numDependencies,
                                                                 unsigned int flags) {
  return guarded("cuStreamUpdateCaptureDependencies", [&] {
    return update_dependencies(hStream, dependencies, nullptr, numDependencies, flags,
                               kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream,
                                                                      CUgraphNode* dependencies,
                                                                      size_t numDependencies,
                                                                      unsigned int flags) {
  return guarded("cuStreamUpdateCaptureDependencies_ptsz", [&] {
    return update_dependencies(hStream, dependencies, nullptr, numDependencies, flags,
                               kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2(
    CUstream hStream, CUgraphNode* dependencies, const CUgraphEdgeData* dependencyData,
    size_t numDependencies, unsigned int flags) {
  return guarded("cuStreamUpdateCaptureDependencies_v2", [&] {
    return update_dependencies(hStream, dependencies, dependencyData, numDependencies, flags,
                               kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2_ptsz(
    CUstream hStream, CUgraphNode* dependencies, const CUgraphEdgeData* dependencyData,
    size_t numDependencies, unsigned int flags) {
  return guarded("cuStreamUpdateCaptureDependencies_v2_ptsz", [&] {
    return update_dependencies(hStream, dependencies, dependencyData, numDependencies, flags,
                               kPerThreadDefault);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  return guarded("cuThreadExchangeStreamCaptureMode", [&] {
    if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // Read as the integer the caller stored: a value outside the enumeration is not a valid
    // CUstreamCaptureMode to load (undefined behaviour), and exactly what must be refused.
    int requested = 0;
    std::memcpy(&requested, mode, sizeof requested);
    if (!valid_mode(requested)) return CUDA_ERROR_INVALID_VALUE;
    std::swap(t_mode, *mode);
    return CUDA_SUCCESS;
  });
}
