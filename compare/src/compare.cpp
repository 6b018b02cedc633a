// compare_reports(): launch matching, result observations, saved-output comparison and the
// timing statistics of `cusnap compare` (docs/compare.md says what each means).
#include "cusnap/compare/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>

namespace cusnap::compare {
namespace {

// ---- statistics -----------------------------------------------------------------------------

double median_of(std::vector<double>& v) {
  // nth_element: the resamples need no full sort.
  size_t n = v.size();
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  double upper = *mid;
  if (n % 2 == 1) return upper;
  double lower = *std::max_element(v.begin(), mid);
  return (lower + upper) / 2;
}

// Relative standard error of the mean (sample standard deviation / sqrt(n) / mean): the noise
// `cusnap replay` stops sampling at (docs/replay.md, Timing).
double relative_standard_error(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double n = static_cast<double>(v.size());
  double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  if (mean <= 0) return 0;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / (n - 1)) / std::sqrt(n) / mean;
}

// SplitMix64: a small generator whose sequence is the same everywhere (std distributions are
// not specified bit for bit), so the same reports always give the same interval.
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (multiply-shift; the bias is below 2^-32 for any realistic n).
  size_t below(size_t n) {
    return static_cast<size_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

void resample(const std::vector<double>& from, std::vector<double>& into, SplitMix& rng) {
  into.resize(from.size());
  for (double& x : into) x = from[rng.below(from.size())];
}

// ---- saved outputs --------------------------------------------------------------------------

std::optional<std::vector<uint8_t>> load_output(const std::string& dir, const std::string& name,
                                                std::string& why) {
  if (dir.empty()) {
    why = "the report has no outputs directory";
    return std::nullopt;
  }
  std::filesystem::path path = std::filesystem::path(dir) / name;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = "cannot read " + path.string();
    return std::nullopt;
  }
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The tolerance that applies to bytes at `allocation`: a rule naming the allocation wins over
// one without an address (docs/replay.md, Tolerance).
const replayer::Tolerance* rule_for(const std::vector<replayer::Tolerance>& rules,
                                    std::optional<uint64_t> allocation) {
  const replayer::Tolerance* general = nullptr;
  for (const replayer::Tolerance& t : rules) {
    if (t.allocation && allocation && *t.allocation == *allocation) return &t;
    if (!t.allocation && !general) general = &t;
  }
  return general;
}

OutputComparison compare_output(const std::string& what, uint64_t address,
                                std::optional<uint64_t> allocation, const std::string& dir_a,
                                const std::string& name_a, const std::string& dir_b,
                                const std::string& name_b, const CompareOptions& options) {
  OutputComparison out;
  out.what = what;
  out.address = address;
  std::string why;
  std::optional<std::vector<uint8_t>> a = load_output(dir_a, name_a, why);
  std::optional<std::vector<uint8_t>> b = a ? load_output(dir_b, name_b, why) : std::nullopt;
  if (!a || !b) {
    out.note = why;
    return out;
  }
  out.bytes = a->size();
  if (a->size() != b->size()) {
    out.note = "sizes differ: " + std::to_string(a->size()) + " and " + std::to_string(b->size()) +
               " bytes";
    return out;
  }
  for (size_t i = 0; i < a->size(); ++i) {
    if ((*a)[i] == (*b)[i]) continue;
    if (!out.first_difference) out.first_difference = i;
    ++out.differing_bytes;
  }
  out.equal = out.differing_bytes == 0;
  if (out.equal) return out;
  const replayer::Tolerance* rule = rule_for(options.tolerances, allocation);
  if (!rule) return out;
  unsigned size = replayer::element_size(rule->type);
  uint64_t offset = allocation && address >= *allocation ? address - *allocation : 0;
  if (offset % size != 0 || a->size() % size != 0) {
    out.note = std::string("not a whole number of ") + replayer::element_type_name(rule->type) +
               " elements from the allocation's start: compared bytes only";
    return out;
  }
  out.tolerance = rule->text;
  out.elements =
      replayer::compare_elements(*rule, *a, *b, address, offset / size, options.worst_elements);
  out.within_tolerance = out.elements->over == 0;
  return out;
}

// ---- observations ---------------------------------------------------------------------------

// What one report observed of a launch's results: the copies after it (before the next launch)
// and its afterLaunch snapshot checks.
struct Observed {
  std::vector<const ReportCopy*> copies;
  std::vector<const ReportSnapshotCheck*> checks;
};

std::vector<Observed> observations(const Report& r) {
  std::vector<Observed> per_launch(r.launches.size());
  std::map<uint64_t, size_t> by_call;  // launch call -> index
  for (size_t i = 0; i < r.launches.size(); ++i) by_call[r.launches[i].call] = i;
  for (const ReportCopy& c : r.copies) {
    if (c.launches_before == 0 || c.launches_before > r.launches.size()) continue;
    per_launch[c.launches_before - 1].copies.push_back(&c);
  }
  for (const ReportSnapshotCheck& s : r.snapshot_checks) {
    if (s.phase != "afterLaunch") continue;
    auto it = by_call.find(s.launch_call);
    if (it != by_call.end()) per_launch[it->second].checks.push_back(&s);
  }
  return per_launch;
}

std::string short_hash(const std::string& h) { return h.empty() ? "(as captured)" : h; }

// The hash the replay saw for chunk `address` of a check: the mismatch's, or empty when it
// matched the capture.
std::string chunk_hash(const ReportSnapshotCheck& c, uint64_t address) {
  for (const ReportChunk& m : c.mismatches) {
    if (m.address == address) return m.actual_hash;
  }
  return {};
}

void worsen(ResultState& state, ResultState with) {
  auto rank = [](ResultState s) {
    switch (s) {
      case ResultState::kUnobserved:
        return 0;
      case ResultState::kEqual:
        return 1;
      case ResultState::kWithin:
        return 2;
      case ResultState::kDifferent:
        return 3;
    }
    return 0;
  };
  if (rank(with) > rank(state)) state = with;
}

void compare_results(LaunchComparison& lc, const Observed& oa, const std::string& dir_a,
                     const Observed& ob, const std::string& dir_b, const CompareOptions& options) {
  auto differ = [&](const std::string& detail) {
    if (lc.detail.empty()) lc.detail = detail;
  };
  ResultState state = ResultState::kUnobserved;
  if (oa.copies.size() != ob.copies.size()) {
    differ("device-to-host copies after it: " + std::to_string(oa.copies.size()) + " in A, " +
           std::to_string(ob.copies.size()) + " in B");
    worsen(state, ResultState::kDifferent);
  }
  size_t copies = std::min(oa.copies.size(), ob.copies.size());
  for (size_t i = 0; i < copies; ++i) {
    const ReportCopy& ca = *oa.copies[i];
    const ReportCopy& cb = *ob.copies[i];
    ++lc.observations;
    std::string what = "copy call " + std::to_string(ca.call);
    if (cb.call != ca.call) what += "/" + std::to_string(cb.call);
    if (ca.bytes != cb.bytes) {
      differ(what + ": " + std::to_string(ca.bytes) + " and " + std::to_string(cb.bytes) +
             " bytes");
      worsen(state, ResultState::kDifferent);
      continue;
    }
    bool same = !ca.actual_checksum.empty() && ca.actual_checksum == cb.actual_checksum;
    if (same) {
      worsen(state, ResultState::kEqual);
      continue;
    }
    if (!ca.output.empty() && !cb.output.empty()) {
      OutputComparison out = compare_output(what, ca.address, ca.allocation_address, dir_a,
                                            ca.output, dir_b, cb.output, options);
      ResultState s = out.equal              ? ResultState::kEqual
                      : out.within_tolerance ? ResultState::kWithin
                                             : ResultState::kDifferent;
      if (s == ResultState::kDifferent) {
        differ(what + ": checksum " + ca.actual_checksum + " and " + cb.actual_checksum +
               (out.first_difference
                    ? ", first differing byte at offset " + std::to_string(*out.first_difference)
                    : std::string()) +
               (out.note.empty() ? std::string() : " (" + out.note + ")"));
      }
      worsen(state, s);
      lc.outputs.push_back(std::move(out));
      continue;
    }
    differ(what + ": checksum " + ca.actual_checksum + " and " + cb.actual_checksum);
    worsen(state, ResultState::kDifferent);
  }
  // Snapshot checks after the launch, matched by their order; chunks by captured address.
  size_t checks = std::min(oa.checks.size(), ob.checks.size());
  if (oa.checks.size() != ob.checks.size()) {
    differ("afterLaunch snapshots: " + std::to_string(oa.checks.size()) + " in A, " +
           std::to_string(ob.checks.size()) + " in B");
    worsen(state, ResultState::kDifferent);
  }
  for (size_t i = 0; i < checks; ++i) {
    const ReportSnapshotCheck& sa = *oa.checks[i];
    const ReportSnapshotCheck& sb = *ob.checks[i];
    ++lc.observations;
    std::string what = "snapshot call " + std::to_string(sa.call);
    if (sa.chunks != sb.chunks) {
      differ(what + ": " + std::to_string(sa.chunks) + " and " + std::to_string(sb.chunks) +
             " chunks compared");
      worsen(state, ResultState::kDifferent);
      continue;
    }
    std::map<uint64_t, const ReportChunk*> addresses;
    for (const ReportChunk& m : sa.mismatches) addresses[m.address] = &m;
    for (const ReportChunk& m : sb.mismatches) addresses[m.address] = &m;
    ResultState s = ResultState::kEqual;
    for (const auto& [address, chunk] : addresses) {
      std::string ha = chunk_hash(sa, address), hb = chunk_hash(sb, address);
      if (ha == hb) continue;
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
      std::string chunk_what = what + " chunk " + hex;
      const ReportChunk* saved_a = nullptr;
      const ReportChunk* saved_b = nullptr;
      for (const ReportChunk& c : sa.saved) {
        if (c.address == address) saved_a = &c;
      }
      for (const ReportChunk& c : sb.saved) {
        if (c.address == address) saved_b = &c;
      }
      if (saved_a && saved_b && !saved_a->output.empty() && !saved_b->output.empty()) {
        OutputComparison out = compare_output(chunk_what, address, chunk->allocation_address, dir_a,
                                              saved_a->output, dir_b, saved_b->output, options);
        ResultState cs = out.equal              ? ResultState::kEqual
                         : out.within_tolerance ? ResultState::kWithin
                                                : ResultState::kDifferent;
        if (cs == ResultState::kDifferent) differ(chunk_what + ": hashes differ");
        worsen(s, cs);
        lc.outputs.push_back(std::move(out));
        continue;
      }
      differ(chunk_what + ": hash " + short_hash(ha) + " and " + short_hash(hb));
      worsen(s, ResultState::kDifferent);
    }
    worsen(state, s);
  }
  lc.results = state;
}

std::vector<double> samples_of(const ReportTime& t) {
  if (!t.values_ms.empty()) return t.values_ms;
  // A schema 1 report keeps only statistics: its median stands for one sample (no interval).
  if (t.samples > 0) return {t.median_ms};
  return {};
}

bool same_capture(const Report& a, const Report& b) {
  if (a.capture_calls != b.capture_calls || a.capture_launches != b.capture_launches) {
    return false;
  }
  if (a.launches.size() != b.launches.size()) return false;
  for (size_t i = 0; i < a.launches.size(); ++i) {
    if (a.launches[i].call != b.launches[i].call || a.launches[i].kernel != b.launches[i].kernel) {
      return false;
    }
  }
  return true;
}

}  // namespace

const char* match_by_name(MatchBy by) {
  switch (by) {
    case MatchBy::kAuto:
      return "auto";
    case MatchBy::kCall:
      return "call";
    case MatchBy::kKernelOccurrence:
      return "kernel occurrence";
  }
  return "?";
}

const char* result_state_name(ResultState state) {
  switch (state) {
    case ResultState::kEqual:
      return "equal";
    case ResultState::kWithin:
      return "within tolerance";
    case ResultState::kDifferent:
      return "different";
    case ResultState::kUnobserved:
      return "unobserved";
  }
  return "?";
}

TimeChange compare_times(const std::vector<double>& a, const std::vector<double>& b,
                         const CompareOptions& options) {
  TimeChange t;
  t.samples_a = a.size();
  t.samples_b = b.size();
  if (a.empty() || b.empty()) return t;
  std::vector<double> ca = a, cb = b;
  t.median_a_ms = median_of(ca);
  t.median_b_ms = median_of(cb);
  t.noise_a = relative_standard_error(a);
  t.noise_b = relative_standard_error(b);
  if (t.median_a_ms <= 0) return t;
  t.change = t.median_b_ms / t.median_a_ms - 1;
  t.ci_low = t.ci_high = t.change;
  if (a.size() < 2 || b.size() < 2 || options.bootstrap_resamples < 2) return t;
  // Percentile bootstrap: resample each side with replacement, the change in median of every
  // resample; the interval is the central `confidence` part of their distribution.
  SplitMix rng(options.seed);
  std::vector<double> changes;
  changes.reserve(options.bootstrap_resamples);
  std::vector<double> ra, rb;
  for (unsigned r = 0; r < options.bootstrap_resamples; ++r) {
    resample(a, ra, rng);
    resample(b, rb, rng);
    double ma = median_of(ra);
    if (ma <= 0) continue;
    changes.push_back(median_of(rb) / ma - 1);
  }
  if (changes.size() < 2) return t;
  std::sort(changes.begin(), changes.end());
  double alpha = (1 - options.confidence) / 2;
  auto at = [&](double q) {
    double pos = q * static_cast<double>(changes.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, changes.size() - 1);
    double frac = pos - static_cast<double>(lo);
    return changes[lo] * (1 - frac) + changes[hi] * frac;
  };
  t.ci_low = at(alpha);
  t.ci_high = at(1 - alpha);
  t.interval_known = true;
  t.significant = t.ci_low > 0 || t.ci_high < 0;
  t.slower = t.significant && t.ci_low > 0 && t.change > options.time_threshold;
  t.faster = t.significant && t.ci_high < 0 && t.change < -options.time_threshold;
  return t;
}

Comparison compare_reports(const Report& a, const Report& b, const CompareOptions& options) {
  Comparison out;
  out.report_a = a.path;
  out.report_b = b.path;
  out.time_threshold = options.time_threshold;
  out.matched_by = options.match;
  if (out.matched_by == MatchBy::kAuto) {
    out.matched_by = same_capture(a, b) ? MatchBy::kCall : MatchBy::kKernelOccurrence;
  }
  if (out.matched_by == MatchBy::kKernelOccurrence && options.match == MatchBy::kAuto) {
    out.notes.push_back(
        "the reports replayed different captures (or launch lists): launches "
        "matched by kernel name and occurrence");
  }
  const std::string dir_a = options.outputs_dir_a.empty() ? a.outputs_dir : options.outputs_dir_a;
  const std::string dir_b = options.outputs_dir_b.empty() ? b.outputs_dir : options.outputs_dir_b;

  // Occurrence of each launch of each report (k-th launch of its kernel).
  auto occurrences = [](const Report& r) {
    std::vector<uint64_t> occ(r.launches.size());
    std::map<std::string, uint64_t> seen;
    for (size_t i = 0; i < r.launches.size(); ++i) occ[i] = seen[r.launches[i].kernel]++;
    return occ;
  };
  std::vector<uint64_t> occ_a = occurrences(a), occ_b = occurrences(b);
  std::map<std::pair<std::string, uint64_t>, size_t> b_by_kernel;
  std::map<uint64_t, size_t> b_by_call;
  for (size_t i = 0; i < b.launches.size(); ++i) {
    b_by_kernel[{b.launches[i].kernel, occ_b[i]}] = i;
    b_by_call[b.launches[i].call] = i;
  }
  std::vector<Observed> obs_a = observations(a), obs_b = observations(b);
  std::vector<bool> b_matched(b.launches.size(), false);

  std::map<std::string, size_t> kernel_index;
  std::vector<std::vector<double>> kernel_a, kernel_b;  // pooled samples per kernel
  std::vector<bool> kernel_cap_a, kernel_cap_b;
  auto kernel_for = [&](const std::string& name) {
    auto [it, added] = kernel_index.try_emplace(name, out.kernels.size());
    if (added) {
      KernelComparison k;
      k.kernel = name;
      out.kernels.push_back(k);
      kernel_a.emplace_back();
      kernel_b.emplace_back();
      kernel_cap_a.push_back(false);
      kernel_cap_b.push_back(false);
    }
    return it->second;
  };

  for (size_t i = 0; i < a.launches.size(); ++i) {
    const ReportLaunch& la = a.launches[i];
    LaunchComparison lc;
    lc.kernel = la.kernel;
    lc.occurrence = occ_a[i];
    lc.call_a = la.call;
    lc.ordinal_a = la.ordinal;
    std::optional<size_t> j;
    if (out.matched_by == MatchBy::kCall) {
      auto it = b_by_call.find(la.call);
      if (it != b_by_call.end()) j = it->second;
    } else {
      auto it = b_by_kernel.find({la.kernel, occ_a[i]});
      if (it != b_by_kernel.end()) j = it->second;
    }
    size_t k = kernel_for(la.kernel);
    if (!j) {
      lc.detail = "no matching launch in B";
      out.notes.push_back("launch #" + std::to_string(la.ordinal) + " of " + la.kernel + " (call " +
                          std::to_string(la.call) + ") has no match in B");
      out.launches.push_back(std::move(lc));
      continue;
    }
    const ReportLaunch& lb = b.launches[*j];
    b_matched[*j] = true;
    lc.call_b = lb.call;
    lc.ordinal_b = lb.ordinal;
    if (lb.kernel != la.kernel) {
      lc.results = ResultState::kDifferent;
      lc.detail = "call " + std::to_string(la.call) + " launches " + la.kernel + " in A, " +
                  lb.kernel + " in B";
    } else {
      compare_results(lc, obs_a[i], dir_a, obs_b[*j], dir_b, options);
    }
    if (la.time && lb.time) {
      std::vector<double> ta = samples_of(*la.time), tb = samples_of(*lb.time);
      if (!ta.empty() && !tb.empty()) {
        lc.time = compare_times(ta, tb, options);
        lc.time->cap_hit_a = la.time->cap_hit;
        lc.time->cap_hit_b = lb.time->cap_hit;
        kernel_a[k].insert(kernel_a[k].end(), ta.begin(), ta.end());
        kernel_b[k].insert(kernel_b[k].end(), tb.begin(), tb.end());
        if (la.time->cap_hit) kernel_cap_a[k] = true;
        if (lb.time->cap_hit) kernel_cap_b[k] = true;
      }
    }
    KernelComparison& kc = out.kernels[k];
    ++kc.launches;
    if (lc.results == ResultState::kDifferent) {
      ++kc.differing_launches;
      if (!kc.first_differing) kc.first_differing = out.launches.size();
      if (!out.first_differing) out.first_differing = out.launches.size();
      out.results_differ = true;
    }
    out.launches.push_back(std::move(lc));
  }
  for (size_t j = 0; j < b.launches.size(); ++j) {
    if (b_matched[j]) continue;
    const ReportLaunch& lb = b.launches[j];
    LaunchComparison lc;
    lc.kernel = lb.kernel;
    lc.occurrence = occ_b[j];
    lc.call_b = lb.call;
    lc.ordinal_b = lb.ordinal;
    lc.detail = "no matching launch in A";
    out.notes.push_back("launch #" + std::to_string(lb.ordinal) + " of " + lb.kernel + " (call " +
                        std::to_string(lb.call) + ") of B has no match in A");
    kernel_for(lb.kernel);
    out.launches.push_back(std::move(lc));
  }
  if (a.copies.size() != b.copies.size()) {
    out.notes.push_back("device-to-host copies: " + std::to_string(a.copies.size()) + " in A, " +
                        std::to_string(b.copies.size()) + " in B");
  }
  for (size_t k = 0; k < out.kernels.size(); ++k) {
    if (kernel_a[k].empty() || kernel_b[k].empty()) continue;
    out.kernels[k].time = compare_times(kernel_a[k], kernel_b[k], options);
    out.kernels[k].time->cap_hit_a = kernel_cap_a[k];
    out.kernels[k].time->cap_hit_b = kernel_cap_b[k];
    if (out.kernels[k].time->slower) out.slower = true;
    if (out.kernels[k].time->faster) out.faster = true;
  }
  return out;
}

}  // namespace cusnap::compare
