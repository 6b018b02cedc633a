// CUDA graphs: rebuilt node by node with the driver's graph API, instantiated and launched as
// the capture did, so a profiler sees the graph's own launches. Kernel nodes get their function
// and relocated parameters exactly like launches; each graph launch lists the kernel nodes it ran
// as launches of the report, and the device-to-host memcpy nodes the capture checksummed after
// that launch are compared once it has completed. The replay keeps its own model of every graph
// (nodes, dependencies, live parameters), which orders the kernel nodes a launch lists and runs
// a launch node by node under --graph-timing nodes.
#include <algorithm>
#include <cstring>
#include <functional>
#include <queue>

#include "replayer/execute.h"

namespace cusnap::replayer {
namespace {

constexpr size_t kRecentLaunches = 4;

Error unsupported(const Action& a, const std::string& what) {
  Error e(ErrorKind::kUnsupported, what);
  e.at_call(a.seq).in_record(operation_name(a.op));
  return e;
}

}  // namespace

Expected<CUgraph> Executor::graph_for(const Action& a, uint64_t captured) {
  auto it = graphs_.find(captured);
  if (it != graphs_.end()) return it->second;
  return Error(ErrorKind::kCapture, "a graph the capture never created")
      .at_call(a.seq)
      .in_record(operation_name(a.op))
      .with_handle(captured);
}

Expected<CUgraphNode> Executor::node_for(const Action& a, uint64_t captured) {
  auto it = nodes_.find(captured);
  if (it != nodes_.end()) return it->second;
  return Error(ErrorKind::kCapture, "a graph node the capture never added")
      .at_call(a.seq)
      .in_record(operation_name(a.op))
      .with_handle(captured);
}

MaybeError Executor::do_graph(const Action& a, const GraphOp& op) {
  if (api_.cuGraphCreate == nullptr || api_.cuGraphDestroy == nullptr)
    return unsupported(a, "the driver has no CUDA graphs");
  switch (op.kind) {
    case GraphOp::Kind::kCreate:
    case GraphOp::Kind::kCaptureBegin: {
      CUgraph g = nullptr;
      if (CUresult r = api_.cuGraphCreate(&g, op.kind == GraphOp::Kind::kCreate ? op.flags : 0);
          r != CUDA_SUCCESS)
        return fail(a, "cuGraphCreate", r);
      if (auto old = graphs_.find(op.graph); old != graphs_.end()) api_.cuGraphDestroy(old->second);
      graphs_[op.graph] = g;
      graph_model_.create(op.graph);
      return std::nullopt;
    }
    case GraphOp::Kind::kDestroy: {
      auto it = graphs_.find(op.graph);
      if (it == graphs_.end()) return std::nullopt;
      CUresult r = api_.cuGraphDestroy(it->second);
      graphs_.erase(it);
      graph_model_.destroy(op.graph);
      if (r != CUDA_SUCCESS) return fail(a, "cuGraphDestroy", r);
      return std::nullopt;
    }
    case GraphOp::Kind::kClone: {
      auto original = graph_for(a, op.original);
      if (!original) return original.error();
      if (api_.cuGraphClone == nullptr) return unsupported(a, "the driver has no cuGraphClone");
      CUgraph g = nullptr;
      if (CUresult r = api_.cuGraphClone(&g, original.value()); r != CUDA_SUCCESS)
        return fail(a, "cuGraphClone", r);
      if (auto old = graphs_.find(op.graph); old != graphs_.end()) api_.cuGraphDestroy(old->second);
      graphs_[op.graph] = g;
      graph_model_.clone(op.graph, op.original);
      return std::nullopt;
    }
    case GraphOp::Kind::kAddEdges:
    case GraphOp::Kind::kRemoveEdges: {
      auto g = graph_for(a, op.graph);
      if (!g) return g.error();
      std::vector<CUgraphNode> from, to;
      for (const GraphEdgeRef& e : op.edges) {
        auto f = node_for(a, e.from);
        if (!f) return f.error();
        auto t = node_for(a, e.to);
        if (!t) return t.error();
        from.push_back(f.value());
        to.push_back(t.value());
      }
      bool add = op.kind == GraphOp::Kind::kAddEdges;
      auto call = add ? api_.cuGraphAddDependencies : api_.cuGraphRemoveDependencies;
      if (call == nullptr) return unsupported(a, "the driver cannot change graph edges");
      if (CUresult r = call(g.value(), from.data(), to.data(), from.size()); r != CUDA_SUCCESS)
        return fail(a, add ? "cuGraphAddDependencies" : "cuGraphRemoveDependencies", r);
      graph_model_.change_edges(op.graph, op.edges, add);
      return std::nullopt;
    }
    case GraphOp::Kind::kDestroyNode: {
      auto n = node_for(a, op.node);
      if (!n) return n.error();
      if (api_.cuGraphDestroyNode == nullptr) return unsupported(a, "no cuGraphDestroyNode");
      if (CUresult r = api_.cuGraphDestroyNode(n.value()); r != CUDA_SUCCESS)
        return fail(a, "cuGraphDestroyNode", r);
      nodes_.erase(op.node);
      graph_model_.destroy_node(op.node);  // the driver removes the node's edges with it
      return std::nullopt;
    }
  }
  return std::nullopt;
}

MaybeError Executor::do_graph_node(const Action& a, const GraphNodeOp& op) {
  CUgraph graph = nullptr;
  std::vector<CUgraphNode> deps;
  CUgraphNode existing = nullptr;
  CUgraphExec exec = nullptr;
  if (op.set_params) {
    auto n = node_for(a, op.node);
    if (!n) return n.error();
    existing = n.value();
    if (op.exec != 0) {
      auto it = execs_.find(op.exec);
      if (it == execs_.end()) {
        return Error(ErrorKind::kCapture, "an executable graph the capture never instantiated")
            .at_call(a.seq)
            .in_record("graphExec")
            .with_handle(op.exec);
      }
      exec = it->second;
    }
  } else {
    auto g = graph_for(a, op.graph);
    if (!g) return g.error();
    graph = g.value();
    for (uint64_t d : op.dependencies) {
      auto n = node_for(a, d);
      if (!n) return n.error();
      deps.push_back(n.value());
    }
  }
  CUgraphNode made = nullptr;
  CUresult r = CUDA_SUCCESS;
  const char* api = "cuGraphAddEmptyNode";
  // What the node now is, for the replay's model of its graph or exec.
  ModelNode model = model_node(a.seq, op);
  switch (op.kind) {
    case GraphNodeOp::Kind::kKernel: {
      auto f = node_function_for(a, op.kernel);
      if (!f) return f.error();
      // Parameter values are copied by the driver when the node is made or changed.
      std::vector<uint8_t>& params = params_scratch_;
      params.assign(op.kernel.params.begin(), op.kernel.params.end());
      substitute_tensor_maps(params, op.kernel);
      static const std::vector<ParamSlot> kNoLayout;
      memory_->rewrite_pointers(params, op.kernel.via_extra ? kNoLayout : op.kernel.layout);
      map_object_handles(params, op.kernel.layout, op.kernel.via_extra);
      std::vector<void*>& args = args_scratch_;
      args.clear();
      size_t params_size = params.size();
      void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                       &params_size, CU_LAUNCH_PARAM_END};
      CUDA_KERNEL_NODE_PARAMS_v1 p{};
      p.func = f.value();
      p.gridDimX = op.kernel.grid[0];
      p.gridDimY = op.kernel.grid[1];
      p.gridDimZ = op.kernel.grid[2];
      p.blockDimX = op.kernel.block[0];
      p.blockDimY = op.kernel.block[1];
      p.blockDimZ = op.kernel.block[2];
      p.sharedMemBytes = op.kernel.shared_bytes;
      if (op.kernel.via_extra) {
        p.extra = extra;
      } else {
        for (const ParamSlot& slot : op.kernel.layout) args.push_back(params.data() + slot.offset);
        p.kernelParams = args.empty() ? nullptr : args.data();
      }
      if (exec != nullptr) {
        api = "cuGraphExecKernelNodeSetParams";
        if (api_.cuGraphExecKernelNodeSetParams == nullptr) return unsupported(a, api);
        r = api_.cuGraphExecKernelNodeSetParams(exec, existing, &p);
      } else if (existing != nullptr) {
        api = "cuGraphKernelNodeSetParams";
        if (api_.cuGraphKernelNodeSetParams == nullptr) return unsupported(a, api);
        r = api_.cuGraphKernelNodeSetParams(existing, &p);
      } else {
        api = "cuGraphAddKernelNode";
        if (api_.cuGraphAddKernelNode == nullptr) return unsupported(a, api);
        r = api_.cuGraphAddKernelNode(&made, graph, deps.data(), deps.size(), &p);
      }
      break;
    }
    case GraphNodeOp::Kind::kMemcpy: {
      const CopyOp& c = op.copy;
      if (c.involves_array()) {
        return Error(ErrorKind::kUnsupported,
                     "memcpy graph nodes with a CUDA array endpoint are not replayed")
            .at_call(a.seq)
            .in_record("graphNode");
      }
      uint64_t dst = 0, src = 0;
      uint64_t src_pitch = c.dimensions > 1 ? c.src_pitch : c.size;
      uint64_t dst_pitch = c.dimensions > 1 ? c.dst_pitch : c.size;
      if (c.direction != CopyDirection::kDeviceToHost) {
        auto d = device_address(a, c.dst, c.extent(c.dst_pitch, c.dst_height));
        if (!d) return d.error();
        dst = d.value();
      }
      if (c.direction != CopyDirection::kHostToDevice) {
        auto s = device_address(a, c.src, c.extent(c.src_pitch, c.src_height));
        if (!s) return s.error();
        src = s.value();
      }
      std::vector<uint8_t>* host = nullptr;
      if (c.direction == CopyDirection::kHostToDevice) {
        auto payload = reader_.read_blob(c.payload);
        if (!payload) {
          return Error(ErrorKind::kCapture,
                       "reading the copy payload: " + payload.status().to_string())
              .at_call(a.seq)
              .in_record("graphNode");
        }
        host = &graph_buffers_.emplace_back(std::move(payload.value()));
        if (c.dimensions == 1) substitute_tensor_maps(c.dst, *host);
      } else if (c.direction == CopyDirection::kDeviceToHost) {
        host = &graph_buffers_.emplace_back(c.size, 0);
        node_hosts_[op.node] = NodeHost{host->data(), c.size, c.src};
      }
      // The host side is the packed rectangle (payload / checksum layout); offsets are folded in.
      CUDA_MEMCPY3D p{};
      p.WidthInBytes = c.width;
      p.Height = c.dimensions > 1 ? c.height : 1;
      p.Depth = c.dimensions > 1 ? c.depth : 1;
      uint64_t rows = p.Height;
      if (c.direction == CopyDirection::kHostToDevice) {
        p.srcMemoryType = CU_MEMORYTYPE_HOST;
        p.srcHost = host->data();
        p.srcPitch = c.width;
        p.srcHeight = rows;
      } else {
        p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        p.srcDevice = src;
        p.srcPitch = src_pitch;
        p.srcHeight = c.dimensions > 1 ? c.src_height : rows;
      }
      if (c.direction == CopyDirection::kDeviceToHost) {
        p.dstMemoryType = CU_MEMORYTYPE_HOST;
        p.dstHost = host->data();
        p.dstPitch = c.width;
        p.dstHeight = rows;
      } else {
        p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        p.dstDevice = dst;
        p.dstPitch = dst_pitch;
        p.dstHeight = c.dimensions > 1 ? c.dst_height : rows;
      }
      model.copy = p;
      if (exec != nullptr) {
        api = "cuGraphExecMemcpyNodeSetParams";
        if (api_.cuGraphExecMemcpyNodeSetParams == nullptr) return unsupported(a, api);
        r = api_.cuGraphExecMemcpyNodeSetParams(exec, existing, &p, context_);
      } else if (existing != nullptr) {
        return unsupported(a, "cuGraphMemcpyNodeSetParams is not replayed");
      } else {
        api = "cuGraphAddMemcpyNode";
        if (api_.cuGraphAddMemcpyNode == nullptr) return unsupported(a, api);
        r = api_.cuGraphAddMemcpyNode(&made, graph, deps.data(), deps.size(), &p, context_);
      }
      break;
    }
    case GraphNodeOp::Kind::kMemset: {
      const MemsetOp& m = op.memset;
      uint64_t row = m.width * m.element_size;
      uint64_t extent = m.height > 1 ? (m.height - 1) * m.pitch + row : row;
      auto live = device_address(a, m.address, extent);
      if (!live) return live.error();
      CUDA_MEMSET_NODE_PARAMS p{};
      p.dst = live.value();
      p.pitch = m.pitch;
      p.value = m.value;
      p.elementSize = m.element_size;
      p.width = m.width;
      p.height = m.height;
      if (exec != nullptr) {
        api = "cuGraphExecMemsetNodeSetParams";
        if (api_.cuGraphExecMemsetNodeSetParams == nullptr) return unsupported(a, api);
        r = api_.cuGraphExecMemsetNodeSetParams(exec, existing, &p, context_);
      } else if (existing != nullptr) {
        return unsupported(a, "cuGraphMemsetNodeSetParams is not replayed");
      } else {
        api = "cuGraphAddMemsetNode";
        if (api_.cuGraphAddMemsetNode == nullptr) return unsupported(a, api);
        r = api_.cuGraphAddMemsetNode(&made, graph, deps.data(), deps.size(), &p, context_);
      }
      break;
    }
    case GraphNodeOp::Kind::kEventRecord:
    case GraphNodeOp::Kind::kEventWait: {
      if (existing != nullptr) return unsupported(a, "changing an event node is not replayed");
      bool record = op.kind == GraphNodeOp::Kind::kEventRecord;
      auto add = record ? api_.cuGraphAddEventRecordNode : api_.cuGraphAddEventWaitNode;
      api = record ? "cuGraphAddEventRecordNode" : "cuGraphAddEventWaitNode";
      if (add == nullptr) return unsupported(a, api);
      CUevent e = event_for(op.event);
      if (e == nullptr) {
        return Error(ErrorKind::kCapture, "an event node of an event the capture never created")
            .at_call(a.seq)
            .in_record("graphNode")
            .with_handle(op.event);
      }
      model.event = e;
      r = add(&made, graph, deps.data(), deps.size(), e);
      break;
    }
    case GraphNodeOp::Kind::kChildGraph: {
      if (existing != nullptr) return unsupported(a, "changing a child graph is not replayed");
      auto child = graph_for(a, op.child);
      if (!child) return child.error();
      api = "cuGraphAddChildGraphNode";
      if (api_.cuGraphAddChildGraphNode == nullptr) return unsupported(a, api);
      r = api_.cuGraphAddChildGraphNode(&made, graph, deps.data(), deps.size(), child.value());
      // The driver embeds a copy of the child graph as it is now.
      model.child = graph_model_.child_copy(op.child);
      break;
    }
    case GraphNodeOp::Kind::kHost:  // an empty node (the plan warned)
    case GraphNodeOp::Kind::kEmpty:
      if (existing != nullptr) return std::nullopt;  // nothing replayable changes
      if (api_.cuGraphAddEmptyNode == nullptr) return unsupported(a, api);
      r = api_.cuGraphAddEmptyNode(&made, graph, deps.data(), deps.size());
      break;
  }
  if (r != CUDA_SUCCESS) return fail(a, api, r).with_handle(op.node);
  if (made != nullptr) {
    nodes_[op.node] = made;
    graph_model_.add_node(op.graph, std::move(model));
    return std::nullopt;
  }
  // New parameters of the node, in the graph (future instantiations) or in the exec.
  graph_model_.set_params(op.exec, model);
  return std::nullopt;
}

MaybeError Executor::do_graph_exec(const Action& a, const GraphExecOp& op) {
  switch (op.kind) {
    case GraphExecOp::Kind::kInstantiate: {
      auto g = graph_for(a, op.graph);
      if (!g) return g.error();
      if (api_.cuGraphInstantiateWithFlags == nullptr)
        return unsupported(a, "the driver has no cuGraphInstantiateWithFlags");
      CUgraphExec exec = nullptr;
      if (CUresult r = api_.cuGraphInstantiateWithFlags(&exec, g.value(), op.flags);
          r != CUDA_SUCCESS)
        return fail(a, "cuGraphInstantiateWithFlags", r);
      if (auto old = execs_.find(op.exec); old != execs_.end())
        api_.cuGraphExecDestroy(old->second);
      execs_[op.exec] = exec;
      graph_model_.instantiate(op.exec, op.graph);
      return std::nullopt;
    }
    case GraphExecOp::Kind::kUpdate: {
      auto g = graph_for(a, op.graph);
      if (!g) return g.error();
      auto it = execs_.find(op.exec);
      if (it == execs_.end()) return std::nullopt;
      if (api_.cuGraphExecUpdate == nullptr) return unsupported(a, "no cuGraphExecUpdate");
      CUgraphNode error_node = nullptr;
      CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
      if (CUresult r = api_.cuGraphExecUpdate(it->second, g.value(), &error_node, &result);
          r != CUDA_SUCCESS)
        return fail(a, "cuGraphExecUpdate", r);
      graph_model_.update(op.exec, op.graph);
      return std::nullopt;
    }
    case GraphExecOp::Kind::kSetEnabled: {
      auto it = execs_.find(op.exec);
      if (it == execs_.end()) return std::nullopt;
      auto n = node_for(a, op.node);
      if (!n) return n.error();
      if (api_.cuGraphNodeSetEnabled == nullptr) return unsupported(a, "no cuGraphNodeSetEnabled");
      if (CUresult r = api_.cuGraphNodeSetEnabled(it->second, n.value(), op.enabled ? 1 : 0);
          r != CUDA_SUCCESS)
        return fail(a, "cuGraphNodeSetEnabled", r);
      graph_model_.set_enabled(op.exec, op.node, op.enabled);
      return std::nullopt;
    }
    case GraphExecOp::Kind::kUpload: {
      auto it = execs_.find(op.exec);
      if (it == execs_.end() || api_.cuGraphUpload == nullptr) return std::nullopt;
      if (CUresult r = api_.cuGraphUpload(it->second, stream_for(op.stream)); r != CUDA_SUCCESS)
        return fail(a, "cuGraphUpload", r);
      return std::nullopt;
    }
    case GraphExecOp::Kind::kLaunch:
      return graph_launch(a, op);
    case GraphExecOp::Kind::kDestroy: {
      auto it = execs_.find(op.exec);
      if (it == execs_.end()) return std::nullopt;
      CUresult r = api_.cuGraphExecDestroy(it->second);
      execs_.erase(it);
      graph_model_.destroy_exec(op.exec);
      if (r != CUDA_SUCCESS) return fail(a, "cuGraphExecDestroy", r);
      return std::nullopt;
    }
  }
  return std::nullopt;
}

MaybeError Executor::graph_launch(const Action& a, const GraphExecOp& op) {
  auto it = execs_.find(op.exec);
  if (it == execs_.end()) {
    return Error(ErrorKind::kCapture, "launch of an executable graph the capture never made")
        .at_call(a.seq)
        .in_record("graphExec")
        .with_handle(op.exec);
  }
  if (api_.cuGraphLaunch == nullptr) return unsupported(a, "the driver has no cuGraphLaunch");
  const CUgraphExec exec = it->second;
  const ModelExec* model = graph_model_.exec(op.exec);
  CUstream stream = stream_for(op.stream);
  // Every kernel node the launch runs is a launch of the report (selection counts them, in the
  // launch's order, whichever way it runs).
  std::vector<const ModelNode*> kernels = graph_model_.kernels(op.exec);
  std::vector<GraphStep> steps;
  bool any_selected = false;
  bool any_tapped = false;
  for (const ModelNode* k : kernels) {
    const uint64_t index = steps.size() + 1;
    steps.push_back(GraphStep{k->node, selector_->select(k->kernel->kernel_name), index});
    any_selected |= steps.back().selected;
    any_tapped |= options_.tap && options_.tap->ranges.count(LaunchKey{a.seq, index}) != 0;
  }
  // A snapshot tap on one of its kernel nodes (cusnap extract) needs the memory between the
  // nodes: the launch runs node by node, which computes what the graph computes.
  const bool unrolled =
      model != nullptr &&
      ((options_.graph_timing == GraphTiming::kNodes && any_selected) || any_tapped);
  if (unrolled) {
    size_t next = 0;
    if (auto e = run_unrolled(a, op, model->model, &model->disabled, steps, &next)) return e;
  } else {
    for (size_t i = 0; i < kernels.size(); ++i) {
      const LaunchOp& k = *kernels[i]->kernel;
      LaunchReport report;
      report.seq = a.seq;
      report.ordinal = op.launch_index;
      report.graph_node = steps[i].node;
      report.kernel = k.kernel_name;
      report.grid = k.grid;
      report.block = k.block;
      report.shared_bytes = k.shared_bytes;
      report.selected = steps[i].selected;
      launches_awaiting_verdict_.push_back(result_.launches.size());
      result_.launches.push_back(std::move(report));
    }
    watchdog_.launch_issued(a);
    if (watchdog_.launch_limited()) watchdog_.launch_started(a, 1);
    if (CUresult r = api_.cuGraphLaunch(exec, stream); r != CUDA_SUCCESS)
      return fail(a, "cuGraphLaunch", r).with_handle(op.exec);
    for (const ModelNode* k : kernels) {
      if (auto f = function_for(a, *k->kernel))
        note_order_dependence(f.value(), k->kernel->kernel_name, a.seq);
      recent_launches_.push_back(LaunchRef{a.seq, op.launch_index, k->kernel->kernel_name});
      if (recent_launches_.size() > kRecentLaunches) recent_launches_.pop_front();
      ++launches_done_;
    }
  }
  const bool check = !op.checksums.empty() && options_.verify != VerifyMode::kNone;
  if ((watchdog_.launch_limited() && !unrolled) || check) {
    // The host buffers of its memcpy nodes hold this launch's bytes once it has completed (the
    // next launch overwrites them).
    if (CUresult r = api_.cuStreamSynchronize(stream); r != CUDA_SUCCESS)
      return fail(a, "cuStreamSynchronize after the graph launch", r);
    if (watchdog_.launch_limited() && !unrolled) watchdog_.launch_ended();
  }
  if (!check) return std::nullopt;
  for (const auto& [node, expected] : op.checksums) {
    auto host = node_hosts_.find(node);
    CopyCheck c;
    c.seq = a.seq;
    c.expected = expected;
    c.launches_before = launches_done_;
    c.recent_launches.assign(recent_launches_.begin(), recent_launches_.end());
    c.order_dependent = result_.order_dependent_kernels;
    if (host == node_hosts_.end()) {
      warn("graph launch (call " + std::to_string(a.seq) +
           "): a checksummed memcpy node the replay did not build; not verified");
      c.state = VerifyState::kUnverified;
      result_.copies.push_back(std::move(c));
      continue;
    }
    c.address = host->second.device;
    c.size = host->second.size;
    auto alloc = allocations_.upper_bound(c.address);
    if (alloc != allocations_.begin() &&
        c.address - std::prev(alloc)->second.address < std::prev(alloc)->second.size) {
      c.allocation = std::prev(alloc)->second;
    }
    std::vector<uint8_t> bytes(host->second.bytes, host->second.bytes + host->second.size);
    record_check(std::move(c), std::move(bytes), true, op.stream);
  }
  return std::nullopt;
}

// The launch as the graph's nodes, one stream operation each on the launch's stream, in the
// model's order: what the graph computes, in an order its dependencies allow (and the one the
// emulator runs it in). Kernel nodes go through do_launch (events, repetitions, snapshots,
// access tracking, NVTX), copies and memsets as the node's parameters; host, empty and memory
// nodes run nothing, as in the graph (docs/replay.md, "Graphs").
MaybeError Executor::run_unrolled(const Action& a, const GraphExecOp& op, const ModelGraph& graph,
                                  const std::set<uint64_t>* disabled,
                                  const std::vector<GraphStep>& steps, size_t* next_step) {
  CUstream stream = stream_for(op.stream);
  for (size_t i : graph.order) {
    const ModelNode& n = graph.nodes[i];
    if (disabled != nullptr && disabled->count(n.node) != 0) continue;
    switch (n.kind) {
      case GraphNodeOp::Kind::kKernel: {
        if (n.kernel == nullptr || *next_step >= steps.size()) break;
        LaunchOp launch = *n.kernel;
        launch.stream = op.stream;
        launch.ordinal = op.launch_index;
        launch.before.reset();
        launch.after.reset();
        if (auto e = do_launch(a, launch, &steps[(*next_step)++])) return e;
        break;
      }
      case GraphNodeOp::Kind::kMemcpy:
        if (api_.cuMemcpy3DAsync == nullptr)
          return unsupported(a, "the driver has no cuMemcpy3DAsync");
        if (CUresult r = api_.cuMemcpy3DAsync(&n.copy, stream); r != CUDA_SUCCESS)
          return fail(a, "cuMemcpy3DAsync of a memcpy node", r).with_handle(n.node);
        break;
      case GraphNodeOp::Kind::kMemset: {
        if (n.memset == nullptr) break;
        MemsetOp memset = *n.memset;
        memset.stream = op.stream;
        memset.async = true;
        if (auto e = do_memset(a, memset)) return e;
        break;
      }
      case GraphNodeOp::Kind::kEventRecord:
        if (CUresult r = api_.cuEventRecord(n.event, stream); r != CUDA_SUCCESS)
          return fail(a, "cuEventRecord of an event record node", r).with_handle(n.node);
        break;
      case GraphNodeOp::Kind::kEventWait:
        if (CUresult r = api_.cuStreamWaitEvent(stream, n.event, 0); r != CUDA_SUCCESS)
          return fail(a, "cuStreamWaitEvent of an event wait node", r).with_handle(n.node);
        break;
      case GraphNodeOp::Kind::kChildGraph:
        if (n.child == nullptr) break;
        if (auto e = run_unrolled(a, op, *n.child, nullptr, steps, next_step)) return e;
        break;
      case GraphNodeOp::Kind::kHost:
      case GraphNodeOp::Kind::kEmpty:
        break;
    }
  }
  return std::nullopt;
}

}  // namespace cusnap::replayer
