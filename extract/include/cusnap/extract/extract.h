// `cusnap extract`: one standalone capture per selected launch, cut out of a capture that has
// memory snapshots (docs/extract.md). Pure file work: the source is read with format::Reader, the
// output written with format::Writer as docs/format.md ("CaptureHeader.extract") describes; no
// driver is loaded. The source is untrusted: every inconsistency is an error naming the launch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cusnap/format/reader.h"
#include "cusnap/format/status.h"

namespace cusnap::extract {

// Which launches: --call N (a launch record's seq), or --kernel-name/--launch-skip/--launch-count
// (common/kernel_filter.h: Nsight Compute's rules, the same for capture, replay and extraction).
struct Selection {
  std::optional<uint64_t> call_seq;
  std::string kernel_regex;  // a kernel_filter.h filter: NAME exactly, or regex:EXPR; empty: all
  uint64_t launch_skip = 0;
  uint64_t launch_count = 0;  // 0: all the rest
};

// What one launch needs, found in the source (seqs of the records to copy).
struct LaunchPlan {
  uint64_t launch_seq = 0;
  uint64_t launch_ordinal = 0;
  std::string kernel_name;
  uint64_t module_seq = 0;
  std::vector<uint64_t> function_seqs;    // functionGet records (a kernelGetFunction: two)
  std::vector<uint64_t> global_seqs;      // globalGet records of the module the chunks cover
  std::vector<uint64_t> allocation_seqs;  // memAlloc records live at the launch the chunks cover
  std::optional<uint64_t> before_seq;     // the memorySnapshot records
  std::optional<uint64_t> after_seq;
  std::string skipped_reason;  // a snapshot of the launch was not taken (either phase), why
  // Address ranges of the copied allocations and globals: chunks outside them are left out.
  // In the order of allocation_seqs, then global_seqs (one range each).
  std::vector<std::pair<uint64_t, uint64_t>> kept_ranges;  // (address, size)
  std::vector<std::string> notes;                          // what was left out, for the user
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

// The launch records `selection` picks, in capture order, with what each needs. Errors: an
// invalid regex, no launch selected, --call not a launch, and every inconsistency of the source
// (a snapshot naming a record that is not its launch, a chunk outside every live allocation,
// a launch whose function or module is unknown).
format::Result<std::vector<LaunchPlan>> plan_extraction(format::Reader& source,
                                                        const Selection& selection);

// Where the capture of launch `plan` goes, given -o OUT and how many launches were selected:
// OUT containing "%n" has it replaced by the launch's seq; otherwise one launch goes to OUT
// itself, several to OUT/call-<seq>.cusnap (OUT a directory, created). Errors: several launches
// and an OUT ending in ".cusnap" without "%n".
format::Result<std::string> output_path(const std::string& out, const LaunchPlan& plan,
                                        size_t selected);

// Writes the extracted capture of one planned launch to `out_path`. `source_path` is recorded in
// ExtractInfo.sourcePath. Errors: a launch without snapshots or whose snapshot was skipped (the
// reason, and that it needs --route replay, not implemented yet), a restore snapshot holding only
// hashes, missing or mismatching blobs, I/O.
//
// With `touched` (--minimize, docs/extract.md "Minimized extracts"): the beforeLaunch snapshot
// keeps only the chunks that overlap memory the launch read or wrote (a chunk partly written
// still needs its other bytes, which are compared), the afterLaunch snapshot only those that
// overlap memory it wrote, and an allocation or module variable none of whose kept chunks lies
// in it is left out with its record; ExtractInfo.minimized and the dropped byte counts say so.
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

// --emit-cpp DIR: a standalone CUDA driver-API reproducer of one extracted launch (docs/extract.md,
// "The C++ reproducer"), read from an extracted capture `extracted` (the output of
// write_extracted). Errors: an afterLaunch snapshot that holds only hashes (no expected bytes),
// a module image kind the program cannot load, I/O.
format::Status emit_cpp(format::Reader& extracted, const std::string& dir);

}  // namespace cusnap::extract
