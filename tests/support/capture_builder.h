// Writes synthetic captures with format::Writer directly, the way the interceptor records calls
// (docs/format.md, "Memory snapshots" included), so that the replayer and extraction tests
// depend on no other module's capture code: an independent writer of the capture contract.
// Expected memory and device-to-host checksums are computed by the tests from a host reference,
// never by running anything on a driver. Helpers take any value, so tests can write hostile
// captures (a chunk at any address, a layout entry with no bytes behind it) on purpose.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/writer.h"

namespace cusnap::test {

struct Slot {
  uint32_t offset;
  uint32_t size;
};

// A parameter block: values appended with natural alignment, the layout recorded alongside.
class Params {
 public:
  Params& ptr(uint64_t address) { return add(&address, 8); }
  Params& i32(int32_t value) { return add(&value, 4); }
  Params& add(const void* value, uint32_t size);
  // A layout entry with no bytes behind it (hostile captures).
  Params& slot_only(uint32_t offset, uint32_t size) {
    layout_.push_back({offset, size});
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  const std::vector<Slot>& layout() const { return layout_; }

 private:
  std::vector<uint8_t> bytes_;
  std::vector<Slot> layout_;
};

// A memory snapshot chunk as the record holds it (tests may make it inconsistent on purpose).
struct RawChunk {
  uint64_t address = 0;
  uint64_t size = 0;
  format::BlobId blob;
  bool hash_only = false;
};

// CaptureHeader fields. Without `snapshot` the header is a stream capture's.
struct SnapshotHeader {
  uint64_t chunk_bytes = 64 << 10;
  std::string kernel_regex;  // CaptureOptions.kernelRegex (empty: not set)
  bool extracted = false;
  bool kernel_filtered = false;  // CaptureOptions.kernelFiltered (schema 8)
  std::string kernel;            // ExtractInfo.kernelName
  uint64_t source_launch_seq = 0;
  uint64_t input_bytes = 0;
  uint64_t expected_bytes = 0;
};
struct HeaderOptions {
  std::optional<SnapshotHeader> snapshot;
  std::string host_name;  // empty: not set
  uint32_t pid = 0;
  int64_t creation_time_ns = 0;
  std::vector<std::string> command_line;  // argv (empty: not set)
  std::vector<std::pair<std::string, std::string>> environment;
  std::string working_directory;
};

// MemorySnapshot.phase.
inline constexpr int kBeforeLaunch = 0;
inline constexpr int kAfterLaunch = 1;
inline constexpr int kOnDemand = 2;

class CaptureBuilder {
 public:
  explicit CaptureBuilder(const std::string& path);
  CaptureBuilder(const std::string& path, const SnapshotHeader& snapshot);
  CaptureBuilder(const std::string& path, const HeaderOptions& header);
  ~CaptureBuilder();

  format::BlobId put(std::span<const uint8_t> bytes);
  // image_size: what the record says the image holds (hostile captures); default: its size.
  uint64_t module_load_ptx(uint64_t handle, const std::string& ptx,
                           std::optional<uint64_t> image_size = std::nullopt);
  uint64_t module_unload(uint64_t handle);
  // With `layout`: the parameter layout the interceptor read from the PTX signature.
  uint64_t function_get(uint64_t module, uint64_t handle, const std::string& name,
                        const std::optional<std::vector<Slot>>& layout = std::nullopt);
  uint64_t global_get(uint64_t module, const std::string& name, uint64_t address, uint64_t size);
  uint64_t alloc(uint64_t address, uint64_t size);
  uint64_t free(uint64_t address);
  // cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP (host memory a kernel can reach).
  uint64_t host_alloc(uint64_t address, uint64_t size);
  uint64_t free_host(uint64_t address);  // cuMemFreeHost
  uint64_t htod(uint64_t dst, std::span<const uint8_t> bytes, uint64_t stream = 0,
                bool async = false);
  // A host-to-device copy naming `payload` whatever it holds (hostile captures: sizes that
  // disagree with the blob). height 0: a 1-D copy of `width` bytes; otherwise a 2-D copy of
  // `height` rows of `width` bytes, the device rows `width` bytes apart.
  uint64_t htod_payload(uint64_t dst, const format::BlobId& payload, uint64_t width,
                        uint64_t height = 0);
  // A deferredResult completing the copy with seq `copy_seq`: the bytes it really read.
  uint64_t deferred_payload(uint64_t copy_seq, const format::BlobId& payload);
  // has_checksum false: a copy whose result the capture holds no checksum for.
  uint64_t dtoh(uint64_t src, uint64_t size, uint64_t checksum, uint64_t stream = 0,
                bool async = false, bool has_checksum = true);
  uint64_t memset32(uint64_t address, uint32_t value, uint64_t count);
  // layout_seq: the functionGet record the parameter layout came from (0: not set).
  uint64_t launch(uint64_t function, const std::string& name, uint32_t grid, uint32_t block,
                  const Params& params, uint64_t stream = 0, uint64_t ordinal = 0,
                  uint64_t layout_seq = 0);
  // A call the replayer must skip (failed at capture).
  uint64_t failed_launch(uint64_t function);
  uint64_t stream_create(uint64_t stream);
  uint64_t stream_sync(uint64_t stream);
  uint64_t event_create(uint64_t event);
  uint64_t event_record(uint64_t event, uint64_t stream);
  uint64_t stream_wait(uint64_t stream, uint64_t event);
  // result != 0: a cuCtxSynchronize that returned it (e.g. 710, CUDA_ERROR_ASSERT).
  uint64_t context_sync(int32_t result = 0);

  // Tiles [address, address + bytes.size()) in `chunk_bytes` pieces; stores the blobs unless
  // hash_only (the hash is always computed from the bytes).
  std::vector<RawChunk> chunks(uint64_t address, std::span<const uint8_t> bytes,
                               uint64_t chunk_bytes, bool hash_only = false);
  // chunks() of every range of `memory` (address -> bytes), in the header's chunk size.
  std::vector<RawChunk> tile(const std::map<uint64_t, std::vector<uint8_t>>& memory,
                             bool hash_only = false);
  // phase: kBeforeLaunch, kAfterLaunch or kOnDemand.
  uint64_t snapshot(uint64_t launch_seq, uint64_t ordinal, int phase,
                    const std::vector<RawChunk>& chunks, const std::string& skipped_reason = "");
  // A bool is not a phase (true would read as kAfterLaunch).
  uint64_t snapshot(uint64_t, uint64_t, bool, const std::vector<RawChunk>&,
                    const std::string& = "") = delete;
  // CUDA graphs (schema 5): an explicit graph, a memset node (32-bit), a device-to-host
  // memcpy node, instantiation, a launch (with its index) and a memcpy node's checksum after it.
  uint64_t graph_create(uint64_t graph);
  // A call the interceptor records only by name (a GenericCall), e.g. cuGraphAddNode.
  uint64_t generic(const char* api, bool affects_device_state);
  uint64_t graph_memset_node(uint64_t graph, uint64_t node, const std::vector<uint64_t>& deps,
                             uint64_t address, uint32_t value, uint64_t count);
  uint64_t graph_kernel_node(uint64_t graph, uint64_t node, const std::vector<uint64_t>& deps,
                             uint64_t function, const std::string& name, uint32_t grid,
                             uint32_t block, const Params& params);
  uint64_t graph_dtoh_node(uint64_t graph, uint64_t node, const std::vector<uint64_t>& deps,
                           uint64_t src, uint64_t size);
  // cuGraphClone: `clone` made from `original`.
  uint64_t graph_clone(uint64_t clone, uint64_t original);
  // cuGraphAddDependencies: edges (from, to) added to nodes already in `graph`.
  uint64_t graph_add_edges(uint64_t graph, const std::vector<std::pair<uint64_t, uint64_t>>& edges);
  uint64_t graph_instantiate(uint64_t exec, uint64_t graph);
  uint64_t graph_launch(uint64_t exec, uint64_t stream, uint64_t launch_index);
  uint64_t deferred_node_checksum(uint64_t launch_seq, uint64_t node, uint64_t checksum);
  // A node of `kind` (schema GraphNode.Kind) with no parameters and no dependencies.
  uint64_t graph_bare_node(uint64_t graph, uint64_t node, format::schema::GraphNode::Kind kind);
  // A record the test built itself (a CallRecord root: any thread, times and fields).
  uint64_t append_record(capnp::MallocMessageBuilder& message) { return append(message); }
  // CUDA arrays and texture/surface objects (schema 6). A 1-D array of `width` elements of
  // `format` (CUarray_format) with `channels` channels; flags: CUDA_ARRAY3D_*.
  uint64_t array_create(uint64_t array, int32_t format, uint32_t channels, uint64_t width,
                        uint64_t height = 0, uint32_t flags = 0);
  // A texture over `array`: point filtering, clamp, unnormalized coordinates, element reads.
  uint64_t tex_object_create(uint64_t object, uint64_t array);
  uint64_t surf_object_create(uint64_t object, uint64_t array);
  // A copy with an array endpoint (Memcpy kind arrayInvolved), as the interceptor records it.
  // api (CopyGeometry.ArrayApi) != none: a 1-D array copy of `width` bytes, offsets in x;
  // none: a 2-D copy of `height` rows, a linear device side `pitch` bytes per row. `payload`:
  // the host source's bytes (host to array); `checksum`: the host destination's (array to host).
  struct ArrayCopy {
    format::schema::CopyGeometry::ArrayApi api = format::schema::CopyGeometry::ArrayApi::NONE;
    int32_t src_type = 0, dst_type = 0;  // CUmemorytype: 1 host, 2 device, 3 array
    uint64_t src_array = 0, dst_array = 0;
    uint64_t src = 0, dst = 0;  // the device (or host) pointer side
    uint64_t src_x = 0, dst_x = 0, src_y = 0, dst_y = 0;
    uint64_t width = 0, height = 1, pitch = 0;
    std::vector<uint8_t> payload;
    std::optional<uint64_t> checksum;
  };
  uint64_t array_copy(const ArrayCopy& copy);
  // An NVTX event of the application (schema 6, NvtxEvent); `kind` is a NvtxEvent::Kind value
  // (any number: a newer writer's kind), domain_handle 0 the default domain.
  uint64_t nvtx(uint16_t kind, const std::string& domain, uint64_t domain_handle,
                const std::string& message, uint32_t color, uint64_t range_id);
  // A toolEvent of kind info with this message (the interceptor's notes, e.g. a kernel filter's
  // summary).
  uint64_t tool_info(const std::string& message);
  void close();

 private:
  uint64_t append(capnp::MallocMessageBuilder& message);
  std::unique_ptr<format::Writer> writer_;
  uint64_t chunk_bytes_ = 64 << 10;
};

template <typename T>
std::span<const uint8_t> as_bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

template <typename T>
std::vector<uint8_t> to_bytes(const std::vector<T>& v) {
  auto s = as_bytes(v);
  return {s.begin(), s.end()};
}

}  // namespace cusnap::test
