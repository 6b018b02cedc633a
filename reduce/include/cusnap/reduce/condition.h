// The CONDITION of capture-shrinking transforms (`cusnap redact --verify`, `cusnap minimize
// --until`): a property of a capture that a candidate rewritten from it must keep, decided by
// replaying the candidate (docs/redact.md, "Conditions").
//
// - mismatch: replaying the capture on the condition's driver fails (a call returns an error) or
//   does not match the capture's expectations (a device-to-host checksum, a snapshot chunk, a
//   recorded error not reproduced), as `cusnap replay` judges it.
// - error:CUDA_ERROR_NAME (or error:NUMBER): a replayed call returns that CUresult, or the
//   capture's recorded sticky error is reproduced with it.
// - memcheck: the cusnap emulator reports an invalid access: a launch fails with
//   CUDA_ERROR_ILLEGAL_ADDRESS or CUDA_ERROR_MISALIGNED_ADDRESS (its memcheck is always on and
//   logs the access on stderr; the result code is what is judged). Always on the emulator.
// - command:'SCRIPT': /bin/sh -c SCRIPT with the candidate's path as $1 (and in
//   CUSNAP_CANDIDATE); exit status 0 means the condition holds.
// - mismatch:A,B: the replays on A and B differ as `cusnap compare` judges two replay reports
//   (compare_reports' results; bisect's verdict rule, runner::judge), or B's replay writes no
//   report while A's does.
// - slower:FACTOR[:A,B]: some kernel is slower on B than on A beyond the threshold FACTOR - 1
//   (compare's flag; with one sample per side the change in median decides, as bisect does).
//   Without A,B: the first two entries of the driver LIST.
// A and B name entries of the driver LIST (ConditionOptions::drivers, docs/bisect.md's format),
// or are drivers themselves (`emulator`, a path). Their replays are `cusnap replay --report` runs
// through runner/ (local workers, Slurm, a template), never in this process.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cusnap/format/status.h"
#include "cusnap/runner/driver_list.h"
#include "cusnap/runner/runner.h"

namespace cusnap::reduce {

enum class ConditionKind : uint8_t {
  kMismatch,
  kError,
  kMemcheck,
  kCommand,
  kMismatchBetween,  // mismatch:A,B
  kSlower,           // slower:FACTOR[:A,B]
};

struct Condition {
  ConditionKind kind = ConditionKind::kMismatch;
  std::string text;     // as given, for messages and RedactInfo.condition
  int32_t result = 0;   // kError: the CUresult
  std::string command;  // kCommand: the script
  std::string a, b;     // kMismatchBetween, kSlower: the two drivers (empty: the LIST's first two)
  double factor = 0;    // kSlower: more than 1

  // Decided by comparing replays on two drivers (through runner/).
  bool between_drivers() const {
    return kind == ConditionKind::kMismatchBetween || kind == ConditionKind::kSlower;
  }
};

// CUDA_ERROR_NAME -> its value (the caller's table: the CLI's result names); may be empty, then
// only error:NUMBER is understood.
using ResultLookup = std::function<std::optional<int32_t>(const std::string&)>;

// Parses "mismatch", "memcheck", "error:CUDA_ERROR_X", "error:700", "command:'...'" (the quotes
// optional), "mismatch:A,B", "slower:FACTOR" and "slower:FACTOR:A,B".
format::Result<Condition> parse_condition(const std::string& text, const ResultLookup& lookup);

struct ConditionOptions {
  std::string driver = "emulator";  // mismatch / error: the driver replays run on (--driver)
  // Two-driver conditions: the LIST A and B name entries of (may be null), the runner their
  // replays go through (required for them), the directory of their reports and logs (absolute;
  // shared with the nodes for Slurm) and more `cusnap replay` arguments (e.g. --repeat 5).
  const runner::DriverList* drivers = nullptr;
  runner::Runner* runner = nullptr;
  std::string work_dir;
  std::vector<std::string> replay_args;
  // evaluate_all, other conditions: evaluations at once, each in a child process (1: in this
  // process, one after the other).
  unsigned jobs = 1;
};

struct Evaluation {
  bool holds = false;
  std::string why;  // what decided it ("call 7 returned 700", "matched", "exit status 1")
};

// Decides the condition on the capture at `path`. Errors: the replay could not start (no driver,
// unreadable capture), the command could not be run.
format::Result<Evaluation> evaluate(const Condition& condition, const std::string& path,
                                    const ConditionOptions& options);

// Decides the condition on every capture of `paths` at once, results in the same order:
// two-driver conditions with one runner call for all their replays, the others `jobs` at a time
// in child processes (their output goes to WORK_DIR/<capture name>.log). Errors as evaluate().
// With jobs > 1 the children are fork()s of this process: call it before this process replays
// anything in-process itself (a loaded driver's threads do not survive a fork), as `cusnap
// minimize` does (with -j N > 1 every evaluation, its final check included, is a child's).
format::Result<std::vector<Evaluation>> evaluate_all(const Condition& condition,
                                                     const std::vector<std::string>& paths,
                                                     const ConditionOptions& options);

// A and B of a two-driver condition as LIST entries: named entries of options.drivers, else
// drivers (`emulator` or a path, no environment). Errors: an unknown name, no LIST for slower:F.
format::Result<std::pair<runner::DriverEntry, runner::DriverEntry>> resolve_drivers(
    const Condition& condition, const ConditionOptions& options);

}  // namespace cusnap::reduce
