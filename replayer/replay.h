// The replayer's entry point: replay a capture on a driver chosen at run time, verify it, time it.
//
// Order: actions run in capture (seq) order from one host thread. Work keeps the stream it was
// captured on (captured streams are recreated, events too), so per-stream order and the
// cross-stream dependencies the application expressed with events, the legacy default stream and
// host synchronisation hold as they did at capture, and nothing more: streams run concurrently
// as captured (docs/replay.md, "Concurrency"). The replay adds no synchronisation of its own
// except where timing or verification needs it (timed repetitions, memory snapshots, time
// limits). ReplayOptions::serialize puts all work on one stream instead (capture order).
//
// Contexts: everything runs in the primary context of one device (--device), whatever contexts
// the capture used (a warning says so when it used several).
//
// Determinism: the replay issues the same calls in the same order with the same bytes; on a
// deterministic driver (the emulator, or kernels without races/atomics order dependence) two
// replays of one capture give identical verification results.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cusnap/format/reader.h"
#include "cusnap/format/snapshot_ranges.h"
#include "replayer/memory.h"
#include "replayer/plan.h"
#include "replayer/status.h"
#include "replayer/timing.h"
#include "replayer/tolerance.h"
#include "replayer/verify.h"
#include "replayer/watchdog.h"

namespace cusnap::replayer {

enum class MessageLevel : uint8_t { kInfo, kWarning };

// One memory snapshot the replay took itself (SnapshotTap): the memory at captured addresses
// before or after a launch, cut into chunks by format/snapshot_ranges.h's tiling.
struct TakenChunk {
  uint64_t address = 0;  // captured address
  std::span<const uint8_t> bytes;
  format::BlobId id;  // format::hash_blob(bytes)
};
// A module variable the tap looked up by name on the replay driver (SnapshotTap::variables).
struct TapVariable {
  uint64_t module = 0;  // the captured module (or library) handle
  bool is_library = false;
  std::string name;
  uint64_t address = 0;  // where the replay driver placed it (no captured address exists)
  uint64_t size = 0;
};
// A CUDA array a tap reads with the memory (SnapshotTap::arrays): its captured handle and its
// packed extent (format::array_extent), and what was read.
struct TapArray {
  uint64_t array = 0;
  uint64_t width_bytes = 0;
  uint64_t height = 1;
  uint64_t depth = 1;
};
struct TakenArray {
  uint64_t array = 0;              // captured handle
  std::span<const uint8_t> bytes;  // width_bytes * height * depth, packed
};
// A launch a tap names: a launch record (graph_kernel 0), or one kernel node of a graph launch:
// the graph launch record's seq and 1 + the node's place among the kernel nodes the launch runs
// (replayer/graph_model.h's order; a place, not a handle: a child graph embedded twice runs its
// nodes twice).
struct LaunchKey {
  uint64_t seq = 0;
  uint64_t graph_kernel = 0;
  auto operator<=>(const LaunchKey&) const = default;
};

struct TakenSnapshot {
  uint64_t launch_seq = 0;
  // A kernel node of the graph launch at launch_seq: LaunchKey::graph_kernel and the captured
  // CUgraphNode (0, 0: a launch record).
  uint64_t graph_kernel = 0;
  uint64_t graph_node = 0;
  uint64_t launch_ordinal = 0;
  std::string kernel;
  SnapshotPhase phase = SnapshotPhase::kBeforeLaunch;
  std::vector<TakenChunk> chunks;  // valid during the callback only
  // The variables of SnapshotTap::variables the driver found (the same in both phases); their
  // chunks are among `chunks`, at their live addresses.
  std::vector<TapVariable> variables;
  // The arrays of SnapshotTap::arrays, in its order (valid during the callback only).
  std::vector<TakenArray> arrays;
  // Non-empty: the replay had already diverged from the capture when this snapshot was taken
  // (a checksummed copy or a snapshot chunk before this point did not match): the first one.
  std::string diverged;
};

// Snapshots taken by the replay (`cusnap extract --route replay`, docs/extract.md): for every
// launch named in `ranges` (a graph launch with a named kernel node runs node by node, as under
// --graph-timing nodes, so that the memory between its nodes exists), the memory of its ranges
// (captured addresses) is read after a full synchronisation before the launch and again after it,
// tiled in `chunk_bytes` pieces, and handed to `on_snapshot`; an error it returns ends the replay.
// The replay ends after the last such launch (what follows cannot change them). It needs the
// captured addresses: with memory relocated (AddressMode::kRelocate, or a driver that did not
// honour them) it is an error.
//
// `variables`: module variables no record of the capture names (a capture made without
// snapshots records only those the application looked up), by name in their captured module,
// per launch. Before the launch each is looked up on the replay driver (cuModuleGetGlobal /
// cuLibraryGetGlobal) and read with the ranges, at its live address (no captured one exists);
// one the driver does not find is left out with a warning, one that overlaps a range is an error.
//
// `arrays`: CUDA arrays (captured handles) the launch reaches through texture or surface objects,
// read whole with the memory (cuMemcpy3D to the host) in both phases.
struct SnapshotTap {
  std::map<LaunchKey, std::vector<std::pair<uint64_t, uint64_t>>> ranges;  // launch -> ranges
  struct Variables {
    uint64_t module = 0;
    std::vector<std::string> names;
  };
  std::map<LaunchKey, Variables> variables;           // launch -> variables to look up
  std::map<LaunchKey, std::vector<TapArray>> arrays;  // launch -> arrays to read
  uint64_t chunk_bytes = format::kDefaultSnapshotChunkBytes;
  std::function<MaybeError(const TakenSnapshot&)> on_snapshot;
};

// What a replay proved. kNothingVerified: no copy checksum and no snapshot chunk was compared
// (verification off, a capture without checksums or snapshots): the replay ran, but it says
// nothing about the results, and is never reported as a match.
enum class Verdict : uint8_t { kMatched, kMismatched, kNothingVerified };
const char* verdict_name(Verdict verdict);  // "matched", "mismatched", "nothing verified"

// How a graph launch runs (docs/replay.md, "Graphs"). kGraph: cuGraphLaunch, the graph's own
// launch; its kernel nodes are listed as launches but not timed one by one. kNodes: a graph
// launch with a selected kernel node runs unrolled instead: its nodes, in the launch order of
// the replay's graph model, each as its own stream operation on the launch's stream, so every
// kernel node is timed (and repeated) like an ordinary launch. Results are the same; the time
// is not the graph's (no graph launch overhead, no overlap of independent nodes).
enum class GraphTiming : uint8_t { kGraph, kNodes };
const char* graph_timing_name(GraphTiming timing);  // "graph", "nodes"

struct ReplayOptions {
  std::string driver = "auto";  // auto | emulator | PATH (see resolve_driver)
  int device = 0;
  VerifyMode verify = VerifyMode::kChecksum;
  AddressMode address_mode = AddressMode::kSame;
  bool timing = true;       // events around selected launches
  unsigned repeat = 1;      // timed runs per selected launch
  unsigned warmup = 0;      // untimed runs before them
  SamplingPolicy sampling;  // adaptive: --repeat auto, NVBench's discipline (timing.h)
  CacheControl cache_control = CacheControl::kAll;
  std::string kernel_regex;  // selection (timing.h)
  common::KernelNameBase kernel_name_base = common::KernelNameBase::kFunction;
  uint64_t launch_skip = 0;
  uint64_t launch_count = 0;  // 0: all
  bool nvtx = true;           // NVTX range per launch: "<kernel> #<ordinal> (call <seq>)"
  // --serialize: every captured stream's work (the default streams' too) goes to one live stream
  // of the replay, so the device runs it in capture order, one operation after the other. Off:
  // each captured stream is its own live stream and only the captured dependencies order them.
  bool serialize = false;
  GraphTiming graph_timing = GraphTiming::kGraph;  // --graph-timing
  bool progress = false;  // progress line on stderr (the CLI enables it on a tty)
  // Element-wise comparison of snapshot chunks (tolerance.h); empty: exact comparison only.
  std::vector<Tolerance> tolerances;
  // --save-outputs DIR: the bytes of every verified device-to-host copy and of every chunk of an
  // afterLaunch snapshot check, each in DIR/<XXH3-128 hex of the bytes> (content-addressed:
  // equal bytes are one file), for `cusnap compare` to compare numerically. Empty: none.
  std::string save_outputs_dir;
  // Access tracking (docs/emulator.md, "Access tracking"): 0, the default, is off; else a power of
  // two, and every launch runs with the emulator's tracking at that chunk size and reports the
  // captured memory it read and wrote (LaunchReport::accesses). Needs the cusnap emulator (any
  // other driver is refused with an error) and synchronizes after each launch.
  uint64_t track_chunk_bytes = 0;
  std::optional<SnapshotTap> tap;  // snapshots the replay takes itself (above)
  // Time limits in seconds, 0: none (watchdog.h). timeout_launch_seconds: each launch must end
  // within it (the replay then waits for every launch to end before going on);
  // timeout_seconds: the whole replay, from opening the driver to the last synchronisation.
  // Past one, on_timeout is called on the watchdog thread and the process ends with
  // kTimeoutExitCode: a hung kernel cannot be waited out.
  double timeout_launch_seconds = 0;
  double timeout_seconds = 0;
  TimeoutHandler on_timeout;
  // Warnings and information (relocation, skipped calls, target differences). Default: dropped.
  std::function<void(MessageLevel, const std::string&)> on_message;
};

// The memory one launch read and wrote, as the emulator's access tracking saw it, translated
// back to captured addresses: ranges (address, size), ascending and disjoint, each a whole number
// of ReplayOptions::track_chunk_bytes chunks of the live address space, cut to the captured
// ranges and module variables they lie in.
struct LaunchAccesses {
  std::vector<std::pair<uint64_t, uint64_t>> read;
  std::vector<std::pair<uint64_t, uint64_t>> written;
  uint64_t untranslated_bytes = 0;  // of the live chunks, bytes in no captured range or global
};

struct LaunchReport {
  uint64_t seq = 0;
  uint64_t ordinal = 0;  // a kernel node's execution: the graph launch's index (graph_launch)
  // A kernel node run by a graph launch (call `seq`, a cuGraphLaunch): its captured node handle;
  // 0 for an ordinary launch. Each graph launch lists every kernel node of the graph it ran.
  uint64_t graph_node = 0;
  std::string kernel;
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  uint32_t shared_bytes = 0;
  bool selected = false;
  // The verdict of the first checksummed device-to-host copy after this launch (the first point
  // where its results could be observed), kUnverified when there is none.
  VerifyState verification = VerifyState::kUnverified;
  TimeStats time;                          // samples == 0 when not timed
  unsigned pointers_rewritten = 0;         // relocation
  std::optional<LaunchAccesses> accesses;  // with ReplayOptions::track_chunk_bytes
};

// One snapshot chunk whose replayed bytes differ from the captured ones.
struct ChunkMismatch {
  uint64_t address = 0;  // captured address of the chunk
  uint64_t size = 0;
  format::BlobId expected;  // the captured hash
  format::BlobId actual;    // XXH3-128 of the replayed bytes
  std::optional<AllocationRef>
      allocation;            // what the chunk lies in (kind "global NAME" for variables)
  bool bytes_known = false;  // the expected bytes are in the file (not hashOnly)
  // With bytes_known: the first differing byte and how many differ.
  uint64_t first_difference = 0;  // captured address
  uint8_t expected_byte = 0;
  uint8_t actual_byte = 0;
  uint64_t differing_bytes = 0;
  // A tolerance rule applied to this chunk (tolerance_text non-empty): the element comparison.
  std::string tolerance_text;
  bool within_tolerance = false;  // every element inside it: the chunk counts as matched
  ElementComparison elements;
  std::string note;  // e.g. why a tolerance could not be applied
};

// The comparison of one snapshot with the replayed memory.
struct SnapshotCheck {
  uint64_t seq = 0;  // the memorySnapshot record
  uint64_t launch_seq = 0;
  uint64_t launch_ordinal = 0;
  std::string kernel;
  SnapshotPhase phase = SnapshotPhase::kAfterLaunch;
  uint64_t chunks = 0;  // chunks compared
  uint64_t bytes = 0;
  uint64_t matched_chunks = 0;           // identical bytes
  uint64_t within_tolerance_chunks = 0;  // different bytes, every element inside the tolerance
  uint64_t mismatched_chunks = 0;
  std::vector<ChunkMismatch> mismatches;  // the first kMaxReportedMismatches, in address order
  std::vector<std::string> tolerances;    // the rules that were applied to some chunk
  // Order-dependent kernels launched up to this snapshot, this launch's included (emulator only).
  std::vector<OrderDependentKernel> order_dependent;
  // --save-outputs, afterLaunch checks: every chunk compared, with the file holding its bytes.
  struct Saved {
    uint64_t address = 0;
    uint64_t size = 0;
    std::string output;
  };
  std::vector<Saved> saved;
  bool ok() const { return mismatched_chunks == 0; }
};
inline constexpr size_t kMaxReportedMismatches = 16;
inline constexpr size_t kWorstElements = 8;

struct SnapshotResults {
  uint64_t restored_chunks = 0;  // extracted capture: chunks written before launches
  uint64_t restored_bytes = 0;
  uint64_t compared_chunks = 0;
  uint64_t compared_bytes = 0;
  uint64_t matched_chunks = 0;
  uint64_t within_tolerance_chunks = 0;
  uint64_t mismatched_chunks = 0;
  uint64_t order_dependent_checks = 0;  // checks with mismatches after an order-dependent kernel
  std::vector<SnapshotCheck> checks;    // in the order they were made
  bool ok() const { return mismatched_chunks == 0; }
};

// The capture's sticky error (plan.h, RecordedError) as the replay met it. The replay runs up to
// the call that returned it at capture and expects the driver to report the same error there or
// earlier, but not before the launch that preceded it: reproduced, every verification before it
// stands and the calls after it are not replayed (they failed at capture). Not reproduced (no
// error, or another one) is a difference like a mismatching checksum.
struct ExpectedErrorCheck {
  RecordedError recorded;
  std::string name;             // the driver's name for recorded.result ("CUDA_ERROR_ASSERT")
  bool observed = false;        // the replay reached the point where it had to show
  bool reproduced = false;      // the driver reported the recorded error there
  uint64_t observed_seq = 0;    // the replayed call that reported it (or the point of the check)
  int32_t observed_result = 0;  // what the driver returned there (0: no error)
  std::string observed_name;
  uint64_t calls_not_replayed = 0;  // planned calls after it, not run
};

struct TargetInfo {
  std::string driver_path;
  std::string driver_reason;
  int driver_version = 0;
  int device = 0;
  std::string device_name;
  int cc_major = 0;
  int cc_minor = 0;
  uint64_t total_memory = 0;
  uint64_t free_memory_before = 0;
};

struct ReplayResult {
  std::string capture_path;
  PlanSummary plan;  // identity, counts, skipped calls and warnings
  TargetInfo target;
  uint64_t actions_replayed = 0;  // the application's calls (not the tool's globalGet byTool)
  uint64_t mapped_bytes = 0;
  size_t memory_ranges = 0;
  size_t relocated_ranges = 0;
  std::vector<CopyCheck> copies;  // every device-to-host copy, in seq order
  VerifySummary verification;
  SnapshotResults snapshots;
  std::vector<LaunchReport> launches;
  // Kernels whose results depend on their blocks' order, in first-launch order: what the driver
  // says (the emulator's export table; another driver cannot tell, and this stays empty).
  std::vector<OrderDependentKernel> order_dependent_kernels;
  std::optional<ExpectedErrorCheck> expected_error;  // the capture ended with a sticky error
  std::vector<std::string> messages;                 // every warning issued, in order
  double wall_seconds = 0;
  // --save-outputs: the directory (absolute), how many files were written and their bytes
  // (files already there, equal bytes seen before, are not counted again).
  std::string outputs_dir;
  uint64_t outputs_written = 0;
  uint64_t outputs_written_bytes = 0;

  // Every copy checksum and every snapshot chunk compared matched (true also when nothing was
  // compared: see verdict()).
  // A recorded sticky error must have been reproduced.
  bool matched() const {
    return verification.ok() && snapshots.ok() && (!expected_error || expected_error->reproduced);
  }
  // No copy checksum and no snapshot chunk was compared.
  bool nothing_verified() const {
    return verification.matched == 0 && verification.mismatched == 0 &&
           snapshots.compared_chunks == 0;
  }
  Verdict verdict() const {
    if (!matched()) return Verdict::kMismatched;
    return nothing_verified() ? Verdict::kNothingVerified : Verdict::kMatched;
  }
  // Launch selection (--kernel-name, --launch-skip, --launch-count): whether one was given, and
  // how many launches it selected.
  bool selection_requested = false;
  uint64_t selected_launches() const;
};

// The driver stopped a launch for running too long (CUDA_ERROR_LAUNCH_TIMEOUT): a display
// watchdog or the emulator's CUSNAP_EMU_TIMEOUT.
bool is_launch_timeout(const Error& e);

// Opens the capture, builds the plan, checks the target, replays. Errors: unreadable capture,
// unusable driver or device, or a call that failed (with its seq). A mismatch is not an error:
// it is in the result (verification.first_mismatch).
Expected<ReplayResult> replay_capture(const std::string& path, const ReplayOptions& options);

// Same with an open reader and a plan (tests edit plans to inject differences).
Expected<ReplayResult> replay_plan(format::Reader& reader, const Plan& plan,
                                   const ReplayOptions& options);

}  // namespace cusnap::replayer
