// Launch timing: which launches are selected (Nsight Compute's filters), statistics over samples.
//
// Selection: the one Nsight Compute-style filter of capture, replay and extraction
// (cusnap/common/kernel_filter.h): --kernel-name NAME (the function name, exactly) or
// --kernel-name regex:EXPR (ECMAScript, searched in it), --launch-skip N (matching launches to
// pass over first), --launch-count M (0: all the rest).
// Unselected launches are still replayed, once and untimed, so that memory evolves as captured.
//
// Selected launches are timed with a pair of events around the launch on its stream. With
// --repeat N --warmup M each runs M + N times; before every run but the first, the device memory
// the replay owns is restored to what it held before the first run (the kernel's inputs, as
// Nsight Compute's kernel replay does), and with --cache-control all the L2 is flushed by
// writing a buffer twice its size. Only the N timed runs become samples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cusnap/common/kernel_filter.h"
#include "replayer/status.h"

namespace cusnap::replayer {

enum class CacheControl : uint8_t { kAll, kNone };

struct TimeStats {
  uint64_t samples = 0;
  double min_ms = 0;
  double median_ms = 0;
  double mean_ms = 0;
  double max_ms = 0;
  double stddev_ms = 0;  // population standard deviation
};

TimeStats summarize_times(std::vector<double> samples_ms);

class LaunchSelector {
 public:
  // Errors: an invalid regular expression.
  static Expected<LaunchSelector> create(
      const std::string& kernel_regex, uint64_t skip, uint64_t count,
      common::KernelNameBase base = common::KernelNameBase::kFunction);
  // Called once per launch in replay order; true when this launch is selected.
  bool select(const std::string& mangled_name);

 private:
  explicit LaunchSelector(common::LaunchSelection selection) : selection_(std::move(selection)) {}
  common::LaunchSelection selection_;  // the one matcher (common/kernel_filter.h)
};

// abi::__cxa_demangle, or the name itself when it is not a mangled C++ name.
std::string demangle(const std::string& name);

}  // namespace cusnap::replayer
