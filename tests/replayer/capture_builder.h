// Builds small captures with the format Writer, the way the interceptor records calls, so that
// replayer tests do not depend on the interceptor. Expected device-to-host checksums are computed
// by the test from an independent host reference, never by running anything on a driver.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/writer.h"

namespace cusnap::replayer::test {

struct Slot {
  uint32_t offset;
  uint32_t size;
};

// A parameter block: values appended with natural alignment, the layout recorded alongside.
class Params {
 public:
  Params& ptr(uint64_t address) { return add(&address, 8); }
  Params& i32(int32_t value) { return add(&value, 4); }
  // A layout entry with no bytes behind it (hostile captures).
  Params& slot_only(uint32_t offset, uint32_t size) {
    layout_.push_back({offset, size});
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  const std::vector<Slot>& layout() const { return layout_; }

 private:
  Params& add(const void* value, uint32_t size);
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

// CaptureHeader fields of snapshot and extracted captures.
struct SnapshotHeader {
  uint64_t chunk_bytes = 64 << 10;
  bool extracted = false;
  std::string kernel;  // ExtractInfo.kernelName
  uint64_t source_launch_seq = 0;
  uint64_t input_bytes = 0;
  uint64_t expected_bytes = 0;
};

class CaptureBuilder {
 public:
  explicit CaptureBuilder(const std::string& path);
  CaptureBuilder(const std::string& path, const SnapshotHeader& snapshot);
  ~CaptureBuilder();

  uint64_t module_load_ptx(uint64_t handle, const std::string& ptx);
  uint64_t function_get(uint64_t module, uint64_t handle, const std::string& name);
  uint64_t alloc(uint64_t address, uint64_t size);
  uint64_t free(uint64_t address);
  uint64_t htod(uint64_t dst, std::span<const uint8_t> bytes, uint64_t stream = 0,
                bool async = false);
  // has_checksum false: a copy whose result the capture holds no checksum for.
  uint64_t dtoh(uint64_t src, uint64_t size, uint64_t checksum, uint64_t stream = 0,
                bool async = false, bool has_checksum = true);
  uint64_t memset32(uint64_t address, uint32_t value, uint64_t count);
  uint64_t launch(uint64_t function, const std::string& name, uint32_t grid, uint32_t block,
                  const Params& params, uint64_t stream = 0, uint64_t ordinal = 0);
  uint64_t stream_create(uint64_t stream);
  uint64_t stream_sync(uint64_t stream);
  uint64_t event_create(uint64_t event);
  uint64_t event_record(uint64_t event, uint64_t stream);
  uint64_t stream_wait(uint64_t stream, uint64_t event);
  // result != 0: a cuCtxSynchronize that returned it (e.g. 710, CUDA_ERROR_ASSERT).
  uint64_t context_sync(int32_t result = 0);
  // cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP (host memory a kernel can reach).
  uint64_t host_alloc(uint64_t address, uint64_t size);
  uint64_t free_host(uint64_t address);  // cuMemFreeHost
  uint64_t global_get(uint64_t module, const std::string& name, uint64_t address, uint64_t size);
  // Tiles [address, address + bytes.size()) in `chunk_bytes` pieces; stores the blobs unless
  // hash_only (the hash is always computed from the bytes).
  std::vector<RawChunk> chunks(uint64_t address, std::span<const uint8_t> bytes,
                               uint64_t chunk_bytes, bool hash_only = false);
  // phase 0 beforeLaunch, 1 afterLaunch, 2 onDemand.
  uint64_t snapshot(uint64_t launch_seq, uint64_t ordinal, int phase,
                    const std::vector<RawChunk>& chunks, const std::string& skipped_reason = "");
  // A call the replayer must skip (failed at capture).
  uint64_t failed_launch(uint64_t function);
  void close();

 private:
  uint64_t append(capnp::MallocMessageBuilder& message);
  void open(const std::string& path, const SnapshotHeader* snapshot);
  std::unique_ptr<format::Writer> writer_;
};

template <typename T>
std::span<const uint8_t> as_bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

}  // namespace cusnap::replayer::test
