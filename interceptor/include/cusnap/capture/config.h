// Capture configuration, read once per process from the environment (docs/capture.md). The
// public part of the interceptor: the shim reads it, and `cusnap capture` (cli/capture.cpp), which
// sets the variables for its child, expands output names exactly as the shim will. Library
// cusnap::capture_config (interceptor/CMakeLists.txt): libc/libstdc++ only, no CUDA header.
//
//   CUSNAP_CAPTURE_OUTPUT    output file name pattern; unset or empty: pass through, record nothing
//                            %p pid, %h host name, %q{VAR} the value of VAR, %% a percent sign
//   CUSNAP_CAPTURE_ROOT_PID  set by `cusnap capture`: the process that owns the name as given;
//                            any other process (child, fork) writes <stem>.<pid><ext> unless the
//                            pattern already contains %p
//   CUSNAP_FORCE_OVERWRITE   1: truncate an existing file; otherwise <stem>.<n><ext> is used
//   CUSNAP_COMPRESS_LEVEL    zstd level 0..19 (0 stores raw), default 3
//   CUSNAP_COMPRESS_THREADS  compression threads in the application's process, default 2
//   CUSNAP_MAX_QUEUED_MB     bytes waiting for the disk before the policy applies, default 256
//   CUSNAP_QUEUE_POLICY      block (default: the application waits for the disk, nothing is lost)
//                            or drop (copy payloads that do not fit are not stored; recorded)
//   CUSNAP_DTOH_CHECKSUMS    0: do not checksum device-to-host results
//   CUSNAP_SNAPSHOT_KERNELS  memory snapshots around the launches of kernels matching this filter
//                            (Nsight Compute rules, cusnap/common/kernel_filter.h: NAME exact,
//                            regex:EXPR searched); unset or empty: no snapshots
//   CUSNAP_KERNEL_NAME       kernel-filtered capture: record in full only the launches of kernels
//                            matching this filter (same rules), each with the state and memory its
//                            replay needs (docs/capture.md, "Kernel filters"); unset or empty: off
//   CUSNAP_SNAPSHOT_KERNEL_BASE  function (default), demangled or mangled: the name compared
//                            (by CUSNAP_SNAPSHOT_KERNELS or CUSNAP_KERNEL_NAME)
//   CUSNAP_LAUNCH_SKIP       matching launches passed over before the first snapshot (or, with
//                            CUSNAP_KERNEL_NAME, the first recorded launch), default 0
//   CUSNAP_LAUNCH_COUNT      matching launches snapshotted (recorded) after those, default 0 = all
//   CUSNAP_SNAPSHOT_OUTPUTS  1: store the changed after-launch chunks, not only their hashes
//   CUSNAP_SNAPSHOT_CHUNK    chunk size in bytes, default 65536 (4096 .. 1 GiB)
//   CUSNAP_SNAPSHOT_HASH     device (default: hash chunks with the shim's kernel, copy only the
//                            changed ones) or host (copy every chunk, hash it on the host)
//   CUSNAP_CAPTURE_RANGE     none (default), cudaProfilerApi, nvtx or signal: record only inside
//                            capture ranges (docs/capture.md, "Capture ranges")
//   CUSNAP_CAPTURE_RANGE_END stop (default: nothing is recorded after the first range) or
//                            repeat[:N] (one file per range, at most N; %n in the output name)
//   CUSNAP_NVTX_CAPTURE      nvtx trigger: MESSAGE[@DOMAIN] of the range push/start that starts one
//   CUSNAP_REAL_DRIVER       absolute path of the real driver (interceptor/src/real_driver.h)
//   CUSNAP_LOG_LEVEL, CUSNAP_LOG_FILE  diagnostics (interceptor/src/log.h)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cusnap::capture {

struct CaptureConfig {
  bool enabled = false;
  std::string output_pattern;
  long root_pid = 0;  // 0: unknown (every process uses the pattern as given)
  bool force_overwrite = false;
  int compress_level = 3;
  unsigned compress_threads = 2;
  size_t max_queued_bytes = 256u << 20;
  bool drop_when_full = false;
  bool dtoh_checksums = true;
  // Memory snapshots (docs/capture.md, "Memory snapshots"); off when snapshot_kernels is empty.
  std::string snapshot_kernels;
  std::string snapshot_kernel_base = "function";
  uint64_t launch_skip = 0;
  uint64_t launch_count = 0;  // 0: every matching launch after the skipped ones
  bool snapshot_outputs = false;
  std::string snapshot_hash = "device";
  uint64_t snapshot_chunk_bytes = kDefaultSnapshotChunkBytes;

  // Capture ranges (docs/capture.md, "Capture ranges"); CUSNAP_CAPTURE_RANGE and friends as given.
  std::string capture_range = "none";
  std::string capture_range_end = "stop";
  std::string nvtx_capture;

  static constexpr uint64_t kDefaultSnapshotChunkBytes = 64u << 10;
  static constexpr uint64_t kMinSnapshotChunkBytes = 4u << 10;
  static constexpr uint64_t kMaxSnapshotChunkBytes = 1u << 30;

  // Kernel-filtered capture (docs/capture.md, "Kernel filters"); off when empty. Shares the name
  // base, launch_skip/launch_count and the snapshot settings above.
  std::string kernel_name;

  bool snapshots() const { return !snapshot_kernels.empty(); }
  bool kernel_filtered() const { return !kernel_name.empty(); }

  static CaptureConfig from_env();
};

// The capture-range settings, parsed (the one parser of CUSNAP_CAPTURE_RANGE* and of `cusnap
// capture --capture-range*`).
struct RangeSettings {
  enum class Trigger { kNone, kProfilerApi, kNvtx, kSignal };
  Trigger trigger = Trigger::kNone;
  bool repeat = false;       // --capture-range-end repeat[:N]
  uint32_t max_ranges = 1;   // repeat: N (0: no limit); stop: 1
  std::string nvtx_message;  // nvtx: the message a push/start must carry
  std::string nvtx_domain;   // nvtx: its domain ("" = the default domain)
  bool active() const { return trigger != Trigger::kNone; }
};
// Parses the three settings; false with `error` set when one is invalid.
bool parse_range_settings(const CaptureConfig& config, RangeSettings& out, std::string& error);
// The trigger's name as the option spells it ("cudaProfilerApi", ...).
const char* range_trigger_name(RangeSettings::Trigger trigger);

// Expands %p, %h, %q{VAR} and %%; unknown % sequences are kept verbatim.
std::string expand_output_pattern(const std::string& pattern, long pid);

// The file name this process writes: the expanded pattern, with ".<pid>" inserted before the
// extension when this is not the root process and the pattern has no %p.
std::string process_output_name(const CaptureConfig& config, long pid);

// The file of capture range `number` (1-based; 0: the file written when no range started):
// process_output_name with %n replaced by the number; under repeat without %n in the pattern,
// ".<number>" is inserted before the extension (docs/capture.md, "Capture ranges").
std::string range_output_name(const CaptureConfig& config, const RangeSettings& ranges, long pid,
                              uint32_t number);

}  // namespace cusnap::capture
