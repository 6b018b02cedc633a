// The graph entry points (cu*): creation, nodes and edges, node parameters, clone, instantiate,
// launch, exec updates (graph.h). The engine behind them is graph_engine.cpp.
#include "driver/graph.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/state.h"

using namespace cusnap::emu::driver;

namespace {

// ---- node parameters ----------------------------------------------------------------------

template <class Params>
CUresult kernel_spec(const Params& p, Function* f, std::unique_ptr<GraphNode>* out) {
  if (f == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LaunchRequest r;
  r.grid = {p.gridDimX, p.gridDimY, p.gridDimZ};
  r.block = {p.blockDimX, p.blockDimY, p.blockDimZ};
  r.shared = p.sharedMemBytes;
  PreparedLaunch prepared;
  if (CUresult e = prepare_launch(f, r, p.kernelParams, p.extra, &prepared); e != CUDA_SUCCESS)
    return e;
  *out = kernel_node(prepared);
  return CUDA_SUCCESS;
}

Function* kernel_function(const CUDA_KERNEL_NODE_PARAMS_v1& p) {
  return function_from_handle(p.func);
}
Function* kernel_function(const CUDA_KERNEL_NODE_PARAMS& p) {
  return function_from_handle(p.func != nullptr ? static_cast<const void*>(p.func)
                                                : static_cast<const void*>(p.kern));
}

template <class Params>
void kernel_params_of(const GraphNode& n, Params* p) {
  std::memset(p, 0, sizeof *p);
  const LaunchRequest& r = n.kernel.request;
  p->func = reinterpret_cast<CUfunction>(n.kernel.function);
  p->gridDimX = r.grid.x;
  p->gridDimY = r.grid.y;
  p->gridDimZ = r.grid.z;
  p->blockDimX = r.block.x;
  p->blockDimY = r.block.y;
  p->blockDimZ = r.block.z;
  p->sharedMemBytes = r.shared;
  p->kernelParams = const_cast<void**>(n.kernel_param_pointers.data());
  p->extra = nullptr;
}

CUresult memcpy_spec(const CUDA_MEMCPY3D* p, CUcontext ctx, std::unique_ptr<GraphNode>* out) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx != nullptr && context_from_handle(ctx) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (CUresult e = check_memcpy_node(*p); e != CUDA_SUCCESS) return e;
  if (uint64_t{p->WidthInBytes} * p->Height * p->Depth == 0) return CUDA_ERROR_INVALID_VALUE;
  auto n = std::make_unique<GraphNode>();
  n->type = CU_GRAPH_NODE_TYPE_MEMCPY;
  n->copy = *p;
  *out = std::move(n);
  return CUDA_SUCCESS;
}

CUresult memset_spec(const CUDA_MEMSET_NODE_PARAMS* p, CUcontext ctx,
                     std::unique_ptr<GraphNode>* out) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx != nullptr && context_from_handle(ctx) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (CUresult e = check_memset_node(*p); e != CUDA_SUCCESS) return e;
  auto n = std::make_unique<GraphNode>();
  n->type = CU_GRAPH_NODE_TYPE_MEMSET;
  n->memset = *p;
  *out = std::move(n);
  return CUDA_SUCCESS;
}

CUresult host_spec(const CUDA_HOST_NODE_PARAMS* p, std::unique_ptr<GraphNode>* out) {
  if (p == nullptr || p->fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto n = std::make_unique<GraphNode>();
  n->type = CU_GRAPH_NODE_TYPE_HOST;
  n->host = *p;
  *out = std::move(n);
  return CUDA_SUCCESS;
}

CUresult mem_op_spec(CUcontext ctx, unsigned count, const CUstreamBatchMemOpParams* ops,
                     unsigned flags, std::unique_ptr<GraphNode>* out) {
  if (ctx != nullptr && context_from_handle(ctx) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (count > 0 && ops == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto n = std::make_unique<GraphNode>();
  n->type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
  n->mem_ops.assign(ops, ops + count);
  n->mem_ops_ctx = ctx;
  if (CUresult e = check_mem_op_node(n->mem_ops, flags); e != CUDA_SUCCESS) return e;
  *out = std::move(n);
  return CUDA_SUCCESS;
}

CUresult event_spec(CUgraphNodeType type, CUevent e, std::unique_ptr<GraphNode>* out) {
  if (!is_handle(e, HandleKind::kEvent)) return CUDA_ERROR_INVALID_VALUE;
  auto n = std::make_unique<GraphNode>();
  n->type = type;
  n->event = e;
  *out = std::move(n);
  return CUDA_SUCCESS;
}

// The common path of every cuGraphAdd*Node: the graph, then the node's own checks.
template <class Make>
CUresult add_node(CUgraphNode* ph, CUgraph hGraph, const CUgraphNode* deps, size_t count,
                  Make&& make) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graph_mutex());
  Graph* g = graph_from(hGraph);
  if (ph == nullptr || g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::unique_ptr<GraphNode> node;
  if (CUresult r = make(&node); r != CUDA_SUCCESS) return r;
  GraphNode* n = nullptr;
  if (CUresult r = attach_node(g, std::move(node), deps, count, &n); r != CUDA_SUCCESS) return r;
  *ph = handle_of(n);
  return CUDA_SUCCESS;
}

// A node of a given type for the node-parameter getters and setters.
template <class Body>
CUresult with_node(CUgraphNode h, CUgraphNodeType type, Body&& body) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graph_mutex());
  GraphNode* n = node_from(h);
  if (n == nullptr || n->type != type) return CUDA_ERROR_INVALID_VALUE;
  return body(n);
}

// Answers a "nodes into an array with a count" query as the driver documents: with a NULL
// array the count; otherwise up to *count entries, the rest NULL, and *count the real number.
CUresult answer_list(const std::vector<GraphNode*>& list, CUgraphNode* out, CUgraphEdgeData* data,
                     size_t* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (out == nullptr) {
    *count = list.size();
    return CUDA_SUCCESS;
  }
  for (size_t i = 0; i < *count; ++i) {
    out[i] = i < list.size() ? handle_of(list[i]) : nullptr;
    if (data != nullptr) std::memset(&data[i], 0, sizeof data[i]);
  }
  if (*count > list.size()) *count = list.size();
  return CUDA_SUCCESS;
}

bool default_edge(const CUgraphEdgeData* data, size_t i) {
  if (data == nullptr) return true;
  const CUgraphEdgeData& d = data[i];
  return d.from_port == 0 && d.to_port == 0 && d.type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT;
}

CUresult edges(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
               const CUgraphEdgeData* data, size_t count, bool add) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graph_mutex());
  Graph* g = graph_from(hGraph);
  if (g == nullptr || (count > 0 && (from == nullptr || to == nullptr)))
    return CUDA_ERROR_INVALID_VALUE;
  if (!add && has_memory_nodes(*g)) {
    log(LogLevel::kError,
        "cuGraphRemoveDependencies: edges of a graph with memory nodes cannot "
        "be deleted");
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<std::pair<GraphNode*, GraphNode*>> pairs;
  for (size_t i = 0; i < count; ++i) {
    GraphNode* a = node_from(from[i]);
    GraphNode* b = node_from(to[i]);
    if (a == nullptr || b == nullptr || a->graph != g || b->graph != g || a == b)
      return CUDA_ERROR_INVALID_VALUE;
    if (!default_edge(data, i)) {
      log(LogLevel::kError,
          "cuGraph%sDependencies: edge data other than the default (ports, programmatic "
          "dependencies) is not supported by the emulator",
          add ? "Add" : "Remove");
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    const bool exists = std::find(b->deps.begin(), b->deps.end(), a) != b->deps.end();
    if (exists == add) return CUDA_ERROR_INVALID_VALUE;  // a duplicate, or a missing edge
    pairs.emplace_back(a, b);
  }
  for (auto [a, b] : pairs) {
    if (add) {
      b->deps.push_back(a);
      a->dependents.push_back(b);
    } else {
      b->deps.erase(std::find(b->deps.begin(), b->deps.end(), a));
      a->dependents.erase(std::find(a->dependents.begin(), a->dependents.end(), b));
    }
  }
  return CUDA_SUCCESS;
}

// The exec node instantiated from `hNode`, of type `type`.
template <class Body>
CUresult with_exec_node(CUgraphExec hExec, CUgraphNode hNode, CUgraphNodeType type, Body&& body) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graph_mutex());
  GraphExec* exec = exec_from(hExec);
  GraphNode* n = node_from(hNode);
  if (exec == nullptr || n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = exec->by_original.find(n);
  if (it == exec->by_original.end() || it->second->type != type) return CUDA_ERROR_INVALID_VALUE;
  return body(it->second);
}

template <class Make>
CUresult exec_set(CUgraphExec hExec, CUgraphNode hNode, CUgraphNodeType type, Make&& make) {
  return with_exec_node(hExec, hNode, type, [&](GraphNode* target) {
    std::unique_ptr<GraphNode> spec;
    if (CUresult r = make(&spec); r != CUDA_SUCCESS) return r;
    if (compare_params(*target, *spec, true) != CU_GRAPH_EXEC_UPDATE_SUCCESS)
      return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
      take_kernel_params(target, *spec);
    } else {
      take_params(target, *spec);
    }
    return CUDA_SUCCESS;
  });
}

CUresult refused(const char* what) {
  log(LogLevel::kError, "%s is not supported by the emulator", what);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// "The graph can only be used in a child node if the ownership is moved to the parent", and the
// emulator does not support moving it.
CUresult refuse_memory_child() {
  log(LogLevel::kError,
      "a graph with memory nodes can be a child graph only when its ownership "
      "moves to the parent, which the emulator does not support");
  return CUDA_ERROR_NOT_SUPPORTED;
}

bool is_memory_type(CUgraphNodeType type) {
  return type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || type == CU_GRAPH_NODE_TYPE_MEM_FREE;
}

}  // namespace

// ---- graphs ---------------------------------------------------------------------------------

CUSNAP_EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  return guarded("cuGraphCreate", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(graph_mutex());
    *phGraph = reinterpret_cast<CUgraph>(new_graph(true));
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
  return guarded("cuGraphDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    Graph* g = graph_from(hGraph);
    // A child graph belongs to its node (cuGraphChildGraphNodeGetGraph hands out a reference).
    if (g == nullptr || g->owner != nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (capture_uses_graph(g)) {
      log(LogLevel::kError,
          "cuGraphDestroy: the graph is being captured into; end the capture first");
      return CUDA_ERROR_ILLEGAL_STATE;
    }
    free_graph(g);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
  return guarded("cuGraphClone", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    Graph* g = graph_from(originalGraph);
    if (phGraphClone == nullptr || g == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (has_memory_nodes(*g)) {
      log(LogLevel::kError, "cuGraphClone: a graph with memory nodes cannot be cloned");
      return CUDA_ERROR_INVALID_VALUE;
    }
    *phGraphClone = reinterpret_cast<CUgraph>(clone_graph(*g, true));
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphNodeFindInClone(CUgraphNode* phNode,
                                                      CUgraphNode hOriginalNode,
                                                      CUgraph hClonedGraph) {
  return guarded("cuGraphNodeFindInClone", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    Graph* g = graph_from(hClonedGraph);
    GraphNode* original = node_from(hOriginalNode);
    if (phNode == nullptr || g == nullptr || original == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (GraphNode* n : g->nodes) {
      if (n->original == original) {
        *phNode = handle_of(n);
        return CUDA_SUCCESS;
      }
    }
    return CUDA_ERROR_INVALID_VALUE;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  return guarded("cuGraphNodeGetType", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    GraphNode* n = node_from(hNode);
    if (n == nullptr || type == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *type = n->type;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes,
                                               size_t* numNodes) {
  return guarded("cuGraphGetNodes", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    Graph* g = graph_from(hGraph);
    if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return answer_list(g->nodes, nodes, nullptr, numNodes);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes,
                                                   size_t* numRootNodes) {
  return guarded("cuGraphGetRootNodes", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    Graph* g = graph_from(hGraph);
    if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::vector<GraphNode*> roots;
    for (GraphNode* n : g->nodes) {
      if (n->deps.empty()) roots.push_back(n);
    }
    return answer_list(roots, rootNodes, nullptr, numRootNodes);
  });
}

namespace {

CUresult get_edges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data,
                   size_t* numEdges) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graph_mutex());
  Graph* g = graph_from(hGraph);
  if (g == nullptr || numEdges == nullptr || ((from == nullptr) != (to == nullptr)))
    return CUDA_ERROR_INVALID_VALUE;
  std::vector<GraphNode*> sources, targets;
  for (GraphNode* n : g->nodes) {
    for (GraphNode* d : n->deps) {
      sources.push_back(d);
      targets.push_back(n);
    }
  }
  if (from == nullptr) {
    *numEdges = sources.size();
    return CUDA_SUCCESS;
  }
  size_t count = *numEdges;
  answer_list(sources, from, data, &count);
  return answer_list(targets, to, nullptr, numEdges);
}

CUresult node_neighbours(CUgraphNode hNode, bool incoming, CUgraphNode* out, CUgraphEdgeData* data,
                         size_t* count) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graph_mutex());
  GraphNode* n = node_from(hNode);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return answer_list(incoming ? n->deps : n->dependents, out, data, count);
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to,
                                               size_t* numEdges) {
  return guarded("cuGraphGetEdges", [&] { return get_edges(hGraph, from, to, nullptr, numEdges); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode* from,
                                                  CUgraphNode* to, CUgraphEdgeData* edgeData,
                                                  size_t* numEdges) {
  return guarded("cuGraphGetEdges_v2",
                 [&] { return get_edges(hGraph, from, to, edgeData, numEdges); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode,
                                                          CUgraphNode* dependencies,
                                                          size_t* numDependencies) {
  return guarded("cuGraphNodeGetDependencies", [&] {
    return node_neighbours(hNode, true, dependencies, nullptr, numDependencies);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphNodeGetDependencies_v2(CUgraphNode hNode,
                                                             CUgraphNode* dependencies,
                                                             CUgraphEdgeData* edgeData,
                                                             size_t* numDependencies) {
  return guarded("cuGraphNodeGetDependencies_v2", [&] {
    return node_neighbours(hNode, true, dependencies, edgeData, numDependencies);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode,
                                                            CUgraphNode* dependentNodes,
                                                            size_t* numDependentNodes) {
  return guarded("cuGraphNodeGetDependentNodes", [&] {
    return node_neighbours(hNode, false, dependentNodes, nullptr, numDependentNodes);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode,
                                                               CUgraphNode* dependentNodes,
                                                               CUgraphEdgeData* edgeData,
                                                               size_t* numDependentNodes) {
  return guarded("cuGraphNodeGetDependentNodes_v2", [&] {
    return node_neighbours(hNode, false, dependentNodes, edgeData, numDependentNodes);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from,
                                                      const CUgraphNode* to,
                                                      size_t numDependencies) {
  return guarded("cuGraphAddDependencies",
                 [&] { return edges(hGraph, from, to, nullptr, numDependencies, true); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from,
                                                         const CUgraphNode* to,
                                                         const CUgraphEdgeData* edgeData,
                                                         size_t numDependencies) {
  return guarded("cuGraphAddDependencies_v2",
                 [&] { return edges(hGraph, from, to, edgeData, numDependencies, true); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode* from,
                                                         const CUgraphNode* to,
                                                         size_t numDependencies) {
  return guarded("cuGraphRemoveDependencies",
                 [&] { return edges(hGraph, from, to, nullptr, numDependencies, false); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode* from,
                                                            const CUgraphNode* to,
                                                            const CUgraphEdgeData* edgeData,
                                                            size_t numDependencies) {
  return guarded("cuGraphRemoveDependencies_v2",
                 [&] { return edges(hGraph, from, to, edgeData, numDependencies, false); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode hNode) {
  return guarded("cuGraphDestroyNode", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    GraphNode* n = node_from(hNode);
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (has_memory_nodes(*n->graph)) {
      log(LogLevel::kError,
          "cuGraphDestroyNode: nodes of a graph with memory nodes cannot be "
          "deleted");
      return CUDA_ERROR_INVALID_VALUE;
    }
    for (GraphNode* d : n->deps)
      d->dependents.erase(std::find(d->dependents.begin(), d->dependents.end(), n));
    for (GraphNode* d : n->dependents) d->deps.erase(std::find(d->deps.begin(), d->deps.end(), n));
    auto& nodes = n->graph->nodes;
    nodes.erase(std::find(nodes.begin(), nodes.end(), n));
    free_node(n);
    return CUDA_SUCCESS;
  });
}

// ---- nodes ----------------------------------------------------------------------------------

CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                    const CUgraphNode* dependencies,
                                                    size_t numDependencies,
                                                    const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return guarded("cuGraphAddKernelNode", [&] {
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, [&](auto* out) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      return kernel_spec(*nodeParams, kernel_function(*nodeParams), out);
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                       const CUgraphNode* dependencies,
                                                       size_t numDependencies,
                                                       const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphAddKernelNode_v2", [&] {
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, [&](auto* out) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      return kernel_spec(*nodeParams, kernel_function(*nodeParams), out);
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                                          CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return guarded("cuGraphKernelNodeGetParams", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL, [&](GraphNode* n) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      kernel_params_of(*n, nodeParams);
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
                                                             CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphKernelNodeGetParams_v2", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL, [&](GraphNode* n) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      kernel_params_of(*n, nodeParams);
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI
cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return guarded("cuGraphKernelNodeSetParams", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL, [&](GraphNode* n) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::unique_ptr<GraphNode> spec;
      if (CUresult r = kernel_spec(*nodeParams, kernel_function(*nodeParams), &spec);
          r != CUDA_SUCCESS) {
        return r;
      }
      take_kernel_params(n, *spec);
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI
cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphKernelNodeSetParams_v2", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL, [&](GraphNode* n) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::unique_ptr<GraphNode> spec;
      if (CUresult r = kernel_spec(*nodeParams, kernel_function(*nodeParams), &spec);
          r != CUDA_SUCCESS) {
        return r;
      }
      take_kernel_params(n, *spec);
      return CUDA_SUCCESS;
    });
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                    const CUgraphNode* dependencies,
                                                    size_t numDependencies,
                                                    const CUDA_MEMCPY3D* copyParams,
                                                    CUcontext ctx) {
  return guarded("cuGraphAddMemcpyNode", [&] {
    return add_node(phGraphNode, hGraph, dependencies, numDependencies,
                    [&](auto* out) { return memcpy_spec(copyParams, ctx, out); });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode hNode,
                                                          CUDA_MEMCPY3D* nodeParams) {
  return guarded("cuGraphMemcpyNodeGetParams", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, [&](GraphNode* n) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      *nodeParams = n->copy;
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode hNode,
                                                          const CUDA_MEMCPY3D* nodeParams) {
  return guarded("cuGraphMemcpyNodeSetParams", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, [&](GraphNode* n) {
      std::unique_ptr<GraphNode> spec;
      if (CUresult r = memcpy_spec(nodeParams, nullptr, &spec); r != CUDA_SUCCESS) return r;
      n->copy = spec->copy;
      return CUDA_SUCCESS;
    });
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                    const CUgraphNode* dependencies,
                                                    size_t numDependencies,
                                                    const CUDA_MEMSET_NODE_PARAMS* memsetParams,
                                                    CUcontext ctx) {
  return guarded("cuGraphAddMemsetNode", [&] {
    return add_node(phGraphNode, hGraph, dependencies, numDependencies,
                    [&](auto* out) { return memset_spec(memsetParams, ctx, out); });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode hNode,
                                                          CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphMemsetNodeGetParams", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_MEMSET, [&](GraphNode* n) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      *nodeParams = n->memset;
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI
cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphMemsetNodeSetParams", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_MEMSET, [&](GraphNode* n) {
      std::unique_ptr<GraphNode> spec;
      if (CUresult r = memset_spec(nodeParams, nullptr, &spec); r != CUDA_SUCCESS) return r;
      n->memset = spec->memset;
      return CUDA_SUCCESS;
    });
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                  const CUgraphNode* dependencies,
                                                  size_t numDependencies,
                                                  const CUDA_HOST_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphAddHostNode", [&] {
    return add_node(phGraphNode, hGraph, dependencies, numDependencies,
                    [&](auto* out) { return host_spec(nodeParams, out); });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode hNode,
                                                        CUDA_HOST_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphHostNodeGetParams", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_HOST, [&](GraphNode* n) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      *nodeParams = n->host;
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphHostNodeSetParams(CUgraphNode hNode,
                                                        const CUDA_HOST_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphHostNodeSetParams", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_HOST, [&](GraphNode* n) {
      if (nodeParams == nullptr || nodeParams->fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
      n->host = *nodeParams;
      return CUDA_SUCCESS;
    });
  });
}

CUSNAP_EXPORT CUresult CUDAAPI
cuGraphAddBatchMemOpNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                         size_t numDependencies, const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphAddBatchMemOpNode", [&] {
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, [&](auto* out) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      return mem_op_spec(nodeParams->ctx, nodeParams->count, nodeParams->paramArray,
                         nodeParams->flags, out);
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI
cuGraphBatchMemOpNodeGetParams(CUgraphNode hNode, CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams_out) {
  return guarded("cuGraphBatchMemOpNodeGetParams", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, [&](GraphNode* n) {
      if (nodeParams_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
      // "The paramArray returned in nodeParams_out is owned by the node."
      nodeParams_out->ctx = n->mem_ops_ctx;
      nodeParams_out->count = static_cast<unsigned>(n->mem_ops.size());
      nodeParams_out->paramArray = n->mem_ops.data();
      nodeParams_out->flags = 0;
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI
cuGraphBatchMemOpNodeSetParams(CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphBatchMemOpNodeSetParams", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, [&](GraphNode* n) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::unique_ptr<GraphNode> spec;
      if (CUresult r = mem_op_spec(nodeParams->ctx, nodeParams->count, nodeParams->paramArray,
                                   nodeParams->flags, &spec);
          r != CUDA_SUCCESS) {
        return r;
      }
      take_params(n, *spec);
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecBatchMemOpNodeSetParams(
    CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphExecBatchMemOpNodeSetParams", [&] {
    return exec_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, [&](auto* out) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      return mem_op_spec(nodeParams->ctx, nodeParams->count, nodeParams->paramArray,
                         nodeParams->flags, out);
    });
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                        const CUgraphNode* dependencies,
                                                        size_t numDependencies,
                                                        CUgraph childGraph) {
  return guarded("cuGraphAddChildGraphNode", [&] {
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, [&](auto* out) {
      Graph* child = graph_from(childGraph);
      if (child == nullptr || child == graph_from(hGraph)) return CUDA_ERROR_INVALID_VALUE;
      if (has_memory_nodes(*child)) return refuse_memory_child();
      auto n = std::make_unique<GraphNode>();
      n->type = CU_GRAPH_NODE_TYPE_GRAPH;
      n->child = clone_graph(*child, true);  // the node holds a copy, as documented
      *out = std::move(n);
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph) {
  return guarded("cuGraphChildGraphNodeGetGraph", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_GRAPH, [&](GraphNode* n) {
      if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
      *phGraph = reinterpret_cast<CUgraph>(n->child);
      return CUDA_SUCCESS;
    });
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                   const CUgraphNode* dependencies,
                                                   size_t numDependencies) {
  return guarded("cuGraphAddEmptyNode", [&] {
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, [&](auto* out) {
      *out = std::make_unique<GraphNode>();
      return CUDA_SUCCESS;
    });
  });
}

namespace {

CUresult add_event_node(CUgraphNode* ph, CUgraph hGraph, const CUgraphNode* deps, size_t count,
                        CUevent event, CUgraphNodeType type) {
  return add_node(ph, hGraph, deps, count, [&](auto* out) { return event_spec(type, event, out); });
}

CUresult get_node_event(CUgraphNode hNode, CUevent* event_out, CUgraphNodeType type) {
  return with_node(hNode, type, [&](GraphNode* n) {
    if (event_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *event_out = n->event;
    return CUDA_SUCCESS;
  });
}

CUresult set_node_event(CUgraphNode hNode, CUevent event, CUgraphNodeType type) {
  return with_node(hNode, type, [&](GraphNode* n) {
    if (!is_handle(event, HandleKind::kEvent)) return CUDA_ERROR_INVALID_VALUE;
    n->event = event;
    return CUDA_SUCCESS;
  });
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                         const CUgraphNode* dependencies,
                                                         size_t numDependencies, CUevent event) {
  return guarded("cuGraphAddEventRecordNode", [&] {
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event,
                          CU_GRAPH_NODE_TYPE_EVENT_RECORD);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphEventRecordNodeGetEvent(CUgraphNode hNode,
                                                              CUevent* event_out) {
  return guarded("cuGraphEventRecordNodeGetEvent",
                 [&] { return get_node_event(hNode, event_out, CU_GRAPH_NODE_TYPE_EVENT_RECORD); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return guarded("cuGraphEventRecordNodeSetEvent",
                 [&] { return set_node_event(hNode, event, CU_GRAPH_NODE_TYPE_EVENT_RECORD); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                       const CUgraphNode* dependencies,
                                                       size_t numDependencies, CUevent event) {
  return guarded("cuGraphAddEventWaitNode", [&] {
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event,
                          CU_GRAPH_NODE_TYPE_WAIT_EVENT);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  return guarded("cuGraphEventWaitNodeGetEvent",
                 [&] { return get_node_event(hNode, event_out, CU_GRAPH_NODE_TYPE_WAIT_EVENT); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return guarded("cuGraphEventWaitNodeSetEvent",
                 [&] { return set_node_event(hNode, event, CU_GRAPH_NODE_TYPE_WAIT_EVENT); });
}

// ---- instantiate, launch --------------------------------------------------------------------

CUSNAP_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                           unsigned long long flags) {
  return guarded("cuGraphInstantiateWithFlags", [&] {
    GraphNode* error_node = nullptr;
    return instantiate(phGraphExec, hGraph, flags, &error_node);
  });
}

namespace {
// The CUDA 10-11 signature (cuGraphInstantiate, cuGraphInstantiate_v2): an error node and a
// log buffer.
CUresult instantiate_with_log(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                              char* logBuffer, size_t bufferSize) {
  GraphNode* error_node = nullptr;
  CUresult r = instantiate(phGraphExec, hGraph, 0, &error_node);
  if (phErrorNode != nullptr) *phErrorNode = handle_of(error_node);
  if (logBuffer != nullptr && bufferSize > 0) {
    const char* text = r == CUDA_SUCCESS ? "" : "the emulator refused to instantiate the graph";
    std::snprintf(logBuffer, bufferSize, "%s", text);
  }
  return r;
}

CUresult instantiate_with_params(CUgraphExec* phGraphExec, CUgraph hGraph,
                                 CUDA_GRAPH_INSTANTIATE_PARAMS* params, bool per_thread) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GraphNode* error_node = nullptr;
  CUresult r = instantiate(phGraphExec, hGraph, params->flags, &error_node);
  params->hErrNode_out = handle_of(error_node);
  params->result_out =
      r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  if (r == CUDA_SUCCESS && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
    r = graph_upload(*phGraphExec, params->hUploadStream, per_thread);
  return r;
}
}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                  CUgraphNode* phErrorNode, char* logBuffer,
                                                  size_t bufferSize) {
  return guarded("cuGraphInstantiate", [&] {
    return instantiate_with_log(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                     CUgraphNode* phErrorNode, char* logBuffer,
                                                     size_t bufferSize) {
  return guarded("cuGraphInstantiate_v2", [&] {
    return instantiate_with_log(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams(
    CUgraphExec* phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  return guarded("cuGraphInstantiateWithParams", [&] {
    return instantiate_with_params(phGraphExec, hGraph, instantiateParams, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(
    CUgraphExec* phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  return guarded("cuGraphInstantiateWithParams_ptsz", [&] {
    return instantiate_with_params(phGraphExec, hGraph, instantiateParams, kPerThreadDefault);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t* flags) {
  return guarded("cuGraphExecGetFlags", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    GraphExec* exec = exec_from(hGraphExec);
    if (exec == nullptr || flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *flags = exec->flags;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec) {
  return guarded("cuGraphExecDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    GraphExec* exec = exec_from(hGraphExec);
    if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // Launches already queued own copies of what their nodes run.
    destroy_handle(exec, HandleKind::kGraphExec);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  return guarded("cuGraphLaunch",
                 [&] { return graph_launch(hGraphExec, hStream, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return guarded("cuGraphLaunch_ptsz",
                 [&] { return graph_launch(hGraphExec, hStream, kPerThreadDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  return guarded("cuGraphUpload",
                 [&] { return graph_upload(hGraphExec, hStream, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return guarded("cuGraphUpload_ptsz",
                 [&] { return graph_upload(hGraphExec, hStream, kPerThreadDefault); });
}

// ---- exec updates ---------------------------------------------------------------------------

CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                                    CUgraphExecUpdateResultInfo* resultInfo) {
  return guarded("cuGraphExecUpdate_v2",
                 [&] { return exec_update(hGraphExec, hGraph, resultInfo); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                                 CUgraphNode* hErrorNode_out,
                                                 CUgraphExecUpdateResult* updateResult_out) {
  return guarded("cuGraphExecUpdate", [&] {
    if (hErrorNode_out == nullptr || updateResult_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUgraphExecUpdateResultInfo info{};
    CUresult r = exec_update(hGraphExec, hGraph, &info);
    *hErrorNode_out = info.errorNode;
    *updateResult_out = info.result;
    return r;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecKernelNodeSetParams(
    CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return guarded("cuGraphExecKernelNodeSetParams", [&] {
    return exec_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_KERNEL, [&](auto* out) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      return kernel_spec(*nodeParams, kernel_function(*nodeParams), out);
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(
    CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphExecKernelNodeSetParams_v2", [&] {
    return exec_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_KERNEL, [&](auto* out) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      return kernel_spec(*nodeParams, kernel_function(*nodeParams), out);
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec,
                                                              CUgraphNode hNode,
                                                              const CUDA_MEMCPY3D* copyParams,
                                                              CUcontext ctx) {
  return guarded("cuGraphExecMemcpyNodeSetParams", [&] {
    return exec_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMCPY,
                    [&](auto* out) { return memcpy_spec(copyParams, ctx, out); });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI
cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                               const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  return guarded("cuGraphExecMemsetNodeSetParams", [&] {
    return exec_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMSET,
                    [&](auto* out) { return memset_spec(memsetParams, ctx, out); });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecHostNodeSetParams(
    CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphExecHostNodeSetParams", [&] {
    return exec_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_HOST,
                    [&](auto* out) { return host_spec(nodeParams, out); });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec,
                                                                  CUgraphNode hNode,
                                                                  CUevent event) {
  return guarded("cuGraphExecEventRecordNodeSetEvent", [&] {
    return exec_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, [&](auto* out) {
      return event_spec(CU_GRAPH_NODE_TYPE_EVENT_RECORD, event, out);
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec,
                                                                CUgraphNode hNode, CUevent event) {
  return guarded("cuGraphExecEventWaitNodeSetEvent", [&] {
    return exec_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, [&](auto* out) {
      return event_spec(CU_GRAPH_NODE_TYPE_WAIT_EVENT, event, out);
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec,
                                                                  CUgraphNode hNode,
                                                                  CUgraph childGraph) {
  return guarded("cuGraphExecChildGraphNodeSetParams", [&] {
    return with_exec_node(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_GRAPH, [&](GraphNode* target) {
      Graph* child = graph_from(childGraph);
      if (child == nullptr) return CUDA_ERROR_INVALID_VALUE;
      const GraphNode* node = nullptr;
      const GraphNode* from_node = nullptr;
      // The new child must have the topology and node order of the instantiated one.
      if (compare_graphs(*target->child, *child, &node, &from_node) !=
          CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      for (size_t i = 0; i < child->nodes.size(); ++i)
        take_params(target->child->nodes[i], *child->nodes[i]);
      return CUDA_SUCCESS;
    });
  });
}

namespace {
// Kernel, memcpy and memset nodes may be disabled in an exec (as documented).
bool may_disable(CUgraphNodeType type) {
  return type == CU_GRAPH_NODE_TYPE_KERNEL || type == CU_GRAPH_NODE_TYPE_MEMCPY ||
         type == CU_GRAPH_NODE_TYPE_MEMSET;
}

template <class Body>
CUresult with_exec_node_any(CUgraphExec hExec, CUgraphNode hNode, Body&& body) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graph_mutex());
  GraphExec* exec = exec_from(hExec);
  GraphNode* n = node_from(hNode);
  if (exec == nullptr || n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = exec->by_original.find(n);
  if (it == exec->by_original.end() || !may_disable(it->second->type))
    return CUDA_ERROR_INVALID_VALUE;
  return body(it->second);
}
}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                     unsigned int isEnabled) {
  return guarded("cuGraphNodeSetEnabled", [&] {
    return with_exec_node_any(hGraphExec, hNode, [&](GraphNode* n) {
      n->enabled = isEnabled != 0;
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                     unsigned int* isEnabled) {
  return guarded("cuGraphNodeGetEnabled", [&] {
    if (isEnabled == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return with_exec_node_any(hGraphExec, hNode, [&](GraphNode* n) {
      *isEnabled = n->enabled ? 1 : 0;
      return CUDA_SUCCESS;
    });
  });
}

// ---- refused node kinds ---------------------------------------------------------------------

CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                      const CUgraphNode* dependencies,
                                                      size_t numDependencies,
                                                      CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  return guarded("cuGraphAddMemAllocNode", [&] {
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, [&](auto* out) {
      if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
      return graph_alloc_spec(nodeParams->poolProps, nodeParams->accessDescs,
                              nodeParams->accessDescCount, nodeParams->bytesize, &nodeParams->dptr,
                              out);
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                     const CUgraphNode* dependencies,
                                                     size_t numDependencies, CUdeviceptr dptr) {
  return guarded("cuGraphAddMemFreeNode", [&] {
    return add_node(phGraphNode, hGraph, dependencies, numDependencies,
                    [&](auto* out) { return graph_free_spec(dptr, out); });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphConditionalHandleCreate(CUgraphConditionalHandle* pHandle_out,
                                                              CUgraph hGraph, CUcontext ctx,
                                                              unsigned int defaultLaunchValue,
                                                              unsigned int flags) {
  (void)pHandle_out, (void)hGraph, (void)ctx, (void)defaultLaunchValue, (void)flags;
  return guarded("cuGraphConditionalHandleCreate", [&] {
    return refused("cuGraphConditionalHandleCreate (conditional nodes: set by device code)");
  });
}

// ---- the generic node API (CUgraphNodeParams) ----------------------------------------------

namespace {

bool all_zero(const void* p, size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  return std::all_of(b, b + bytes, [](unsigned char c) { return c == 0; });
}

// The node a CUgraphNodeParams describes (its type's member of the union).
CUresult generic_spec(CUgraphNodeParams* p, std::unique_ptr<GraphNode>* out) {
  if (p == nullptr || !all_zero(p->reserved0, sizeof p->reserved0) || p->reserved2 != 0)
    return CUDA_ERROR_INVALID_VALUE;
  switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const CUDA_KERNEL_NODE_PARAMS_v3& k = p->kernel;
      const void* f =
          k.func != nullptr ? static_cast<const void*>(k.func) : static_cast<const void*>(k.kern);
      return kernel_spec(k, function_from_handle(f), out);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (p->memcpy.flags != 0 || p->memcpy.reserved != 0) return CUDA_ERROR_INVALID_VALUE;
      return memcpy_spec(&p->memcpy.copyParams, p->memcpy.copyCtx, out);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS_v2& m = p->memset;
      CUDA_MEMSET_NODE_PARAMS v1{m.dst, m.pitch, m.value, m.elementSize, m.width, m.height};
      return memset_spec(&v1, m.ctx, out);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      CUDA_HOST_NODE_PARAMS v1{p->host.fn, p->host.userData};
      return host_spec(&v1, out);
    }
    case CU_GRAPH_NODE_TYPE_GRAPH: {
      Graph* child = graph_from(p->graph.graph);
      if (child == nullptr) return CUDA_ERROR_INVALID_VALUE;
      if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE)
        return refused("a child graph node that takes ownership of its graph");
      if (has_memory_nodes(*child)) return refuse_memory_child();
      auto n = std::make_unique<GraphNode>();
      n->type = CU_GRAPH_NODE_TYPE_GRAPH;
      n->child = clone_graph(*child, true);
      *out = std::move(n);
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_EMPTY:
      *out = std::make_unique<GraphNode>();
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return event_spec(p->type, p->eventRecord.event, out);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return event_spec(p->type, p->eventWait.event, out);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return graph_alloc_spec(p->alloc.poolProps, p->alloc.accessDescs, p->alloc.accessDescCount,
                              p->alloc.bytesize, &p->alloc.dptr, out);
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return graph_free_spec(p->free.dptr, out);
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      return refused("external semaphore nodes");
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return mem_op_spec(p->memOp.ctx, p->memOp.count, p->memOp.paramArray, p->memOp.flags, out);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      return refused("conditional nodes");
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult add_generic(CUgraphNode* ph, CUgraph hGraph, const CUgraphNode* deps,
                     const CUgraphEdgeData* data, size_t count, CUgraphNodeParams* params) {
  for (size_t i = 0; data != nullptr && i < count; ++i) {
    if (!default_edge(data, i)) return refused("edge data other than the default");
  }
  return add_node(ph, hGraph, deps, count, [&](auto* out) { return generic_spec(params, out); });
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                              const CUgraphNode* dependencies,
                                              size_t numDependencies,
                                              CUgraphNodeParams* nodeParams) {
  return guarded("cuGraphAddNode", [&] {
    return add_generic(phGraphNode, hGraph, dependencies, nullptr, numDependencies, nodeParams);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                 const CUgraphNode* dependencies,
                                                 const CUgraphEdgeData* dependencyData,
                                                 size_t numDependencies,
                                                 CUgraphNodeParams* nodeParams) {
  return guarded("cuGraphAddNode_v2", [&] {
    return add_generic(phGraphNode, hGraph, dependencies, dependencyData, numDependencies,
                       nodeParams);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphNodeSetParams(CUgraphNode hNode,
                                                    CUgraphNodeParams* nodeParams) {
  return guarded("cuGraphNodeSetParams", [&] {
    if (nodeParams == nullptr || is_memory_type(nodeParams->type)) return CUDA_ERROR_INVALID_VALUE;
    return with_node(hNode, nodeParams->type, [&](GraphNode* n) {
      std::unique_ptr<GraphNode> spec;
      if (CUresult r = generic_spec(nodeParams, &spec); r != CUDA_SUCCESS) return r;
      if (n->type == CU_GRAPH_NODE_TYPE_GRAPH) {
        free_graph(n->child);  // the node's copy is replaced by the new one
        n->child = spec->child;
        n->child->owner = n;
        spec->child = nullptr;
        return CUDA_SUCCESS;
      }
      if (n->type == CU_GRAPH_NODE_TYPE_KERNEL) {
        take_kernel_params(n, *spec);
        return CUDA_SUCCESS;
      }
      take_params(n, *spec);
      return CUDA_SUCCESS;
    });
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                        CUgraphNodeParams* nodeParams) {
  return guarded("cuGraphExecNodeSetParams", [&] {
    // "Modifying parameters is not supported for node types CU_GRAPH_NODE_TYPE_MEM_ALLOC and
    // CU_GRAPH_NODE_TYPE_MEM_FREE."
    if (nodeParams == nullptr || is_memory_type(nodeParams->type)) return CUDA_ERROR_INVALID_VALUE;
    if (nodeParams->type == CU_GRAPH_NODE_TYPE_GRAPH)
      return cuGraphExecChildGraphNodeSetParams(hGraphExec, hNode, nodeParams->graph.graph);
    return exec_set(hGraphExec, hNode, nodeParams->type,
                    [&](auto* out) { return generic_spec(nodeParams, out); });
  });
}

// ---- kernel node attributes ----------------------------------------------------------------

namespace {

bool is_hint(CUlaunchAttributeID id) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
      return true;  // caching, scheduling and placement: results do not depend on them
    default:
      return false;
  }
}

// Re-checks a kernel node with a changed request (cooperative size, cluster shape).
CUresult recheck_kernel(GraphNode* n, const LaunchRequest& request) {
  const LaunchRequest& r = request;
  if (r.cluster.count() == 0 || r.grid.x % r.cluster.x || r.grid.y % r.cluster.y ||
      r.grid.z % r.cluster.z) {
    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  }
  size_t size = n->kernel.params->size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<uint8_t*>(n->kernel.params->data()),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  PreparedLaunch checked;
  if (CUresult e = prepare_launch(n->kernel.function, request, nullptr, extra, &checked);
      e != CUDA_SUCCESS) {
    return e;
  }
  n->kernel.request = request;  // the parameter copy (and its pointers) stays the node's
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetAttribute(CUgraphNode hNode,
                                                             CUkernelNodeAttrID attr,
                                                             CUkernelNodeAttrValue* value_out) {
  return guarded("cuGraphKernelNodeGetAttribute", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL, [&](GraphNode* n) {
      if (value_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::memset(value_out, 0, sizeof *value_out);
      const LaunchRequest& r = n->kernel.request;
      if (attr == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
        value_out->cooperative = r.cooperative ? 1 : 0;
      } else if (attr == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
        value_out->clusterDim.x = r.cluster.x;
        value_out->clusterDim.y = r.cluster.y;
        value_out->clusterDim.z = r.cluster.z;
      } else if (is_hint(attr)) {
        for (const auto& [id, value] : n->kernel_hints) {
          if (id == attr) *value_out = value;
        }
      } else {
        return refused("this kernel node attribute");
      }
      return CUDA_SUCCESS;
    });
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphKernelNodeSetAttribute(CUgraphNode hNode,
                                                             CUkernelNodeAttrID attr,
                                                             const CUkernelNodeAttrValue* value) {
  return guarded("cuGraphKernelNodeSetAttribute", [&] {
    return with_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL, [&](GraphNode* n) {
      if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
      LaunchRequest r = n->kernel.request;
      if (attr == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
        r.cooperative = value->cooperative != 0;
        return recheck_kernel(n, r);
      }
      if (attr == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
        r.cluster = {value->clusterDim.x, value->clusterDim.y, value->clusterDim.z};
        r.cluster_given = true;  // checked against the function's required shape too
        return recheck_kernel(n, r);
      }
      if (!is_hint(attr)) return refused("this kernel node attribute");
      for (auto& [id, stored] : n->kernel_hints) {
        if (id == attr) {
          stored = *value;
          return CUDA_SUCCESS;
        }
      }
      n->kernel_hints.emplace_back(attr, *value);
      return CUDA_SUCCESS;
    });
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  return guarded("cuGraphKernelNodeCopyAttributes", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    GraphNode* to = node_from(dst);
    GraphNode* from = node_from(src);
    if (to == nullptr || from == nullptr || to->type != CU_GRAPH_NODE_TYPE_KERNEL ||
        from->type != CU_GRAPH_NODE_TYPE_KERNEL) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    LaunchRequest r = to->kernel.request;
    r.cooperative = from->kernel.request.cooperative;
    r.cluster = from->kernel.request.cluster;
    if (CUresult e = recheck_kernel(to, r); e != CUDA_SUCCESS) return e;
    to->kernel_hints = from->kernel_hints;
    return CUDA_SUCCESS;
  });
}

// ---- user objects ---------------------------------------------------------------------------

namespace {
UserObject* user_object_from(CUuserObject h) {
  return handle_cast<UserObject>(h, HandleKind::kUserObject);
}
}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuUserObjectCreate(CUuserObject* object_out, void* ptr,
                                                  CUhostFn destroy, unsigned int initialRefcount,
                                                  unsigned int flags) {
  return guarded("cuUserObjectCreate", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    // CU_USER_OBJECT_NO_DESTRUCTOR_SYNC is required, as documented.
    if (object_out == nullptr || destroy == nullptr || initialRefcount == 0 ||
        flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::lock_guard lock(graph_mutex());
    auto* object = new UserObject;
    object->ptr = ptr;
    object->destroy = destroy;
    object->refs = initialRefcount;
    register_handle(object, HandleKind::kUserObject);
    *object_out = reinterpret_cast<CUuserObject>(object);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuUserObjectRetain(CUuserObject object, unsigned int count) {
  return guarded("cuUserObjectRetain", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    UserObject* o = user_object_from(object);
    if (o == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
    o->refs += count;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuUserObjectRelease(CUuserObject object, unsigned int count) {
  return guarded("cuUserObjectRelease", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    UserObject* o = user_object_from(object);
    // Releasing more references than exist is undefined in the driver; refused here.
    if (o == nullptr || count == 0 || count > o->refs) return CUDA_ERROR_INVALID_VALUE;
    release_user_object(o, count);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphRetainUserObject(CUgraph graph, CUuserObject object,
                                                       unsigned int count, unsigned int flags) {
  return guarded("cuGraphRetainUserObject", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    Graph* g = graph_from(graph);
    UserObject* o = user_object_from(object);
    if (g == nullptr || o == nullptr || count == 0 ||
        (flags != 0 && flags != CU_GRAPH_USER_OBJECT_MOVE)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // MOVE takes over the caller's references; otherwise new ones are made.
    if (flags == 0) o->refs += count;
    for (auto& [held, n] : g->user_objects) {
      if (held == o) {
        n += count;
        return CUDA_SUCCESS;
      }
    }
    g->user_objects.emplace_back(o, count);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGraphReleaseUserObject(CUgraph graph, CUuserObject object,
                                                        unsigned int count) {
  return guarded("cuGraphReleaseUserObject", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    Graph* g = graph_from(graph);
    UserObject* o = user_object_from(object);
    if (g == nullptr || o == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < g->user_objects.size(); ++i) {
      auto& [held, n] = g->user_objects[i];
      if (held != o) continue;
      if (count > n) return CUDA_ERROR_INVALID_VALUE;  // more than the graph owns
      n -= count;
      if (n == 0) g->user_objects.erase(g->user_objects.begin() + static_cast<long>(i));
      release_user_object(o, count);
      return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
  });
}

// ---- DOT output -----------------------------------------------------------------------------

namespace {

const char* type_name(CUgraphNodeType type) {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return "KERNEL";
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return "MEMCPY";
    case CU_GRAPH_NODE_TYPE_MEMSET:
      return "MEMSET";
    case CU_GRAPH_NODE_TYPE_HOST:
      return "HOST";
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return "GRAPH";
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return "EMPTY";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return "WAIT_EVENT";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return "EVENT_RECORD";
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return "BATCH_MEM_OP";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return "MEM_ALLOC";
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return "MEM_FREE";
    default:
      return "OTHER";
  }
}

// Node ids are the prefix and the creation index; a child graph is a nested cluster. (Labels
// are built with snprintf: GCC 12 warns falsely about chains of std::string operator+.)
void write_dot(std::FILE* out, const Graph& g, const std::string& prefix, bool verbose) {
  for (const GraphNode* n : g.nodes) {
    const std::string id = prefix + std::to_string(n->index);
    if (n->type == CU_GRAPH_NODE_TYPE_GRAPH) {
      std::fprintf(out, "subgraph cluster_%s {\nlabel=\"%s GRAPH\";\n", id.c_str(), id.c_str());
      std::fprintf(out, "\"%s\" [shape=point];\n", id.c_str());
      std::string child_prefix = id;
      child_prefix.push_back('_');
      write_dot(out, *n->child, child_prefix, verbose);
      std::fprintf(out, "}\n");
      continue;
    }
    char detail[256] = "";
    if (n->type == CU_GRAPH_NODE_TYPE_KERNEL) {
      const LaunchRequest& r = n->kernel.request;
      if (verbose) {
        std::snprintf(detail, sizeof detail, "\\n%s\\n<<<(%u,%u,%u),(%u,%u,%u),%u>>>",
                      n->kernel.function->desc->name.c_str(), r.grid.x, r.grid.y, r.grid.z,
                      r.block.x, r.block.y, r.block.z, r.shared);
      } else {
        std::snprintf(detail, sizeof detail, "\\n%s", n->kernel.function->desc->name.c_str());
      }
    } else if (verbose && n->type == CU_GRAPH_NODE_TYPE_MEMCPY) {
      std::snprintf(detail, sizeof detail, "\\n%zux%zux%zu bytes", n->copy.WidthInBytes,
                    n->copy.Height, n->copy.Depth);
    } else if (verbose && n->type == CU_GRAPH_NODE_TYPE_MEMSET) {
      std::snprintf(detail, sizeof detail, "\\n%zux%zu elements of %u bytes", n->memset.width,
                    n->memset.height, n->memset.elementSize);
    }
    std::fprintf(out, "\"%s\" [label=\"%s %s%s\"];\n", id.c_str(), id.c_str(), type_name(n->type),
                 detail);
  }
  for (const GraphNode* n : g.nodes) {
    for (const GraphNode* d : n->deps) {
      std::fprintf(out, "\"%s%llu\" -> \"%s%llu\";\n", prefix.c_str(),
                   static_cast<unsigned long long>(d->index), prefix.c_str(),
                   static_cast<unsigned long long>(n->index));
    }
  }
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuGraphDebugDotPrint(CUgraph hGraph, const char* path,
                                                    unsigned int flags) {
  return guarded("cuGraphDebugDotPrint", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(graph_mutex());
    Graph* g = graph_from(hGraph);
    if (g == nullptr || path == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::FILE* out = std::fopen(path, "w");
    if (out == nullptr) return CUDA_ERROR_OPERATING_SYSTEM;
    std::fprintf(out, "digraph cusnap_graph {\n");
    write_dot(out, *g, "n", flags != 0);
    std::fprintf(out, "}\n");
    return std::fclose(out) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
  });
}
