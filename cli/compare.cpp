// `cusnap compare A.json B.json [options]` (docs/compare.md): two replay reports compared by
// compare/; exit 0 when nothing is flagged, 1 when something is, 11 when they cannot be compared.
#include "cusnap/compare/compare.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "subcommands.h"

namespace cusnap::cli {
namespace {

struct Options {
  std::string a, b;
  bool json = false;
  std::string html;
  double time_threshold_percent = 5;
  std::vector<std::string> tolerances;
  std::string match = "auto";
  std::string outputs_a, outputs_b;
};

void run(const Options& o, int& exit_code) {
  exit_code = kExitCompareFailed;
  compare::CompareOptions options;
  options.time_threshold = o.time_threshold_percent / 100;
  options.match = o.match == "call"     ? compare::MatchBy::kCall
                  : o.match == "kernel" ? compare::MatchBy::kKernelOccurrence
                                        : compare::MatchBy::kAuto;
  options.outputs_dir_a = o.outputs_a;
  options.outputs_dir_b = o.outputs_b;
  for (const std::string& spec : o.tolerances) {
    auto t = replayer::parse_tolerance(spec);
    if (!t) {
      spdlog::error("cusnap compare: {}", t.error().message());
      return;
    }
    options.tolerances.push_back(std::move(t.value()));
  }
  auto a = compare::read_report(o.a);
  if (!a) {
    spdlog::error("cusnap compare: {}", a.error().message());
    return;
  }
  auto b = compare::read_report(o.b);
  if (!b) {
    spdlog::error("cusnap compare: {}", b.error().message());
    return;
  }
  compare::Comparison c = compare::compare_reports(a.value(), b.value(), options);
  if (!o.html.empty()) {
    std::ofstream out(o.html, std::ios::binary | std::ios::trunc);
    out << compare::render_html(c);
    out.close();
    if (!out) {
      spdlog::error("cusnap compare: cannot write {}", o.html);
      return;
    }
  }
  std::string text = o.json ? compare::render_json(c) : compare::render_text(c);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  exit_code = c.flagged() ? kExitCompareFlagged : kExitOk;
}

}  // namespace

void register_compare(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Compare two replay reports (cusnap replay --report): results and timing");
  cmd->add_option("A", o->a, "Report of the reference replay")->required();
  cmd->add_option("B", o->b, "Report of the replay compared with it")->required();
  cmd->add_flag("--json", o->json, "Print the comparison as JSON (docs/compare.md)");
  cmd->add_option("--html", o->html,
                  "Also write one self-contained HTML page (per-kernel changes as an SVG plot)");
  cmd->add_option("--time-threshold", o->time_threshold_percent,
                  "Flag a kernel slower when its median rose by more than this many percent, "
                  "significantly (95 % bootstrap interval above 0)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--tolerance", o->tolerances,
                  "Saved outputs: compare element-wise, [0xALLOC=]f64|f32|f16|bf16:ulp=N,rel=X,"
                  "abs=X (as cusnap replay --tolerance; repeatable)");
  cmd->add_option("--match", o->match,
                  "Pair launches by capture call, by kernel name + occurrence, or auto (call "
                  "when both replayed the same capture)")
      ->check(CLI::IsMember({"auto", "call", "kernel"}))
      ->capture_default_str();
  cmd->add_option("--outputs-a", o->outputs_a, "Saved outputs of A (default: its report's)");
  cmd->add_option("--outputs-b", o->outputs_b, "Saved outputs of B (default: its report's)");
  cmd->footer(
      "Exit codes (docs/cli.md): 0 nothing flagged; 1 results differ or a kernel is flagged "
      "slower; 11 the reports cannot be compared (bad option, unreadable or invalid report).");
  cmd->callback([o, &exit_code]() { run(*o, exit_code); });
}

}  // namespace cusnap::cli
