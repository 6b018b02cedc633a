// CUDA graphs and stream capture read into the plan (docs/replay.md, "Graphs"): graph and node
// records, executable graphs and their launches, and the memcpy-node checksums of a launch.
#include <string>
#include <utility>

#include "replayer/plan_builder.h"

namespace cusnap::replayer::plan_detail {

// A memcpy node's checksum after a graph launch (deferredResult.graphNode, schema 5).
MaybeError PlanBuilder::add_graph_node_result(uint64_t seq, schema::DeferredResult::Reader d) {
  auto it = graph_launches_.find(d.getCallSeq());
  if (it == graph_launches_.end()) {
    return capture_error(seq, "deferredResult",
                         "a graph-node result about call " + std::to_string(d.getCallSeq()) +
                             ", which is not a replayable graph launch recorded before it");
  }
  if (d.getHasHostChecksum()) {
    std::get<GraphExecOp>(plan_.actions[it->second].op)
        .checksums.emplace_back(d.getGraphNode(), d.getHostChecksum());
    ++plan_.verifiable_copies;
  } else if (d.hasMissing() && d.getMissing().size() > 0) {
    warn_once("deferred-missing", seq,
              std::string("a stream-ordered copy result was not observed at capture: ") +
                  d.getMissing().cStr());
  }
  skip("deferredResult");
  return std::nullopt;
}

MaybeError PlanBuilder::add_graph(uint64_t seq, schema::GraphCall::Reader r) {
  using Op = schema::GraphCall::Op;
  GraphOp op;
  op.graph = r.getGraph();
  op.flags = r.getFlags();
  op.original = r.getOriginal();
  op.node = r.getNode();
  switch (r.getOp()) {
    case Op::CREATE:
      op.kind = GraphOp::Kind::kCreate;
      break;
    case Op::DESTROY:
      op.kind = GraphOp::Kind::kDestroy;
      break;
    case Op::CLONE:
      op.kind = GraphOp::Kind::kClone;
      break;
    case Op::ADD_DEPENDENCIES:
      op.kind = GraphOp::Kind::kAddEdges;
      break;
    case Op::REMOVE_DEPENDENCIES:
      op.kind = GraphOp::Kind::kRemoveEdges;
      break;
    case Op::DESTROY_NODE:
      op.kind = GraphOp::Kind::kDestroyNode;
      break;
    default:
      return capture_error(seq, "graph", "unknown graph operation");
  }
  if (r.getEdges().size() > kMaxGraphEdges) return capture_error(seq, "graph", "too many edges");
  for (auto e : r.getEdges()) {
    if (e.getFromPort() != 0 || e.getToPort() != 0 || e.getType() != 0) {
      return Error(ErrorKind::kUnsupported, "graph edges with edge data are not replayed")
          .at_call(seq)
          .in_record("graph");
    }
    op.edges.push_back({e.getFrom(), e.getTo()});
  }
  if (op.kind != GraphOp::Kind::kDestroyNode && op.graph == 0)
    return capture_error(seq, "graph", "no graph handle");
  push(seq, std::move(op));
  return std::nullopt;
}

MaybeError PlanBuilder::add_graph_node(uint64_t seq, schema::GraphNode::Reader r, uint64_t exec) {
  using Kind = schema::GraphNode::Kind;
  GraphNodeOp op;
  op.set_params = r.getOp() == schema::GraphNode::Op::SET_PARAMS;
  op.exec = exec;
  op.graph = r.getGraph();
  op.node = r.getNode();
  op.captured = r.getCaptured();
  op.event = r.getEvent();
  op.child = r.getChildGraph();
  if (op.node == 0) return capture_error(seq, "graphNode", "no node handle");
  if (!op.set_params && op.graph == 0) return capture_error(seq, "graphNode", "no graph handle");
  if (r.getDependencies().size() > kMaxGraphEdges)
    return capture_error(seq, "graphNode", "too many dependencies");
  for (auto e : r.getDependencies()) {
    if (e.getFromPort() != 0 || e.getToPort() != 0 || e.getType() != 0) {
      return Error(ErrorKind::kUnsupported, "graph edges with edge data are not replayed")
          .at_call(seq)
          .in_record("graphNode");
    }
    op.dependencies.push_back(e.getFrom());
  }
  // The launch, copy or memset inside is read by the ordinary rules, into the node.
  std::optional<Operation> inner;
  auto read_inner = [&](auto&& add) -> MaybeError {
    node_target_ = &inner;
    MaybeError e = add();
    node_target_ = nullptr;
    return e;
  };
  auto unsupported = [&](const char* what) {
    return Error(ErrorKind::kUnsupported, std::string(what) + " graph nodes are not replayed")
        .at_call(seq)
        .in_record("graphNode")
        .with_handle(op.node);
  };
  switch (r.getKind()) {
    case Kind::EMPTY:
      op.kind = GraphNodeOp::Kind::kEmpty;
      break;
    case Kind::KERNEL:
      op.kind = GraphNodeOp::Kind::kKernel;
      if (auto e = read_inner([&] { return add_launch(seq, r.getKernel()); })) return e;
      if (!inner) return capture_error(seq, "graphNode", "kernel node without its kernel");
      op.kernel = std::move(std::get<LaunchOp>(*inner));
      break;
    case Kind::MEMCPY:
      op.kind = GraphNodeOp::Kind::kMemcpy;
      if (auto e = read_inner([&] { return add_memcpy(seq, r.getMemcpy()); })) return e;
      // A copy the rules skip (empty, host to host) runs nothing: an empty node keeps the edges.
      if (inner)
        op.copy = std::move(std::get<CopyOp>(*inner));
      else
        op.kind = GraphNodeOp::Kind::kEmpty;
      break;
    case Kind::MEMSET:
      op.kind = GraphNodeOp::Kind::kMemset;
      if (auto e = read_inner([&] { return add_memset(seq, r.getMemset()); })) return e;
      if (inner)
        op.memset = std::get<MemsetOp>(std::move(*inner));
      else
        op.kind = GraphNodeOp::Kind::kEmpty;
      break;
    case Kind::HOST:
      op.kind = GraphNodeOp::Kind::kHost;
      warn_once("graph-host-node", seq,
                "host nodes of graphs are replayed as empty nodes: the application's host "
                "function is not called (what it did to host memory is not replayed)");
      break;
    case Kind::EVENT_RECORD:
      op.kind = GraphNodeOp::Kind::kEventRecord;
      break;
    case Kind::EVENT_WAIT:
      op.kind = GraphNodeOp::Kind::kEventWait;
      break;
    case Kind::CHILD_GRAPH:
      op.kind = GraphNodeOp::Kind::kChildGraph;
      break;
    case Kind::EXTERNAL_SEMAPHORE_SIGNAL:
    case Kind::EXTERNAL_SEMAPHORE_WAIT:
      return unsupported("external semaphore (signalled or waited for outside the capture)");
    case Kind::MEM_ALLOC:
      // The range is mapped at its captured address for the rest of the replay, like any
      // allocation; the node stays in the graph's shape as an empty node (docs/replay.md).
      if (r.getAddress() == 0 || r.getSize() == 0) {
        return capture_error(seq, "graphNode",
                             "a memory allocation node without its address or size")
            .with_handle(op.node);
      }
      if (auto e = add_range(seq, "graphNode", r.getAddress(), r.getSize())) return e;
      live_allocations_[r.getAddress()] = r.getSize();
      graph_allocations_.insert(r.getAddress());
      push(seq, AllocOp{r.getAddress(), r.getSize(), "graph"});
      op.kind = GraphNodeOp::Kind::kEmpty;
      break;
    case Kind::MEM_FREE:
      op.kind = GraphNodeOp::Kind::kEmpty;
      break;
    case Kind::BATCH_MEM_OP:
      return unsupported("batch memory operation");
    case Kind::CONDITIONAL:
      return unsupported("conditional");
    default:
      return unsupported("these");
  }
  push(seq, std::move(op));
  return std::nullopt;
}

// A stream capture builds a graph the replay creates empty at the capture's begin; the nodes the
// capture made arrive as graphNode records. The other capture calls change nothing to replay.
MaybeError PlanBuilder::add_stream_capture(uint64_t seq, schema::StreamCapture::Reader r) {
  if (r.getOp() == schema::StreamCapture::Op::BEGIN) {
    if (r.getGraph() == 0) {
      return capture_error(seq, "streamCapture",
                           "a capture whose graph the interceptor could not learn");
    }
    GraphOp op;
    op.kind = GraphOp::Kind::kCaptureBegin;
    op.graph = r.getGraph();
    push(seq, std::move(op));
    return std::nullopt;
  }
  skip("streamCapture");
  return std::nullopt;
}

MaybeError PlanBuilder::add_graph_exec(uint64_t seq, schema::GraphExecCall::Reader r) {
  using Op = schema::GraphExecCall::Op;
  GraphExecOp op;
  op.exec = r.getExec();
  op.graph = r.getGraph();
  op.flags = r.getFlags();
  op.stream = r.getStream();
  op.node = r.getNode();
  op.enabled = r.getEnabled();
  op.launch_index = r.getLaunchIndex();
  if (op.exec == 0) return capture_error(seq, "graphExec", "no executable graph handle");
  switch (r.getOp()) {
    case Op::INSTANTIATE:
      op.kind = GraphExecOp::Kind::kInstantiate;
      break;
    case Op::UPDATE:
      op.kind = GraphExecOp::Kind::kUpdate;
      break;
    case Op::SET_NODE_PARAMS:
      // An exec node's new parameters: a node parameter change aimed at the exec.
      if (!r.hasParams()) return capture_error(seq, "graphExec", "node parameters missing");
      return add_graph_node(seq, r.getParams(), op.exec);
    case Op::SET_NODE_ENABLED:
      op.kind = GraphExecOp::Kind::kSetEnabled;
      break;
    case Op::UPLOAD:
      op.kind = GraphExecOp::Kind::kUpload;
      break;
    case Op::LAUNCH:
      op.kind = GraphExecOp::Kind::kLaunch;
      graph_launches_[seq] = plan_.actions.size();
      break;
    case Op::DESTROY:
      op.kind = GraphExecOp::Kind::kDestroy;
      break;
    default:
      return capture_error(seq, "graphExec", "unknown executable-graph operation");
  }
  push(seq, std::move(op));
  return std::nullopt;
}

}  // namespace cusnap::replayer::plan_detail
