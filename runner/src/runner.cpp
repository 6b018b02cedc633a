// The local and template runners (a pool of child processes) and the parts every runner shares.
#include "cusnap/runner/runner.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <string_view>
#include <thread>

#include "internal.h"
#include "process.h"

namespace cusnap::runner {
namespace {

namespace fs = std::filesystem;

// One child per job, at most `jobs` at a time. `command` gives the argv and the environment
// overrides of a job.
class ProcessPoolRunner : public Runner {
 public:
  ProcessPoolRunner(const RunnerOptions& options, std::string templ)
      : options_(options), template_(std::move(templ)) {}

  bool run(const std::vector<ReplayJob>& jobs, std::vector<JobOutcome>* outcomes,
           std::string* error) override {
    outcomes->assign(jobs.size(), JobOutcome{});
    struct Running {
      pid_t pid;
      size_t job;
    };
    std::vector<Running> running;
    size_t next = 0;
    const size_t width = std::max(1u, options_.jobs);
    while (next < jobs.size() || !running.empty()) {
      while (next < jobs.size() && running.size() < width) {
        const ReplayJob& job = jobs[next];
        std::vector<std::string> argv;
        std::vector<std::pair<std::string, std::string>> env;
        if (template_.empty()) {
          argv = replay_argv(options_.cusnap, job);
          env = job.entry->environment;
        } else {
          auto command = expand_template(template_, options_.cusnap, job, error);
          if (!command) return false;
          argv = {"/bin/sh", "-c", *command};
        }
        std::error_code ec;
        fs::remove(job.report, ec);  // a stale report must not pass for this replay's
        std::string spawn_error;
        pid_t pid = detail::spawn(argv, env, job.log, &spawn_error);
        if (pid < 0) {
          (*outcomes)[next].error = spawn_error;
        } else {
          running.push_back({pid, next});
        }
        ++next;
      }
      bool reaped = false;
      for (size_t i = 0; i < running.size();) {
        int status = 0;
        if (detail::poll_exit(running[i].pid, &status)) {
          JobOutcome& o = (*outcomes)[running[i].job];
          o.ran = status >= 0;
          o.exit_code = status;
          o.report_written = fs::is_regular_file(jobs[running[i].job].report);
          if (!o.ran) o.error = "lost the child process of " + jobs[running[i].job].log;
          running.erase(running.begin() + static_cast<long>(i));
          reaped = true;
        } else {
          ++i;
        }
      }
      if (!reaped && !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  std::string describe() const override {
    std::string j = " (-j " + std::to_string(std::max(1u, options_.jobs)) + ")";
    return template_.empty() ? "local" + j : "template '" + template_ + "'" + j;
  }

 private:
  RunnerOptions options_;
  std::string template_;
};

std::string env_words(const ReplayJob& job) {
  std::string s;
  for (const auto& [k, v] : job.entry->environment) {
    s += s.empty() ? "" : " ";
    s += shell_quote(k + "=" + v);
  }
  return s;
}

}  // namespace

std::vector<std::string> replay_argv(const std::string& cusnap, const ReplayJob& job) {
  std::vector<std::string> argv = {
      cusnap, "replay", job.capture, "--driver", job.entry->driver, "--report", job.report, "-q"};
  argv.insert(argv.end(), job.replay_args.begin(), job.replay_args.end());
  return argv;
}

std::string shell_quote(const std::string& word) {
  bool safe = !word.empty();
  for (char c : word) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) ||
          std::string_view("/._-+=:,@%").find(c) != std::string_view::npos)) {
      safe = false;
    }
  }
  if (safe) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string detail::command_line(const std::string& cusnap, const ReplayJob& job) {
  std::string env = env_words(job);
  std::string line = env.empty() ? "" : "env " + env + " ";
  return line + detail::join(replay_argv(cusnap, job));
}

std::optional<std::string> expand_template(const std::string& templ, const std::string& cusnap,
                                           const ReplayJob& job, std::string* error) {
  auto field = [&](const std::string& name, std::string* out) {
    const DriverEntry& e = *job.entry;
    if (name == "cusnap") {
      *out = shell_quote(cusnap);
    } else if (name == "capture") {
      *out = shell_quote(job.capture);
    } else if (name == "driver") {
      *out = shell_quote(e.driver);
    } else if (name == "report") {
      *out = shell_quote(job.report);
    } else if (name == "log") {
      *out = shell_quote(job.log);
    } else if (name == "name") {
      *out = shell_quote(e.name);
    } else if (name == "host" || name == "partition" || name == "constraint" || name == "gres") {
      std::string v = e.placement_value(name);
      if (v.empty()) {
        *error = "runner template uses {" + name + "}, but entry " + e.name + " (line " +
                 std::to_string(e.line) + ") has no " + name + "=";
        return false;
      }
      *out = shell_quote(v);
    } else if (name == "env") {
      *out = env_words(job);
    } else if (name == "command") {
      *out = detail::command_line(cusnap, job);
    } else {
      *error = "runner template: unknown field {" + name +
               "} (known: cusnap capture driver report log name host partition constraint gres "
               "env command)";
      return false;
    }
    return true;
  };
  std::string out;
  for (size_t i = 0; i < templ.size(); ++i) {
    char c = templ[i];
    if (c == '{' && i + 1 < templ.size() && templ[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < templ.size() && templ[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      size_t end = templ.find('}', i);
      if (end == std::string::npos) {
        *error = "runner template: '{' at offset " + std::to_string(i) + " is not closed";
        return std::nullopt;
      }
      std::string value;
      if (!field(templ.substr(i + 1, end - i - 1), &value)) return std::nullopt;
      out += value;
      i = end;
    } else if (c == '}') {
      *error = "runner template: unmatched '}' at offset " + std::to_string(i) + " (use }})";
      return std::nullopt;
    } else {
      out += c;
    }
  }
  return out;
}

std::unique_ptr<Runner> make_runner(const RunnerOptions& options, std::string* error) {
  if (options.kind == "local") return std::make_unique<ProcessPoolRunner>(options, "");
  if (options.kind == "slurm") return detail::make_slurm_runner(options);
  if (options.kind.find('{') != std::string::npos) {
    // Checked once against a dummy job with every placement key, so a typo fails up front.
    DriverEntry probe;
    probe.name = "check";
    probe.driver = "emulator";
    for (const char* k : kPlacementKeys) probe.placement.emplace_back(k, "x");
    ReplayJob job;
    job.entry = &probe;
    if (!expand_template(options.kind, options.cusnap, job, error)) return nullptr;
    return std::make_unique<ProcessPoolRunner>(options, options.kind);
  }
  *error = "--runner '" + options.kind +
           "': not local, slurm, or a command template with {fields} (docs/bisect.md)";
  return nullptr;
}

}  // namespace cusnap::runner
