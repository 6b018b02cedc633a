// The replay's model of the capture's CUDA graphs (docs/replay.md, "Graphs"): every graph's nodes
// in creation order with their captured dependencies and current parameters, every executable
// graph as instantiated (with its own parameter changes and disabled nodes), and from that the
// kernel nodes one graph launch runs, in the order the replay lists and runs them.
//
// It is the one home of that knowledge. The executor keeps it next to the driver's graphs (a
// node's live memcpy parameters and event ride along in the model); graph_launch_kernels()
// builds it from a plan alone, with no driver, for whoever must know before a replay which
// kernel nodes a graph launch runs (`cusnap extract` selecting kernel nodes the way
// `cusnap replay --kernel-name` counts them).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "replayer/plan.h"

namespace cusnap::replayer {

struct ModelGraph;

struct ModelNode {
  uint64_t node = 0;  // captured handle
  GraphNodeOp::Kind kind = GraphNodeOp::Kind::kEmpty;
  std::vector<uint64_t> deps;        // captured nodes of the same graph
  const LaunchOp* kernel = nullptr;  // kKernel: into the plan
  uint64_t kernel_seq = 0;           // kKernel: the graphNode record `kernel` comes from
  const MemsetOp* memset = nullptr;  // kMemset: into the plan
  CUDA_MEMCPY3D copy{};              // kMemcpy: the live parameters the node was given (executor)
  CUevent event = nullptr;           // kEventRecord / kEventWait: live (executor)
  std::shared_ptr<const ModelGraph> child;  // kChildGraph: the graph as it was when added
};

struct ModelGraph {
  std::vector<ModelNode> nodes;  // creation order
  // A topological order (indices into `nodes`): Kahn's algorithm, the earliest created node
  // first among the ready ones; set when the graph is instantiated or made a child.
  std::vector<size_t> order;
};

struct ModelExec {
  ModelGraph model;             // the instantiated graph, with the exec's parameter changes
  std::set<uint64_t> disabled;  // nodes disabled in this exec (cuGraphNodeSetEnabled)
};

class GraphModel {
 public:
  // cuGraphCreate, or the graph a stream capture begins: empty (replacing one of that handle).
  void create(uint64_t graph);
  void destroy(uint64_t graph);
  // The clone keeps the original's node handles (its own are never recorded).
  void clone(uint64_t graph, uint64_t original);
  void change_edges(uint64_t graph, const std::vector<GraphEdgeRef>& edges, bool add);
  void destroy_node(uint64_t node);  // with its edges
  void add_node(uint64_t graph, ModelNode node);
  // A child graph node's copy of `graph` as it is now (the driver embeds a copy).
  std::shared_ptr<const ModelGraph> child_copy(uint64_t graph) const;
  // New parameters of an existing node (a set_params GraphNodeOp), in the graph (exec == 0:
  // future instantiations) or in one executable graph. Only the kind's own parameters change.
  void set_params(uint64_t exec, const ModelNode& changed);
  void instantiate(uint64_t exec, uint64_t graph);
  // cuGraphExecUpdate: the exec runs `graph`'s parameters, node for node in creation order (its
  // own nodes, edges and order stay).
  void update(uint64_t exec, uint64_t graph);
  void set_enabled(uint64_t exec, uint64_t node, bool enabled);
  void destroy_exec(uint64_t exec);

  const ModelExec* exec(uint64_t exec) const;
  // The kernel nodes a launch of `exec` runs, in its order (child graphs expanded in place,
  // disabled nodes left out). Empty for an exec the model does not know.
  std::vector<const ModelNode*> kernels(uint64_t exec) const;

  static ModelGraph ordered(ModelGraph graph);
  static void kernels_of(const ModelGraph& graph, const std::set<uint64_t>* disabled,
                         std::vector<const ModelNode*>* out);

 private:
  ModelNode* find_node(uint64_t exec, uint64_t node);
  std::unordered_map<uint64_t, ModelGraph> graphs_;
  std::unordered_map<uint64_t, uint64_t> node_graphs_;  // captured node -> captured graph
  std::unordered_map<uint64_t, ModelExec> execs_;
};

// Applies one graph action of a plan to `model` as the executor does after its driver call
// succeeded (live memcpy parameters and events left empty). Non-graph actions: nothing.
void apply_to_model(GraphModel& model, const Action& action);

// The model of the node a graphNode action (at `seq`) adds or changes, as far as the record
// says (handle, kind, dependencies, kernel, memset); the executor adds what it made live.
ModelNode model_node(uint64_t seq, const GraphNodeOp& op);

// One kernel node a graph launch runs.
struct GraphKernel {
  uint64_t node = 0;        // captured CUgraphNode
  uint64_t kernel_seq = 0;  // the graphNode record whose `kernel` holds its current parameters
  const LaunchOp* kernel = nullptr;  // into the plan
};

// Every graph launch of `plan` (by its seq) with the kernel nodes it runs, in the order the
// replay lists them as launches: what the executor's model would give, built with no driver.
std::map<uint64_t, std::vector<GraphKernel>> graph_launch_kernels(const Plan& plan);

}  // namespace cusnap::replayer
