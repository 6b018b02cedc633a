// CUDA graphs and stream capture.
//
// A Graph owns its nodes; a node holds the parameters of one operation, copied when it is added
// (kernel parameters included, as the driver copies them), and its edges. cuGraphInstantiate
// clones the graph into a GraphExec with a topological order; cuGraphLaunch queues the nodes on
// the stream in that order, each as its own stream operation, so they run after everything
// queued on the stream before and before everything queued after, and every node after all its
// dependencies. Event record/wait nodes act on the event at the node's place in that order.
//
// Stream capture: a capturing stream's entry points add nodes to the capture's graph instead of
// queueing work (capture_launch, capture_copy, ...); events recorded in a capture carry the
// capture's current nodes, and a stream that waits for such an event joins the capture. What
// the driver refuses during capture (synchronising or querying a capturing stream or captured
// event, the legacy stream next to a capturing blocking stream, unsafe calls in global and
// thread-local mode) returns the driver's error and invalidates the capture, as documented.
//
// Every graph, node, exec and capture structure is guarded by one mutex (graph_engine.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "driver/launch.h"
#include "driver/stream.h"
#include "generated_driver_api.h"

namespace cusnap::emu::driver {

class Context;
struct Graph;
struct GraphAllocation;

struct GraphNode {
  Graph* graph = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  uint64_t index = 0;            // creation order in its graph: the tie-break of the launch order
  std::vector<GraphNode*> deps;  // incoming edges
  std::vector<GraphNode*> dependents;  // outgoing edges
  // CU_GRAPH_NODE_TYPE_KERNEL: the checked launch (its parameter copy), and the pointer array
  // cuGraphKernelNodeGetParams hands out (into the copy, which lives as long as the node).
  PreparedLaunch kernel;
  std::vector<void*> kernel_param_pointers;
  // Kernel node attributes that are scheduling hints (stored and answered, no effect here);
  // COOPERATIVE and CLUSTER_DIMENSION live in kernel.request.
  std::vector<std::pair<CUlaunchAttributeID, CUlaunchAttributeValue>> kernel_hints;
  CUDA_MEMCPY3D copy{};              // MEMCPY
  CUDA_MEMSET_NODE_PARAMS memset{};  // MEMSET
  CUDA_HOST_NODE_PARAMS host{};      // HOST
  CUevent event = nullptr;           // EVENT_RECORD, WAIT_EVENT
  // BATCH_MEM_OP: the node's copy of the operations (GetParams hands out its address).
  std::vector<CUstreamBatchMemOpParams> mem_ops;
  CUcontext mem_ops_ctx = nullptr;
  // MEM_ALLOC, MEM_FREE: the allocation (graph_memory.cpp), shared with the node's clones in
  // execs and with launches still queued. MEM_ALLOC also keeps what GetParams answers.
  std::shared_ptr<GraphAllocation> allocation;
  CUmemPoolProps alloc_props{};
  std::vector<CUmemAccessDesc> alloc_access;
  Graph* child = nullptr;               // GRAPH: owned (a clone of the graph the node was given)
  const GraphNode* original = nullptr;  // in a clone or an exec: the node it was copied from
  bool enabled = true;                  // in an exec only (cuGraphNodeSetEnabled)
  bool registered = false;              // a CUgraphNode handle (not a node inside an exec)
};

// cuUserObjectCreate: a reference-counted host object whose destructor runs (on a thread of its
// own, never inside the caller's API call) when the last reference goes.
struct UserObject {
  void* ptr = nullptr;
  CUhostFn destroy = nullptr;
  unsigned refs = 0;  // guarded by graph_mutex()
};
// Drops `count` references (graph_mutex() held); the destructor is started at zero.
void release_user_object(UserObject* object, unsigned count);

struct Graph {
  std::vector<GraphNode*> nodes;  // owned, in creation order
  // References the graph owns (cuGraphRetainUserObject); clones and execs own their own.
  std::vector<std::pair<UserObject*, unsigned>> user_objects;
  uint64_t next_index = 0;
  const GraphNode* owner = nullptr;  // the child-graph node that embeds it, if any
  bool registered = false;           // a CUgraph handle
  // A graph with memory nodes has at most one exec at a time (cuGraphInstantiate): how many it
  // has now, shared with them (an exec may outlive its graph).
  std::shared_ptr<unsigned> memory_execs = std::make_shared<unsigned>(0);
};

// The lock every graph, node, exec and capture structure is used under.
std::mutex& graph_mutex();
// Frees a node or a graph (and what it owns); registered handles go to the quarantine.
void free_node(GraphNode* node);
void free_graph(Graph* graph);
Graph* new_graph(bool registered);
// Adds `node` to `graph` after `deps` (checked: nodes of `graph`, no duplicates).
CUresult attach_node(Graph* graph, std::unique_ptr<GraphNode> node, const CUgraphNode* deps,
                     size_t count, GraphNode** out);
// The kernel node of a prepared launch (its parameter pointer array built).
std::unique_ptr<GraphNode> kernel_node(const PreparedLaunch& launch);
// A deep copy of `source` (child graphs included); nodes remember their originals.
Graph* clone_graph(const Graph& source, bool registered);

// The node the capturing entry points add: built by the caller, attached by the capture.
using NodeSpec = std::unique_ptr<GraphNode>;

// Before an entry point queues work on `stream`: CUDA_SUCCESS and *captured == false to queue
// it as usual; CUDA_SUCCESS and *captured == true when `make` built the node and it was added
// to the stream's capture; otherwise the error to return (the capture may be invalidated).
// `synchronous`: a call that waits for its work (a sync copy or memset) is not capturable.
CUresult capture_launch(Stream* stream, const PreparedLaunch& launch, bool* captured);
CUresult capture_node(Stream* stream, bool synchronous, const std::function<NodeSpec()>& make,
                      bool* captured);

// Stream and event entry points under capture (stream_api.cpp). Each answers CUDA_SUCCESS with
// *handled == false when capture is not involved.
CUresult capture_event_record(Event* event, Stream* stream, unsigned flags, bool* handled);
CUresult capture_wait_event(Stream* stream, Event* event, unsigned flags, bool* handled);
CUresult capture_host_func(Stream* stream, CUhostFn fn, void* user_data, bool* handled);
// Synchronising or querying a stream / an event (illegal on a capturing stream or an event
// recorded in an active capture).
CUresult capture_check_stream_sync(Stream* stream);
CUresult capture_check_event_sync(Event* event);
// A "potentially unsafe" call (cuMemAlloc, cuMemFree, cuCtxSynchronize, ...) under the calling
// thread's capture interaction mode (cuThreadExchangeStreamCaptureMode).
CUresult capture_check_unsafe_call(const char* name);
// Stream-ordered work the capture cannot turn into nodes (memory-pool allocations): refused
// with `error` and a log line, and the capture is invalidated.
CUresult capture_refuse(Stream* stream, const char* what, CUresult error);
// cuCtxRecordEvent / cuCtxWaitEvent: refused with STREAM_CAPTURE_UNSUPPORTED (and the captures
// invalidated) while a stream of `context` captures, or `event` (if given) is part of an
// active capture.
CUresult capture_refuse_context(const Context* context, const Event* event, const char* what);
void capture_forget_stream(const Stream* stream);
// Whether `stream` is capturing now: what it is given becomes a node.
bool capture_active(const Stream* stream);
// Whether an active capture adds nodes to `graph` (graph_mutex() held): it cannot be destroyed.
bool capture_uses_graph(const Graph* graph);
void capture_forget_event(const Event* event);

// Graph memcpy and memset nodes (copy.cpp): checked when added and again when launched (memory
// may have been freed meanwhile), and run on the launch stream's worker.
CUresult check_memcpy_node(const CUDA_MEMCPY3D& p);
CUresult memcpy_node_work(Context* ctx, const CUDA_MEMCPY3D& p, Stream::Work* out);
CUresult check_memset_node(const CUDA_MEMSET_NODE_PARAMS& p);
CUresult memset_node_work(Context* ctx, const CUDA_MEMSET_NODE_PARAMS& p, Stream::Work* out);
// Graph batch memory operation nodes (stream_memops.cpp), likewise.
CUresult check_mem_op_node(const std::vector<CUstreamBatchMemOpParams>& ops, unsigned flags);
CUresult mem_op_node_work(Context* ctx, const std::vector<CUstreamBatchMemOpParams>& ops,
                          Stream::Work* out);

// ---- graph memory (graph_memory.cpp) ------------------------------------------------------
// A MEM_ALLOC node's allocation has its address from the moment the node is made (fixed across
// instantiations and launches, as documented) and stays mapped while a node or a queued launch
// refers to it. It is in the allocation table, so device code and copies may use it, only from a
// launch's allocation step to its free (a free node, cuMemFree, cuMemFreeAsync, or the next
// launch of an exec instantiated with AUTO_FREE_ON_LAUNCH): a use outside is an illegal address.

// The node cuGraphAddMemAllocNode (and cuMemAllocAsync under capture) adds: checked as the
// driver documents, its address mapped. *dptr receives the address.
CUresult graph_alloc_spec(const CUmemPoolProps& props, const CUmemAccessDesc* access,
                          size_t access_count, size_t bytesize, CUdeviceptr* dptr,
                          std::unique_ptr<GraphNode>* out);
// The node cuGraphAddMemFreeNode (and cuMemFreeAsync under capture) adds for `dptr`.
CUresult graph_free_spec(CUdeviceptr dptr, std::unique_ptr<GraphNode>* out);
// attach_node's part for memory nodes, once the graph and the dependencies are known: which
// graph owns an allocation, and who may free it (once, in the owning graph or in one other).
CUresult attach_memory_node(Graph* graph, GraphNode* node, const std::vector<GraphNode*>& deps);
// free_node's part: a destroyed free node no longer frees its allocation.
void detach_memory_node(const GraphNode* node);
bool has_memory_nodes(const Graph& graph);
// Whether `dptr` is the address of a graph allocation (graph_mutex() not needed).
bool is_graph_allocation(CUdeviceptr dptr);
// Whether [address, address + size) lies in one graph allocation (`live`: one a launch allocated
// and nothing freed yet, as the host sees it). Copies and memsets are checked when they are
// submitted or made into nodes, which may be before the allocation step that precedes them in
// stream or graph order has run: a submitted copy needs a live allocation, a node any. (A node
// that then runs outside the allocation's lifetime is not caught; device code is, by the
// allocation table.)
bool in_graph_allocation(uint64_t address, uint64_t size, bool live);
// cuGraphLaunch's part: checks the memory nodes of `order` (an exec's nodes in launch order)
// against the allocations' state (a live allocation cannot be allocated again unless
// `auto_free`; only a live one can be freed), charges the device memory and records the new
// state; `before` receives the work the launch runs first (the automatic frees).
CUresult graph_memory_launch(const std::vector<GraphNode*>& order, bool auto_free,
                             std::vector<Stream::Work>* before);
// The stream work of a memory node at its place in a launch.
Stream::Work graph_alloc_work(const std::shared_ptr<GraphAllocation>& allocation);
Stream::Work graph_free_work(const std::shared_ptr<GraphAllocation>& allocation);
// cuMemFree (stream == nullptr: after the context drained) and cuMemFreeAsync of a graph
// allocation outside a graph: *handled false when `dptr` is not one.
CUresult graph_memory_free(CUdeviceptr dptr, Context* ctx, Stream* stream, bool* handled);

// ---- the graph engine (graph_engine.cpp) --------------------------------------------------
// What the entry points (graph.cpp) build on: handles, instantiation, updates, launches.

// An executable graph: a clone of the graph it was instantiated from, launched as a whole.
struct GraphExec {
  Graph* graph = nullptr;                                        // an unregistered clone
  std::unordered_map<const GraphNode*, GraphNode*> by_original;  // top-level nodes
  cuuint64_t flags = 0;
  std::vector<Dependency> launches;        // the end of each launch not yet known to have completed
  Dependency last_launch;                  // the end of the newest launch, on whichever stream
  std::shared_ptr<unsigned> memory_execs;  // its graph's count, when the graph has memory nodes
  ~GraphExec();
};

Graph* graph_from(CUgraph h);
GraphNode* node_from(CUgraphNode h);
GraphExec* exec_from(CUgraphExec h);
CUgraphNode handle_of(GraphNode* n);

// cuGraphInstantiate*: checks the graph (cycles, events of event nodes, flags, one exec of a
// graph with memory nodes) and clones it into an exec; the offending node in *error_node.
CUresult instantiate(CUgraphExec* out, CUgraph hGraph, cuuint64_t flags, GraphNode** error_node);
// Whether `to` may replace `from`'s parameters in an exec: cuGraphExecUpdate's limitations, and
// with `setter` those of the cuGraphExec*NodeSetParams entry points (stricter for memcpy).
CUgraphExecUpdateResult compare_params(const GraphNode& from, const GraphNode& to, bool setter);
// A kernel node's parameters replaced by `spec`'s; its attributes stay.
void take_kernel_params(GraphNode* n, const GraphNode& spec);
// Pairs the nodes of two graphs in creation order and checks types and edges; on a mismatch
// the node (and edge source) of `to` that differs.
CUgraphExecUpdateResult compare_graphs(const Graph& from, const Graph& to, const GraphNode** node,
                                       const GraphNode** from_node);
// Takes `from`'s parameters into the exec node `to` (edges stay).
void take_params(GraphNode* to, const GraphNode& from);
// cuGraphExecUpdate: the graph's parameters into the exec, node for node, when the topology is
// the same.
CUresult exec_update(CUgraphExec hExec, CUgraph hGraph, CUgraphExecUpdateResultInfo* info);
// cuGraphLaunch / cuGraphUpload (a launch into a capturing stream becomes a child graph node).
CUresult graph_launch(CUgraphExec hExec, CUstream hStream, bool per_thread);
CUresult graph_upload(CUgraphExec hExec, CUstream hStream, bool per_thread);

}  // namespace cusnap::emu::driver
