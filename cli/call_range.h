// The `--calls` selection of `cusnap dump`.
#pragma once

#include <cstdint>
#include <string>

#include "cusnap/format/status.h"

namespace cusnap::cli {

// A half-open range of call sequence numbers [begin, end).
struct CallRange {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Parses "A:B" (calls A..B-1, like a Python slice), "A:" (A to the last call), ":B" (0..B-1) or
// "N" (call N alone) against a capture holding `call_count` calls (seqs 0..call_count-1).
// Rejects non-numbers, A > B and bounds past call_count with a message that says why.
format::Result<CallRange> parse_call_range(const std::string& text, uint64_t call_count);

}  // namespace cusnap::cli
