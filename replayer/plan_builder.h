// The plan builder (build_plan() in plan.h): one class whose record readers live in plan.cpp
// and, for CUDA graphs and stream capture, plan_graph.cpp. Internal to the replayer.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "replayer/plan.h"

namespace cusnap::replayer::plan_detail {

namespace schema = format::schema;

using format::to_blob;

inline bool add_overflows(uint64_t a, uint64_t b) { return a + b < a; }

class PlanBuilder {
 public:
  explicit PlanBuilder(format::Reader& reader) : reader_(reader) {
    // One action per record at most; growing the vector would move every action made so far
    // (a launch is a few hundred bytes) at each doubling. The index's count comes from the
    // file, so the reservation is capped: past it the vector grows as usual.
    plan_.actions.reserve(static_cast<size_t>(std::min<uint64_t>(reader.call_count(), 1u << 18)));
  }

  MaybeError add(const format::CallRef& ref);
  MaybeError add_record(const format::CallRef& ref);
  Plan finish();
  void set_chunk_bytes(uint64_t bytes) { chunk_bytes_ = bytes; }
  uint64_t chunk_bytes() const { return chunk_bytes_; }
  void set_extract(schema::ExtractInfo::Reader e) {
    ExtractSummary x;
    x.source_path = e.getSourcePath();
    x.source_creation_time_ns = e.getSourceCreationTimeNs();
    x.source_host = e.getSourceHostName();
    x.source_pid = e.getSourcePid();
    x.source_launch_seq = e.getLaunchSeq();
    x.source_launch_ordinal = e.getLaunchOrdinal();
    x.kernel = e.getKernelName();
    x.route = e.getRoute() == schema::ExtractInfo::Route::REPLAY ? "replay" : "snapshot";
    x.route_driver = e.getRouteDriver();
    x.minimized = e.getMinimized();
    x.input_bytes = e.getInputBytes();
    x.expected_bytes = e.getExpectedBytes();
    plan_.extract = std::move(x);
  }
  void set_kernel_filter(schema::CaptureOptions::Reader o) {
    KernelFilterSummary x;
    x.filter = o.getKernelRegex();
    x.launch_skip = o.getLaunchSkip();
    x.launch_count = o.getLaunchCount();
    plan_.kernel_filter = std::move(x);
  }
  void set_range(schema::RangeInfo::Reader r) {
    RangeSummary x;
    switch (r.getTrigger()) {
      case schema::RangeInfo::Trigger::NVTX:
        x.trigger = "nvtx";
        break;
      case schema::RangeInfo::Trigger::SIGNAL:
        x.trigger = "signal";
        break;
      default:
        x.trigger = "cudaProfilerApi";
        break;
    }
    x.number = r.getNumber();
    x.end_mode = r.getEndMode();
    x.nvtx_capture = r.getNvtxCapture();
    plan_.range = std::move(x);
    range_capture_ = true;
  }

 private:
  Error capture_error(uint64_t seq, const char* record, std::string message) {
    Error e(ErrorKind::kCapture, std::move(message));
    e.at_call(seq).in_record(record);
    return e;
  }
  void skip(const std::string& what) { ++plan_.skipped[what]; }
  void warn_once(const std::string& key, uint64_t seq, std::string message) {
    if (warned_.insert(key).second) plan_.warnings.push_back({seq, std::move(message)});
  }
  // With node_target_ set (the launch/copy/memset of a graph node is being read), the operation
  // goes there instead of into the plan.
  void push(uint64_t seq, Operation op) {
    if (node_target_ != nullptr) {
      *node_target_ = std::move(op);
      return;
    }
    plan_.actions.push_back(Action{seq, std::move(op)});
  }
  MaybeError add_range(uint64_t seq, const char* record, uint64_t address, uint64_t size);
  bool in_device_memory(uint64_t address) const;
  MaybeError check_blob(uint64_t seq, const char* record, const format::BlobId& id, uint64_t size);

  MaybeError add_module_load(uint64_t seq, schema::ModuleLoad::Reader r);
  MaybeError add_mem_alloc(uint64_t seq, schema::MemAlloc::Reader r);
  MaybeError add_memcpy(uint64_t seq, schema::Memcpy::Reader r);
  MaybeError add_array_endpoints(uint64_t seq, schema::Memcpy::Reader r, CopyOp& op);
  MaybeError add_array(uint64_t seq, schema::ArrayCall::Reader r);
  MaybeError add_tex_object(uint64_t seq, schema::TexObjectCall::Reader r);
  MaybeError add_tensor_map(uint64_t seq, schema::TensorMapCall::Reader r);
  MaybeError add_tex_ref(uint64_t seq, schema::TexRefCall::Reader r);
  MaybeError add_mem_pool(uint64_t seq, schema::MemPoolCall::Reader r);
  MaybeError add_memset(uint64_t seq, schema::Memset::Reader r);
  MaybeError add_launch(uint64_t seq, schema::Launch::Reader r);
  MaybeError add_snapshot(uint64_t seq, schema::MemorySnapshot::Reader r);
  MaybeError add_graph(uint64_t seq, schema::GraphCall::Reader r);
  MaybeError add_graph_node(uint64_t seq, schema::GraphNode::Reader r, uint64_t exec);
  MaybeError add_graph_exec(uint64_t seq, schema::GraphExecCall::Reader r);
  MaybeError add_graph_node_result(uint64_t seq, schema::DeferredResult::Reader d);
  MaybeError add_stream_capture(uint64_t seq, schema::StreamCapture::Reader r);
  bool inside_live_range(uint64_t address, uint64_t size, bool host = false) const;
  MaybeError apply_deferred(uint64_t seq, const char* record, uint64_t related,
                            std::optional<uint64_t> checksum,
                            std::optional<format::BlobId> payload);
  MaybeError parse_legacy_deferred(uint64_t seq, uint64_t related, std::string_view message);

  format::Reader& reader_;
  Plan plan_;
  std::vector<MemoryRange> raw_ranges_;
  std::set<std::string> warned_;
  std::set<uint64_t> contexts_;
  std::unordered_map<uint64_t, size_t> copies_;    // seq -> index in plan_.actions
  std::unordered_map<uint64_t, size_t> launches_;  // seq -> index in plan_.actions
  std::map<uint64_t, uint64_t> live_allocations_;  // base -> size, for snapshot coverage
  std::map<uint64_t, uint64_t> globals_;           // module variables: address -> size
  std::map<uint64_t, uint64_t> host_allocations_;  // host memory (not replayed): base -> size
  // Allocations of graph memory nodes: mapped for the whole replay (a node's address is fixed
  // across launches), so their frees, inside or outside graphs, are not replayed.
  std::set<uint64_t> graph_allocations_;
  uint64_t chunk_bytes_ = 0;    // CaptureOptions.snapshotChunkBytes (set before the records)
  bool range_capture_ = false;  // CaptureHeader.range is set
  bool range_started_ = false;  // its rangeStart snapshot was read
  std::optional<Operation>* node_target_ = nullptr;
  std::unordered_map<uint64_t, size_t> graph_launches_;  // seq -> index in plan_.actions
};

}  // namespace cusnap::replayer::plan_detail
