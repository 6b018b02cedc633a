// The CONDITION of capture-shrinking transforms (`cusnap redact --verify`, and `cusnap minimize`
// next): a property of a capture that a candidate rewritten from it must keep, decided by
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
// Not yet: mismatch between two drivers and slower:FACTOR (they need `cusnap compare`).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "cusnap/format/status.h"

namespace cusnap::reduce {

enum class ConditionKind : uint8_t { kMismatch, kError, kMemcheck, kCommand };

struct Condition {
  ConditionKind kind = ConditionKind::kMismatch;
  std::string text;     // as given, for messages and RedactInfo.condition
  int32_t result = 0;   // kError: the CUresult
  std::string command;  // kCommand: the script
};

// CUDA_ERROR_NAME -> its value (the caller's table: the CLI's result names); may be empty, then
// only error:NUMBER is understood.
using ResultLookup = std::function<std::optional<int32_t>(const std::string&)>;

// Parses "mismatch", "memcheck", "error:CUDA_ERROR_X", "error:700", "command:'...'" (the quotes
// optional). "mismatch:A,B" and "slower:F" are refused as not implemented yet.
format::Result<Condition> parse_condition(const std::string& text, const ResultLookup& lookup);

struct ConditionOptions {
  std::string driver = "emulator";  // mismatch / error: the driver replays run on (--driver)
};

struct Evaluation {
  bool holds = false;
  std::string why;  // what decided it ("call 7 returned 700", "matched", "exit status 1")
};

// Decides the condition on the capture at `path`. Errors: the replay could not start (no driver,
// unreadable capture), the command could not be run.
format::Result<Evaluation> evaluate(const Condition& condition, const std::string& path,
                                    const ConditionOptions& options);

}  // namespace cusnap::reduce
