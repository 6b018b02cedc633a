// bisect and matrix: which replays to run, and their verdicts from compare/.
#include "cusnap/runner/bisect.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace cusnap::runner {
namespace {

namespace fs = std::filesystem;

ReplayJob make_job(const std::string& capture, const DriverEntry& entry, const std::string& dir,
                   const CommonOptions& options) {
  ReplayJob job;
  job.capture = fs::absolute(capture).lexically_normal().string();
  job.entry = &entry;
  job.report = dir + "/" + entry.name + ".json";
  job.log = dir + "/" + entry.name + ".log";
  job.replay_args = options.replay_args;
  return job;
}

// The reference's report, read once per capture.
struct Reference {
  std::optional<compare::Report> report;
  std::string error;
};

Reference read_reference(const Replay& r) {
  Reference ref;
  if (!r.outcome.ran) {
    ref.error = r.outcome.error;
  } else if (!r.outcome.report_written) {
    ref.error = "the replay on the first entry (" + r.job.entry->name + ") exited " +
                std::to_string(r.outcome.exit_code) + " without a report; see " + r.job.log;
  } else if (auto report = compare::read_report(r.job.report)) {
    ref.report = std::move(report.value());
  } else {
    ref.error = report.error().message();
  }
  return ref;
}

std::string percent(double change) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f %%", change * 100);
  return buffer;
}

size_t ceil_log2(size_t n) {
  size_t k = 0;
  while ((size_t{1} << k) < n) ++k;
  return k;
}

}  // namespace

std::optional<Criterion> parse_criterion(const std::string& text) {
  if (text == "results") return Criterion::kResults;
  if (text == "time") return Criterion::kTime;
  if (text == "both") return Criterion::kBoth;
  return std::nullopt;
}

const char* criterion_name(Criterion c) {
  switch (c) {
    case Criterion::kResults:
      return "results";
    case Criterion::kTime:
      return "time";
    case Criterion::kBoth:
      return "both";
  }
  return "?";
}

void judge(const compare::Report& reference, Replay& r, const CommonOptions& options) {
  Verdict& v = r.verdict;
  if (!r.outcome.report_written) {
    v.differs = true;
    v.reason = "the replay exited " + std::to_string(r.outcome.exit_code) +
               " without a report; see " + r.job.log;
    return;
  }
  auto report = compare::read_report(r.job.report);
  if (!report) {
    v.differs = true;
    v.reason = "its report cannot be read: " + report.error().message();
    return;
  }
  v.has_report = true;
  v.comparison = compare::compare_reports(reference, report.value(), options.compare);
  const compare::Comparison& c = *v.comparison;
  v.results_differ = c.results_differ;
  // Slower: compare's flag. A report that keeps one median per launch (report schema 1) gives
  // no interval, and compare never flags it; then the change in median against the threshold
  // decides (docs/bisect.md, "Time"), which suits a deterministic driver such as the emulator.
  std::string slow_kernel;
  for (const compare::KernelComparison& k : c.kernels) {
    if (!k.time) continue;
    const bool flagged =
        k.time->interval_known ? k.time->slower : k.time->change > options.compare.time_threshold;
    if (k.time->change > v.time_change || (flagged && !v.slower)) {
      v.time_change = std::max(v.time_change, k.time->change);
    }
    if (flagged && !v.slower) {
      v.slower = true;
      slow_kernel = k.kernel + " " + percent(k.time->change) +
                    (k.time->interval_known ? "" : " (no interval: one median per launch)");
    }
  }
  for (size_t i = 0; i < c.launches.size() && !v.first_slower; ++i) {
    const std::optional<compare::TimeChange>& t = c.launches[i].time;
    if (t && (t->interval_known ? t->slower : t->change > options.compare.time_threshold)) {
      v.first_slower = i;
    }
  }
  const bool by_results = options.criterion != Criterion::kTime;
  const bool by_time = options.criterion != Criterion::kResults;
  if (by_results && v.results_differ) {
    v.differs = true;
    v.reason = "results differ";
    if (c.first_differing) {
      const compare::LaunchComparison& l = c.launches[*c.first_differing];
      v.reason += ": first at launch #" + std::to_string(l.ordinal_b.value_or(0)) + " " + l.kernel +
                  " (call " + std::to_string(l.call_b.value_or(0)) + ")";
      if (!l.detail.empty()) v.reason += ": " + l.detail;
    }
  }
  if (by_time && v.slower) {
    v.reason += v.differs ? "; " : "";
    v.reason += "slower: " + slow_kernel;
    v.differs = true;
  }
  if (!v.differs) v.reason = "same";
}

BisectResult bisect(const std::string& capture, const DriverList& list, Runner& runner,
                    const CommonOptions& options) {
  BisectResult out;
  out.capture = capture;
  const size_t n = list.entries.size();
  out.max_replays = ceil_log2(n) + 1;
  std::error_code ec;
  fs::create_directories(options.work_dir, ec);
  // Runs the given entries (one runner call), appends them to out.replays; false on a runner
  // failure.
  auto run = [&](const std::vector<size_t>& entries) -> bool {
    std::vector<ReplayJob> jobs;
    for (size_t e : entries) {
      jobs.push_back(make_job(capture, list.entries[e], options.work_dir, options));
    }
    std::vector<JobOutcome> outcomes;
    std::string error;
    if (!runner.run(jobs, &outcomes, &error)) {
      out.error = error;
      out.exit_code = kExitRunnerFailed;
      return false;
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      Replay r;
      r.entry = entries[i];
      r.job = jobs[i];
      r.outcome = outcomes[i];
      if (!r.outcome.ran) {
        out.error = r.outcome.error;
        out.exit_code = kExitRunnerFailed;
      }
      out.replays.push_back(std::move(r));
    }
    return out.exit_code == 0;
  };
  // Invariant: entry lo does not differ (0: the reference itself); entry hi differs (n: none
  // was seen to, the "none differs" answer).
  size_t lo = 0, hi = n;
  std::optional<compare::Report> reference;
  bool first = true;
  while (hi - lo > 1 || first) {
    const size_t mid = lo + (hi - lo) / 2;
    std::vector<size_t> entries;
    if (first) entries.push_back(0);
    if (hi - lo > 1) entries.push_back(mid);
    if (!run(entries)) return out;
    if (first) {
      Replay& ref = out.replays.front();
      ref.verdict.reference = true;
      Reference r = read_reference(ref);
      if (!r.report) {
        ref.verdict.reason = r.error;
        out.error = "the first entry (" + list.entries[0].name +
                    ", the good one) gave no "
                    "report to compare with: " +
                    r.error;
        out.exit_code = kExitReferenceFailed;
        return out;
      }
      ref.verdict.has_report = true;
      ref.verdict.reason = "reference";
      reference = std::move(r.report);
      first = false;
    }
    if (entries.back() == 0) break;  // a LIST of one entry
    Replay& r = out.replays.back();
    judge(*reference, r, options);
    if (r.verdict.differs) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  out.last_good = lo;
  if (hi < n) {
    out.culprit = hi;
    out.exit_code = 0;
  } else {
    out.exit_code = kExitNoCulprit;
  }
  return out;
}

MatrixResult matrix(const std::vector<std::string>& captures, const DriverList& list,
                    Runner& runner, const CommonOptions& options) {
  MatrixResult out;
  out.captures = captures;
  std::vector<ReplayJob> jobs;
  for (size_t c = 0; c < captures.size(); ++c) {
    const std::string dir = options.work_dir + "/reports/" + std::to_string(c) + "-" +
                            fs::path(captures[c]).stem().string();
    std::error_code ec;
    fs::create_directories(dir, ec);
    for (const DriverEntry& e : list.entries)
      jobs.push_back(make_job(captures[c], e, dir, options));
  }
  std::vector<JobOutcome> outcomes;
  std::string error;
  if (!runner.run(jobs, &outcomes, &error)) {
    out.error = error;
    out.exit_code = kExitRunnerFailed;
    return out;
  }
  const size_t n = list.entries.size();
  bool any_differs = false;
  for (size_t c = 0; c < captures.size(); ++c) {
    std::vector<Replay> row;
    for (size_t e = 0; e < n; ++e) {
      Replay r;
      r.entry = e;
      r.job = jobs[c * n + e];
      r.outcome = outcomes[c * n + e];
      if (!r.outcome.ran) {
        if (!out.error.empty()) out.error += "\n";
        out.error += r.outcome.error;
        out.exit_code = kExitRunnerFailed;
      }
      row.push_back(std::move(r));
    }
    row[0].verdict.reference = true;
    Reference ref = read_reference(row[0]);
    if (ref.report) {
      row[0].verdict.has_report = true;
      row[0].verdict.reason = "reference";
      for (size_t e = 1; e < n; ++e) {
        if (!row[e].outcome.ran) continue;
        judge(*ref.report, row[e], options);
        any_differs = any_differs || row[e].verdict.differs;
      }
    } else {
      row[0].verdict.reason = ref.error;
      for (size_t e = 1; e < n; ++e) row[e].verdict.reason = "no reference to compare with";
      any_differs = true;
    }
    out.cells.push_back(std::move(row));
  }
  if (out.exit_code == 0 && any_differs) out.exit_code = kExitMatrixDiffers;
  return out;
}

}  // namespace cusnap::runner
