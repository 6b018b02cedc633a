// `cusnap extract`: one standalone capture per selected launch (docs/extract.md), written with
// format::Writer as docs/format.md ("CaptureHeader.extract") describes, by one of two routes:
// - snapshot: the launch has memory snapshots in the source; pure file work, no driver loaded.
// - replay: the source is replayed (replayer/, exact addresses) up to the launch, and the memory
//   a capture-time snapshot would have covered (format/snapshot_ranges.h, the shim's rule) is
//   read there before and after the launch; one replay pass serves every such launch.
// Both give the same content: the same records, the same chunks with the same hashes. The source
// is untrusted: every inconsistency is an error naming the launch.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cusnap/common/kernel_filter.h"
#include "cusnap/format/reader.h"
#include "cusnap/format/record_sizes.h"
#include "cusnap/format/status.h"

namespace cusnap::extract {

// Which launches: --call N (a launch record's seq), or --kernel-name/--launch-skip/--launch-count
// (common/kernel_filter.h: Nsight Compute's rules, the same for capture, replay and extraction).
struct Selection {
  std::optional<uint64_t>
      call_seq;              // a launch record, or a graph launch: every kernel node it runs
  std::string kernel_regex;  // a kernel_filter.h filter: NAME exactly, or regex:EXPR; empty: all
  uint64_t launch_skip = 0;
  uint64_t launch_count = 0;  // 0: all the rest
  // --kernel-name-base: which form of the name the filter sees (Nsight Compute's meaning).
  common::KernelNameBase name_base = common::KernelNameBase::kFunction;
};

// --route: kAuto takes a launch's snapshots where the source has both (and neither was skipped),
// and replays for the others; kSnapshots only the former (the others are refused); kReplay
// always replays, whatever snapshots the source holds.
enum class Route : uint8_t { kAuto, kSnapshots, kReplay };
std::optional<Route> parse_route(const std::string& text);  // "auto", "snapshots", "replay"

struct ExtractOptions {
  Route route = Route::kAuto;
  std::string driver = "auto";  // --driver auto|emulator|PATH: what the replay route runs on
  uint64_t chunk_bytes = 0;     // --snapshot-chunk (replay route); 0: the source's, or 64 KiB
  // --allow-diverged: write a replay-route extract even when the replay had diverged from the
  // capture before the launch (a checksummed copy or snapshot chunk did not match); refused
  // otherwise, since its inputs would not be the ones the application had.
  bool allow_diverged = false;
  // The prefix replay's warnings (a mismatching copy, skipped calls, target differences), as
  // `cusnap replay` prints them. Default: dropped.
  std::function<void(const std::string&)> on_warning;
};

// A module variable the replay route looked up on its driver because no record of the source
// names it (a capture made without snapshots): written as a globalGet record of the tool's
// (byTool, as the interceptor writes one when it snapshots), at the address the driver gave.
struct LookedUpVariable {
  uint64_t module = 0;  // the captured module (or library) handle
  bool is_library = false;
  std::string name;
  uint64_t address = 0;
  uint64_t size = 0;
};

// What one launch needs, found in the source (seqs of the records to copy).
// A CUDA array an extract recreates (LaunchPlan::arrays).
struct PlannedArray {
  uint64_t create_seq = 0;  // its array record (create, create3d)
  uint64_t handle = 0;      // the captured CUarray
  format::ArrayExtent extent;
  std::string object;  // the object the launch reaches it through, for messages
  // A source that is itself an extract holds the contents as records: the host-to-array copy
  // that fills it and the array-to-host copy that checks it (the snapshot route copies them).
  std::optional<uint64_t> fill_seq;
  std::optional<uint64_t> check_seq;
};

struct LaunchPlan {
  uint64_t launch_seq = 0;      // the launch record, or the graph launch (graphExec launch) record
  uint64_t launch_ordinal = 0;  // a graph node: its graph launch's launchIndex
  std::string kernel_name;
  // A kernel node of a CUDA graph launch (docs/extract.md, "Kernels in graphs"): the captured
  // CUgraphNode (0: launch_seq is a launch record), its place among the kernel nodes the launch
  // runs (replayer/graph_model.h's order: the one `cusnap replay` lists them in), and the record
  // holding its parameters at the launch (a graphNode record, or a graphExec setNodeParams).
  // Always the replay route: a capture has no snapshots of kernel nodes.
  uint64_t graph_node = 0;
  uint64_t graph_kernel_index = 0;
  uint64_t node_record_seq = 0;
  uint64_t module_seq = 0;
  std::vector<uint64_t> function_seqs;    // functionGet records (a kernelGetFunction: two)
  std::vector<uint64_t> global_seqs;      // globalGet records of the module the chunks cover
  std::vector<uint64_t> allocation_seqs;  // memAlloc records live at the launch the chunks cover
  // tensorMap records that made the tensor maps among the launch's parameters (an encode, then
  // the cuTensorMapReplaceAddress calls that changed it), in capture order: the standalone
  // replay encodes them again on its driver (docs/replay.md, "Tensor maps").
  std::vector<uint64_t> tensor_map_seqs;
  std::optional<uint64_t> before_seq;  // the memorySnapshot records
  std::optional<uint64_t> after_seq;
  std::string skipped_reason;  // a snapshot of the launch was not taken (either phase), why
  // texObject records that made the texture/surface objects among its parameters (schema 6),
  // and the CUDA arrays under them (docs/extract.md, "Textures and surfaces"): the replay route
  // reads each array whole before and after the launch (no capture-time snapshot holds array
  // contents); the extract creates it, fills it with a host-to-array copy and ends with an
  // array-to-host copy whose checksum is the after-state's, which the standalone replay verifies.
  std::vector<uint64_t> object_seqs;
  std::vector<PlannedArray> arrays;
  // texRef records that give the legacy texture/surface references of the launch's module their
  // state at the launch (each one's look-up and latest settings, in capture order); the arrays
  // they are bound to are among `arrays`.
  std::vector<uint64_t> texref_seqs;
  // Non-empty: the launch cannot be extracted (a texture over a mipmapped array, a kernel node
  // on the snapshot route, ...): why.
  std::string unsupported_reason;
  // Address ranges of the copied allocations and globals: chunks outside them are left out.
  // In the order of allocation_seqs, then global_seqs (one range each).
  std::vector<std::pair<uint64_t, uint64_t>> kept_ranges;  // (address, size)
  std::vector<std::string> notes;                          // what was left out, for the user
  // How it is extracted (kSnapshots or kReplay, after --route kAuto is decided).
  Route route = Route::kSnapshots;
  // kReplay: the ranges a capture-time snapshot would have covered at the launch (the replay
  // reads them), tiled in chunk_bytes pieces.
  std::vector<std::pair<uint64_t, uint64_t>> snapshot_ranges;
  uint64_t chunk_bytes = 0;
  // kReplay: the variables the launch's module image defines (fatbin/variables.h) that no
  // globalGet record before the launch names, in image order: the replay looks them up by name
  // (replayer SnapshotTap::variables) and reads them with the ranges. Their records go among the
  // copied globalGet ones before the first whose seq is variables_seq or later (the first launch
  // after the module's load: where the interceptor records its own when it snapshots).
  std::vector<std::string> unrecorded_variables;
  uint64_t variables_seq = 0;
  uint64_t module_handle = 0;  // the launch's module (or library) as captured
  // Filled by the replay (extract_launches): where the driver placed them. Their ranges are
  // appended to kept_ranges.
  std::vector<LookedUpVariable> looked_up_variables;
};

struct ExtractedLaunch {
  LaunchPlan plan;
  std::string output_path;
  uint64_t input_bytes = 0;
  uint64_t expected_bytes = 0;
  // --minimize: what was left out (ExtractInfo.dropped*).
  bool minimized = false;
  uint64_t dropped_input_bytes = 0;
  uint64_t dropped_expected_bytes = 0;
  uint32_t dropped_ranges = 0;  // allocations and module variables left out entirely
};

// --minimize: the captured memory one launch read and wrote, (address, size) ranges ascending
// and disjoint in each list (an atomic's bytes are in both).
struct TouchedMemory {
  std::vector<std::pair<uint64_t, uint64_t>> read;
  std::vector<std::pair<uint64_t, uint64_t>> written;
  uint64_t chunk_bytes = 0;  // the granularity they were tracked at
};

// The launch records `selection` picks, in capture order, with what each needs and the route
// `options` gives it. Errors: an invalid regex, no launch selected, --call not a launch, and
// every inconsistency of the source (a snapshot naming a record that is not its launch, a chunk
// outside every live allocation, a launch whose function or module is unknown).
format::Result<std::vector<LaunchPlan>> plan_extraction(format::Reader& source,
                                                        const Selection& selection,
                                                        const ExtractOptions& options = {});

// "launch seq N (kernel)", and ", kernel node K of the graph launch" for a graph node.
std::string describe(const LaunchPlan& plan);
// The launch's name in file names: its seq, "<seq>-<K>" for kernel node K of a graph launch.
std::string launch_label(const LaunchPlan& plan);

// Where the capture of launch `plan` goes, given -o OUT and how many launches were selected:
// OUT containing "%n" has it replaced by the launch's seq (a graph node: "<seq>-<K>", K its
// place among the launch's kernel nodes); otherwise one launch goes to OUT itself, several to
// OUT/call-<seq>.cusnap (or call-<seq>-<K>.cusnap; OUT a directory, created). Errors: several
// launches and an OUT ending in ".cusnap" without "%n".
format::Result<std::string> output_path(const std::string& out, const LaunchPlan& plan,
                                        size_t selected);

// Writes the extracted capture of one planned launch to `out_path` by the snapshot route.
// `source_path` is recorded in ExtractInfo.sourcePath. Errors: a launch without snapshots or
// whose snapshot was skipped (the reason, and that --route replay extracts it), a restore snapshot
// holding only hashes, missing or mismatching blobs, I/O.
//
// With `touched` (--minimize, docs/extract.md "Minimized extracts"): the beforeLaunch snapshot
// keeps only the chunks that overlap memory the launch read or wrote (a chunk partly written
// still needs its other bytes, which are compared), the afterLaunch snapshot only those that
// overlap memory it wrote, and an allocation or module variable none of whose kept chunks lies
// in it is left out with its record; ExtractInfo.minimized and the dropped byte counts say so.
// A source that is itself an extract keeps its provenance (ExtractInfo's source and route).
format::Result<ExtractedLaunch> write_extracted(format::Reader& source,
                                                const std::string& source_path,
                                                const LaunchPlan& plan, const std::string& out_path,
                                                const TouchedMemory* touched = nullptr);

// --minimize: replays the extracted capture at `path` (the output of write_extracted) once on
// the cusnap emulator with its access tracking (the replayer loads the emulator as a driver at
// run time; nothing links it) and returns what its launch read and wrote. Errors: no emulator,
// a replay that fails or does not match the capture's afterLaunch snapshot (then the tracked
// sets cannot be trusted and the extract is not minimized), a capture that is not one launch.
format::Result<TouchedMemory> track_extracted(const std::string& path);

// --minimize, the whole step: tracks the extract at `path` (track_extracted) and rewrites it in
// place from itself with write_extracted(..., &touched), through a temporary file, so that a
// failure leaves no half-written extract (it leaves none at all: the launch is not extracted).
format::Result<ExtractedLaunch> minimize_extracted(const std::string& path);

// Writes every planned launch to its path (out_paths[i] for plans[i]) by its route: the snapshot
// ones first, by file work, then the replay ones in one replay pass of the source on
// options.driver at the captured addresses, which stops after the last of them. `done` is called
// once per launch (each route in seq order) with what was written or why not (a diverged
// replay, see ExtractOptions). The returned error is one that stops every replay-route launch not
// yet written (no driver, a call of the prefix that failed, memory the driver did not place at
// its captured address); `done` has then not been called for them.
format::Status extract_launches(
    format::Reader& source, const std::string& source_path, const std::vector<LaunchPlan>& plans,
    const std::vector<std::string>& out_paths, const ExtractOptions& options,
    const std::function<void(const LaunchPlan&, const format::Result<ExtractedLaunch>&)>& done);

// --emit-cpp DIR: a standalone CUDA driver-API reproducer of one extracted launch (docs/extract.md,
// "The C++ reproducer"), read from an extracted capture `extracted` (the output of
// write_extracted). Errors: an afterLaunch snapshot that holds only hashes (no expected bytes),
// a module image kind the program cannot load, I/O.
format::Status emit_cpp(format::Reader& extracted, const std::string& dir);

}  // namespace cusnap::extract
