#include "replayer/timing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cusnap::replayer {

TimeStats summarize_times(std::vector<double> samples) {
  TimeStats stats;
  stats.samples = samples.size();
  if (samples.empty()) return stats;
  std::sort(samples.begin(), samples.end());
  stats.min_ms = samples.front();
  stats.max_ms = samples.back();
  size_t n = samples.size();
  stats.median_ms = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  stats.mean_ms = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  double variance = 0;
  for (double s : samples) variance += (s - stats.mean_ms) * (s - stats.mean_ms);
  stats.stddev_ms = std::sqrt(variance / static_cast<double>(n));
  return stats;
}

Expected<LaunchSelector> LaunchSelector::create(const std::string& kernel_regex, uint64_t skip,
                                                uint64_t count, common::KernelNameBase base) {
  std::string error;
  std::optional<common::KernelFilter> filter =
      common::KernelFilter::create(kernel_regex, base, &error);
  if (!filter) return Error(ErrorKind::kInvalidArgument, "--kernel-name " + error);
  return LaunchSelector(common::LaunchSelection(std::move(*filter), skip, count));
}

bool LaunchSelector::select(const std::string& name) { return selection_.select(name); }

std::string demangle(const std::string& name) { return common::demangle_name(name); }

}  // namespace cusnap::replayer
