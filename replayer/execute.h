// Executes a plan on an open driver (internal to the replayer; replay.h is the public entry).
//
// Handle maps: every captured handle (module, library, function, kernel, stream, event) is mapped
// to the live handle the replay's own call produced; a captured handle that was never created in
// the capture is an error for modules and functions (with the call's seq), and is replaced by the
// legacy default stream (with a warning) for streams, which keeps ordering conservative.
#pragma once

#include <cuda.h>

#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cusnap/common/emulator_access.h"
#include "replayer/driver.h"
#include "replayer/graph_model.h"
#include "replayer/memory.h"
#include "replayer/plan.h"
#include "replayer/replay.h"

namespace cusnap::replayer {

class Executor {
 public:
  Executor(const Driver& driver, format::Reader& reader, const Plan& plan,
           const ReplayOptions& options, ReplayResult& result, Watchdog& watchdog);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Context, target checks, memory placement. Nothing of the capture has run yet.
  MaybeError prepare();
  // Every action in order, then a final synchronisation and the pending verifications.
  MaybeError run();

 private:
  struct LiveModule {
    bool is_library = false;
    CUmodule module = nullptr;
    CUlibrary library = nullptr;
  };
  struct PendingCopy {
    size_t check = 0;  // index into result_.copies
    uint64_t stream = 0;
    std::vector<uint8_t> bytes;
    bool verify = true;  // false: only kept alive until the copy is known complete
  };
  struct PendingTiming {
    size_t launch = 0;  // index into result_.launches
    CUevent start = nullptr;
    CUevent end = nullptr;
  };

  // One step of a graph launch run node by node: a kernel node with its selection.
  struct GraphStep {
    uint64_t node = 0;
    bool selected = false;
    uint64_t index = 0;  // 1 + its place among the launch's kernel nodes (LaunchKey::graph_kernel)
  };

  void warn(const std::string& message);
  void info(const std::string& message);
  Error fail(const Action& action, const std::string& what, CUresult r) const;

  MaybeError check_target();
  Expected<const std::vector<uint8_t>*> image_bytes(const ModuleLoadOp& op, uint64_t seq);

  MaybeError execute(const Action& action);
  // The recorded sticky error (plan_.recorded_error): whether `e` (from replaying `a`) is it,
  // and the check at its call when no replayed call reported it.
  bool is_expected_error(const Action& a, const Error& e) const;
  MaybeError check_expected_error(uint64_t at_seq);
  void expected_error_seen(uint64_t seq, CUresult r);
  MaybeError do_module_load(const Action& a, const ModuleLoadOp& op);
  MaybeError do_function_get(const Action& a, const FunctionGetOp& op);
  MaybeError do_global_get(const Action& a, const GlobalGetOp& op);
  MaybeError do_function_attribute(const Action& a, const FunctionAttributeOp& op);
  MaybeError do_copy(const Action& a, const CopyOp& op);
  MaybeError do_memset(const Action& a, const MemsetOp& op);
  // `step`: a kernel node of a graph launch run on its own (its selection already made).
  MaybeError do_launch(const Action& a, const LaunchOp& op, const GraphStep* step = nullptr);
  MaybeError issue_launch(const Action& a, const LaunchOp& op, CUfunction f, CUstream stream,
                          std::vector<uint8_t>& params);
  MaybeError timed_repetitions(const Action& a, const LaunchOp& op, CUfunction f, CUstream stream,
                               std::vector<uint8_t>& params, size_t report);
  MaybeError do_stream_create(const Action& a, const StreamCreateOp& op);
  MaybeError do_event_create(const Action& a, const EventCreateOp& op);
  MaybeError do_host_alloc(const Action& a, const HostAllocOp& op);
  // Graphs (execute_graph.cpp).
  MaybeError do_graph(const Action& a, const GraphOp& op);
  MaybeError do_graph_node(const Action& a, const GraphNodeOp& op);
  MaybeError do_graph_exec(const Action& a, const GraphExecOp& op);
  MaybeError graph_launch(const Action& a, const GraphExecOp& op);
  Expected<CUgraph> graph_for(const Action& a, uint64_t captured);
  Expected<CUgraphNode> node_for(const Action& a, uint64_t captured);
  MaybeError do_host_free(const Action& a, const HostFreeOp& op);
  // Arrays, textures and surfaces (execute_array.cpp).
  MaybeError do_array(const Action& a, const ArrayOp& op);
  MaybeError do_tex_object(const Action& a, const TexObjectOp& op);
  MaybeError array_copy(const Action& a, const CopyOp& op, void* host, CUstream stream);
  Expected<CUarray> array_for(const Action& a, uint64_t captured);
  // Replaces, in the 8-byte parameter slots of `layout`, every captured texture/surface object
  // value by the live one; returns how many words it changed (docs/replay.md).
  unsigned map_object_handles(std::vector<uint8_t>& params, const std::vector<ParamSlot>& layout,
                              bool via_extra);
  void release_arrays();
  // Tensor maps (execute_tensor_map.cpp): encoded again on the replay's driver; the captured
  // 128 bytes replaced by the replay's in launch parameters and in host-to-device payloads
  // (docs/replay.md, "Tensor maps"). Both return how many maps they replaced.
  MaybeError do_tensor_map(const Action& a, const TensorMapOp& op);
  unsigned substitute_tensor_maps(std::vector<uint8_t>& params, const LaunchOp& op);
  // `bytes` at captured device address `address`; `back`: the replay's maps by the captured ones
  // (memory read back, compared with a snapshot).
  unsigned substitute_tensor_maps(uint64_t address, std::vector<uint8_t>& bytes, bool back = false);
  // Texture/surface references and memory pools (execute_texref.cpp).
  MaybeError do_tex_ref(const Action& a, const TexRefOp& op);
  MaybeError do_mem_pool(const Action& a, const MemPoolOp& op);
  void release_tex_refs_and_pools();
  // The application's NVTX event, emitted again (execute_nvtx.cpp).
  void do_nvtx(const NvtxOp& op);
  void release_host(uint64_t captured_host);

  Expected<CUfunction> function_for(const Action& a, const LaunchOp& op);
  // function_for for a graph kernel node: a CUkernel (cuLibraryGetKernel, what the CUDA runtime
  // launches) becomes its CUfunction in the current context. cuLaunchKernel accepts a CUkernel
  // cast to CUfunction; CUDA_KERNEL_NODE_PARAMS.func does not (NVIDIA's driver crashed on one).
  Expected<CUfunction> node_function_for(const Action& a, const LaunchOp& op);
  CUstream stream_for(uint64_t captured);
  CUevent event_for(uint64_t captured);
  Expected<uint64_t> device_address(const Action& a, uint64_t captured, uint64_t extent);

  // Verification of pending asynchronous copies on `stream` (all of them when `all`).
  MaybeError settle_copies(bool all, uint64_t stream);
  MaybeError synchronize_all();
  MaybeError resolve_timings();
  MaybeError record_check(CopyCheck check, std::vector<uint8_t> bytes, bool complete,
                          uint64_t stream);
  // --save-outputs: writes `bytes` to the outputs directory under their content hash; the name.
  Expected<std::string> save_output(std::span<const uint8_t> bytes);
  void progress(size_t done, bool final);

  // Repetitions: a copy of every placed range, restored before each run after the first.
  MaybeError save_memory();
  MaybeError restore_memory();
  MaybeError flush_l2(CUstream stream);

  // Memory snapshots (snapshot.cpp): writes every chunk of `snapshot` to device memory, or reads
  // it back and compares it with the capture (both after a full synchronisation).
  MaybeError restore_snapshot(const Action& a, const Snapshot& snapshot);
  MaybeError compare_snapshot(const Action& a, const LaunchOp& op, const Snapshot& snapshot);
  // ReplayOptions::tap: reads the ranges it names for this launch and hands them over.
  // `step`: the kernel node of the graph launch `a` being run node by node (null: a launch).
  MaybeError tap_snapshot(const Action& a, const LaunchOp& op, SnapshotPhase phase,
                          const GraphStep* step = nullptr);
  // SnapshotTap::variables of the launch: looked up on the driver into tap_variables_.
  MaybeError look_up_tap_variables(const Action& a, const SnapshotTap::Variables& wanted);
  // Reads the arrays a tap names whole into tap_array_bytes_, appending them to `taken`.
  MaybeError read_tap_arrays(const Action& a, SnapshotPhase phase,
                             const std::vector<TapArray>& wanted, std::vector<TakenArray>& taken);
  std::string first_divergence() const;
  const Tolerance* tolerance_for(const std::optional<AllocationRef>& allocation) const;
  std::optional<AllocationRef> allocation_of(uint64_t address) const;
  Expected<uint64_t> snapshot_address(const Action& a, const SnapshotChunk& chunk);

  // Access tracking (ReplayOptions::track_chunk_bytes): the emulator's table, found in prepare().
  MaybeError enable_tracking();
  MaybeError take_accesses(const Action& a, size_t launch_index);
  const common::EmulatorAccessTable* access_table_ = nullptr;
  // Order dependence (docs/replay.md, "Order-dependent results"): the emulator's table when the
  // driver is the emulator (it answers which kernels' blocks observe each other's order), each
  // function asked once; the kernels found go to ReplayResult::order_dependent_kernels.
  void find_emulator_table();
  void note_order_dependence(CUfunction f, const std::string& kernel, uint64_t seq);
  const common::EmulatorAccessTable* emulator_table_ = nullptr;
  std::unordered_set<CUfunction> order_checked_;

  const Driver& driver_;
  const DriverApi& api_;
  format::Reader& reader_;
  const Plan& plan_;
  const ReplayOptions& options_;
  ReplayResult& result_;
  Watchdog& watchdog_;

  CUcontext context_ = nullptr;
  CUdevice device_ = 0;
  std::unique_ptr<DeviceMemory> memory_;
  std::unique_ptr<LaunchSelector> selector_;

  std::map<format::BlobId, std::vector<uint8_t>> images_;  // module images by blob, kept alive
  std::deque<std::vector<uint8_t>> wrappers_;              // rebuilt fatbin wrapper structs
  std::unordered_map<uint64_t, LiveModule> modules_;
  std::unordered_map<uint64_t, CUfunction> functions_;
  std::unordered_set<CUfunction> library_kernels_;  // live values in functions_ that are CUkernels
  std::unordered_map<CUfunction, CUfunction> kernel_functions_;  // CUkernel -> its CUfunction
  std::unordered_map<uint64_t, CUstream> streams_;
  // --serialize: the one live stream every captured stream's work goes to (blocking, so the
  // application's synchronous calls on the legacy default stream order with it too).
  CUstream serial_stream_ = nullptr;
  std::unordered_map<uint64_t, CUevent> events_;
  // NVTX: captured domain handle -> the replay's nvtxDomainHandle_t (created by name), captured
  // range id -> the id the replay's nvtxDomainRangeStartEx returned.
  std::unordered_map<uint64_t, void*> nvtx_domains_;
  std::unordered_map<uint64_t, uint64_t> nvtx_ranges_;
  // Graphs: captured handle -> live one, and the replay's own model of every graph
  // (graph_model.h): a launch lists the kernel nodes it runs, in the order the model gives, as
  // launches of the report, and ReplayOptions::graph_timing kNodes (or a snapshot tap on one of
  // its kernel nodes) runs the nodes one by one in that order (docs/replay.md, "Graphs"). A
  // device-to-host memcpy node copies into a host buffer of the replay.
  struct NodeHost {
    uint8_t* bytes = nullptr;
    uint64_t size = 0;
    uint64_t device = 0;  // captured source address
  };
  // --graph-timing nodes: the graph's nodes as stream operations on `stream`, one by one.
  MaybeError run_unrolled(const Action& a, const GraphExecOp& op, const ModelGraph& graph,
                          const std::set<uint64_t>* disabled, const std::vector<GraphStep>& steps,
                          size_t* next_step);
  std::unordered_map<uint64_t, CUgraph> graphs_;
  std::unordered_map<uint64_t, CUgraphNode> nodes_;
  std::unordered_map<uint64_t, CUgraphExec> execs_;
  GraphModel graph_model_;
  std::unordered_map<uint64_t, NodeHost> node_hosts_;
  std::deque<std::vector<uint8_t>> graph_buffers_;  // host sides of memcpy nodes, kept alive
  std::map<uint64_t, AllocationRef> allocations_;   // live captured allocations by base
  // CUDA arrays, mipmapped arrays and texture/surface objects: captured handle -> live one. A
  // mipmap level belongs to its mipmapped array (destroyed with it, never on its own).
  std::unordered_map<uint64_t, CUarray> arrays_;
  std::unordered_map<uint64_t, uint64_t> level_owner_;  // captured level -> captured mipmapped
  std::unordered_map<uint64_t, CUmipmappedArray> mipmapped_;
  struct LiveObject {
    uint64_t live = 0;
    bool surface = false;
  };
  std::unordered_map<uint64_t, LiveObject> objects_;
  // Texture and surface references (captured CUtexref/CUsurfref -> live), with the captured
  // module they belong to (0: made by cuTexRefCreate, destroyed by the replay at the end).
  struct LiveRef {
    uint64_t live = 0;
    uint64_t module = 0;
    bool created = false;
  };
  std::unordered_map<uint64_t, LiveRef> tex_refs_;
  // Memory pools: captured CUmemoryPool -> live; `created` by cuMemPoolCreate (else a device's).
  struct LivePool {
    CUmemoryPool live = nullptr;
    bool created = false;
  };
  std::unordered_map<uint64_t, LivePool> pools_;
  bool warned_extra_objects_ = false;
  bool warned_surface_repeats_ = false;
  // Captured encoding -> the replay driver's encoding of the same map.
  std::map<std::array<uint8_t, 128>, std::array<uint8_t, 128>> tensor_maps_;
  std::map<std::array<uint8_t, 128>, std::array<uint8_t, 128>> tensor_maps_back_;  // reverse
  std::set<std::string> warned_tensor_maps_;  // kernels whose unknown 128-byte slot was warned
  // Recreated host memory, by captured host pointer: either pages mapped at the captured address
  // and registered (mapped_ != nullptr), or a cuMemHostAlloc allocation elsewhere.
  struct HostBuffer {
    void* live = nullptr;  // host pointer the driver knows
    void* mapped = nullptr;
    size_t mapped_bytes = 0;
    uint64_t captured_device = 0;
  };
  std::map<uint64_t, HostBuffer> host_buffers_;
  uint64_t relocated_host_ = 0;
  std::deque<LaunchRef> recent_launches_;
  uint64_t launches_done_ = 0;
  std::vector<size_t> launches_awaiting_verdict_;  // reports waiting for the next checked copy

  std::vector<uint8_t> params_scratch_;  // the parameter block of the launch being issued
  std::vector<void*> args_scratch_;      // its kernelParams array
  std::vector<PendingCopy> pending_copies_;
  std::vector<std::pair<size_t, std::vector<size_t>>> pending_awaiting_;  // copy -> launches
  std::vector<std::vector<uint8_t>> inflight_payloads_;  // async HtoD sources, until a full sync
  uint64_t inflight_bytes_ = 0;
  std::vector<PendingTiming> pending_timings_;
  std::vector<CUevent> event_pool_;

  CUdeviceptr snapshot_ = 0;  // saved memory for repetitions
  uint64_t snapshot_bytes_ = 0;
  std::vector<uint8_t> tap_bytes_;          // the memory a tapped snapshot read (reused)
  std::vector<uint8_t> tap_array_bytes_;    // the arrays it read (reused)
  std::vector<TapVariable> tap_variables_;  // looked up before the tapped launch, read after too
  CUdeviceptr l2_scratch_ = 0;
  uint64_t l2_bytes_ = 0;

  std::chrono::steady_clock::time_point last_progress_{};
  bool progress_shown_ = false;
};

}  // namespace cusnap::replayer
