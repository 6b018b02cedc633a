// The replay's model of CUDA graphs (graph_model.h): what each graph and executable graph holds,
// and the kernel nodes a launch runs.
#include "replayer/graph_model.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <variant>

namespace cusnap::replayer {

void GraphModel::create(uint64_t graph) { graphs_[graph] = ModelGraph{}; }

void GraphModel::destroy(uint64_t graph) { graphs_.erase(graph); }

void GraphModel::clone(uint64_t graph, uint64_t original) {
  // The clone's nodes have handles the capture does not record (an application learns them
  // through cuGraphNodeFindInClone, recorded generically): the model keeps the original's (so a
  // launch lists the original's node handles), and a later call naming one of the clone's own
  // nodes is an error of the executor (a node the capture never added), never a silent change.
  graphs_[graph] = graphs_[original];
}

void GraphModel::change_edges(uint64_t graph, const std::vector<GraphEdgeRef>& edges, bool add) {
  std::vector<ModelNode>& nodes = graphs_[graph].nodes;
  for (const GraphEdgeRef& e : edges) {
    auto to = std::find_if(nodes.begin(), nodes.end(),
                           [&](const ModelNode& n) { return n.node == e.to; });
    if (to == nodes.end()) continue;
    if (add)
      to->deps.push_back(e.from);
    else
      std::erase(to->deps, e.from);
  }
}

void GraphModel::destroy_node(uint64_t node) {
  auto g = node_graphs_.find(node);
  if (g == node_graphs_.end()) return;
  // The driver removes the node's edges with it.
  std::vector<ModelNode>& nodes = graphs_[g->second].nodes;
  std::erase_if(nodes, [&](const ModelNode& n) { return n.node == node; });
  for (ModelNode& n : nodes) std::erase(n.deps, node);
  node_graphs_.erase(g);
}

void GraphModel::add_node(uint64_t graph, ModelNode node) {
  node_graphs_[node.node] = graph;
  graphs_[graph].nodes.push_back(std::move(node));
}

std::shared_ptr<const ModelGraph> GraphModel::child_copy(uint64_t graph) const {
  auto it = graphs_.find(graph);
  return std::make_shared<const ModelGraph>(
      ordered(it == graphs_.end() ? ModelGraph{} : it->second));
}

ModelNode* GraphModel::find_node(uint64_t exec, uint64_t node) {
  std::vector<ModelNode>* nodes = nullptr;
  if (exec != 0) {
    auto it = execs_.find(exec);
    if (it != execs_.end()) nodes = &it->second.model.nodes;
  } else if (auto g = node_graphs_.find(node); g != node_graphs_.end()) {
    nodes = &graphs_[g->second].nodes;
  }
  if (nodes == nullptr) return nullptr;
  auto it = std::find_if(nodes->begin(), nodes->end(),
                         [&](const ModelNode& n) { return n.node == node; });
  return it == nodes->end() ? nullptr : &*it;
}

void GraphModel::set_params(uint64_t exec, const ModelNode& changed) {
  ModelNode* n = find_node(exec, changed.node);
  if (n == nullptr) return;
  switch (changed.kind) {
    case GraphNodeOp::Kind::kKernel:
      n->kernel = changed.kernel;
      n->kernel_seq = changed.kernel_seq;
      break;
    case GraphNodeOp::Kind::kMemcpy:
      n->copy = changed.copy;
      break;
    case GraphNodeOp::Kind::kMemset:
      n->memset = changed.memset;
      break;
    default:
      break;
  }
}

void GraphModel::instantiate(uint64_t exec, uint64_t graph) {
  ModelExec e;
  e.model = ordered(graphs_[graph]);
  execs_[exec] = std::move(e);
}

void GraphModel::update(uint64_t exec, uint64_t graph) {
  auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  std::vector<ModelNode>& to = it->second.model.nodes;
  const std::vector<ModelNode>& from = graphs_[graph].nodes;
  for (size_t i = 0; i < std::min(to.size(), from.size()); ++i) {
    to[i].kernel = from[i].kernel;
    to[i].kernel_seq = from[i].kernel_seq;
    to[i].memset = from[i].memset;
    to[i].copy = from[i].copy;
    to[i].event = from[i].event;
    to[i].child = from[i].child;
  }
}

void GraphModel::set_enabled(uint64_t exec, uint64_t node, bool enabled) {
  auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  // A disabled node does not run (a kernel node is not listed as a launch).
  if (enabled)
    it->second.disabled.erase(node);
  else
    it->second.disabled.insert(node);
}

void GraphModel::destroy_exec(uint64_t exec) { execs_.erase(exec); }

const ModelExec* GraphModel::exec(uint64_t exec) const {
  auto it = execs_.find(exec);
  return it == execs_.end() ? nullptr : &it->second;
}

std::vector<const ModelNode*> GraphModel::kernels(uint64_t exec) const {
  std::vector<const ModelNode*> out;
  if (const ModelExec* e = this->exec(exec)) kernels_of(e->model, &e->disabled, &out);
  return out;
}

// Kahn's algorithm, the earliest created ready node first: the order the cusnap emulator's
// cuGraphLaunch queues nodes in, and creation order itself whenever that is topological (stream
// capture, and explicit graphs whose nodes got their dependencies when added).
ModelGraph GraphModel::ordered(ModelGraph graph) {
  const size_t count = graph.nodes.size();
  std::unordered_map<uint64_t, size_t> index;
  for (size_t i = 0; i < count; ++i) index[graph.nodes[i].node] = i;
  std::vector<size_t> pending(count, 0);
  std::vector<std::vector<size_t>> dependents(count);
  for (size_t i = 0; i < count; ++i) {
    for (uint64_t d : graph.nodes[i].deps) {
      auto it = index.find(d);
      if (it == index.end()) continue;
      ++pending[i];
      dependents[it->second].push_back(i);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < count; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  graph.order.clear();
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    graph.order.push_back(i);
    for (size_t d : dependents[i]) {
      if (--pending[d] == 0) ready.push(d);
    }
  }
  // A cycle: instantiation fails on the driver; what is left keeps creation order.
  for (size_t i = 0; i < count; ++i) {
    if (pending[i] != 0) graph.order.push_back(i);
  }
  return graph;
}

void GraphModel::kernels_of(const ModelGraph& graph, const std::set<uint64_t>* disabled,
                            std::vector<const ModelNode*>* out) {
  for (size_t i : graph.order) {
    const ModelNode& n = graph.nodes[i];
    if (disabled != nullptr && disabled->count(n.node) != 0) continue;
    if (n.kind == GraphNodeOp::Kind::kKernel && n.kernel != nullptr) out->push_back(&n);
    if (n.kind == GraphNodeOp::Kind::kChildGraph && n.child != nullptr)
      kernels_of(*n.child, nullptr, out);
  }
}

ModelNode model_node(uint64_t seq, const GraphNodeOp& op) {
  ModelNode node;
  node.node = op.node;
  node.kind = op.kind;
  node.deps = op.dependencies;
  if (op.kind == GraphNodeOp::Kind::kKernel) {
    node.kernel = &op.kernel;
    node.kernel_seq = seq;
  }
  if (op.kind == GraphNodeOp::Kind::kMemset) node.memset = &op.memset;
  return node;
}

void apply_to_model(GraphModel& model, const Action& action) {
  if (const auto* g = std::get_if<GraphOp>(&action.op)) {
    switch (g->kind) {
      case GraphOp::Kind::kCreate:
      case GraphOp::Kind::kCaptureBegin:
        model.create(g->graph);
        break;
      case GraphOp::Kind::kDestroy:
        model.destroy(g->graph);
        break;
      case GraphOp::Kind::kClone:
        model.clone(g->graph, g->original);
        break;
      case GraphOp::Kind::kAddEdges:
      case GraphOp::Kind::kRemoveEdges:
        model.change_edges(g->graph, g->edges, g->kind == GraphOp::Kind::kAddEdges);
        break;
      case GraphOp::Kind::kDestroyNode:
        model.destroy_node(g->node);
        break;
    }
  } else if (const auto* n = std::get_if<GraphNodeOp>(&action.op)) {
    ModelNode node = model_node(action.seq, *n);
    if (n->set_params) {
      model.set_params(n->exec, node);
      return;
    }
    if (n->kind == GraphNodeOp::Kind::kChildGraph) node.child = model.child_copy(n->child);
    model.add_node(n->graph, std::move(node));
  } else if (const auto* e = std::get_if<GraphExecOp>(&action.op)) {
    switch (e->kind) {
      case GraphExecOp::Kind::kInstantiate:
        model.instantiate(e->exec, e->graph);
        break;
      case GraphExecOp::Kind::kUpdate:
        model.update(e->exec, e->graph);
        break;
      case GraphExecOp::Kind::kSetEnabled:
        model.set_enabled(e->exec, e->node, e->enabled);
        break;
      case GraphExecOp::Kind::kDestroy:
        model.destroy_exec(e->exec);
        break;
      case GraphExecOp::Kind::kUpload:
      case GraphExecOp::Kind::kLaunch:
        break;
    }
  }
}

std::map<uint64_t, std::vector<GraphKernel>> graph_launch_kernels(const Plan& plan) {
  std::map<uint64_t, std::vector<GraphKernel>> out;
  GraphModel model;
  for (const Action& a : plan.actions) {
    apply_to_model(model, a);
    const auto* e = std::get_if<GraphExecOp>(&a.op);
    if (e == nullptr || e->kind != GraphExecOp::Kind::kLaunch) continue;
    std::vector<GraphKernel>& kernels = out[a.seq];
    for (const ModelNode* k : model.kernels(e->exec))
      kernels.push_back(GraphKernel{k->node, k->kernel_seq, k->kernel});
  }
  return out;
}

}  // namespace cusnap::replayer
