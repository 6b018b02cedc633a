// `cusnap minimize IN --until CONDITION -o OUT [--driver D] [--drivers LIST] [--runner R] [-j N]
//  [--repeat N] [--work-dir DIR] [--max-evaluations N] [--no-chunks] [--json] [--progress]`
// (docs/minimize.md): options only.
#include "minimize.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "common.h"
#include "cusnap/common/driver_search.h"
#include "cusnap/common/json_writer.h"
#include "cusnap/reduce/minimize.h"
#include "result_names.h"

namespace cusnap::cli {

namespace {

namespace fs = std::filesystem;

struct MinimizeArgs {
  std::string file;
  std::string out;
  std::string until;
  std::string driver = "emulator";
  std::string drivers;
  std::string runner = "local";
  unsigned jobs = 1;
  unsigned repeat = 1;
  std::vector<std::string> replay_args;
  double slurm_timeout = 3600;
  double slurm_poll = 1;
  std::vector<std::string> sbatch_args;
  std::string work_dir;
  unsigned max_evaluations = 1000;
  bool no_chunks = false;
  bool json = false;
  bool progress = false;
};

const char* outcome_name(reduce::MinimizeOutcome o) {
  switch (o) {
    case reduce::MinimizeOutcome::kMinimized:
      return "minimized";
    case reduce::MinimizeOutcome::kInputDoesNotHold:
      return "input does not hold";
    case reduce::MinimizeOutcome::kOutputDoesNotHold:
      return "output does not hold";
  }
  return "?";
}

std::string render_json(const MinimizeArgs& args, const reduce::MinimizeReport& r,
                        const std::string& runner) {
  common::JsonWriter w(2);
  w.begin_object();
  w.key("schema").str("cusnap-minimize");
  w.key("schema_version").num(1);
  w.key("input").str(args.file);
  w.key("output").str(r.outcome == reduce::MinimizeOutcome::kInputDoesNotHold ? "" : args.out);
  w.key("condition").str(args.until);
  w.key("outcome").str(outcome_name(r.outcome));
  w.key("runner").str(runner);
  w.key("search").str("ddmin with complements");
  w.key("evaluations").num(r.evaluations);
  w.key("replays").num(r.replays);
  w.key("cache_hits").num(r.cache_hits);
  w.key("budget_exhausted").boolean(r.budget_exhausted);
  w.key("calls").begin_object().key("before").num(r.calls_before).key("after").num(r.calls_after);
  w.end_object();
  w.key("data_bytes").begin_object().key("before").num(r.data_bytes_before);
  w.key("after").num(r.data_bytes_after).end_object();
  w.key("file_bytes").begin_object().key("before").num(r.file_bytes_before);
  w.key("after").num(r.file_bytes_after).end_object();
  w.key("units").begin_object().key("before").num(r.units_before).key("after").num(r.units_after);
  w.end_object();
  w.key("input_chunks").begin_object().key("before").num(r.chunks_before);
  w.key("after").num(r.chunks_after).end_object();
  w.key("evidence").str(r.evidence);
  w.key("kept").begin_array();
  for (const auto& k : r.kept) w.str(k);
  w.end_array();
  w.key("notes").begin_array();
  for (const auto& n : r.notes) w.str(n);
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

int run_minimize(const MinimizeArgs& args) {
  auto condition = reduce::parse_condition(
      args.until,
      [](const std::string& name) -> std::optional<int32_t> { return result_value(name); });
  if (!condition) return report_failure("minimize", condition.status());
  if (!fs::is_regular_file(args.file)) {
    spdlog::error("cusnap minimize: {}: no such file", args.file);
    return kExitUsageOrIo;
  }
  std::optional<runner::DriverList> list;
  if (!args.drivers.empty()) {
    std::string error;
    list = runner::read_driver_list(args.drivers, &error);
    if (!list) {
      spdlog::error("cusnap minimize: --drivers {}", error);
      return kExitUsageOrIo;
    }
  }
  const std::string work =
      fs::absolute(args.work_dir.empty() ? args.out + ".minimize" : args.work_dir)
          .lexically_normal()
          .string();
  runner::RunnerOptions ro;
  ro.kind = args.runner;
  // Every replay runs this very executable, so a node runs the tool that asked.
  ro.cusnap = common::executable_path();
  ro.work_dir = work;
  ro.jobs = args.jobs;
  ro.slurm_timeout_s = args.slurm_timeout;
  ro.slurm_poll_s = args.slurm_poll;
  ro.sbatch_args = args.sbatch_args;
  std::string error;
  std::unique_ptr<runner::Runner> run = runner::make_runner(ro, &error);
  if (!run) {
    spdlog::error("cusnap minimize: {}", error);
    return kExitUsageOrIo;
  }
  reduce::MinimizeOptions options;
  options.until = *condition;
  options.condition.driver = args.driver;
  options.condition.drivers = list ? &*list : nullptr;
  options.condition.runner = run.get();
  options.condition.work_dir = work;
  options.condition.jobs = args.jobs;
  options.condition.replay_args = {"--repeat", std::to_string(args.repeat)};
  options.condition.replay_args.insert(options.condition.replay_args.end(),
                                       args.replay_args.begin(), args.replay_args.end());
  options.max_evaluations = args.max_evaluations;
  options.chunks = !args.no_chunks;
  if (args.progress)
    options.on_progress = [](const std::string& line) {
      std::cerr << "minimize: " << line << "\n";
    };
  auto done = reduce::minimize_capture(args.file, args.out, options);
  if (!done) return report_failure("minimize", done.status());
  const reduce::MinimizeReport& r = *done;
  if (args.json) {
    std::cout << render_json(args, r, run->describe());
  } else if (r.outcome == reduce::MinimizeOutcome::kInputDoesNotHold) {
    std::cout << args.file << ": --until " << args.until
              << " does not hold for the capture itself: nothing to minimize\n";
  } else {
    std::cout << args.out << ": " << r.calls_after << " of " << r.calls_before << " calls, "
              << r.data_bytes_after << " of " << r.data_bytes_before << " data bytes, "
              << r.file_bytes_after << " of " << r.file_bytes_before << " file bytes\n";
    std::cout << "units kept: " << r.units_after << " of " << r.units_before;
    if (r.chunks_before != 0)
      std::cout << "; input chunks kept original: " << r.chunks_after << " of " << r.chunks_before;
    std::cout << "\n";
    for (const auto& k : r.kept) std::cout << "  " << k << "\n";
    std::cout << "--until " << args.until << ": "
              << (r.outcome == reduce::MinimizeOutcome::kMinimized ? "holds" : "DOES NOT HOLD")
              << " (" << r.evidence << ")\n";
    std::cout << "search: ddmin with complements, " << r.evaluations << " candidate(s) evaluated, "
              << r.replays << " replay(s), " << r.cache_hits << " cache hit(s), runner "
              << run->describe() << "\n";
    for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
  }
  switch (r.outcome) {
    case reduce::MinimizeOutcome::kMinimized:
      return kExitOk;
    case reduce::MinimizeOutcome::kInputDoesNotHold:
      return kExitMinimizeInputDoesNotHold;
    case reduce::MinimizeOutcome::kOutputDoesNotHold:
      return kExitMinimizeOutputDoesNotHold;
  }
  return kExitUsageOrIo;
}

}  // namespace

void register_minimize(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<MinimizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "minimize",
      "Write the smallest capture of whole calls (launches, copies, allocations; an extract's "
      "input chunks) of FILE for which CONDITION still holds, by delta debugging");
  cmd->add_option("FILE", args->file, "The capture to minimize")->required();
  cmd->add_option("-o,--output", args->out, "The minimized capture")->required();
  cmd->add_option("--until", args->until,
                  "What must stay true: mismatch:A,B, memcheck, error:CUDA_ERROR_..., "
                  "slower:FACTOR[:A,B], command:'...' (one-driver mismatch is refused)")
      ->required();
  cmd->add_option("--driver", args->driver, "error:: the driver candidates replay on")
      ->capture_default_str();
  cmd->add_option("--drivers", args->drivers,
                  "LIST file (docs/bisect.md): the entries A and B name; slower:F without A,B "
                  "compares its first two");
  cmd->add_option("--runner", args->runner,
                  "mismatch:A,B and slower: local | slurm | a command template")
      ->capture_default_str();
  cmd->add_option("-j,--jobs", args->jobs, "candidates evaluated at once")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  cmd->add_option("--repeat", args->repeat, "timed runs of each launch per replay (slower:)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  cmd->add_option("--replay-arg", args->replay_args,
                  "one more argument for every cusnap replay (repeatable)");
  cmd->add_option("--slurm-timeout", args->slurm_timeout,
                  "slurm: seconds one job array may take before it is cancelled")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--slurm-poll", args->slurm_poll, "slurm: seconds between two squeue polls")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 600.0));
  cmd->add_option("--sbatch-arg", args->sbatch_args, "slurm: one more sbatch option (repeatable)");
  cmd->add_option("--work-dir", args->work_dir,
                  "candidates, reports and logs (shared with the nodes for --runner slurm); "
                  "default OUT.minimize/");
  cmd->add_option("--max-evaluations", args->max_evaluations,
                  "candidates evaluated at most (then the result is not minimal)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000000u));
  cmd->add_flag("--no-chunks", args->no_chunks,
                "extracted captures: keep every input chunk (minimize calls only)");
  cmd->add_flag("--json", args->json, "one JSON object on stdout (docs/schemas/minimize.md)");
  cmd->add_flag("--progress", args->progress, "one line per ddmin round on stderr");
  cmd->callback([args, &exit_code] { exit_code = run_minimize(*args); });
}

}  // namespace cusnap::cli
