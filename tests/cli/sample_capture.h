// A deterministic capture written through the format writer API, plus what the CLI should report
// about it, computed while writing (the "independent reference": nothing here reads the file).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace cusnap::cli_test {

struct ShapeKey {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;
  auto key() const {
    return std::tie(grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes);
  }
  friend bool operator<(const ShapeKey& a, const ShapeKey& b) { return a.key() < b.key(); }
  friend bool operator==(const ShapeKey& a, const ShapeKey& b) { return a.key() == b.key(); }
};

struct ExpectedKernel {
  uint64_t launches = 0;
  std::map<ShapeKey, uint64_t> shapes;
};

struct ExpectedCall {
  uint64_t seq = 0;
  std::string kind;  // CallRecord union member name
  std::string api;
  int32_t result = 0;
  uint64_t thread_id = 0;
  uint64_t key_value = 0;  // a kind-specific value worth checking (address, handle, ...)
};

struct ExpectedCapture {
  std::vector<ExpectedCall> calls;
  std::map<std::string, uint64_t> kind_counts;
  std::map<std::string, ExpectedKernel> kernels;
  uint64_t launches = 0;
  uint64_t threads = 0;
  uint64_t blob_references = 0;
  uint64_t blob_referenced_bytes = 0;
  uint64_t blob_unique_bytes = 0;
  uint64_t distinct_blobs = 0;
  // Successful generic records that may affect device state, per apiName (`cusnap info`'s
  // "replay may diverge" list).
  std::map<std::string, uint64_t> unmodelled;
};

struct SampleOptions {
  unsigned rounds = 40;            // each round: copies, a few launches, syncs
  size_t call_frame_bytes = 4096;  // small, so the file has many call frames
  int compression_level = 3;
  bool unmodelled_calls = true;  // add generic records of state-changing calls
};

// Writes the capture to `path` (the writer's own close() puts the footer on). Throws
// std::runtime_error when the writer reports an error.
ExpectedCapture write_sample_capture(const std::string& path, const SampleOptions& options = {});

}  // namespace cusnap::cli_test
