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
//
// --repeat auto (SamplingPolicy::adaptive) is NVBench's discipline instead of a fixed N: after
// the warmup runs, a selected launch is run again until its samples' noise, the relative
// standard error of their mean (sample standard deviation / sqrt(n) / mean), is at most
// max_noise, with at least min_samples samples whose times add up to at least min_time; the
// sampling stops anyway once it has taken max_time of wall-clock time (or kMaxSamples samples),
// and the report says the cap was hit.
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
  double stddev_ms = 0;           // population standard deviation
  std::vector<double> values_ms;  // every sample, in the order taken
  double noise = 0;               // relative standard error of the mean (0 below 2 samples)
  bool cap_hit = false;           // --max-time (or kMaxSamples) ended adaptive sampling early
  std::string mode;               // "cold", "hot" (repeated runs), "once" (a single run)
};

TimeStats summarize_times(std::vector<double> samples_ms);

// Relative standard error of the mean: sample standard deviation / sqrt(n) / mean; 0 for fewer
// than 2 samples or a mean that is not positive. The noise of --max-noise and `cusnap compare`.
double relative_standard_error(const std::vector<double>& samples);

struct SamplingPolicy {
  bool adaptive = false;         // --repeat auto
  unsigned min_samples = 10;     // --min-samples
  double max_noise = 0.005;      // --max-noise, relative (0.005: 0.5 %)
  double min_time_seconds = 0;   // --min-time: the samples' times added up
  double max_time_seconds = 10;  // --max-time: wall-clock seconds of sampling per launch
};
inline constexpr size_t kMaxSamples = 100000;

enum class SamplingState : uint8_t { kMore, kDone, kCapped };
// Whether adaptive sampling goes on after `samples_ms`, `wall_seconds` into it.
SamplingState sampling_state(const SamplingPolicy& policy, const std::vector<double>& samples_ms,
                             double wall_seconds);

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
