// `cusnap bisect FILE --drivers LIST` and `cusnap matrix --captures A B ... --drivers LIST -o DIR`
// (docs/bisect.md): options only; the LIST parser, the runners, the search and the verdicts are
// runner/ (cusnap/runner/), the comparisons compare/.
#include "cusnap/runner/bisect.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "cusnap/common/driver_search.h"
#include "subcommands.h"

namespace cusnap::cli {
namespace {

namespace fs = std::filesystem;

// What bisect and matrix share: the LIST, the runner, the criterion and the replay options.
struct SharedOptions {
  std::string drivers;
  std::string runner = "local";
  unsigned jobs = 1;
  std::string criterion = "results";
  double time_threshold = 0.05;
  unsigned repeat = 1;
  std::vector<std::string> replay_args;
  double slurm_timeout = 3600;
  double slurm_poll = 1;
  std::vector<std::string> sbatch_args;
};

void add_shared(CLI::App* cmd, SharedOptions& o) {
  cmd->add_option("--drivers", o.drivers,
                  "LIST file: one entry per line, NAME DRIVER [KEY=VALUE ...]; the first is good")
      ->required();
  cmd->add_option("--runner", o.runner,
                  "local | slurm | a command template such as 'ssh {host} {command}'")
      ->capture_default_str();
  cmd->add_option("-j,--jobs", o.jobs, "local and template runners: replays at once")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  cmd->add_option("--criterion", o.criterion, "results | time | both")
      ->capture_default_str()
      ->check(CLI::IsMember({"results", "time", "both"}));
  cmd->add_option("--time-threshold", o.time_threshold,
                  "relative change in median flagged slower (0.05: 5 %)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--repeat", o.repeat, "timed runs of each launch per replay (cusnap replay)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  cmd->add_option("--replay-arg", o.replay_args,
                  "one more argument for every cusnap replay (repeatable, e.g. --replay-arg=-v)");
  cmd->add_option("--slurm-timeout", o.slurm_timeout,
                  "slurm: seconds the job array may take before it is cancelled")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--slurm-poll", o.slurm_poll, "slurm: seconds between two squeue polls")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 600.0));
  cmd->add_option("--sbatch-arg", o.sbatch_args,
                  "slurm: one more sbatch option (repeatable, e.g. --sbatch-arg=--time=10)");
}

// The runner and the common options; false (message logged) on a usage error.
bool prepare(const std::string& command, const SharedOptions& o, const std::string& work_dir,
             runner::DriverList* list, std::unique_ptr<runner::Runner>* run,
             runner::CommonOptions* common_options) {
  std::string error;
  auto parsed = runner::read_driver_list(o.drivers, &error);
  if (!parsed) {
    spdlog::error("cusnap {}: --drivers {}", command, error);
    return false;
  }
  if (parsed->entries.size() < 2) {
    spdlog::error("cusnap {}: --drivers {}: needs at least two entries (the first is the good one)",
                  command, o.drivers);
    return false;
  }
  *list = std::move(*parsed);
  runner::RunnerOptions ro;
  ro.kind = o.runner;
  // Every replay runs this very executable, so a node runs the tool that asked.
  ro.cusnap = common::executable_path();
  ro.work_dir = fs::absolute(work_dir).lexically_normal().string();
  ro.jobs = o.jobs;
  ro.slurm_timeout_s = o.slurm_timeout;
  ro.slurm_poll_s = o.slurm_poll;
  ro.sbatch_args = o.sbatch_args;
  *run = runner::make_runner(ro, &error);
  if (!*run) {
    spdlog::error("cusnap {}: {}", command, error);
    return false;
  }
  common_options->criterion = *runner::parse_criterion(o.criterion);
  common_options->compare.time_threshold = o.time_threshold;
  common_options->work_dir = ro.work_dir;
  common_options->replay_args = {"--repeat", std::to_string(o.repeat)};
  common_options->replay_args.insert(common_options->replay_args.end(), o.replay_args.begin(),
                                     o.replay_args.end());
  return true;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

void register_bisect(CLI::App& app, int& exit_code) {
  struct Options {
    std::string file;
    SharedOptions shared;
    std::string work_dir;
    bool explain = false;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "bisect", "Find the first LIST entry (driver) whose replay of FILE differs from the first's");
  cmd->add_option("file", o->file, "capture (whole or extracted)")->required();
  add_shared(cmd, o->shared);
  cmd->add_option("--work-dir", o->work_dir,
                  "reports and logs (shared with the nodes for --runner slurm); default "
                  "FILE.bisect/");
  cmd->add_flag("--explain", o->explain, "also print the compare table of the good and culprit");
  cmd->add_flag("--json", o->json, "one JSON object on stdout (docs/schemas/bisect.md)");
  cmd->callback([o, &exit_code] {
    const std::string work_dir = o->work_dir.empty() ? o->file + ".bisect" : o->work_dir;
    runner::DriverList list;
    std::unique_ptr<runner::Runner> run;
    runner::CommonOptions options;
    if (!fs::is_regular_file(o->file)) {
      spdlog::error("cusnap bisect: {}: no such file", o->file);
      exit_code = kExitUsageOrIo;
      return;
    }
    if (!prepare("bisect", o->shared, work_dir, &list, &run, &options)) {
      exit_code = kExitUsageOrIo;
      return;
    }
    runner::BisectResult result = runner::bisect(o->file, list, *run, options);
    const std::string text =
        o->json ? runner::bisect_json(result, list, options, run->describe())
                : runner::bisect_text(result, list, options, run->describe(), o->explain);
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (!result.error.empty()) spdlog::error("cusnap bisect: {}", result.error);
    exit_code = result.exit_code;
  });
}

void register_matrix(CLI::App& app, int& exit_code) {
  struct Options {
    std::vector<std::string> captures;
    SharedOptions shared;
    std::string out;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "matrix", "Replay every capture on every LIST entry; one table of results and timings");
  cmd->add_option("--captures", o->captures, "captures to replay")->required();
  add_shared(cmd, o->shared);
  cmd->add_option("-o,--out", o->out,
                  "directory: matrix.txt, matrix.json, matrix.html and reports/ (shared with "
                  "the nodes for --runner slurm)")
      ->required();
  cmd->callback([o, &exit_code] {
    for (const std::string& c : o->captures) {
      if (!fs::is_regular_file(c)) {
        spdlog::error("cusnap matrix: {}: no such file", c);
        exit_code = kExitUsageOrIo;
        return;
      }
    }
    runner::DriverList list;
    std::unique_ptr<runner::Runner> run;
    runner::CommonOptions options;
    if (!prepare("matrix", o->shared, o->out, &list, &run, &options)) {
      exit_code = kExitUsageOrIo;
      return;
    }
    runner::MatrixResult result = runner::matrix(o->captures, list, *run, options);
    const std::string text = runner::matrix_text(result, list, options);
    std::fwrite(text.data(), 1, text.size(), stdout);
    const std::string dir = options.work_dir;
    if (!write_file(dir + "/matrix.txt", text) ||
        !write_file(dir + "/matrix.json", runner::matrix_json(result, list, options)) ||
        !write_file(dir + "/matrix.html", runner::matrix_html(result, list, options))) {
      spdlog::error("cusnap matrix: cannot write the tables into {}", dir);
      exit_code = kExitUsageOrIo;
      return;
    }
    if (!result.error.empty()) spdlog::error("cusnap matrix: {}", result.error);
    exit_code = result.exit_code;
  });
}

}  // namespace cusnap::cli
