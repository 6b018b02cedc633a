#include "replayer/timing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cusnap::replayer {

TimeStats summarize_times(std::vector<double> samples) {
  TimeStats stats;
  stats.samples = samples.size();
  if (samples.empty()) return stats;
  stats.values_ms = samples;
  stats.noise = relative_standard_error(samples);
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

double relative_standard_error(const std::vector<double>& samples) {
  if (samples.size() < 2) return 0;
  double n = static_cast<double>(samples.size());
  double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  if (!(mean > 0)) return 0;
  double ss = 0;
  for (double s : samples) ss += (s - mean) * (s - mean);
  return std::sqrt(ss / (n - 1)) / std::sqrt(n) / mean;
}

SamplingState sampling_state(const SamplingPolicy& policy, const std::vector<double>& samples,
                             double wall_seconds) {
  double total_ms = std::accumulate(samples.begin(), samples.end(), 0.0);
  bool enough = samples.size() >= std::max(policy.min_samples, 1u) &&
                total_ms >= policy.min_time_seconds * 1000 &&
                relative_standard_error(samples) <= policy.max_noise;
  // At least two samples before a noise of 0 can mean anything.
  if (enough && (samples.size() >= 2 || policy.min_samples <= 1)) return SamplingState::kDone;
  if (wall_seconds >= policy.max_time_seconds || samples.size() >= kMaxSamples) {
    return SamplingState::kCapped;
  }
  return SamplingState::kMore;
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
