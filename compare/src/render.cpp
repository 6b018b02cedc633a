// The renderers of a Comparison: the human table of `cusnap compare` and its --json document
// (schema "cusnap-compare", every field in docs/compare.md), written with cusnap's one JSON
// writer.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "cusnap/common/json_writer.h"
#include "cusnap/compare/compare.h"
#include "replayer/report.h"

namespace cusnap::compare {
namespace {

std::string format(const char* fmt, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, fmt, v);
  return buffer;
}

std::string percent(double v) { return format("%+.1f%%", v * 100); }

std::string opt(const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : "-"; }

std::string time_cells(const std::optional<TimeChange>& t) {
  if (!t || t->samples_a == 0 || t->samples_b == 0) return "-";
  std::string s = format("%.4g", t->median_a_ms) + " -> " + format("%.4g ms", t->median_b_ms) +
                  "  " + percent(t->change);
  if (t->interval_known) {
    s += " [" + percent(t->ci_low) + ", " + percent(t->ci_high) + "]";
  } else {
    s += " [no interval: fewer than 2 samples]";
  }
  if (t->slower) s += "  SLOWER";
  if (t->faster) s += "  faster";
  if (t->cap_hit_a || t->cap_hit_b) s += "  (--max-time cap hit)";
  return s;
}

void time_object(common::JsonWriter& j, const std::optional<TimeChange>& t) {
  if (!t) {
    j.null();
    return;
  }
  j.begin_object();
  j.key("samples_a").num(t->samples_a);
  j.key("samples_b").num(t->samples_b);
  j.key("median_a_ms").real(t->median_a_ms);
  j.key("median_b_ms").real(t->median_b_ms);
  j.key("noise_a").real(t->noise_a);
  j.key("noise_b").real(t->noise_b);
  j.key("change").real(t->change);
  j.key("interval");
  if (t->interval_known) {
    j.begin_array().real(t->ci_low).real(t->ci_high).end_array();
  } else {
    j.null();
  }
  j.key("significant").boolean(t->significant);
  j.key("slower").boolean(t->slower);
  j.key("faster").boolean(t->faster);
  j.key("cap_hit_a").boolean(t->cap_hit_a);
  j.key("cap_hit_b").boolean(t->cap_hit_b);
  j.end_object();
}

void opt_num(common::JsonWriter& j, const std::optional<uint64_t>& v) {
  if (v) {
    j.num(*v);
  } else {
    j.null();
  }
}

std::string hex(uint64_t v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(v));
  return buffer;
}

void output_object(common::JsonWriter& j, const OutputComparison& o) {
  j.begin_object();
  j.key("what").str(o.what);
  j.key("address").str(hex(o.address));
  j.key("bytes").num(o.bytes);
  j.key("equal").boolean(o.equal);
  j.key("differing_bytes").num(o.differing_bytes);
  j.key("first_difference");
  opt_num(j, o.first_difference);
  j.key("tolerance");
  if (o.elements) {
    replayer::write_element_comparison(j, o.tolerance, o.within_tolerance, *o.elements, "a", "b");
  } else {
    j.null();
  }
  j.key("note").str(o.note);
  j.end_object();
}

}  // namespace

std::string render_text(const Comparison& c) {
  std::string out = "cusnap compare: A " + c.report_a + "\n                B " + c.report_b +
                    "\nlaunches matched by " + match_by_name(c.matched_by) + "\n";
  out += "results   ";
  if (!c.results_differ) {
    out += "equal (no launch's observed results differ)\n";
  } else {
    const LaunchComparison& l = c.launches[*c.first_differing];
    out += "DIFFERENT: first differing launch: " + l.kernel + " #" + opt(l.ordinal_a) + " (call " +
           opt(l.call_a) + " in A, " + opt(l.call_b) + " in B): " + l.detail + "\n";
  }
  out += "timing    ";
  if (c.slower) {
    out += "SLOWER: at least one kernel's median rose by more than " +
           format("%.1f%%", c.time_threshold * 100) + ", significantly\n";
  } else {
    out += "no kernel flagged slower (threshold " + format("%.1f%%", c.time_threshold * 100) +
           ", 95% bootstrap interval of the change in median)\n";
  }
  out += "\nlaunches\n";
  for (const LaunchComparison& l : c.launches) {
    out += "  #" + opt(l.ordinal_a) + "/" + opt(l.ordinal_b) + "  call " + opt(l.call_a) + "/" +
           opt(l.call_b) + "  " + l.kernel + "  " + result_state_name(l.results);
    if (l.time) out += "  " + time_cells(l.time);
    if (!l.detail.empty()) out += "\n      " + l.detail;
    out += "\n";
    for (const OutputComparison& o : l.outputs) {
      if (o.equal) continue;
      out += "      " + o.what + ": " + std::to_string(o.differing_bytes) + " of " +
             std::to_string(o.bytes) + " bytes differ";
      if (o.elements) {
        out += "; " + o.tolerance + ": " + std::to_string(o.elements->over) + " of " +
               std::to_string(o.elements->elements) + " elements outside";
        for (const replayer::ElementError& e : o.elements->worst) {
          out += "\n        [" + std::to_string(e.index) + "] " + format("%.9g", e.expected) +
                 " vs " + format("%.9g", e.actual) + "  ulp " + std::to_string(e.ulp) +
                 (e.within ? "" : "  OUTSIDE");
        }
      }
      if (!o.note.empty()) out += " (" + o.note + ")";
      out += "\n";
    }
  }
  out += "\nkernels\n";
  for (const KernelComparison& k : c.kernels) {
    out += "  " + k.kernel + "  " + std::to_string(k.launches) + " launch(es), " +
           std::to_string(k.differing_launches) + " differing";
    if (k.time) out += "  " + time_cells(k.time);
    out += "\n";
  }
  for (const std::string& n : c.notes) out += "note: " + n + "\n";
  out += c.flagged() ? "verdict   FLAGGED\n" : "verdict   nothing flagged\n";
  return out;
}

std::string render_json(const Comparison& c) {
  common::JsonWriter j(2);
  j.begin_object();
  j.key("schema").str("cusnap-compare");
  j.key("schema_version").num(kCompareSchemaVersion);
  j.key("a").str(c.report_a);
  j.key("b").str(c.report_b);
  j.key("matched_by").str(match_by_name(c.matched_by));
  j.key("time_threshold").real(c.time_threshold);
  j.key("flagged").boolean(c.flagged());
  j.key("results_differ").boolean(c.results_differ);
  j.key("first_differing_launch");
  opt_num(j, c.first_differing ? std::optional<uint64_t>(*c.first_differing) : std::nullopt);
  j.key("slower").boolean(c.slower);
  j.key("faster").boolean(c.faster);
  j.key("launches").begin_array();
  for (const LaunchComparison& l : c.launches) {
    j.begin_object();
    j.key("kernel").str(l.kernel);
    j.key("occurrence").num(l.occurrence);
    j.key("call_a");
    opt_num(j, l.call_a);
    j.key("call_b");
    opt_num(j, l.call_b);
    j.key("ordinal_a");
    opt_num(j, l.ordinal_a);
    j.key("ordinal_b");
    opt_num(j, l.ordinal_b);
    j.key("results").str(result_state_name(l.results));
    j.key("observations").num(l.observations);
    j.key("partial").boolean(l.partial);
    j.key("detail").str(l.detail);
    j.key("outputs").begin_array();
    for (const OutputComparison& o : l.outputs) output_object(j, o);
    j.end_array();
    j.key("time");
    time_object(j, l.time);
    j.end_object();
  }
  j.end_array();
  j.key("kernels").begin_array();
  for (const KernelComparison& k : c.kernels) {
    j.begin_object();
    j.key("kernel").str(k.kernel);
    j.key("launches").num(k.launches);
    j.key("differing_launches").num(k.differing_launches);
    j.key("first_differing_launch");
    opt_num(j, k.first_differing ? std::optional<uint64_t>(*k.first_differing) : std::nullopt);
    j.key("time");
    time_object(j, k.time);
    j.end_object();
  }
  j.end_array();
  j.key("notes").begin_array();
  for (const std::string& n : c.notes) j.str(n);
  j.end_array();
  j.end_object();
  return j.take() + "\n";
}

namespace {

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
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

// Per kernel one row: a dot at the change in median, a bar over its interval, the threshold
// lines; red when flagged slower, green when faster.
std::string kernel_plot(const Comparison& c) {
  std::vector<const KernelComparison*> rows;
  double extent = c.time_threshold * 2;
  for (const KernelComparison& k : c.kernels) {
    if (!k.time || k.time->samples_a == 0 || k.time->samples_b == 0) continue;
    rows.push_back(&k);
    extent = std::max(
        {extent, std::abs(k.time->ci_low), std::abs(k.time->ci_high), std::abs(k.time->change)});
  }
  if (rows.empty()) return "<p>No kernel was timed in both reports.</p>\n";
  extent *= 1.1;
  const int label = 260, plot = 420, row = 22, top = 24;
  const int height = top + row * static_cast<int>(rows.size()) + 8;
  auto x = [&](double v) { return label + (v + extent) / (2 * extent) * plot; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(label + plot + 20) + "\" height=\"" + std::to_string(height) +
                    "\" font-family=\"monospace\" font-size=\"12\">\n";
  auto line = [&](double v, const char* color, const char* dash) {
    svg += "<line x1=\"" + format("%.1f", x(v)) + "\" y1=\"" + std::to_string(top - 6) +
           "\" x2=\"" + format("%.1f", x(v)) + "\" y2=\"" + std::to_string(height) +
           "\" stroke=\"" + color + "\" stroke-dasharray=\"" + dash + "\"/>\n";
  };
  line(0, "#444", "");
  line(c.time_threshold, "#c00", "4 3");
  line(-c.time_threshold, "#080", "4 3");
  svg += "<text x=\"" + format("%.1f", x(0)) + "\" y=\"12\" text-anchor=\"middle\">0</text>\n";
  svg += "<text x=\"" + format("%.1f", x(c.time_threshold)) + "\" y=\"12\">" +
         html_escape(percent(c.time_threshold)) + "</text>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const TimeChange& t = *rows[i]->time;
    int y = top + row * static_cast<int>(i) + row / 2;
    const char* color = t.slower ? "#c00" : t.faster ? "#080" : "#246";
    svg += "<text x=\"4\" y=\"" + std::to_string(y + 4) + "\">" +
           html_escape(rows[i]->kernel.substr(0, 34)) + "</text>\n";
    svg += "<line x1=\"" + format("%.1f", x(t.ci_low)) + "\" y1=\"" + std::to_string(y) +
           "\" x2=\"" + format("%.1f", x(t.ci_high)) + "\" y2=\"" + std::to_string(y) +
           "\" stroke=\"" + color + "\" stroke-width=\"3\"/>\n";
    svg += "<circle cx=\"" + format("%.1f", x(t.change)) + "\" cy=\"" + std::to_string(y) +
           "\" r=\"4\" fill=\"" + color + "\"><title>" + html_escape(time_cells(t)) +
           "</title></circle>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace

std::string render_html(const Comparison& c) {
  std::string out =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>cusnap compare</title>\n"
      "<style>body{font-family:sans-serif;margin:1.5em}td,th{padding:2px 8px;text-align:left;"
      "font-family:monospace}tr.different{background:#fdd}tr.within{background:#ffd}"
      ".flag{color:#c00;font-weight:bold}</style></head><body>\n";
  out += "<h1>cusnap compare</h1>\n<p>A: " + html_escape(c.report_a) +
         "<br>B: " + html_escape(c.report_b) + "<br>launches matched by " +
         match_by_name(c.matched_by) + "</p>\n";
  out += std::string("<p class=\"") + (c.flagged() ? "flag" : "") + "\">" +
         (c.flagged() ? "FLAGGED" : "nothing flagged") + ": results " +
         (c.results_differ ? "differ" : "equal") + "; " +
         (c.slower ? "a kernel is slower" : "no kernel flagged slower") + " (threshold " +
         html_escape(percent(c.time_threshold)) + ", 95 % bootstrap interval)</p>\n";
  if (c.first_differing) {
    const LaunchComparison& l = c.launches[*c.first_differing];
    out += "<p class=\"flag\">first differing launch: " + html_escape(l.kernel) + " (call " +
           opt(l.call_a) + " in A, " + opt(l.call_b) + " in B): " + html_escape(l.detail) +
           "</p>\n";
  }
  out += "<h2>Change in median per kernel</h2>\n" + kernel_plot(c);
  out +=
      "<h2>Kernels</h2>\n<table><tr><th>kernel</th><th>launches</th><th>differing</th>"
      "<th>time</th></tr>\n";
  for (const KernelComparison& k : c.kernels) {
    out += "<tr><td>" + html_escape(k.kernel) + "</td><td>" + std::to_string(k.launches) +
           "</td><td>" + std::to_string(k.differing_launches) + "</td><td>" +
           html_escape(time_cells(k.time)) + "</td></tr>\n";
  }
  out +=
      "</table>\n<h2>Launches</h2>\n<table><tr><th>calls A/B</th><th>kernel</th>"
      "<th>results</th><th>detail</th><th>time</th></tr>\n";
  for (const LaunchComparison& l : c.launches) {
    const char* cls = l.results == ResultState::kDifferent ? "different"
                      : l.results == ResultState::kWithin  ? "within"
                                                           : "";
    out += std::string("<tr class=\"") + cls + "\"><td>" + opt(l.call_a) + "/" + opt(l.call_b) +
           "</td><td>" + html_escape(l.kernel) + "</td><td>" + result_state_name(l.results) +
           "</td><td>" + html_escape(l.detail) + "</td><td>" + html_escape(time_cells(l.time)) +
           "</td></tr>\n";
  }
  out += "</table>\n";
  for (const std::string& n : c.notes) out += "<p>note: " + html_escape(n) + "</p>\n";
  out += "</body></html>\n";
  return out;
}

}  // namespace cusnap::compare
