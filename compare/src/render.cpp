// The renderers of a Comparison: the human table of `cusnap compare` and its --json document
// (schema "cusnap-compare", every field in docs/compare.md), written with cusnap's one JSON
// writer.
#include <cstdio>

#include "cusnap/common/json_writer.h"
#include "cusnap/compare/compare.h"

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
    j.begin_object();
    j.key("rule").str(o.tolerance);
    j.key("within").boolean(o.within_tolerance);
    j.key("elements").num(o.elements->elements);
    j.key("differing").num(o.elements->differing);
    j.key("over").num(o.elements->over);
    j.key("worst").begin_array();
    for (const replayer::ElementError& e : o.elements->worst) {
      j.begin_object();
      j.key("address").str(hex(e.address));
      j.key("index").num(e.index);
      j.key("a").real(e.expected);
      j.key("b").real(e.actual);
      j.key("abs_error").real(e.abs_error);
      j.key("ulp").num(e.ulp);
      j.key("within").boolean(e.within);
      j.end_object();
    }
    j.end_array();
    j.end_object();
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

}  // namespace cusnap::compare
