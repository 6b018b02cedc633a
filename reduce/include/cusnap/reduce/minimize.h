// `cusnap minimize IN --until CONDITION -o OUT` (docs/minimize.md): the smallest capture, made
// of whole calls of IN, for which CONDITION (condition.h) still holds, found by delta debugging.
//
// Units of removal, in call order: a launch (with its memory snapshots), a copy or memset (with
// its deferred result), a whole allocation (cuMemAlloc, -Pitch, -Async, -FromPool, -Managed,
// with its frees). Every other record (contexts, modules, functions, globals, streams, events,
// synchronisations, graphs, ...) is always kept. Closure: a launch or copy that uses an
// allocation is dropped with it: a launch uses the allocations its parameter words point into
// (or at the end of), a copy or memset those its device endpoints lie in and those the 8-byte
// words of its host-to-device payload point into (the range table of reduce/src/ranges.h). So an
// allocation is never dropped while a kept call uses it, and a candidate stays replayable.
// Pointers a kernel computes or reads from memory it did not get by a kept copy are not seen.
// A capture with graph records keeps every allocation (graph nodes name memory too).
//
// Search: Zeller and Hildebrandt's ddmin with complement testing ("ddmin with complements":
// subsets first, then complements, granularity doubled when neither holds) over the unit list;
// then, for an extracted single-launch capture, the same over the chunks of its input
// (beforeLaunch) snapshot, a chunk left out being restored to zero bytes. The candidates of one
// round are evaluated `jobs` at a time through evaluate_all (two-driver conditions: one runner
// call) in the order sequential ddmin tests them, and the first that holds is taken, so the
// result does not depend on the parallelism. Candidates are identified by what they keep after
// the closure: one is never evaluated twice (cache_hits counts the repeats).
//
// Expectations: kept records keep what the capture recorded (checksums, snapshot chunks). Once
// inputs are removed those describe the original run, not the candidate's, so a one-driver
// `mismatch` would hold for almost any removal: it is refused; mismatch:A,B compares two
// drivers' replays of the same candidate with each other and is what is meaningful.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cusnap/format/status.h"
#include "cusnap/reduce/condition.h"

namespace cusnap::reduce {

struct MinimizeOptions {
  Condition until;
  ConditionOptions condition;  // drivers, runner, work_dir (required: candidates go there), jobs
  unsigned max_evaluations = 1000;  // candidates evaluated at most (then not minimal)
  bool chunks = true;               // extracted captures: also minimize the input chunks
  std::function<void(const std::string&)> on_progress;  // one line per round; may be empty
};

enum class MinimizeOutcome : uint8_t {
  kMinimized,          // OUT written, and the condition holds for it
  kInputDoesNotHold,   // nothing written: the condition does not hold for IN
  kOutputDoesNotHold,  // OUT written, but its final check failed (a nondeterministic condition?)
};

struct MinimizeReport {
  MinimizeOutcome outcome = MinimizeOutcome::kMinimized;
  uint64_t calls_before = 0, calls_after = 0;
  uint64_t data_bytes_before = 0, data_bytes_after = 0;  // distinct blob bytes referenced
  uint64_t file_bytes_before = 0, file_bytes_after = 0;
  size_t units_before = 0, units_after = 0;
  size_t chunks_before = 0, chunks_after = 0;  // extracted input chunks kept original
  unsigned evaluations = 0;                    // candidates evaluated (the input included)
  unsigned replays = 0;                        // driver replays they took (0 for command:)
  unsigned cache_hits = 0;                     // candidates found already evaluated
  bool budget_exhausted = false;
  std::string evidence;            // the final evaluation's why
  std::vector<std::string> kept;   // the units kept, described ("launch call 7 scale", ...)
  std::vector<std::string> notes;  // e.g. "allocations are kept: the capture has graph records"
};

// Errors: a corrupt input (kCorrupt, as `cusnap verify` judges it), OUT naming IN, no work
// directory, a one-driver `mismatch`, a condition that cannot be evaluated (a runner failure, no
// driver), I/O.
format::Result<MinimizeReport> minimize_capture(const std::string& in, const std::string& out,
                                                const MinimizeOptions& options);

}  // namespace cusnap::reduce
