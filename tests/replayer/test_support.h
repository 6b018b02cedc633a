// Shared pieces of the replayer tests: the standard capture (two kernels, four allocations,
// copies in and out, checksums from a host reference) and replay options for the emulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capture_builder.h"
#include "replayer/replay.h"

namespace cusnap::replayer::test {

// Captured device addresses live here: free in an ordinary process and under ASan, whose
// allocator owns 0x600000000000-0x640000000000.
inline constexpr uint64_t kBase = 0x6f0000000000ull;
inline constexpr int kN = 1000;
inline constexpr int kScale = 3;

struct StandardCapture {
  std::string path;
  uint64_t a = kBase, b = kBase + 0x1000, c = kBase + 0x2000, x = kBase + 0x400000;
  uint64_t alloc_c_seq = 0;
  uint64_t axpy_seq = 0;
  uint64_t increment_seq = 0;
  uint64_t dtoh_c_seq = 0;
  uint64_t dtoh_x_seq = 0;
};

struct StandardOptions {
  bool corrupt_b_payload = false;  // the capture's input differs from what produced the checksum
  bool async_on_stream = false;    // copies and launches on a created stream, events between
  std::string ptx_target;          // replaces ".target sm_75" when set
};

std::string read_text(const std::string& path);
std::string test_ptx();
std::string temp_path(const std::string& name);

// Writes the standard capture to `path`. Expected checksums are computed on the host.
StandardCapture write_standard_capture(const std::string& path, const StandardOptions& options = {});

ReplayOptions emulator_options();

}  // namespace cusnap::replayer::test
