// The summary a kernel-filtered capture ends with (docs/capture.md, "Kernel filters"): a toolEvent
// (kind info) whose message is this text, written by the interceptor when its selection is
// exhausted or at close, and read back by `cusnap info` and the replayer. One home for the
// wording, so the writer and the readers agree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cusnap::format {

struct KernelFilterCounts {
  uint64_t seen = 0;      // launches the filter was asked about
  uint64_t matched = 0;   // of those, launches whose kernel name matched
  uint64_t recorded = 0;  // of those, launches recorded (after --launch-skip, up to --launch-count)
};

// "kernel filter: R of M matching launches recorded (S launches seen)"
std::string kernel_filter_summary(const KernelFilterCounts& counts);
// The counts as `cusnap info` and `cusnap replay` print them: "R of M matching launches recorded
// (S seen)".
std::string kernel_filter_counts_text(const KernelFilterCounts& counts);
// The counts of a message kernel_filter_summary wrote; empty for any other text.
std::optional<KernelFilterCounts> parse_kernel_filter_summary(std::string_view message);

}  // namespace cusnap::format
