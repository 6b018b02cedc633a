// CUDA graphs: creation and edges, nodes of every kind the recorder models, parameter changes,
// instantiation, executable-graph updates, launches. A launch is one small record naming the
// executable graph (never a copy of the graph); device-to-host memcpy nodes get their host bytes
// checksummed in stream order after each launch, as DeferredResult records about the launch.
#include <map>
#include <mutex>
#include <vector>

#include "graphs.h"
#include "hooks.h"
#include "launch_fields.h"
#include "session.h"
#include "stream_order.h"

namespace cusnap::icpt {
namespace {

using NodeKind = schema::GraphNode::Kind;
using ExecOp = schema::GraphExecCall::Op;

struct DtohNode {
  uint64_t node = 0;
  HostRegion region;
};

// Device-to-host memcpy nodes per graph, and per executable graph the ones it runs.
struct GraphTable {
  std::mutex mutex;
  std::map<uint64_t, std::vector<DtohNode>> graphs;
  std::map<uint64_t, std::vector<DtohNode>> execs;
  std::map<uint64_t, uint64_t> launches;  // exec -> launches so far
};

GraphTable& table() {
  static auto* t = new GraphTable;  // never destroyed: hooks may run during exit
  return *t;
}

void set_edges(capnp::List<schema::GraphEdge>::Builder out, const CUgraphNode* from,
               const CUgraphNode* to, const CUgraphEdgeData* data, size_t count, uint64_t target) {
  for (size_t i = 0; i < count; ++i) {
    out[i].setFrom(from != nullptr ? handle_value(from[i]) : 0);
    out[i].setTo(to != nullptr ? handle_value(to[i]) : target);
    if (data != nullptr) {
      out[i].setFromPort(data[i].from_port);
      out[i].setToPort(data[i].to_port);
      out[i].setType(data[i].type);
    }
  }
}

// cuGraphAdd/RemoveDependencies[_v2]: one record of the edges added or removed (edge data only
// from the _v2 forms).
void record_edge_change(CallScope& call, schema::GraphCall::Op op, CUgraph graph,
                        const CUgraphNode* from, const CUgraphNode* to, const CUgraphEdgeData* data,
                        size_t count) {
  auto record = call.record().initGraph();
  record.setOp(op);
  record.setGraph(handle_value(graph));
  if (from != nullptr && to != nullptr)
    set_edges(record.initEdges(static_cast<unsigned>(count)), from, to, data, count, 0);
  call.commit();
}

// The dependencies of `node` as the driver has them (with edge data where it can tell).
void query_dependencies(schema::GraphNode::Builder record, CUgraphNode node) {
  size_t count = 0;
  if (auto v2 = CUSNAP_REAL(cuGraphNodeGetDependencies_v2);
      v2 != nullptr && v2(node, nullptr, nullptr, &count) == CUDA_SUCCESS) {
    std::vector<CUgraphNode> deps(count);
    std::vector<CUgraphEdgeData> data(count);
    if (count == 0 || v2(node, deps.data(), data.data(), &count) == CUDA_SUCCESS) {
      set_edges(record.initDependencies(static_cast<unsigned>(count)), deps.data(), nullptr,
                data.data(), count, handle_value(node));
      return;
    }
  }
  auto v1 = CUSNAP_REAL(cuGraphNodeGetDependencies);
  if (v1 == nullptr || v1(node, nullptr, &count) != CUDA_SUCCESS) return;
  std::vector<CUgraphNode> deps(count);
  if (count != 0 && v1(node, deps.data(), &count) != CUDA_SUCCESS) return;
  set_edges(record.initDependencies(static_cast<unsigned>(count)), deps.data(), nullptr, nullptr,
            count, handle_value(node));
}

schema::GraphNode::Builder add_record(CallScope& call, NodeKind kind, CUgraphNode* out,
                                      CUgraph graph, const CUgraphNode* deps, size_t count,
                                      const CUgraphEdgeData* data = nullptr) {
  auto node = call.record().initGraphNode();
  node.setOp(schema::GraphNode::Op::ADD);
  node.setKind(kind);
  node.setGraph(handle_value(graph));
  uint64_t made = call.result() == CUDA_SUCCESS && out != nullptr ? handle_value(*out) : 0;
  node.setNode(made);
  if (deps != nullptr && count > 0)
    set_edges(node.initDependencies(static_cast<unsigned>(count)), deps, nullptr, data, count,
              made);
  return node;
}

// A kernel node's parameters, packed as a launch's (launch_fields.h).
template <class Params>
void fill_kernel(schema::Launch::Builder kernel, const Params* p, CUfunction function) {
  if (p == nullptr) return;
  Geometry g{{p->gridDimX, p->gridDimY, p->gridDimZ},
             {p->blockDimX, p->blockDimY, p->blockDimZ},
             p->sharedMemBytes,
             nullptr};
  auto fill = [&](format::LaunchFields& fields, bool) { format::build_launch(fields, kernel); };
  with_launch_fields(schema::Launch::Kind::LAUNCH_KERNEL, function, g, p->kernelParams, p->extra,
                     nullptr, 0, false, fill);
}

CUfunction function_of(const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  return p != nullptr ? p->func : nullptr;
}
CUfunction function_of(const CUDA_KERNEL_NODE_PARAMS_v2* p) {
  if (p == nullptr) return nullptr;
  return p->func != nullptr ? p->func : reinterpret_cast<CUfunction>(p->kern);
}
CUfunction function_of(const CUDA_KERNEL_NODE_PARAMS_v3* p) {
  if (p == nullptr) return nullptr;
  return p->func != nullptr ? p->func : reinterpret_cast<CUfunction>(p->kern);
}

template <class Memset>
void fill_memset(schema::Memset::Builder out, const Memset* p) {
  if (p == nullptr) return;
  out.setAddress(p->dst);
  out.setValue(p->value);
  out.setElementSize(static_cast<uint8_t>(p->elementSize));
  out.setWidth(p->width);
  out.setHeight(p->height);
  out.setPitch(p->pitch);
  out.setAsync(true);
}

// The generic node API (CUgraphNodeParams): the record kind of a driver node type.
NodeKind kind_of(CUgraphNodeType type) {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return NodeKind::KERNEL;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return NodeKind::MEMCPY;
    case CU_GRAPH_NODE_TYPE_MEMSET:
      return NodeKind::MEMSET;
    case CU_GRAPH_NODE_TYPE_HOST:
      return NodeKind::HOST;
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return NodeKind::CHILD_GRAPH;
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return NodeKind::EMPTY;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return NodeKind::EVENT_WAIT;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return NodeKind::EVENT_RECORD;
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
      return NodeKind::EXTERNAL_SEMAPHORE_SIGNAL;
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      return NodeKind::EXTERNAL_SEMAPHORE_WAIT;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return NodeKind::MEM_ALLOC;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return NodeKind::MEM_FREE;
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return NodeKind::BATCH_MEM_OP;
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      return NodeKind::CONDITIONAL;
    default:
      return NodeKind::OTHER;
  }
}

// A CUgraphNodeParams decoded by its type into the fields the per-kind entry points record
// (`node`'s kind already set from it). `graph`, `made`: a device-to-host memcpy node added to
// `graph` as `made` is checksummed after each launch (0, 0: a parameter change, not noted).
void fill_generic(schema::GraphNode::Builder node, const CUgraphNodeParams& p, bool ok,
                  uint64_t graph, uint64_t made) {
  node.setApiKind(static_cast<int32_t>(p.type));
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      fill_kernel(node.initKernel(), &p.kernel, function_of(&p.kernel));
      break;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      fill_memcpy_node(&p.memcpy.copyParams, node.initMemcpy(), graph, made);
      break;
    case CU_GRAPH_NODE_TYPE_MEMSET:
      fill_memset(node.initMemset(), &p.memset);
      break;
    case CU_GRAPH_NODE_TYPE_HOST:
      node.setHostFunction(reinterpret_cast<uint64_t>(p.host.fn));
      node.setUserData(handle_value(p.host.userData));
      break;
    case CU_GRAPH_NODE_TYPE_GRAPH:
      node.setChildGraph(handle_value(p.graph.graph));
      break;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      node.setEvent(handle_value(p.eventWait.event));
      break;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      node.setEvent(handle_value(p.eventRecord.event));
      break;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      if (ok) node.setAddress(p.alloc.dptr);  // an out-parameter, set by the driver
      node.setSize(p.alloc.bytesize);
      break;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      node.setAddress(p.free.dptr);
      break;
    default:  // recorded by kind only: the replay refuses these (docs/replay.md, "Graphs")
      break;
  }
}

// cuGraphAddNode[_v2]: the node recorded as its per-kind entry point records it.
void add_generic(CallScope& call, CUgraphNode* out, CUgraph graph, const CUgraphNode* deps,
                 const CUgraphEdgeData* data, size_t count, const CUgraphNodeParams* p) {
  if (p == nullptr) {
    add_record(call, NodeKind::OTHER, out, graph, deps, count, data);
    call.commit();
    return;
  }
  auto node = add_record(call, kind_of(p->type), out, graph, deps, count, data);
  const bool ok = call.result() == CUDA_SUCCESS;
  fill_generic(node, *p, ok, handle_value(graph), ok && out != nullptr ? handle_value(*out) : 0);
  call.commit();
}

schema::GraphExecCall::Builder exec_record(CallScope& call, ExecOp op, CUgraphExec exec) {
  auto record = call.record().initGraphExec();
  record.setOp(op);
  record.setExec(handle_value(exec));
  return record;
}

void instantiated(CallScope& call, CUgraphExec* exec, CUgraph graph, uint64_t flags,
                  CUstream upload, CUgraphNode error_node) {
  bool ok = call.result() == CUDA_SUCCESS && exec != nullptr;
  auto record = exec_record(call, ExecOp::INSTANTIATE, ok ? *exec : nullptr);
  record.setGraph(handle_value(graph));
  record.setFlags(flags);
  record.setStream(handle_value(upload));
  record.setErrorNode(handle_value(error_node));
  call.commit();
  if (!ok) return;
  GraphTable& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.graphs.find(handle_value(graph));
  t.execs[handle_value(*exec)] = it != t.graphs.end() ? it->second : std::vector<DtohNode>{};
  t.launches[handle_value(*exec)] = 0;
}

void updated(CallScope& call, CUgraphExec exec, CUgraph graph, int32_t result, CUgraphNode error) {
  auto record = exec_record(call, ExecOp::UPDATE, exec);
  record.setGraph(handle_value(graph));
  record.setUpdateResult(result);
  record.setErrorNode(handle_value(error));
  call.commit();
  if (call.result() != CUDA_SUCCESS) return;
  // The executable graph now copies to the host where the new graph's nodes do.
  GraphTable& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.graphs.find(handle_value(graph));
  t.execs[handle_value(exec)] = it != t.graphs.end() ? it->second : std::vector<DtohNode>{};
}

// The host memory a node of `exec` wrote is no longer the one noted: stop checksumming it.
void forget_exec_node(CUgraphExec exec, CUgraphNode node) {
  GraphTable& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.execs.find(handle_value(exec));
  if (it == t.execs.end()) return;
  std::erase_if(it->second, [&](const DtohNode& n) { return n.node == handle_value(node); });
}

}  // namespace

bool captured_node(CUstream stream, bool per_thread, CapturedNode* out) noexcept {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t count = 0;
  auto info = per_thread ? CUSNAP_REAL(cuStreamGetCaptureInfo_v2_ptsz)
                         : CUSNAP_REAL(cuStreamGetCaptureInfo_v2);
  if (info == nullptr || info(stream, &status, &id, &graph, &deps, &count) != CUDA_SUCCESS ||
      status != CU_STREAM_CAPTURE_STATUS_ACTIVE || count == 0 || deps == nullptr) {
    return false;
  }
  out->stream = handle_value(stream);
  out->graph = handle_value(graph);
  out->node = handle_value(deps[count - 1]);
  out->capture_id = id;
  return true;
}

schema::GraphNode::Builder init_node_record(CallScope& call, schema::GraphNode::Kind kind,
                                            uint64_t graph, uint64_t node) {
  auto record = call.record().initGraphNode();
  record.setOp(schema::GraphNode::Op::ADD);
  record.setKind(kind);
  record.setGraph(graph);
  record.setNode(node);
  query_dependencies(record, reinterpret_cast<CUgraphNode>(node));
  return record;
}

void set_captured(schema::GraphNode::Builder node, const CapturedNode& captured) {
  node.setCaptured(true);
  node.setCaptureStream(captured.stream);
  node.setCaptureId(captured.capture_id);
}

void note_dtoh_node(uint64_t graph, uint64_t node, const HostRegion& region) noexcept {
  try {
    GraphTable& t = table();
    std::lock_guard lock(t.mutex);
    t.graphs[graph].push_back({node, region});
  } catch (...) {
    // Out of memory: that node's copies are not checksummed (the replay reports them unverified).
  }
}

namespace hooks {

// clang-format off

CUSNAP_POST_HOOK(cuGraphCreate)(CallScope& call, CUresult result, CUgraph* phGraph, unsigned int flags) {
  auto record = call.record().initGraph();
  record.setOp(schema::GraphCall::Op::CREATE);
  if (result == CUDA_SUCCESS && phGraph != nullptr) record.setGraph(handle_value(*phGraph));
  record.setFlags(flags);
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphDestroy)(CallScope& call, CUresult result, CUgraph hGraph) {
  auto record = call.record().initGraph();
  record.setOp(schema::GraphCall::Op::DESTROY);
  record.setGraph(handle_value(hGraph));
  call.commit();
  if (result != CUDA_SUCCESS) return;
  GraphTable& t = table();
  std::lock_guard lock(t.mutex);
  t.graphs.erase(handle_value(hGraph));
}

CUSNAP_POST_HOOK(cuGraphClone)(CallScope& call, CUresult result, CUgraph* phGraphClone, CUgraph originalGraph) {
  auto record = call.record().initGraph();
  record.setOp(schema::GraphCall::Op::CLONE);
  if (result == CUDA_SUCCESS && phGraphClone != nullptr) record.setGraph(handle_value(*phGraphClone));
  record.setOriginal(handle_value(originalGraph));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddDependencies)(CallScope& call, CUresult, CUgraph hGraph, const CUgraphNode* from,
                                         const CUgraphNode* to, size_t numDependencies) {
  record_edge_change(call, schema::GraphCall::Op::ADD_DEPENDENCIES, hGraph, from, to, nullptr, numDependencies);
}

CUSNAP_POST_HOOK(cuGraphAddDependencies_v2)(CallScope& call, CUresult, CUgraph hGraph, const CUgraphNode* from,
                                            const CUgraphNode* to, const CUgraphEdgeData* edgeData,
                                            size_t numDependencies) {
  record_edge_change(call, schema::GraphCall::Op::ADD_DEPENDENCIES, hGraph, from, to, edgeData, numDependencies);
}

CUSNAP_POST_HOOK(cuGraphRemoveDependencies)(CallScope& call, CUresult, CUgraph hGraph, const CUgraphNode* from,
                                            const CUgraphNode* to, size_t numDependencies) {
  record_edge_change(call, schema::GraphCall::Op::REMOVE_DEPENDENCIES, hGraph, from, to, nullptr, numDependencies);
}

CUSNAP_POST_HOOK(cuGraphRemoveDependencies_v2)(CallScope& call, CUresult, CUgraph hGraph, const CUgraphNode* from,
                                               const CUgraphNode* to, const CUgraphEdgeData* edgeData,
                                               size_t numDependencies) {
  record_edge_change(call, schema::GraphCall::Op::REMOVE_DEPENDENCIES, hGraph, from, to, edgeData, numDependencies);
}

CUSNAP_POST_HOOK(cuGraphDestroyNode)(CallScope& call, CUresult, CUgraphNode hNode) {
  auto record = call.record().initGraph();
  record.setOp(schema::GraphCall::Op::DESTROY_NODE);
  record.setNode(handle_value(hNode));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddKernelNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                       const CUgraphNode* dependencies, size_t numDependencies,
                                       const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  auto node = add_record(call, NodeKind::KERNEL, phGraphNode, hGraph, dependencies, numDependencies);
  fill_kernel(node.initKernel(), nodeParams, function_of(nodeParams));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddKernelNode_v2)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                          const CUgraphNode* dependencies, size_t numDependencies,
                                          const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  auto node = add_record(call, NodeKind::KERNEL, phGraphNode, hGraph, dependencies, numDependencies);
  fill_kernel(node.initKernel(), nodeParams, function_of(nodeParams));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphKernelNodeSetParams)(CallScope& call, CUresult, CUgraphNode hNode,
                                             const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  auto node = call.record().initGraphNode();
  node.setOp(schema::GraphNode::Op::SET_PARAMS);
  node.setKind(NodeKind::KERNEL);
  node.setNode(handle_value(hNode));
  fill_kernel(node.initKernel(), nodeParams, function_of(nodeParams));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphKernelNodeSetParams_v2)(CallScope& call, CUresult, CUgraphNode hNode,
                                                const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  auto node = call.record().initGraphNode();
  node.setOp(schema::GraphNode::Op::SET_PARAMS);
  node.setKind(NodeKind::KERNEL);
  node.setNode(handle_value(hNode));
  fill_kernel(node.initKernel(), nodeParams, function_of(nodeParams));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddMemcpyNode)(CallScope& call, CUresult result, CUgraphNode* phGraphNode, CUgraph hGraph,
                                       const CUgraphNode* dependencies, size_t numDependencies,
                                       const CUDA_MEMCPY3D* copyParams, CUcontext) {
  auto node = add_record(call, NodeKind::MEMCPY, phGraphNode, hGraph, dependencies, numDependencies);
  if (copyParams != nullptr) {
    uint64_t made = result == CUDA_SUCCESS && phGraphNode != nullptr ? handle_value(*phGraphNode) : 0;
    fill_memcpy_node(copyParams, node.initMemcpy(), handle_value(hGraph), made);
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddMemsetNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                       const CUgraphNode* dependencies, size_t numDependencies,
                                       const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext) {
  auto node = add_record(call, NodeKind::MEMSET, phGraphNode, hGraph, dependencies, numDependencies);
  fill_memset(node.initMemset(), memsetParams);
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddHostNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                     const CUgraphNode* dependencies, size_t numDependencies,
                                     const CUDA_HOST_NODE_PARAMS* nodeParams) {
  auto node = add_record(call, NodeKind::HOST, phGraphNode, hGraph, dependencies, numDependencies);
  if (nodeParams != nullptr) {
    node.setHostFunction(reinterpret_cast<uint64_t>(nodeParams->fn));
    node.setUserData(handle_value(nodeParams->userData));
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddEmptyNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                      const CUgraphNode* dependencies, size_t numDependencies) {
  add_record(call, NodeKind::EMPTY, phGraphNode, hGraph, dependencies, numDependencies);
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddEventRecordNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                            const CUgraphNode* dependencies, size_t numDependencies, CUevent event) {
  add_record(call, NodeKind::EVENT_RECORD, phGraphNode, hGraph, dependencies, numDependencies)
      .setEvent(handle_value(event));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddEventWaitNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                          const CUgraphNode* dependencies, size_t numDependencies, CUevent event) {
  add_record(call, NodeKind::EVENT_WAIT, phGraphNode, hGraph, dependencies, numDependencies)
      .setEvent(handle_value(event));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddChildGraphNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                           const CUgraphNode* dependencies, size_t numDependencies,
                                           CUgraph childGraph) {
  add_record(call, NodeKind::CHILD_GRAPH, phGraphNode, hGraph, dependencies, numDependencies)
      .setChildGraph(handle_value(childGraph));
  call.commit();
}

// Kinds the replay refuses (docs/replay.md, "Graphs"), recorded typed so that the refusal names
// them: external semaphores live outside the capture, memory nodes and batch memory operations
// are not rebuilt yet.
CUSNAP_POST_HOOK(cuGraphAddExternalSemaphoresSignalNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode,
                                                         CUgraph hGraph, const CUgraphNode* dependencies,
                                                         size_t numDependencies,
                                                         const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v1*) {
  add_record(call, NodeKind::EXTERNAL_SEMAPHORE_SIGNAL, phGraphNode, hGraph, dependencies, numDependencies);
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddExternalSemaphoresWaitNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode,
                                                       CUgraph hGraph, const CUgraphNode* dependencies,
                                                       size_t numDependencies,
                                                       const CUDA_EXT_SEM_WAIT_NODE_PARAMS_v1*) {
  add_record(call, NodeKind::EXTERNAL_SEMAPHORE_WAIT, phGraphNode, hGraph, dependencies, numDependencies);
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddMemAllocNode)(CallScope& call, CUresult result, CUgraphNode* phGraphNode, CUgraph hGraph,
                                         const CUgraphNode* dependencies, size_t numDependencies,
                                         CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  auto node = add_record(call, NodeKind::MEM_ALLOC, phGraphNode, hGraph, dependencies, numDependencies);
  if (nodeParams != nullptr) {
    if (result == CUDA_SUCCESS) node.setAddress(nodeParams->dptr);
    node.setSize(nodeParams->bytesize);
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddMemFreeNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                        const CUgraphNode* dependencies, size_t numDependencies, CUdeviceptr dptr) {
  add_record(call, NodeKind::MEM_FREE, phGraphNode, hGraph, dependencies, numDependencies).setAddress(dptr);
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphAddBatchMemOpNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                           const CUgraphNode* dependencies, size_t numDependencies,
                                           const CUDA_BATCH_MEM_OP_NODE_PARAMS*) {
  add_record(call, NodeKind::BATCH_MEM_OP, phGraphNode, hGraph, dependencies, numDependencies);
  call.commit();
}

// The generic node API: each CUgraphNodeParams recorded typed, as its per-kind entry point.
CUSNAP_POST_HOOK(cuGraphAddNode)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                 const CUgraphNode* dependencies, size_t numDependencies,
                                 CUgraphNodeParams* nodeParams) {
  add_generic(call, phGraphNode, hGraph, dependencies, nullptr, numDependencies, nodeParams);
}

CUSNAP_POST_HOOK(cuGraphAddNode_v2)(CallScope& call, CUresult, CUgraphNode* phGraphNode, CUgraph hGraph,
                                    const CUgraphNode* dependencies, const CUgraphEdgeData* dependencyData,
                                    size_t numDependencies, CUgraphNodeParams* nodeParams) {
  add_generic(call, phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams);
}

CUSNAP_POST_HOOK(cuGraphNodeSetParams)(CallScope& call, CUresult, CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  auto node = call.record().initGraphNode();
  node.setOp(schema::GraphNode::Op::SET_PARAMS);
  node.setNode(handle_value(hNode));
  node.setKind(nodeParams != nullptr ? kind_of(nodeParams->type) : NodeKind::OTHER);
  if (nodeParams != nullptr) fill_generic(node, *nodeParams, call.result() == CUDA_SUCCESS, 0, 0);
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphExecNodeSetParams)(CallScope& call, CUresult, CUgraphExec hGraphExec, CUgraphNode hNode,
                                           CUgraphNodeParams* nodeParams) {
  auto record = exec_record(call, ExecOp::SET_NODE_PARAMS, hGraphExec);
  record.setNode(handle_value(hNode));
  auto params = record.initParams();
  params.setOp(schema::GraphNode::Op::SET_PARAMS);
  params.setNode(handle_value(hNode));
  params.setKind(nodeParams != nullptr ? kind_of(nodeParams->type) : NodeKind::OTHER);
  if (nodeParams != nullptr) fill_generic(params, *nodeParams, call.result() == CUDA_SUCCESS, 0, 0);
  call.commit();
  // A memcpy node's host destination may have changed: its copies are no longer checksummed.
  if (nodeParams != nullptr && nodeParams->type == CU_GRAPH_NODE_TYPE_MEMCPY) forget_exec_node(hGraphExec, hNode);
}

CUSNAP_POST_HOOK(cuGraphInstantiateWithFlags)(CallScope& call, CUresult, CUgraphExec* phGraphExec, CUgraph hGraph,
                                              unsigned long long flags) {
  instantiated(call, phGraphExec, hGraph, flags, nullptr, nullptr);
}

CUSNAP_POST_HOOK(cuGraphInstantiate)(CallScope& call, CUresult, CUgraphExec* phGraphExec, CUgraph hGraph,
                                     CUgraphNode* phErrorNode, char*, size_t) {
  instantiated(call, phGraphExec, hGraph, 0, nullptr,
               call.result() != CUDA_SUCCESS && phErrorNode != nullptr ? *phErrorNode : nullptr);
}

CUSNAP_POST_HOOK(cuGraphInstantiate_v2)(CallScope& call, CUresult, CUgraphExec* phGraphExec, CUgraph hGraph,
                                        CUgraphNode* phErrorNode, char*, size_t) {
  instantiated(call, phGraphExec, hGraph, 0, nullptr,
               call.result() != CUDA_SUCCESS && phErrorNode != nullptr ? *phErrorNode : nullptr);
}

CUSNAP_POST_HOOK(cuGraphInstantiateWithParams)(CallScope& call, CUresult, CUgraphExec* phGraphExec, CUgraph hGraph,
                                               CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  if (instantiateParams == nullptr) return instantiated(call, phGraphExec, hGraph, 0, nullptr, nullptr);
  instantiated(call, phGraphExec, hGraph, instantiateParams->flags, instantiateParams->hUploadStream,
               instantiateParams->hErrNode_out);
}

CUSNAP_POST_HOOK(cuGraphExecUpdate_v2)(CallScope& call, CUresult, CUgraphExec hGraphExec, CUgraph hGraph,
                                       CUgraphExecUpdateResultInfo* resultInfo) {
  updated(call, hGraphExec, hGraph, resultInfo != nullptr ? static_cast<int32_t>(resultInfo->result) : 0,
          resultInfo != nullptr ? resultInfo->errorNode : nullptr);
}

CUSNAP_POST_HOOK(cuGraphExecUpdate)(CallScope& call, CUresult, CUgraphExec hGraphExec, CUgraph hGraph,
                                    CUgraphNode* hErrorNode_out, CUgraphExecUpdateResult* updateResult_out) {
  updated(call, hGraphExec, hGraph, updateResult_out != nullptr ? static_cast<int32_t>(*updateResult_out) : 0,
          hErrorNode_out != nullptr ? *hErrorNode_out : nullptr);
}

CUSNAP_POST_HOOK(cuGraphExecKernelNodeSetParams)(CallScope& call, CUresult, CUgraphExec hGraphExec, CUgraphNode hNode,
                                                 const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  auto record = exec_record(call, ExecOp::SET_NODE_PARAMS, hGraphExec);
  record.setNode(handle_value(hNode));
  auto params = record.initParams();
  params.setOp(schema::GraphNode::Op::SET_PARAMS);
  params.setKind(NodeKind::KERNEL);
  params.setNode(handle_value(hNode));
  fill_kernel(params.initKernel(), nodeParams, function_of(nodeParams));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphExecKernelNodeSetParams_v2)(CallScope& call, CUresult, CUgraphExec hGraphExec,
                                                    CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  auto record = exec_record(call, ExecOp::SET_NODE_PARAMS, hGraphExec);
  record.setNode(handle_value(hNode));
  auto params = record.initParams();
  params.setOp(schema::GraphNode::Op::SET_PARAMS);
  params.setKind(NodeKind::KERNEL);
  params.setNode(handle_value(hNode));
  fill_kernel(params.initKernel(), nodeParams, function_of(nodeParams));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphExecMemsetNodeSetParams)(CallScope& call, CUresult, CUgraphExec hGraphExec, CUgraphNode hNode,
                                                 const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext) {
  auto record = exec_record(call, ExecOp::SET_NODE_PARAMS, hGraphExec);
  record.setNode(handle_value(hNode));
  auto params = record.initParams();
  params.setOp(schema::GraphNode::Op::SET_PARAMS);
  params.setKind(NodeKind::MEMSET);
  params.setNode(handle_value(hNode));
  fill_memset(params.initMemset(), memsetParams);
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphExecMemcpyNodeSetParams)(CallScope& call, CUresult, CUgraphExec hGraphExec, CUgraphNode hNode,
                                                 const CUDA_MEMCPY3D* copyParams, CUcontext) {
  auto record = exec_record(call, ExecOp::SET_NODE_PARAMS, hGraphExec);
  record.setNode(handle_value(hNode));
  auto params = record.initParams();
  params.setOp(schema::GraphNode::Op::SET_PARAMS);
  params.setKind(NodeKind::MEMCPY);
  params.setNode(handle_value(hNode));
  // The node's host destination changed: its copies are no longer checksummed (docs/capture.md).
  if (copyParams != nullptr) fill_memcpy_node(copyParams, params.initMemcpy(), 0, 0);
  call.commit();
  forget_exec_node(hGraphExec, hNode);
}

CUSNAP_POST_HOOK(cuGraphNodeSetEnabled)(CallScope& call, CUresult, CUgraphExec hGraphExec, CUgraphNode hNode,
                                        unsigned int isEnabled) {
  auto record = exec_record(call, ExecOp::SET_NODE_ENABLED, hGraphExec);
  record.setNode(handle_value(hNode));
  record.setEnabled(isEnabled != 0);
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphUpload)(CallScope& call, CUresult, CUgraphExec hGraphExec, CUstream hStream) {
  exec_record(call, ExecOp::UPLOAD, hGraphExec).setStream(handle_value(hStream));
  call.commit();
}

CUSNAP_POST_HOOK(cuGraphExecDestroy)(CallScope& call, CUresult result, CUgraphExec hGraphExec) {
  exec_record(call, ExecOp::DESTROY, hGraphExec);
  call.commit();
  if (result != CUDA_SUCCESS) return;
  GraphTable& t = table();
  std::lock_guard lock(t.mutex);
  t.execs.erase(handle_value(hGraphExec));
  t.launches.erase(handle_value(hGraphExec));
}

// clang-format on

// One record per launch, naming the executable graph; then, in stream order after it, the
// checksum of what each of its device-to-host memcpy nodes delivered.
CUSNAP_POST_HOOK(cuGraphLaunch)
(CallScope& call, CUresult result, CUgraphExec hGraphExec, CUstream hStream) {
  auto record = exec_record(call, ExecOp::LAUNCH, hGraphExec);
  record.setStream(handle_value(hStream));
  std::vector<DtohNode> dtoh;
  {
    GraphTable& t = table();
    std::lock_guard lock(t.mutex);
    uint64_t& launches = t.launches[handle_value(hGraphExec)];
    record.setLaunchIndex(launches);
    if (result == CUDA_SUCCESS) {
      ++launches;
      if (auto it = t.execs.find(handle_value(hGraphExec)); it != t.execs.end()) dtoh = it->second;
    }
  }
  uint64_t seq = call.commit();
  Session* session = Session::current();
  if (result != CUDA_SUCCESS || dtoh.empty() || session == nullptr || seq == UINT64_MAX ||
      !session->config().dtoh_checksums) {
    return;
  }
  bool per_thread = call.per_thread_stream();
  for (const DtohNode& n : dtoh) {
    HostRegion region = n.region;
    uint64_t node = n.node;
    bool queued = run_in_stream_order(hStream, per_thread, [session, region, seq, node] {
      DeferredResult deferred;
      deferred.call_seq = seq;
      deferred.graph_node = node;
      deferred.has_host_checksum = true;
      deferred.host_checksum = checksum(region);
      session->deferred_result(deferred);
    });
    if (!queued) {
      DeferredResult deferred;
      deferred.call_seq = seq;
      deferred.graph_node = node;
      deferred.missing =
          "no device-to-host checksum: the driver refused the stream-ordered host "
          "function (or the stream is being captured)";
      session->deferred_result(deferred);
    }
  }
}

// Asked for the count alone (nodes = NULL: what cudaGraphGetNodes(graph, nullptr, &n) does, as
// rt_graph did on an H200), the call produces no node handle: a query, nothing for a replay to
// model. With an array it hands out handles the application may use later: not a query.
void record_node_list(CallScope& call, const CUgraphNode* nodes) {
  call.record().initGeneric().setAffectsDeviceState(nodes != nullptr);
  call.commit();
}
CUSNAP_POST_HOOK(cuGraphGetNodes)
(CallScope& call, CUresult, CUgraph, CUgraphNode* nodes, size_t*) { record_node_list(call, nodes); }
CUSNAP_POST_HOOK(cuGraphGetRootNodes)
(CallScope& call, CUresult, CUgraph, CUgraphNode* nodes, size_t*) { record_node_list(call, nodes); }

}  // namespace hooks
}  // namespace cusnap::icpt
