// Runners: run `cusnap replay CAPTURE --driver DRIVER --report REPORT` for (capture, LIST entry)
// pairs and hand back where each report is (docs/bisect.md, "Runners"). Three kinds:
//   local     child processes on this machine, at most `jobs` at a time
//   slurm     one `sbatch --array` job per placement (the entries' partition/constraint/gres/
//             host keys), polled with squeue until done or timed out; tasks that ended without
//             writing their exit status are resubmitted once, then reported by task and log
//   TEMPLATE  a shell command per replay made from a template (`ssh {host} {command}`), run
//             through /bin/sh like local jobs (substitutions: kTemplateFields)
// Every replay runs the same cusnap executable (`cusnap` is its path): the one running, so a
// Slurm node runs the tool that submitted. The work directory must be shared with the nodes
// for slurm and for templates that run elsewhere.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cusnap/runner/driver_list.h"

namespace cusnap::runner {

struct ReplayJob {
  std::string capture;                   // absolute path
  const DriverEntry* entry = nullptr;    // the LIST entry (driver, environment, placement)
  std::string report;                    // where `--report` writes (absolute)
  std::string log;                       // stdout and stderr of the replay (absolute)
  std::vector<std::string> replay_args;  // more `cusnap replay` options (e.g. --repeat 3)
};

struct JobOutcome {
  bool ran = false;    // the replay ran to an exit status (else `error` says why not)
  int exit_code = -1;  // `cusnap replay`'s (docs/cli.md, Exit codes) when ran
  bool report_written = false;
  std::string error;  // when !ran: what the runner could not do (names the task and its log)
};

// {cusnap} {capture} {driver} {report} {log} {name} {host} {partition} {constraint} {gres}
// {env} ("K=V ..." words), {command} (env K=V ... CUSNAP replay CAPTURE --driver DRIVER
// --report REPORT -q ARGS), each shell-quoted for /bin/sh; {{ and }} are literal braces.
inline constexpr const char* kTemplateFields[] = {"cusnap",     "capture", "driver", "report",
                                                  "log",        "name",    "host",   "partition",
                                                  "constraint", "gres",    "env",    "command"};

struct RunnerOptions {
  std::string kind = "local";            // "local", "slurm", or a template containing '{'
  std::string cusnap;                    // the cusnap executable replays run (absolute)
  std::string work_dir;                  // job scripts, task logs, exit statuses (absolute; shared)
  unsigned jobs = 1;                     // local and template: replays at once
  double slurm_timeout_s = 3600;         // slurm: the whole array must end within it (then scancel)
  double slurm_poll_s = 1;               // slurm: squeue interval
  std::vector<std::string> sbatch_args;  // slurm: more sbatch options (--account, --time, ...)
};

class Runner {
 public:
  virtual ~Runner() = default;
  // Runs every job (in any order, as many at once as the runner does); outcomes by job index.
  // False with `error` set when the runner itself failed (sbatch missing, timeout).
  virtual bool run(const std::vector<ReplayJob>& jobs, std::vector<JobOutcome>* outcomes,
                   std::string* error) = 0;
  virtual std::string describe() const = 0;  // "local (-j 2)", "slurm", "template 'ssh ...'"
};

// The runner `options.kind` names; empty + `error` for an unknown kind or a bad template (an
// unknown {field}, an unbalanced brace).
std::unique_ptr<Runner> make_runner(const RunnerOptions& options, std::string* error);

// The `cusnap replay` argument vector of a job (without the environment): CUSNAP replay CAPTURE
// --driver DRIVER --report REPORT -q ARGS.
std::vector<std::string> replay_argv(const std::string& cusnap, const ReplayJob& job);
// /bin/sh quoting of one word ('...' with embedded quotes escaped; bare when safe).
std::string shell_quote(const std::string& word);
// The template with every {field} of `job` substituted (see kTemplateFields).
std::optional<std::string> expand_template(const std::string& templ, const std::string& cusnap,
                                           const ReplayJob& job, std::string* error);

}  // namespace cusnap::runner
