// Writes snapshot captures with format::Writer directly, as docs/format.md ("Memory snapshots")
// describes them: an independent writer of the contract, so that the extraction tests depend on
// no other module's capture code. Expected memory after a launch is computed by the test on the
// host (a host reference), never by running a driver.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/writer.h"

namespace cusnap::extract::test {

struct Slot {
  uint32_t offset;
  uint32_t size;
};

// A parameter block: values appended with natural alignment, the layout recorded alongside.
struct Params {
  std::vector<uint8_t> bytes;
  std::vector<Slot> layout;
  Params& ptr(uint64_t v) { return add(&v, 8); }
  Params& i32(int32_t v) { return add(&v, 4); }
  Params& add(const void* value, uint32_t size);
};

// One chunk as a test wants to write it (for hostile inputs: any address, any blob).
struct TestChunk {
  uint64_t address = 0;
  uint64_t size = 0;
  format::BlobId blob;
  bool hash_only = false;
};

class SnapshotBuilder {
 public:
  SnapshotBuilder(const std::string& path, uint64_t chunk_bytes);
  ~SnapshotBuilder();

  uint64_t module_load_ptx(uint64_t handle, const std::string& ptx);
  uint64_t module_unload(uint64_t handle);
  uint64_t function_get(uint64_t module, uint64_t handle, const std::string& name,
                        const std::vector<Slot>& layout);
  uint64_t global_get(uint64_t module, const std::string& name, uint64_t address, uint64_t size);
  uint64_t alloc(uint64_t address, uint64_t size);
  uint64_t free(uint64_t address);
  // Synchronous copies (what a replay needs to rebuild memory, and to verify it): host to device
  // with its bytes stored, device to host with the XXH3-64 checksum the application received.
  uint64_t copy_to_device(uint64_t address, std::span<const uint8_t> bytes);
  uint64_t copy_to_host(uint64_t address, std::span<const uint8_t> received);
  uint64_t launch(uint64_t function, const std::string& name, uint32_t grid, uint32_t block,
                  const Params& params, uint64_t layout_seq);
  // The chunks tiling `memory` (address -> bytes) in chunk_bytes pieces; blobs stored unless
  // hash_only.
  std::vector<TestChunk> tile(const std::map<uint64_t, std::vector<uint8_t>>& memory,
                              bool hash_only = false);
  uint64_t snapshot(uint64_t launch_seq, uint64_t ordinal, bool before,
                    const std::vector<TestChunk>& chunks, const std::string& skipped = "");
  format::BlobId put(std::span<const uint8_t> bytes);
  void close();

 private:
  uint64_t append(capnp::MallocMessageBuilder& message);
  std::unique_ptr<format::Writer> writer_;
  uint64_t chunk_bytes_;
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

}  // namespace cusnap::extract::test
