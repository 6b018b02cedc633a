// CUDA graphs and stream capture (docs/capture.md, "Graphs and stream capture"): the helpers the
// launch, copy and memset recorders use to record work enqueued on a capturing stream as the
// graph node the driver made of it, and the device-to-host memcpy nodes whose host bytes are
// checksummed after every launch of a graph that holds them.
#pragma once

#include <atomic>
#include <cstdint>

#include "cusnap/format/capture.capnp.h"
#include "generated_shim_api.h"
#include "host_region.h"

namespace cusnap::icpt {

class CallScope;
extern std::atomic<int> g_stream_captures;  // captures in progress (capture_mode.cpp)

// The node a call on a capturing stream just added, as cuStreamGetCaptureInfo tells after it.
struct CapturedNode {
  uint64_t stream = 0;
  uint64_t graph = 0;
  uint64_t node = 0;  // 0: not captured
  uint64_t capture_id = 0;
};

// Cheap test first: whether any stream capture is in progress in the process.
inline bool capture_possible() noexcept {
  return g_stream_captures.load(std::memory_order_relaxed) > 0;
}
// After a call that enqueued work on `stream`: true, with *out, when the stream is capturing and
// the work became a node (the stream's single capture dependency now).
bool captured_node(CUstream stream, bool per_thread, CapturedNode* out) noexcept;

// Starts the call's graphNode record (op add) for `node` of `graph`, its dependencies as the
// driver has them.
format::schema::GraphNode::Builder init_node_record(CallScope& call,
                                                    format::schema::GraphNode::Kind kind,
                                                    uint64_t graph, uint64_t node);
void set_captured(format::schema::GraphNode::Builder node, const CapturedNode& captured);

// A memcpy node of `graph` that writes host memory: checksummed after each launch of it.
void note_dtoh_node(uint64_t graph, uint64_t node, const HostRegion& region) noexcept;

// record_copies.cpp: a memcpy node's copy (geometry, payload), as a copy record has it.
void fill_memcpy_node(const CUDA_MEMCPY3D* p, format::schema::Memcpy::Builder record,
                      uint64_t graph, uint64_t node);

}  // namespace cusnap::icpt
