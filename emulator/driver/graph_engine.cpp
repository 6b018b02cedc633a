// The graph engine (graph.h): graphs and nodes made, cloned and freed; topological order,
// instantiation, exec updates and launches. The cu* entry points are in graph.cpp.
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
#include "driver/graph.h"
#include "driver/state.h"

namespace cusnap::emu::driver {

std::mutex& graph_mutex() {
  static std::mutex mutex;
  return mutex;
}

void free_node(GraphNode* node) {
  if (node == nullptr) return;
  detach_memory_node(node);
  if (node->child != nullptr) free_graph(node->child);
  node->child = nullptr;
  if (node->registered) {
    destroy_handle(node, HandleKind::kGraphNode);
  } else {
    delete node;
  }
}

void release_user_object(UserObject* object, unsigned count) {
  object->refs -= std::min(count, object->refs);
  if (object->refs > 0) return;
  CUhostFn destroy = object->destroy;
  void* ptr = object->ptr;
  destroy_handle(object, HandleKind::kUserObject);
  std::thread([destroy, ptr] { destroy(ptr); }).detach();
}

void free_graph(Graph* graph) {
  if (graph == nullptr) return;
  for (GraphNode* n : graph->nodes) free_node(n);
  graph->nodes.clear();
  for (auto [object, count] : graph->user_objects) release_user_object(object, count);
  graph->user_objects.clear();
  if (graph->registered) {
    destroy_handle(graph, HandleKind::kGraph);
  } else {
    delete graph;
  }
}

Graph* new_graph(bool registered) {
  auto* g = new Graph;
  g->registered = registered;
  if (registered) register_handle(g, HandleKind::kGraph);
  return g;
}

CUresult attach_node(Graph* graph, std::unique_ptr<GraphNode> node, const CUgraphNode* deps,
                     size_t count, GraphNode** out) {
  if (node == nullptr || (count > 0 && deps == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<GraphNode*> incoming;
  for (size_t i = 0; i < count; ++i) {
    auto* d = handle_cast<GraphNode>(deps[i], HandleKind::kGraphNode);
    if (d == nullptr || d->graph != graph) return CUDA_ERROR_INVALID_VALUE;
    if (std::find(incoming.begin(), incoming.end(), d) != incoming.end())
      return CUDA_ERROR_INVALID_VALUE;
    incoming.push_back(d);
  }
  if (CUresult r = attach_memory_node(graph, node.get(), incoming); r != CUDA_SUCCESS) return r;
  GraphNode* n = node.release();
  n->graph = graph;
  n->index = graph->next_index++;
  n->deps = incoming;
  for (GraphNode* d : incoming) d->dependents.push_back(n);
  n->registered = true;  // attached nodes are the application's; an exec's are cloned
  register_handle(n, HandleKind::kGraphNode);
  if (n->child != nullptr) n->child->owner = n;
  graph->nodes.push_back(n);
  if (out != nullptr) *out = n;
  return CUDA_SUCCESS;
}

std::unique_ptr<GraphNode> kernel_node(const PreparedLaunch& launch) {
  auto node = std::make_unique<GraphNode>();
  node->type = CU_GRAPH_NODE_TYPE_KERNEL;
  node->kernel = launch;
  // GetParams hands out kernelParams pointing into the node's own copy of the parameters.
  const ptx::KernelDesc& d = *launch.function->desc;
  auto* base = const_cast<uint8_t*>(launch.params->data());
  for (const auto& p : d.params) node->kernel_param_pointers.push_back(base + p.offset);
  return node;
}

namespace {

// Copies a node's parameters (not its edges); a child graph is cloned.
std::unique_ptr<GraphNode> copy_node(const GraphNode& n, bool registered) {
  auto c = std::make_unique<GraphNode>();
  c->type = n.type;
  c->kernel = n.kernel;
  c->kernel_param_pointers = n.kernel_param_pointers;
  c->kernel_hints = n.kernel_hints;
  c->copy = n.copy;
  c->memset = n.memset;
  c->host = n.host;
  c->event = n.event;
  c->mem_ops = n.mem_ops;
  c->mem_ops_ctx = n.mem_ops_ctx;
  c->allocation = n.allocation;
  c->alloc_props = n.alloc_props;
  c->alloc_access = n.alloc_access;
  c->enabled = n.enabled;
  if (n.child != nullptr) c->child = clone_graph(*n.child, registered);
  c->original = &n;
  return c;
}

}  // namespace

Graph* clone_graph(const Graph& source, bool registered) {
  Graph* g = new_graph(registered);
  g->user_objects = source.user_objects;
  for (auto [object, count] : g->user_objects) object->refs += count;
  std::unordered_map<const GraphNode*, GraphNode*> map;
  for (const GraphNode* n : source.nodes) {
    GraphNode* c = copy_node(*n, registered).release();
    c->graph = g;
    c->index = g->next_index++;
    c->registered = registered;
    if (registered) register_handle(c, HandleKind::kGraphNode);
    if (c->child != nullptr) c->child->owner = c;
    g->nodes.push_back(c);
    map[n] = c;
  }
  for (const GraphNode* n : source.nodes) {
    GraphNode* c = map[n];
    for (const GraphNode* d : n->deps) {
      c->deps.push_back(map[d]);
      map[d]->dependents.push_back(c);
    }
  }
  return g;
}

GraphExec::~GraphExec() {
  if (memory_execs != nullptr) --*memory_execs;
  if (graph == nullptr) return;
  bool pending = false;
  for (const Dependency& d : launches) pending |= !d.timeline->reached(d.seq);
  if (graph->user_objects.empty() || !pending) {
    free_graph(graph);
    return;
  }
  // The exec's user-object references go when its launches have completed (documented).
  std::thread([graph = graph, launches = launches] {
    for (const Dependency& d : launches) d.timeline->wait_for(d.seq);
    std::lock_guard lock(graph_mutex());
    free_graph(graph);
  }).detach();
}

Graph* graph_from(CUgraph h) { return handle_cast<Graph>(h, HandleKind::kGraph); }
GraphNode* node_from(CUgraphNode h) { return handle_cast<GraphNode>(h, HandleKind::kGraphNode); }
GraphExec* exec_from(CUgraphExec h) { return handle_cast<GraphExec>(h, HandleKind::kGraphExec); }
CUgraphNode handle_of(GraphNode* n) { return reinterpret_cast<CUgraphNode>(n); }

namespace {

// Kahn's algorithm, the lowest creation index first among ready nodes. False on a cycle.
bool topological_order(const Graph& g, std::vector<GraphNode*>* out) {
  std::unordered_map<const GraphNode*, size_t> pending;
  auto later = [](const GraphNode* a, const GraphNode* b) { return a->index > b->index; };
  std::priority_queue<GraphNode*, std::vector<GraphNode*>, decltype(later)> ready(later);
  for (GraphNode* n : g.nodes) {
    pending[n] = n->deps.size();
    if (n->deps.empty()) ready.push(n);
  }
  out->clear();
  while (!ready.empty()) {
    GraphNode* n = ready.top();
    ready.pop();
    out->push_back(n);
    for (GraphNode* d : n->dependents) {
      if (--pending[d] == 0) ready.push(d);
    }
  }
  return out->size() == g.nodes.size();
}

// Checks a graph (and its children) for what instantiation refuses; the offending node.
CUresult check_instantiable(const Graph& g, GraphNode** error_node) {
  std::vector<GraphNode*> order;
  if (!topological_order(g, &order)) {
    log(LogLevel::kError, "cuGraphInstantiate: the graph's dependencies form a cycle");
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (GraphNode* n : g.nodes) {
    if (n->child != nullptr) {
      if (CUresult r = check_instantiable(*n->child, error_node); r != CUDA_SUCCESS) return r;
    }
    if ((n->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD || n->type == CU_GRAPH_NODE_TYPE_WAIT_EVENT) &&
        !is_handle(n->event, HandleKind::kEvent)) {
      *error_node = n;
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

// One stream operation of a launch.
struct Step {
  Stream::Work work;
  Event* record = nullptr;  // an event record node: the event takes this step's position
  Event* wait = nullptr;    // an event wait node: the step waits for the event's last record
};

// `order_out`, if given: the graph's nodes in the launch order the steps follow.
CUresult build_steps(Context* ctx, const Graph& g, bool top_level, std::vector<Step>* steps,
                     std::vector<GraphNode*>* order_out = nullptr) {
  std::vector<GraphNode*> local;
  std::vector<GraphNode*>& order = order_out != nullptr ? *order_out : local;
  if (!topological_order(g, &order)) return CUDA_ERROR_INVALID_VALUE;
  for (GraphNode* n : order) {
    if (top_level && !n->enabled) continue;  // a disabled node runs as an empty node
    Step step;
    switch (n->type) {
      case CU_GRAPH_NODE_TYPE_KERNEL:
        // The kernel's module may have been unloaded since the node was made.
        if (function_from_handle(n->kernel.function) == nullptr) {
          log(LogLevel::kError, "cuGraphLaunch: a kernel node's function was unloaded");
          return CUDA_ERROR_INVALID_HANDLE;
        }
        step.work = launch_work(ctx, n->kernel);
        break;
      case CU_GRAPH_NODE_TYPE_MEMCPY:
        if (CUresult r = memcpy_node_work(ctx, n->copy, &step.work); r != CUDA_SUCCESS) return r;
        break;
      case CU_GRAPH_NODE_TYPE_MEMSET:
        if (CUresult r = memset_node_work(ctx, n->memset, &step.work); r != CUDA_SUCCESS) return r;
        break;
      case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        if (CUresult r = mem_op_node_work(ctx, n->mem_ops, &step.work); r != CUDA_SUCCESS) return r;
        break;
      case CU_GRAPH_NODE_TYPE_HOST: {
        CUhostFn fn = n->host.fn;
        void* data = n->host.userData;
        step.work = [fn, data] {
          fn(data);
          return uint64_t{0};
        };
        break;
      }
      case CU_GRAPH_NODE_TYPE_GRAPH:
        if (CUresult r = build_steps(ctx, *n->child, false, steps); r != CUDA_SUCCESS) return r;
        continue;
      case CU_GRAPH_NODE_TYPE_EMPTY:
        continue;
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        step.work = graph_alloc_work(n->allocation);
        break;
      case CU_GRAPH_NODE_TYPE_MEM_FREE:
        step.work = graph_free_work(n->allocation);
        break;
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT: {
        auto* e = handle_cast<Event>(n->event, HandleKind::kEvent);
        if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
        (n->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD ? step.record : step.wait) = e;
        step.work = [] { return uint64_t{0}; };
        break;
      }
      default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    steps->push_back(std::move(step));
  }
  return CUDA_SUCCESS;
}

CUresult launch_exec(GraphExec* exec, Context* ctx, Stream* stream) {
  std::vector<Step> steps;
  std::vector<GraphNode*> order;
  if (CUresult r = build_steps(ctx, *exec->graph, true, &steps, &order); r != CUDA_SUCCESS)
    return r;
  std::vector<Stream::Work> frees;  // AUTO_FREE_ON_LAUNCH: the previous launch's allocations
  if (exec->memory_execs != nullptr) {
    const bool auto_free = exec->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
    if (CUresult r = graph_memory_launch(order, auto_free, &frees); r != CUDA_SUCCESS) return r;
  }
  // "Each launch is ordered behind both any previous work in the stream and any previous launches
  // of the exec" (cuGraphLaunch), also when those were on another stream.
  ctx->submit(stream, [] { return uint64_t{0}; }, {exec->last_launch});
  for (Stream::Work& work : frees) ctx->submit(stream, std::move(work));
  for (Step& step : steps) {
    std::vector<Dependency> deps;
    if (step.wait != nullptr) {
      std::lock_guard lock(step.wait->mutex);
      if (step.wait->recorded) deps.push_back(step.wait->point);
    }
    uint64_t seq = ctx->submit(stream, std::move(step.work), std::move(deps));
    if (step.record != nullptr) {
      std::lock_guard lock(step.record->mutex);
      step.record->recorded = true;
      step.record->point = Dependency{stream->tail().timeline, seq};
    }
  }
  exec->last_launch = stream->tail();
  if (!exec->graph->user_objects.empty()) {
    auto& launches = exec->launches;
    launches.erase(std::remove_if(launches.begin(), launches.end(),
                                  [](const Dependency& d) { return d.timeline->reached(d.seq); }),
                   launches.end());
    launches.push_back(stream->tail());
  }
  return CUDA_SUCCESS;
}

}  // namespace

// ---- instantiate, update ------------------------------------------------------------------

CUresult instantiate(CUgraphExec* out, CUgraph hGraph, cuuint64_t flags, GraphNode** error_node) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graph_mutex());
  Graph* g = graph_from(hGraph);
  if (out == nullptr || g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t kKnown =
      CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
      CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) {
    log(LogLevel::kError,
        "cuGraphInstantiate: CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH is not supported by the "
        "emulator (no device-side graph launch)");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (CUresult r = check_instantiable(*g, error_node); r != CUDA_SUCCESS) return r;
  const bool memory = has_memory_nodes(*g);
  if (memory && *g->memory_execs > 0) {
    log(LogLevel::kError,
        "cuGraphInstantiate: a graph with memory nodes can have one executable graph at a time; "
        "destroy the other first");
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* exec = new GraphExec;
  exec->graph = clone_graph(*g, false);
  exec->flags = flags;
  if (memory) {
    exec->memory_execs = g->memory_execs;
    ++*exec->memory_execs;
  }
  for (GraphNode* n : exec->graph->nodes) exec->by_original[n->original] = n;
  register_handle(exec, HandleKind::kGraphExec);
  *out = reinterpret_cast<CUgraphExec>(exec);
  return CUDA_SUCCESS;
}

bool one_dimensional(const CUDA_MEMCPY3D& p) { return p.Height == 1 && p.Depth == 1; }

// Whether `to` may replace `from`'s parameters in an exec: cuGraphExecUpdate's limitations, and
// with `setter` those of the cuGraphExec*NodeSetParams entry points (stricter for memcpy).
CUgraphExecUpdateResult compare_params(const GraphNode& from, const GraphNode& to, bool setter) {
  switch (from.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      // "A cooperative node cannot be updated to a non-cooperative node, and vice-versa."
      if (!setter && from.kernel.request.cooperative != to.kernel.request.cooperative)
        return CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED;
      break;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      // The memory types may not change; the setters take 1D copies only.
      if (from.copy.srcMemoryType != to.copy.srcMemoryType ||
          from.copy.dstMemoryType != to.copy.dstMemoryType ||
          (setter && (!one_dimensional(to.copy) || !one_dimensional(from.copy)))) {
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      }
      break;
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      // A 2D memset may change only its address and value; a 1D one may not change its height.
      const CUDA_MEMSET_NODE_PARAMS& f = from.memset;
      const CUDA_MEMSET_NODE_PARAMS& t = to.memset;
      const bool same_shape = f.width == t.width && f.height == t.height &&
                              f.elementSize == t.elementSize && f.pitch == t.pitch;
      if ((f.height > 1 && !same_shape) || t.height != f.height)
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      break;
    }
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: {
      // Only addresses, values and the wait condition may change ("Other fields, such as the
      // context, count or type of operations, and other types of operations such as membars,
      // may not be modified"; the flush bit of a wait neither).
      if (from.mem_ops_ctx != to.mem_ops_ctx || from.mem_ops.size() != to.mem_ops.size())
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      for (size_t i = 0; i < from.mem_ops.size(); ++i) {
        const CUstreamBatchMemOpParams& f = from.mem_ops[i];
        const CUstreamBatchMemOpParams& t = to.mem_ops[i];
        if (f.operation != t.operation) return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
        const bool wait = f.operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
                          f.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
        const bool write = f.operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ||
                           f.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
        if (wait && ((f.waitValue.flags ^ t.waitValue.flags) & CU_STREAM_WAIT_VALUE_FLUSH))
          return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
        if (write && f.writeValue.flags != t.writeValue.flags)
          return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
        if (!wait && !write && f.memoryBarrier.flags != t.memoryBarrier.flags)
          return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      }
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      // Their parameters cannot be modified: the same allocation, or no update.
      if (from.allocation != to.allocation) return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      break;
    default:
      break;
  }
  return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

// A kernel node's parameters replaced by `spec`'s (the SetParams entry points): its attributes
// (cooperative, cluster shape, hints) are the node's and stay, as cuGraphKernelNodeSetAttribute
// set them.
void take_kernel_params(GraphNode* n, const GraphNode& spec) {
  const bool cooperative = n->kernel.request.cooperative;
  const auto cluster = n->kernel.request.cluster;
  n->kernel = spec.kernel;
  n->kernel.request.cooperative = cooperative;
  n->kernel.request.cluster = cluster;
  n->kernel_param_pointers = spec.kernel_param_pointers;
}

// Pairs the nodes of two graphs in creation order and checks types and edges; on a mismatch
// the node (and edge source) of `to` that differs.
CUgraphExecUpdateResult compare_graphs(const Graph& from, const Graph& to, const GraphNode** node,
                                       const GraphNode** from_node) {
  if (from.nodes.size() != to.nodes.size()) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  std::unordered_map<const GraphNode*, const GraphNode*> pair;  // to -> from
  for (size_t i = 0; i < to.nodes.size(); ++i) pair[to.nodes[i]] = from.nodes[i];
  for (size_t i = 0; i < to.nodes.size(); ++i) {
    const GraphNode* a = from.nodes[i];
    const GraphNode* b = to.nodes[i];
    *node = b;
    if (a->type != b->type) return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
    if (a->deps.size() != b->deps.size()) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    for (const GraphNode* d : b->deps) {
      if (std::find(a->deps.begin(), a->deps.end(), pair[d]) == a->deps.end()) {
        *from_node = d;
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
      }
    }
    if (a->type == CU_GRAPH_NODE_TYPE_GRAPH) {
      const GraphNode* inner = nullptr;
      const GraphNode* inner_from = nullptr;
      if (compare_graphs(*a->child, *b->child, &inner, &inner_from) !=
          CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
      }
    }
    if (CUgraphExecUpdateResult r = compare_params(*a, *b, false);
        r != CU_GRAPH_EXEC_UPDATE_SUCCESS)
      return r;
  }
  *node = nullptr;
  return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

// Takes `from`'s parameters into the exec node `to` (edges stay).
void take_params(GraphNode* to, const GraphNode& from) {
  to->kernel = from.kernel;
  to->kernel_param_pointers = from.kernel_param_pointers;
  to->kernel_hints = from.kernel_hints;
  to->copy = from.copy;
  to->memset = from.memset;
  to->host = from.host;
  to->event = from.event;
  to->mem_ops = from.mem_ops;
  to->mem_ops_ctx = from.mem_ops_ctx;
  if (from.child != nullptr) {
    for (size_t i = 0; i < from.child->nodes.size(); ++i)
      take_params(to->child->nodes[i], *from.child->nodes[i]);
  }
}

CUresult exec_update(CUgraphExec hExec, CUgraph hGraph, CUgraphExecUpdateResultInfo* info) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graph_mutex());
  GraphExec* exec = exec_from(hExec);
  Graph* g = graph_from(hGraph);
  if (exec == nullptr || g == nullptr || info == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const GraphNode* node = nullptr;
  const GraphNode* from_node = nullptr;
  CUgraphExecUpdateResult result = compare_graphs(*exec->graph, *g, &node, &from_node);
  info->result = result;
  info->errorNode = reinterpret_cast<CUgraphNode>(const_cast<GraphNode*>(node));
  info->errorFromNode = reinterpret_cast<CUgraphNode>(const_cast<GraphNode*>(from_node));
  if (result != CU_GRAPH_EXEC_UPDATE_SUCCESS) return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  for (size_t i = 0; i < g->nodes.size(); ++i) take_params(exec->graph->nodes[i], *g->nodes[i]);
  return CUDA_SUCCESS;
}

CUresult graph_launch(CUgraphExec hExec, CUstream hStream, bool per_thread) {
  Context* ctx;
  Stream* stream;
  if (CUresult r = stream_argument(hStream, per_thread, &ctx, &stream); r != CUDA_SUCCESS) return r;
  GraphExec* exec;
  {
    std::lock_guard lock(graph_mutex());
    exec = exec_from(hExec);
    if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  }
  // A launch into a capturing stream is captured as a child graph of the exec's nodes (not one
  // with memory nodes: a child graph may hold them only when it moved there, which the emulator
  // does not support).
  if (exec->memory_execs != nullptr) {
    if (CUresult r =
            capture_refuse(stream, "a launch of a graph with memory nodes (as a child graph)",
                           CUDA_ERROR_NOT_SUPPORTED);
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  bool captured = false;
  auto make = [&] {
    auto node = std::make_unique<GraphNode>();
    node->type = CU_GRAPH_NODE_TYPE_GRAPH;
    node->child = clone_graph(*exec->graph, true);
    return node;
  };
  if (CUresult r = capture_node(stream, false, make, &captured); r != CUDA_SUCCESS || captured)
    return r;
  std::lock_guard lock(graph_mutex());
  return launch_exec(exec, ctx, stream);
}

CUresult graph_upload(CUgraphExec hExec, CUstream hStream, bool per_thread) {
  Context* ctx;
  Stream* stream;
  if (CUresult r = stream_argument(hStream, per_thread, &ctx, &stream); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graph_mutex());
  // Nothing to upload: the nodes' work is built from host memory at each launch.
  return exec_from(hExec) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace cusnap::emu::driver
