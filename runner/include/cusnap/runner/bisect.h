// `cusnap bisect` and `cusnap matrix` (docs/bisect.md): replays through a Runner, verdicts from
// compare/ (compare_reports against the LIST's first entry; never a comparison of our own).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cusnap/compare/compare.h"
#include "cusnap/runner/driver_list.h"
#include "cusnap/runner/runner.h"

namespace cusnap::runner {

// What makes a replay differ from the first entry's: its results (compare's results_differ),
// its time (a kernel compare flags slower), or either.
enum class Criterion : uint8_t { kResults, kTime, kBoth };
std::optional<Criterion> parse_criterion(const std::string& text);
const char* criterion_name(Criterion c);

// One replay's verdict against the reference (the first entry's replay of the same capture).
struct Verdict {
  bool reference = false;  // this is the first entry's replay
  bool has_report = false;
  bool differs = false;         // under the criterion (always false for the reference)
  bool results_differ = false;  // compare's results_differ
  bool slower = false;          // a kernel flagged slower (see docs/bisect.md, Time)
  double time_change = 0;       // the largest kernel change in median (0.3: 30 % slower)
  // The first launch (index into comparison->launches) flagged slower under the same rule.
  std::optional<size_t> first_slower;
  std::string reason;                             // why it differs, or what failed
  std::optional<compare::Comparison> comparison;  // with the reference, when both have reports
};

struct Replay {
  size_t entry = 0;
  ReplayJob job;
  JobOutcome outcome;
  Verdict verdict;
};

struct CommonOptions {
  Criterion criterion = Criterion::kResults;
  compare::CompareOptions compare;
  std::vector<std::string> replay_args;  // passed to every `cusnap replay`
  std::string work_dir;                  // reports and logs (absolute; shared with the nodes)
};

struct BisectResult {
  std::string capture;
  std::vector<Replay> replays;    // in the order they were run (the reference first)
  std::optional<size_t> culprit;  // entry index: the first entry that differs
  std::optional<size_t> last_good;
  size_t max_replays = 0;  // ceil(log2 n) + 1
  std::string error;       // a runner failure, a reference that gave no report
  int exit_code = 0;       // docs/cli.md: 0 culprit, 15 none differs, 12 runner, 14 reference
};

// The verdict of `r` (its job and outcome set) against the reference's report: compare_reports
// decides, this applies the criterion (docs/bisect.md, "Time"). A replay that wrote no report
// differs under every criterion: the driver could not run the capture. bisect, matrix and
// `cusnap minimize`'s two-driver conditions (reduce/condition.h) judge with it.
void judge(const compare::Report& reference, Replay& r, const CommonOptions& options);

// Finds the first entry whose replay differs from the first entry's, assuming that once an
// entry differs every later one does: binary search over entries 1..n-1 (and "none"), at most
// ceil(log2 n) + 1 replays. The reference replays together with the first midpoint.
BisectResult bisect(const std::string& capture, const DriverList& list, Runner& runner,
                    const CommonOptions& options);

struct MatrixResult {
  std::vector<std::string> captures;
  // cells[c][e]: capture c on entry e; entry 0 is each capture's reference.
  std::vector<std::vector<Replay>> cells;
  std::string error;  // a runner failure
  int exit_code = 0;  // 0 every cell like its reference, 13 some differ, 12 runner
};

// Every capture on every entry (one runner call for all of them).
MatrixResult matrix(const std::vector<std::string>& captures, const DriverList& list,
                    Runner& runner, const CommonOptions& options);

// Renderings (schemas in docs/schemas/bisect.md).
std::string bisect_text(const BisectResult& r, const DriverList& list, const CommonOptions& o,
                        const std::string& runner, bool explain);
std::string bisect_json(const BisectResult& r, const DriverList& list, const CommonOptions& o,
                        const std::string& runner);
std::string matrix_text(const MatrixResult& r, const DriverList& list, const CommonOptions& o);
std::string matrix_json(const MatrixResult& r, const DriverList& list, const CommonOptions& o);
std::string matrix_html(const MatrixResult& r, const DriverList& list, const CommonOptions& o);

// Exit codes (docs/cli.md).
inline constexpr int kExitNoCulprit = 15;
inline constexpr int kExitRunnerFailed = 12;
inline constexpr int kExitMatrixDiffers = 13;
inline constexpr int kExitReferenceFailed = 14;

}  // namespace cusnap::runner
