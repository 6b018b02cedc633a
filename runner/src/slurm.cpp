// The Slurm runner (docs/bisect.md, "Runners"): one `sbatch --array` job per placement, a
// generated script whose task N runs job N and writes its exit status to a file in the shared
// work directory, squeue polling until the array is gone, one resubmission of the tasks that
// left no exit status.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "internal.h"
#include "process.h"

namespace cusnap::runner::detail {
namespace {

namespace fs = std::filesystem;

// The sbatch options of an entry's placement keys.
std::vector<std::string> placement_options(const DriverEntry& e) {
  std::vector<std::string> out;
  for (const auto& [k, v] : e.placement) {
    if (k == "host") out.push_back("--nodelist=" + v);
    if (k == "partition") out.push_back("--partition=" + v);
    if (k == "constraint") out.push_back("--constraint=" + v);
    if (k == "gres") out.push_back("--gres=" + v);
  }
  return out;
}

struct Array {
  std::vector<std::string> placement;
  std::vector<size_t> jobs;  // task index -> job index
  std::string dir;           // script, statuses, Slurm's own output
  std::string script;
  std::string job_id;
};

std::string status_file(const Array& a, size_t task) {
  return a.dir + "/task-" + std::to_string(task) + ".status";
}
std::string slurm_output(const Array& a, size_t task) {
  return a.dir + "/slurm-" + std::to_string(task) + ".out";
}

class SlurmRunner : public Runner {
 public:
  explicit SlurmRunner(const RunnerOptions& options) : options_(options) {}

  std::string describe() const override { return "slurm"; }

  bool run(const std::vector<ReplayJob>& jobs, std::vector<JobOutcome>* outcomes,
           std::string* error) override {
    outcomes->assign(jobs.size(), JobOutcome{});
    // One array per distinct placement (an array has one set of sbatch options).
    std::map<std::vector<std::string>, Array> arrays;
    for (size_t i = 0; i < jobs.size(); ++i) {
      auto p = placement_options(*jobs[i].entry);
      Array& a = arrays[p];
      a.placement = p;
      a.jobs.push_back(i);
    }
    std::vector<Array*> order;
    for (auto& [p, a] : arrays) {
      a.dir = options_.work_dir + "/slurm-" + std::to_string(::getpid()) + "-" +
              std::to_string(++serial_);
      std::error_code ec;
      fs::create_directories(a.dir, ec);
      if (ec) {
        *error = "cannot create " + a.dir + ": " + ec.message();
        return false;
      }
      if (!write_script(&a, jobs, error)) return false;
      order.push_back(&a);
    }
    // First round: every task; second: the tasks that left no exit status.
    for (int round = 0; round < 2; ++round) {
      std::vector<std::pair<Array*, std::vector<size_t>>> pending;
      for (Array* a : order) {
        std::vector<size_t> tasks;
        for (size_t t = 0; t < a->jobs.size(); ++t) {
          if (!fs::exists(status_file(*a, t))) tasks.push_back(t);
        }
        if (tasks.empty()) continue;
        if (round == 1) {
          std::string list;
          for (size_t t : tasks) {
            list += list.empty() ? "" : ",";
            list += std::to_string(t);
          }
          std::fprintf(stderr,
                       "cusnap: slurm job %s: task(s) %s ended without an exit status; "
                       "resubmitting them once\n",
                       a->job_id.c_str(), list.c_str());
        }
        if (!submit(a, tasks, error)) return false;
        pending.emplace_back(a, tasks);
      }
      if (pending.empty()) break;
      for (auto& [a, tasks] : pending) {
        if (!wait(*a, error)) return false;
      }
    }
    for (Array* a : order) {
      for (size_t t = 0; t < a->jobs.size(); ++t) {
        const ReplayJob& job = jobs[a->jobs[t]];
        JobOutcome& o = (*outcomes)[a->jobs[t]];
        std::ifstream in(status_file(*a, t));
        int code = -1;
        if (in >> code) {
          o.ran = true;
          o.exit_code = code;
          o.report_written = fs::is_regular_file(job.report);
        } else {
          o.error = "slurm job " + a->job_id + " task " + std::to_string(t) + " (entry " +
                    job.entry->name + ", " + job.capture +
                    ") ended twice without an exit status; Slurm's output: " + slurm_output(*a, t) +
                    ", the replay's log: " + job.log;
        }
      }
    }
    return true;
  }

 private:
  bool write_script(Array* a, const std::vector<ReplayJob>& jobs, std::string* error) {
    a->script = a->dir + "/replays.sh";
    std::ofstream out(a->script);
    out << "#!/bin/sh\n# Written by cusnap (runner/src/slurm.cpp): array task N runs replay N\n"
        << "# and writes its exit status to task-N.status (through a rename, so a status file\n"
        << "# is never partial).\ncase \"$SLURM_ARRAY_TASK_ID\" in\n";
    for (size_t t = 0; t < a->jobs.size(); ++t) {
      const ReplayJob& job = jobs[a->jobs[t]];
      const std::string status = status_file(*a, t);
      out << "  " << t << ")\n    rm -f " << shell_quote(job.report) << "\n    "
          << command_line(options_.cusnap, job) << " >" << shell_quote(job.log) << " 2>&1\n"
          << "    echo $? >" << shell_quote(status + ".tmp") << " && mv "
          << shell_quote(status + ".tmp") << " " << shell_quote(status) << "\n    ;;\n";
    }
    out << "  *)\n    echo \"cusnap: no replay for array task $SLURM_ARRAY_TASK_ID\" >&2\n"
        << "    exit 2\n    ;;\nesac\n";
    out.close();
    if (!out) {
      *error = "cannot write " + a->script;
      return false;
    }
    fs::permissions(a->script, fs::perms::owner_all, fs::perm_options::add);
    return true;
  }

  bool submit(Array* a, const std::vector<size_t>& tasks, std::string* error) {
    std::string list;
    for (size_t t : tasks) {
      list += list.empty() ? "" : ",";
      list += std::to_string(t);
    }
    std::vector<std::string> argv = {"sbatch",
                                     "--parsable",
                                     "--array=" + list,
                                     "--job-name=cusnap-replay",
                                     "--output=" + a->dir + "/slurm-%a.out",
                                     "--chdir=" + options_.work_dir};
    argv.insert(argv.end(), a->placement.begin(), a->placement.end());
    argv.insert(argv.end(), options_.sbatch_args.begin(), options_.sbatch_args.end());
    argv.push_back(a->script);
    std::string out, err, run_error;
    int rc = run_capture(argv, &out, &err, &run_error);
    if (rc != 0) {
      *error = rc < 0 ? "slurm runner: " + run_error + " (is Slurm installed here?)"
                      : "slurm runner: " + join(argv) + " failed (exit " + std::to_string(rc) +
                            "): " + err;
      while (!error->empty() && error->back() == '\n') error->pop_back();
      return false;
    }
    // --parsable prints "jobid" or "jobid;cluster".
    std::string id = out.substr(0, out.find_first_of(";\n"));
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
      *error = "slurm runner: sbatch printed no job id: '" + out + "'";
      return false;
    }
    a->job_id = id;
    return true;
  }

  // Polls squeue until no task of the array is pending or running.
  bool wait(const Array& a, std::string* error) {
    const auto start = std::chrono::steady_clock::now();
    std::string last_error;
    while (true) {
      std::string out, err, run_error;
      int rc = run_capture(
          {"squeue", "--noheader", "--jobs=" + a.job_id, "--array",
           "--states=PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING", "--format=%i %T"},
          &out, &err, &run_error);
      if (rc < 0) {
        *error = "slurm runner: " + run_error;
        return false;
      }
      if (rc == 0 && out.find_first_not_of(" \n") == std::string::npos) return true;
      // A job that finished and was purged: squeue says it does not know the id.
      if (rc != 0 && err.find("Invalid job id") != std::string::npos) return true;
      if (rc != 0) last_error = err;
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > options_.slurm_timeout_s) {
        std::string ignored_out, ignored_err, ignored;
        run_capture({"scancel", a.job_id}, &ignored_out, &ignored_err, &ignored);
        *error = "slurm runner: job " + a.job_id + " did not end within " +
                 std::to_string(static_cast<long>(options_.slurm_timeout_s)) +
                 " s (--slurm-timeout); cancelled it. Still queued or running:\n" + out +
                 (last_error.empty() ? "" : "last squeue error: " + last_error);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(options_.slurm_poll_s));
    }
  }

  RunnerOptions options_;
  unsigned serial_ = 0;
};

}  // namespace

std::unique_ptr<Runner> make_slurm_runner(const RunnerOptions& options) {
  return std::make_unique<SlurmRunner>(options);
}

}  // namespace cusnap::runner::detail
