// The text, JSON (docs/schemas/bisect.md) and HTML renderings of bisect and matrix results.
#include <cstdio>
#include <filesystem>

#include "cusnap/common/json_writer.h"
#include "cusnap/runner/bisect.h"

namespace cusnap::runner {
namespace {

std::string format(const char* fmt, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, fmt, v);
  return buffer;
}

// Sum of the per-launch median times of a report (ms); none when it has no timed launch.
std::optional<double> kernel_time_ms(const std::string& report_path) {
  auto report = compare::read_report(report_path);
  if (!report) return std::nullopt;
  double sum = 0;
  bool any = false;
  for (const compare::ReportLaunch& l : report->launches) {
    if (!l.time) continue;
    sum += l.time->median_ms;
    any = true;
  }
  if (!any) return std::nullopt;
  return sum;
}

const char* verdict_word(const Verdict& v) {
  if (v.reference) return v.has_report ? "reference" : "failed";
  return v.differs ? "differs" : "same";
}

void write_replay(common::JsonWriter& w, const Replay& r, const DriverList& list) {
  const Verdict& v = r.verdict;
  w.begin_object();
  w.key("entry").num(r.entry);
  w.key("name").str(list.entries[r.entry].name);
  w.key("capture").str(r.job.capture);
  w.key("report").str(r.job.report);
  w.key("log").str(r.job.log);
  w.key("ran").boolean(r.outcome.ran);
  if (r.outcome.ran) {
    w.key("exit_code").num(r.outcome.exit_code);
  } else {
    w.key("exit_code").null();
  }
  w.key("report_written").boolean(r.outcome.report_written);
  w.key("verdict").str(verdict_word(v));
  w.key("results_differ").boolean(v.results_differ);
  w.key("slower").boolean(v.slower);
  w.key("time_change").real(v.time_change);
  w.key("reason").str(v.reason.empty() ? r.outcome.error : v.reason);
  w.end_object();
}

void write_first_difference(common::JsonWriter& w, const Verdict& v) {
  if (!v.comparison || !v.comparison->first_differing) {
    w.null();
    return;
  }
  const compare::LaunchComparison& l = v.comparison->launches[*v.comparison->first_differing];
  w.begin_object();
  w.key("kernel").str(l.kernel);
  w.key("occurrence").num(l.occurrence);
  if (l.ordinal_b) {
    w.key("ordinal").num(*l.ordinal_b);
  } else {
    w.key("ordinal").null();
  }
  if (l.call_b) {
    w.key("call").num(*l.call_b);
  } else {
    w.key("call").null();
  }
  w.key("results").str(compare::result_state_name(l.results));
  w.key("detail").str(l.detail);
  w.end_object();
}

void write_first_slower(common::JsonWriter& w, const Verdict& v) {
  if (!v.comparison || !v.first_slower) {
    w.null();
    return;
  }
  const compare::LaunchComparison& l = v.comparison->launches[*v.first_slower];
  w.begin_object();
  w.key("kernel").str(l.kernel);
  w.key("occurrence").num(l.occurrence);
  if (l.ordinal_b) {
    w.key("ordinal").num(*l.ordinal_b);
  } else {
    w.key("ordinal").null();
  }
  if (l.call_b) {
    w.key("call").num(*l.call_b);
  } else {
    w.key("call").null();
  }
  w.key("time_change").real(l.time->change);
  w.end_object();
}

void write_entries(common::JsonWriter& w, const DriverList& list) {
  w.key("entries").begin_array();
  for (size_t i = 0; i < list.entries.size(); ++i) {
    const DriverEntry& e = list.entries[i];
    w.begin_object();
    w.key("index").num(i);
    w.key("name").str(e.name);
    w.key("driver").str(e.driver);
    w.key("line").num(e.line);
    w.key("environment").begin_object();
    for (const auto& [k, val] : e.environment) w.key(k).str(val);
    w.end_object();
    w.key("placement").begin_object();
    for (const auto& [k, val] : e.placement) w.key(k).str(val);
    w.end_object();
    w.end_object();
  }
  w.end_array();
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// One matrix cell in words: "reference", "same", "DIFFERS: ...", "no report (exit 6)".
std::string cell_text(const Replay& r) {
  if (!r.outcome.ran) return "runner failed";
  const Verdict& v = r.verdict;
  if (v.reference) {
    return v.has_report ? "reference"
                        : "no report (exit " + std::to_string(r.outcome.exit_code) + ")";
  }
  if (!v.has_report) {
    return "no report (exit " + std::to_string(r.outcome.exit_code) + ")";
  }
  std::string s;
  if (v.results_differ) s = "RESULTS DIFFER";
  if (v.slower) {
    if (!s.empty()) s += ", ";
    s += "SLOWER";
  }
  if (s.empty()) s = "same";
  return s;
}

}  // namespace

std::string bisect_text(const BisectResult& r, const DriverList& list, const CommonOptions& o,
                        const std::string& runner, bool explain) {
  std::string s = "bisect   " + r.capture + " over " + std::to_string(list.entries.size()) +
                  " entries of " + list.file + " (criterion " + criterion_name(o.criterion) +
                  ", runner " + runner + ")\n";
  for (const Replay& p : r.replays) {
    const DriverEntry& e = list.entries[p.entry];
    std::string code = p.outcome.ran ? "exit " + std::to_string(p.outcome.exit_code) : "not run";
    s += "replay   entry " + std::to_string(p.entry) + " " + e.name + " (" + code +
         "): " + verdict_word(p.verdict) +
         (p.verdict.reason.empty() || p.verdict.reference ? "" : " (" + p.verdict.reason + ")") +
         "\n";
  }
  if (!r.error.empty()) return s + "error    " + r.error + "\n";
  s += "replays  " + std::to_string(r.replays.size()) + " (at most " +
       std::to_string(r.max_replays) + ")\n";
  if (!r.culprit) {
    return s + "culprit  none: no entry differs from the first (" + list.entries[0].name + ")\n";
  }
  const DriverEntry& c = list.entries[*r.culprit];
  s += "culprit  " + c.name + " (entry " + std::to_string(*r.culprit) + ", " + list.file + ":" +
       std::to_string(c.line) + ": " + c.text() + ")\n";
  if (r.last_good) {
    s += "good     " + list.entries[*r.last_good].name + " (entry " + std::to_string(*r.last_good) +
         "), the last entry that does not differ\n";
  }
  const Replay* culprit = nullptr;
  for (const Replay& p : r.replays) {
    if (p.entry == *r.culprit) culprit = &p;
  }
  if (culprit != nullptr) {
    s += "why      " + culprit->verdict.reason + "\n";
    const Verdict& v = culprit->verdict;
    if (v.comparison && v.comparison->first_differing) {
      const compare::LaunchComparison& l = v.comparison->launches[*v.comparison->first_differing];
      s += "first differing launch: #" + std::to_string(l.ordinal_b.value_or(0)) + " " + l.kernel +
           " (call " + std::to_string(l.call_b.value_or(0)) + ")" +
           (l.detail.empty() ? "" : ": " + l.detail) + "\n";
    }
    if (o.criterion != Criterion::kResults && v.comparison && v.first_slower) {
      const compare::LaunchComparison& l = v.comparison->launches[*v.first_slower];
      s += "first slower launch: #" + std::to_string(l.ordinal_b.value_or(0)) + " " + l.kernel +
           " (call " + std::to_string(l.call_b.value_or(0)) + ")" +
           format(": %+.1f %% in median", l.time->change * 100) + "\n";
    }
    if (explain && v.comparison) {
      s += "\ncompare  " + list.entries[0].name + " (A) against " + c.name + " (B):\n";
      s += compare::render_text(*v.comparison);
    }
  }
  return s;
}

std::string bisect_json(const BisectResult& r, const DriverList& list, const CommonOptions& o,
                        const std::string& runner) {
  common::JsonWriter w;
  w.begin_object();
  w.key("schema").str("cusnap-bisect");
  w.key("version").num(1);
  w.key("capture").str(r.capture);
  w.key("drivers").str(list.file);
  w.key("criterion").str(criterion_name(o.criterion));
  w.key("time_threshold").real(o.compare.time_threshold);
  w.key("runner").str(runner);
  write_entries(w, list);
  w.key("replays").begin_array();
  for (const Replay& p : r.replays) write_replay(w, p, list);
  w.end_array();
  w.key("max_replays").num(r.max_replays);
  if (r.culprit) {
    w.key("culprit").str(list.entries[*r.culprit].name);
    w.key("culprit_index").num(*r.culprit);
  } else {
    w.key("culprit").null();
    w.key("culprit_index").null();
  }
  if (r.last_good && r.error.empty()) {
    w.key("last_good").str(list.entries[*r.last_good].name);
  } else {
    w.key("last_good").null();
  }
  w.key("first_difference");
  const Verdict* culprit = nullptr;
  for (const Replay& p : r.replays) {
    if (r.culprit && p.entry == *r.culprit) culprit = &p.verdict;
  }
  if (culprit != nullptr) {
    write_first_difference(w, *culprit);
  } else {
    w.null();
  }
  w.key("first_slower");
  if (culprit != nullptr) {
    write_first_slower(w, *culprit);
  } else {
    w.null();
  }
  w.key("error").str(r.error);
  w.key("exit_code").num(r.exit_code);
  w.end_object();
  return w.take() + "\n";
}

std::string matrix_text(const MatrixResult& r, const DriverList& list, const CommonOptions& o) {
  std::string s = "matrix   " + std::to_string(r.captures.size()) + " capture(s) x " +
                  std::to_string(list.entries.size()) + " entries of " + list.file +
                  " (criterion " + criterion_name(o.criterion) +
                  "; each cell against its row's first entry; time: sum of launch medians)\n";
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> header = {"capture"};
  for (const DriverEntry& e : list.entries) header.push_back(e.name);
  table.push_back(header);
  for (size_t c = 0; c < r.cells.size(); ++c) {
    std::vector<std::string> row = {std::filesystem::path(r.captures[c]).filename().string()};
    for (const Replay& p : r.cells[c]) {
      std::string t = cell_text(p);
      if (p.outcome.report_written) {
        if (auto ms = kernel_time_ms(p.job.report)) t += format(" %.6g ms", *ms);
      }
      if (!p.verdict.reference && p.verdict.has_report && p.verdict.time_change != 0) {
        t += format(" %+.1f%%", p.verdict.time_change * 100);
      }
      row.push_back(t);
    }
    table.push_back(row);
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : table) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    s += line + "\n";
  }
  for (size_t c = 0; c < r.cells.size(); ++c) {
    for (const Replay& p : r.cells[c]) {
      if (p.verdict.differs || (!p.verdict.reference && !p.verdict.has_report) ||
          (p.verdict.reference && !p.verdict.has_report)) {
        s += "  " + std::filesystem::path(r.captures[c]).filename().string() + " on " +
             list.entries[p.entry].name + ": " +
             (p.verdict.reason.empty() ? p.outcome.error : p.verdict.reason) + "\n";
      }
    }
  }
  if (!r.error.empty()) s += "error    " + r.error + "\n";
  return s;
}

std::string matrix_json(const MatrixResult& r, const DriverList& list, const CommonOptions& o) {
  common::JsonWriter w;
  w.begin_object();
  w.key("schema").str("cusnap-matrix");
  w.key("version").num(1);
  w.key("drivers").str(list.file);
  w.key("criterion").str(criterion_name(o.criterion));
  w.key("time_threshold").real(o.compare.time_threshold);
  write_entries(w, list);
  w.key("captures").begin_array();
  for (size_t c = 0; c < r.cells.size(); ++c) {
    w.begin_object();
    w.key("capture").str(r.captures[c]);
    w.key("cells").begin_array();
    for (const Replay& p : r.cells[c]) {
      // The replay object of bisect, plus the cell's time.
      common::JsonWriter cell;
      w.begin_object();
      w.key("entry").num(p.entry);
      w.key("name").str(list.entries[p.entry].name);
      w.key("report").str(p.job.report);
      w.key("log").str(p.job.log);
      w.key("ran").boolean(p.outcome.ran);
      if (p.outcome.ran) {
        w.key("exit_code").num(p.outcome.exit_code);
      } else {
        w.key("exit_code").null();
      }
      w.key("report_written").boolean(p.outcome.report_written);
      w.key("verdict").str(verdict_word(p.verdict));
      w.key("results_differ").boolean(p.verdict.results_differ);
      w.key("slower").boolean(p.verdict.slower);
      w.key("time_change").real(p.verdict.time_change);
      std::optional<double> ms =
          p.outcome.report_written ? kernel_time_ms(p.job.report) : std::nullopt;
      if (ms) {
        w.key("kernel_time_ms").real(*ms);
      } else {
        w.key("kernel_time_ms").null();
      }
      w.key("first_difference");
      write_first_difference(w, p.verdict);
      w.key("first_slower");
      write_first_slower(w, p.verdict);
      w.key("reason").str(p.verdict.reason.empty() ? p.outcome.error : p.verdict.reason);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("error").str(r.error);
  w.key("exit_code").num(r.exit_code);
  w.end_object();
  return w.take() + "\n";
}

std::string matrix_html(const MatrixResult& r, const DriverList& list, const CommonOptions& o) {
  std::string s =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>cusnap matrix</title>\n"
      "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
      "td,th{border:1px solid #999;padding:4px 8px}.same{background:#dfd}"
      ".differs{background:#fdd}.reference{background:#eef}.failed{background:#fc9}</style>"
      "</head><body>\n<h1>cusnap matrix</h1>\n<p>" +
      html_escape(list.file) + ", criterion " + criterion_name(o.criterion) +
      "; each cell against its row's first entry; time: sum of launch medians.</p>\n"
      "<table><tr><th>capture</th>";
  for (const DriverEntry& e : list.entries) s += "<th>" + html_escape(e.name) + "</th>";
  s += "</tr>\n";
  for (size_t c = 0; c < r.cells.size(); ++c) {
    s += "<tr><th>" + html_escape(r.captures[c]) + "</th>";
    for (const Replay& p : r.cells[c]) {
      std::string cls =
          !p.outcome.ran || !p.verdict.has_report
              ? "failed"
              : (p.verdict.reference ? "reference" : (p.verdict.differs ? "differs" : "same"));
      std::string text = cell_text(p);
      if (p.outcome.report_written) {
        if (auto ms = kernel_time_ms(p.job.report)) text += format(" %.6g ms", *ms);
      }
      s += "<td class=\"";
      s += cls;
      s += "\" title=\"";
      s += html_escape(p.verdict.reason);
      s += "\">";
      s += html_escape(text);
      s += "</td>";
    }
    s += "</tr>\n";
  }
  s += "</table>\n";
  if (!r.error.empty()) s += "<pre>" + html_escape(r.error) + "</pre>\n";
  return s + "</body></html>\n";
}

}  // namespace cusnap::runner
