// `cusnap compare A.json B.json`: two replay reports (the JSON `cusnap replay --report` writes,
// docs/schemas/replay-report.md) compared launch by launch (docs/compare.md).
//
// Launches are matched by capture call number when both reports replayed the same capture (same
// call and launch counts, same kernel at every call), else by kernel name + occurrence (the k-th
// launch of a kernel in A with the k-th in B). Results: a launch's results are what the copies
// and memory snapshots after it observed (the device-to-host copies between it and the next
// launch, its own afterLaunch snapshot); two launches are equal when every such observation has
// the same checksum / hash in both. With saved outputs (`replay --save-outputs`) the bytes are
// compared too, element by element under the tolerances given (replayer/tolerance.h, the one
// home of element comparison). Timing: per launch and per kernel, the change in median with a
// percentile-bootstrap confidence interval over the samples; flagged when the change exceeds
// the threshold and the interval excludes zero.
//
// API stability: names and fields here only ever get added to (bisect and matrix build on it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replayer/status.h"
#include "replayer/tolerance.h"

namespace cusnap::compare {

using replayer::Error;
using replayer::ErrorKind;
using replayer::Expected;

// ---- A replay report, as read back ----------------------------------------------------------

struct ReportTime {
  uint64_t samples = 0;
  double min_ms = 0, median_ms = 0, mean_ms = 0, max_ms = 0, stddev_ms = 0;
  std::vector<double> values_ms;  // every sample (schema 2; empty in schema 1 reports)
  std::optional<double> noise;    // relative standard error of the mean (schema 2)
  bool cap_hit = false;           // --max-time stopped sampling before --max-noise was reached
  std::string mode;               // "cold" or "hot" (schema 2), empty before
};

struct ReportLaunch {
  uint64_t call = 0;
  uint64_t ordinal = 0;  // launch number in the capture, from 0
  std::string kernel;
  bool selected = false;
  std::string verification;  // the report's verify state of its first checked copy
  std::optional<ReportTime> time;
  // A kernel node run by a graph launch (`call` is the cuGraphLaunch): the executable graph's
  // launch index and the node's captured handle; none for an ordinary launch (and in reports
  // written before the fields existed).
  std::optional<uint64_t> graph_launch;
  std::optional<uint64_t> graph_node;
};

// A device-to-host copy the replay verified.
struct ReportCopy {
  uint64_t call = 0;
  uint64_t address = 0;  // captured source address
  uint64_t bytes = 0;
  std::string state;  // "matched", "mismatched", "unverified", ...
  std::string expected_checksum, actual_checksum;
  uint64_t launches_before = 0;                // launches issued before the copy
  std::optional<uint64_t> allocation_address;  // base of the allocation it read
  std::string output;                          // saved output file (in Report::outputs_dir)
};

// A memory snapshot chunk the replay compared (snapshots.checks[].mismatches[] and, schema 2,
// the saved post-launch chunks).
struct ReportChunk {
  uint64_t address = 0;
  uint64_t bytes = 0;
  std::optional<uint64_t> allocation_address;
  std::string actual_hash;  // empty: it matched the capture
  std::string output;       // saved output file, or empty
};

struct ReportSnapshotCheck {
  uint64_t call = 0;
  uint64_t launch_call = 0;
  uint64_t launch_ordinal = 0;
  std::string kernel;
  std::string phase;  // "beforeLaunch" / "afterLaunch"
  uint64_t chunks = 0, matched_chunks = 0, within_tolerance_chunks = 0, mismatched_chunks = 0;
  std::vector<ReportChunk> mismatches;  // chunks that differed from the capture
  std::vector<ReportChunk> saved;       // chunks whose bytes were saved (schema 2)
};

struct Report {
  std::string path;  // the file it was read from
  int schema_version = 0;
  std::string capture_path;
  uint64_t capture_calls = 0, capture_launches = 0;
  std::string driver_path;
  int64_t driver_version = 0;
  std::string device_name;
  std::string verification;  // "matched" / "mismatched" / "nothing verified"
  std::vector<ReportLaunch> launches;
  std::vector<ReportCopy> copies;
  std::vector<ReportSnapshotCheck> snapshot_checks;
  std::string outputs_dir;  // --save-outputs DIR (absolute), empty when none were saved
};

// Errors: kIo (cannot read), kInvalidArgument (not JSON, not a cusnap-replay-report, a newer
// schema version, a field of the wrong type), naming the file and the field.
Expected<Report> read_report(const std::string& path);
// The same from text already read; `origin` names it in errors.
Expected<Report> parse_report(std::string_view json, const std::string& origin);

// ---- Comparing two reports ------------------------------------------------------------------

enum class MatchBy : uint8_t { kAuto, kCall, kKernelOccurrence };
const char* match_by_name(MatchBy by);  // "auto", "call", "kernel occurrence"

struct CompareOptions {
  MatchBy match = MatchBy::kAuto;
  double time_threshold = 0.05;  // relative change in median (0.05: 5 %)
  double confidence = 0.95;      // of the bootstrap interval
  unsigned bootstrap_resamples = 2000;
  uint64_t seed = 0x5eed;  // the bootstrap's generator: same inputs, same interval
  std::vector<replayer::Tolerance> tolerances;  // for saved outputs; none: bytes must be equal
  size_t worst_elements = 5;                    // worst elements kept per differing output
  // Override the reports' outputs_dir (e.g. after moving the files); empty: the report's.
  std::string outputs_dir_a, outputs_dir_b;
};

enum class ResultState : uint8_t {
  kEqual,       // every observation equal
  kWithin,      // saved bytes differ, every element within the tolerance
  kDifferent,   // an observation differs
  kUnobserved,  // nothing observed this launch's results in one of the reports
};
const char* result_state_name(ResultState state);  // "equal", "within tolerance", ...

// The change of B's time against A's, from their samples.
struct TimeChange {
  uint64_t samples_a = 0, samples_b = 0;
  double median_a_ms = 0, median_b_ms = 0;
  double change = 0;                    // median_b / median_a - 1
  double ci_low = 0, ci_high = 0;       // bootstrap interval of `change` (== change when not known)
  bool interval_known = false;          // both sides had at least 2 samples
  bool significant = false;             // the interval excludes 0
  bool slower = false, faster = false;  // flagged: |change| > threshold and significant
  bool cap_hit_a = false, cap_hit_b = false;
  double noise_a = 0, noise_b = 0;  // relative standard error of each side's samples
};

// Saved bytes of one observation compared.
struct OutputComparison {
  std::string what;      // "copy call 12" / "chunk 0x7f... (snapshot call 9)"
  uint64_t address = 0;  // captured address of the first byte
  uint64_t bytes = 0;
  bool equal = false;
  uint64_t differing_bytes = 0;
  std::optional<uint64_t> first_difference;  // byte offset
  std::string tolerance;                     // the rule applied, empty: bytes compared
  std::optional<replayer::ElementComparison> elements;
  bool within_tolerance = false;
  std::string note;  // e.g. "no saved output in B"
};

struct LaunchComparison {
  std::string kernel;
  uint64_t occurrence = 0;                 // k-th launch of this kernel, from 0
  std::optional<uint64_t> call_a, call_b;  // none: no such launch in that report
  std::optional<uint64_t> ordinal_a, ordinal_b;
  ResultState results = ResultState::kUnobserved;
  uint64_t observations = 0;  // observations compared
  bool partial = false;       // a snapshot's mismatch list was truncated: only part compared
  std::string detail;         // what differs (the first differing observation)
  std::vector<OutputComparison> outputs;
  std::optional<TimeChange> time;
};

struct KernelComparison {
  std::string kernel;
  uint64_t launches = 0;                  // matched launches
  uint64_t differing_launches = 0;        // kDifferent
  std::optional<size_t> first_differing;  // index into Comparison::launches
  std::optional<TimeChange> time;         // all samples of the kernel's matched launches
};

struct Comparison {
  std::string report_a, report_b;  // paths
  MatchBy matched_by = MatchBy::kCall;
  std::vector<LaunchComparison> launches;  // in A's order, then B's unmatched launches
  std::vector<KernelComparison> kernels;   // in order of first launch
  std::vector<std::string> notes;          // unmatched launches, schema differences, ...
  bool results_differ = false;
  std::optional<size_t> first_differing;  // index into launches
  bool slower = false;                    // some kernel is flagged slower
  bool faster = false;                    // some kernel is flagged faster (not an error)
  double time_threshold = 0;
  // Something flagged: `cusnap compare` exits 1.
  bool flagged() const { return results_differ || slower; }
};

Comparison compare_reports(const Report& a, const Report& b, const CompareOptions& options);

// The change in median of `b` against `a` with its bootstrap interval (CompareOptions' seed,
// resamples, confidence and threshold). Exposed for tests and for matrix views.
TimeChange compare_times(const std::vector<double>& a_ms, const std::vector<double>& b_ms,
                         const CompareOptions& options);

// Renderers: a human table; the JSON document (schema "cusnap-compare", docs/compare.md).
std::string render_text(const Comparison& comparison);
std::string render_json(const Comparison& comparison);
inline constexpr int kCompareSchemaVersion = 1;
// One self-contained HTML page (no script, no external resource): the verdict, the per-kernel
// changes in median with their intervals as an inline SVG plot, the launch table.
std::string render_html(const Comparison& comparison);

}  // namespace cusnap::compare
