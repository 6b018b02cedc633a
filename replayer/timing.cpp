#include "replayer/timing.h"

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
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

Expected<LaunchSelector> LaunchSelector::create(const std::string& kernel_regex, uint64_t skip, uint64_t count) {
  LaunchSelector selector;
  selector.skip_ = skip;
  selector.count_ = count;
  std::string pattern = kernel_regex;
  if (pattern.rfind("regex:", 0) == 0) pattern = pattern.substr(6);
  if (!pattern.empty()) {
    try {
      selector.regex_.emplace(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Error(ErrorKind::kInvalidArgument, "--kernel-name '" + kernel_regex + "': " + e.what());
    }
  }
  return selector;
}

bool LaunchSelector::select(const std::string& name) {
  if (regex_ && !std::regex_search(name, *regex_) && !std::regex_search(demangle(name), *regex_)) return false;
  if (matched_++ < skip_) return false;
  if (count_ != 0 && selected_ >= count_) return false;
  ++selected_;
  return true;
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

}  // namespace cusnap::replayer
