// Shared pieces of the replayer tests: the standard capture (two kernels, four allocations,
// copies in and out, checksums from a host reference) and replay options for the emulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capture_builder.h"
#include "replayer/replay.h"

namespace cusnap::replayer::test {

// The capture writer shared with the extraction tests (tests/support).
using cusnap::test::as_bytes;
using cusnap::test::CaptureBuilder;
using cusnap::test::Params;
using cusnap::test::RawChunk;
using cusnap::test::SnapshotHeader;

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
  bool no_checksums = false;       // device-to-host copies without checksums: nothing to verify
};

std::string read_text(const std::string& path);
std::string test_ptx();
std::string temp_path(const std::string& name);

// Writes the standard capture to `path`. Expected checksums are computed on the host.
StandardCapture write_standard_capture(const std::string& path,
                                       const StandardOptions& options = {});

// Snapshot captures written with the Writer (docs/format.md, "Memory snapshots"): one launch of
// `kernel` with its beforeLaunch and afterLaunch snapshots, the expected data from a host
// reference.
//   increment: x[i] += 1 over kN ints (in place: a repetition without restore shows).
//   fast_exp:  y[i] = __expf(x[i]) over kN floats; the expected y is the correctly rounded exp,
//              with every 16th element moved 1 ulp further (a valid approximation that is not the
//              emulator's), so an exact comparison fails and `f32:ulp=8` passes.
//   add_bias:  x[i] += bias (5), calls += 1 (41 -> 42): module variables in the snapshots.
struct SnapshotCaptureOptions {
  bool extracted = true;  // CaptureHeader.extract set (restore + compare)
  std::string kernel = "increment";
  bool alter_expected = false;   // one byte of the afterLaunch snapshot flipped
  bool wrong_before = false;     // beforeLaunch bytes that are not the memory's
  bool hash_only_after = false;  // afterLaunch chunks without their blobs
  bool with_skipped = false;     // whole-run: a second launch whose snapshot was skipped
  bool kernel_filtered = false;  // with extracted false: a kernel-filtered capture (restore +
                                 // compare, and the interceptor's closing summary)
  uint64_t chunk_bytes = 1024;
};

struct SnapshotCapture {
  std::string path;
  uint64_t x = kBase;                // first allocation
  uint64_t y = kBase + 0x10000;      // fast_exp's output
  uint64_t bias = kBase + 0x800000;  // add_bias's module variables (captured addresses)
  uint64_t calls = kBase + 0x800100;
  uint64_t launch_seq = 0;
  uint64_t before_seq = 0;
  uint64_t after_seq = 0;
  uint64_t skipped_seq = 0;
  uint64_t dtoh_seq = 0;         // whole-run: the checked copy of x at the end
  uint64_t altered_address = 0;  // alter_expected: the flipped byte
  uint64_t input_bytes = 0;
  uint64_t expected_bytes = 0;
};

SnapshotCapture write_snapshot_capture(const std::string& path,
                                       const SnapshotCaptureOptions& options = {});

// A capture that ends with a sticky error on purpose: x (kN ints, all positive) is incremented
// and read back (checksum), then `check_positive` runs on it and the next cuCtxSynchronize
// returned CUDA_ERROR_ASSERT (710); a device-to-host copy after it failed too.
// trips_assert false: x stays positive, so a replay does not reproduce the recorded error.
struct AssertCapture {
  std::string path;
  uint64_t x = kBase;
  uint64_t check_seq = 0;  // the check_positive launch
  uint64_t sync_seq = 0;   // the cuCtxSynchronize that returned 710
  uint64_t dtoh_seq = 0;   // the verified copy before it
};
AssertCapture write_assert_capture(const std::string& path, bool trips_assert = true);

ReplayOptions emulator_options();

// A whole-run capture of take_ticket over kTicketBlocks blocks (one ticket per block from a
// counter at 0), with an afterLaunch snapshot of the tickets and a checksummed copy of them. The
// expected tickets are those of blocks run in index order, or (`reverse`) in reverse order: what
// a GPU may do, and what the emulator, which runs such kernels in index order, never gives.
inline constexpr unsigned kTicketBlocks = 8;
struct TicketCapture {
  std::string path;
  uint64_t counter = kBase, tickets = kBase + 0x1000;
  uint64_t launch_seq = 0;
  uint64_t dtoh_seq = 0;
};
TicketCapture write_ticket_capture(const std::string& path, bool reverse);

}  // namespace cusnap::replayer::test
