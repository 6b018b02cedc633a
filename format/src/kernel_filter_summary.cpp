#include "cusnap/format/kernel_filter_summary.h"

#include <cinttypes>
#include <cstdio>

namespace cusnap::format {

std::string kernel_filter_summary(const KernelFilterCounts& counts) {
  return "kernel filter: " + std::to_string(counts.recorded) + " of " +
         std::to_string(counts.matched) + " matching launches recorded (" +
         std::to_string(counts.seen) + " launches seen)";
}

std::string kernel_filter_counts_text(const KernelFilterCounts& counts) {
  return std::to_string(counts.recorded) + " of " + std::to_string(counts.matched) +
         " matching launches recorded (" + std::to_string(counts.seen) + " seen)";
}

std::optional<KernelFilterCounts> parse_kernel_filter_summary(std::string_view message) {
  std::string text(message);
  KernelFilterCounts counts;
  int consumed = 0;
  if (std::sscanf(text.c_str(),
                  "kernel filter: %" SCNu64 " of %" SCNu64 " matching launches recorded (%" SCNu64
                  " launches seen)%n",
                  &counts.recorded, &counts.matched, &counts.seen, &consumed) != 3 ||
      static_cast<size_t>(consumed) != text.size()) {
    return std::nullopt;
  }
  return counts;
}

}  // namespace cusnap::format
