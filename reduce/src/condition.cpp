// Conditions and their evaluation: a candidate capture replayed through replayer/ (as a library,
// the driver loaded at run time), or handed to the user's script.
#include "cusnap/reduce/condition.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cusnap/compare/compare.h"
#include "cusnap/runner/bisect.h"
#include "replayer/replay.h"

namespace cusnap::reduce {

using format::ErrorCode;
using format::Result;
using format::Status;

namespace {

constexpr int32_t kIllegalAddress = 700;     // CUDA_ERROR_ILLEGAL_ADDRESS
constexpr int32_t kMisalignedAddress = 716;  // CUDA_ERROR_MISALIGNED_ADDRESS

Status bad(const std::string& text, const std::string& why) {
  return Status::error(ErrorCode::kInvalidArgument, "condition '" + text + "': " + why);
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// A replay as the conditions see it: its result, or the error that stopped it.
struct Replayed {
  std::optional<replayer::ReplayResult> result;
  std::optional<replayer::Error> error;
};

Result<Replayed> replay(const std::string& path, const std::string& driver) {
  replayer::ReplayOptions options;
  options.driver = driver;
  options.timing = false;
  options.nvtx = false;
  auto r = replayer::replay_capture(path, options);
  Replayed out;
  if (r) {
    out.result = std::move(r.value());
    return out;
  }
  // The driver could not be loaded or the capture not read: the condition cannot be decided.
  const replayer::Error& e = r.error();
  if (e.kind() == replayer::ErrorKind::kTarget || e.kind() == replayer::ErrorKind::kCapture ||
      e.kind() == replayer::ErrorKind::kIo || e.kind() == replayer::ErrorKind::kInvalidArgument) {
    return Status::error(ErrorCode::kInvalidArgument,
                         path + ": the replay could not run: " + e.to_string());
  }
  out.error = e;
  return out;
}

// The CUresult the replay met: a failed call's, or the reproduced recorded error's.
std::optional<int32_t> observed_result(const Replayed& r) {
  if (r.error && r.error->result()) return *r.error->result();
  if (r.result && r.result->expected_error && r.result->expected_error->observed_result != 0)
    return r.result->expected_error->observed_result;
  return std::nullopt;
}

Result<Evaluation> run_command(const std::string& command, const std::string& path) {
  pid_t pid = fork();
  if (pid < 0)
    return Status::error(ErrorCode::kIo, std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    setenv("CUSNAP_CANDIDATE", path.c_str(), 1);
    execl("/bin/sh", "sh", "-c", command.c_str(), "sh", path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return Status::error(ErrorCode::kIo, std::string("waitpid failed: ") + std::strerror(errno));
  }
  Evaluation e;
  if (WIFEXITED(status)) {
    e.holds = WEXITSTATUS(status) == 0;
    e.why = "exit status " + std::to_string(WEXITSTATUS(status));
  } else {
    e.why = "killed by signal " + std::to_string(WTERMSIG(status));
  }
  return e;
}

// "A,B" into c.a and c.b: two non-empty words, different.
bool parse_pair(const std::string& text, Condition& c) {
  const size_t comma = text.find(',');
  if (comma == std::string::npos) return false;
  c.a = text.substr(0, comma);
  c.b = text.substr(comma + 1);
  return !c.a.empty() && !c.b.empty() && c.a != c.b && c.b.find(',') == std::string::npos;
}

// One evaluation in a child process: what it decided goes back over a pipe, 'H' (holds), 'N'
// (does not) or 'E' (an error), then the text.
struct Child {
  pid_t pid = -1;
  int fd = -1;
};

Result<Child> start_child(const Condition& condition, const std::string& path,
                          const ConditionOptions& options) {
  int fds[2];
  if (pipe(fds) != 0)
    return Status::error(ErrorCode::kIo, std::string("pipe failed: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Status::error(ErrorCode::kIo, std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    if (!options.work_dir.empty()) {
      const std::string log =
          options.work_dir + "/" + std::filesystem::path(path).filename().string() + ".log";
      FILE* f = std::fopen(log.c_str(), "w");
      if (f) {
        dup2(fileno(f), 1);
        dup2(fileno(f), 2);
      }
    }
    ConditionOptions one = options;
    one.jobs = 1;
    auto e = evaluate(condition, path, one);
    std::string message =
        e ? std::string(e->holds ? "H" : "N") + e->why : "E" + e.status().to_string();
    size_t done = 0;
    while (done < message.size()) {
      ssize_t n = write(fds[1], message.data() + done, message.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  return Child{pid, fds[0]};
}

Result<Evaluation> finish_child(const Child& child, const std::string& path) {
  std::string message;
  char buf[4096];
  for (;;) {
    ssize_t n = read(child.fd, buf, sizeof buf);
    if (n > 0) {
      message.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(child.fd);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (message.empty()) {
    return Status::error(ErrorCode::kIo,
                         path + ": the evaluation process ended without an answer (" +
                             (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                  : "status " + std::to_string(status)) +
                             ")");
  }
  if (message[0] == 'E') return Status::error(ErrorCode::kInvalidArgument, message.substr(1));
  Evaluation e;
  e.holds = message[0] == 'H';
  e.why = message.substr(1);
  return e;
}

// A driver named in a two-driver condition as a LIST entry.
Result<runner::DriverEntry> resolve_one(const std::string& name, const ConditionOptions& options,
                                        const std::string& text) {
  if (options.drivers) {
    for (const runner::DriverEntry& e : options.drivers->entries)
      if (e.name == name) return e;
  }
  runner::DriverEntry e;
  if (name == "emulator") {
    e.name = "emulator";
    e.driver = "emulator";
    return e;
  }
  if (name.find('/') != std::string::npos && std::filesystem::is_regular_file(name)) {
    e.driver = std::filesystem::absolute(name).lexically_normal().string();
    e.name = "driver-" + std::to_string(std::hash<std::string>{}(e.driver) % 100000);
    return e;
  }
  return bad(text, "'" + name + "' is no entry of the driver LIST (--drivers) and no driver");
}

// Two-driver conditions: every path replayed on A and B in one runner call, B judged against A.
Result<std::vector<Evaluation>> evaluate_between(const Condition& condition,
                                                 const std::vector<std::string>& paths,
                                                 const ConditionOptions& options) {
  if (!options.runner || options.work_dir.empty())
    return bad(condition.text, "two-driver conditions need a runner and a work directory");
  auto drivers = resolve_drivers(condition, options);
  if (!drivers) return drivers.status();
  const auto& [a, b] = *drivers;
  namespace fs = std::filesystem;
  std::vector<runner::ReplayJob> jobs;
  for (const std::string& path : paths) {
    const std::string stem = options.work_dir + "/" + fs::path(path).filename().string();
    for (const runner::DriverEntry* entry : {&a, &b}) {
      runner::ReplayJob job;
      job.capture = fs::absolute(path).lexically_normal().string();
      job.entry = entry;
      job.report = stem + (entry == &a ? ".A." : ".B.") + entry->name + ".json";
      job.log = stem + (entry == &a ? ".A." : ".B.") + entry->name + ".log";
      job.replay_args = options.replay_args;
      std::error_code ec;
      fs::remove(job.report, ec);  // a stale report must not stand for this replay
      jobs.push_back(std::move(job));
    }
  }
  std::vector<runner::JobOutcome> outcomes;
  std::string error;
  if (!options.runner->run(jobs, &outcomes, &error))
    return Status::error(ErrorCode::kIo,
                         "the runner (" + options.runner->describe() + ") failed: " + error);
  runner::CommonOptions common;
  common.criterion = condition.kind == ConditionKind::kSlower ? runner::Criterion::kTime
                                                              : runner::Criterion::kResults;
  if (condition.kind == ConditionKind::kSlower)
    common.compare.time_threshold = condition.factor - 1;
  common.replay_args = options.replay_args;
  common.work_dir = options.work_dir;
  std::vector<Evaluation> out;
  for (size_t i = 0; i < paths.size(); ++i) {
    const runner::ReplayJob& ja = jobs[2 * i];
    const runner::JobOutcome& oa = outcomes[2 * i];
    Evaluation e;
    if (!oa.ran) return Status::error(ErrorCode::kIo, "replay on " + a.name + ": " + oa.error);
    if (!oa.report_written) {
      e.why = "the replay on " + a.name + " exited " + std::to_string(oa.exit_code) +
              " without a report (see " + ja.log + ")";
      out.push_back(e);
      continue;
    }
    auto reference = compare::read_report(ja.report);
    if (!reference) {
      e.why = "the report of " + a.name + " cannot be read: " + reference.error().message();
      out.push_back(e);
      continue;
    }
    runner::Replay r;
    r.job = jobs[2 * i + 1];
    r.outcome = outcomes[2 * i + 1];
    if (!r.outcome.ran)
      return Status::error(ErrorCode::kIo, "replay on " + b.name + ": " + r.outcome.error);
    runner::judge(reference.value(), r, common);
    e.holds = r.verdict.differs;
    e.why = b.name + " against " + a.name + ": " + r.verdict.reason;
    out.push_back(e);
  }
  return out;
}

}  // namespace

Result<std::pair<runner::DriverEntry, runner::DriverEntry>> resolve_drivers(
    const Condition& condition, const ConditionOptions& options) {
  if (condition.a.empty()) {
    if (!options.drivers || options.drivers->entries.size() < 2)
      return bad(condition.text,
                 "without :A,B the drivers are the first two entries of the driver LIST "
                 "(--drivers), and there is none");
    return std::make_pair(options.drivers->entries[0], options.drivers->entries[1]);
  }
  auto a = resolve_one(condition.a, options, condition.text);
  if (!a) return a.status();
  auto b = resolve_one(condition.b, options, condition.text);
  if (!b) return b.status();
  if (a->name == b->name) b->name += "-b";
  return std::make_pair(std::move(a.value()), std::move(b.value()));
}

Result<std::vector<Evaluation>> evaluate_all(const Condition& condition,
                                             const std::vector<std::string>& paths,
                                             const ConditionOptions& options) {
  if (condition.between_drivers()) return evaluate_between(condition, paths, options);
  std::vector<Evaluation> out;
  if (options.jobs <= 1) {
    for (const std::string& path : paths) {
      auto e = evaluate(condition, path, options);
      if (!e) return e.status();
      out.push_back(std::move(e.value()));
    }
    return out;
  }
  for (size_t first = 0; first < paths.size(); first += options.jobs) {
    const size_t last = std::min(paths.size(), first + options.jobs);
    std::vector<Child> children;
    Status failed;
    for (size_t i = first; i < last && failed; ++i) {
      auto c = start_child(condition, paths[i], options);
      if (c) {
        children.push_back(*c);
      } else {
        failed = c.status();
      }
    }
    for (size_t k = 0; k < children.size(); ++k) {
      auto e = finish_child(children[k], paths[first + k]);
      if (!e) {
        if (failed) failed = e.status();
        continue;
      }
      out.push_back(std::move(e.value()));
    }
    if (!failed) return failed;
  }
  return out;
}

Result<Condition> parse_condition(const std::string& text, const ResultLookup& lookup) {
  Condition c;
  c.text = text;
  if (text == "mismatch") {
    c.kind = ConditionKind::kMismatch;
    return c;
  }
  if (starts_with(text, "mismatch:")) {
    c.kind = ConditionKind::kMismatchBetween;
    if (!parse_pair(text.substr(9), c))
      return bad(text, "expected mismatch:A,B (two LIST entry names or drivers)");
    return c;
  }
  if (starts_with(text, "slower:")) {
    c.kind = ConditionKind::kSlower;
    std::string rest = text.substr(7);
    const size_t colon = rest.find(':');
    const std::string factor = rest.substr(0, colon);
    char* end = nullptr;
    errno = 0;
    c.factor = factor.empty() ? 0 : std::strtod(factor.c_str(), &end);
    if (factor.empty() || errno != 0 || end != factor.c_str() + factor.size() || !(c.factor > 1) ||
        c.factor > 1e6)
      return bad(text, "FACTOR must be a number above 1 (slower:1.2: 20 % slower)");
    if (colon != std::string::npos && !parse_pair(rest.substr(colon + 1), c))
      return bad(text, "expected slower:FACTOR:A,B (two LIST entry names or drivers)");
    return c;
  }
  if (text == "memcheck") {
    c.kind = ConditionKind::kMemcheck;
    return c;
  }
  if (starts_with(text, "error:")) {
    c.kind = ConditionKind::kError;
    std::string name = text.substr(6);
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos &&
        name.size() <= 9) {
      c.result = static_cast<int32_t>(std::stol(name));
    } else if (auto v = lookup ? lookup(name) : std::nullopt) {
      c.result = *v;
    } else {
      return bad(text, "unknown CUresult name '" + name + "' (or give its number)");
    }
    if (c.result == 0) return bad(text, "CUDA_SUCCESS is not an error");
    return c;
  }
  if (starts_with(text, "command:")) {
    c.kind = ConditionKind::kCommand;
    std::string script = text.substr(8);
    if (script.size() >= 2 && script.front() == '\'' && script.back() == '\'')
      script = script.substr(1, script.size() - 2);
    if (script.empty()) return bad(text, "empty command");
    c.command = script;
    return c;
  }
  return bad(text,
             "unknown condition (mismatch, mismatch:A,B, memcheck, error:CUDA_ERROR_..., "
             "slower:FACTOR[:A,B], command:'...')");
}

Result<Evaluation> evaluate(const Condition& condition, const std::string& path,
                            const ConditionOptions& options) {
  if (condition.kind == ConditionKind::kCommand) return run_command(condition.command, path);
  if (condition.between_drivers()) {
    auto all = evaluate_between(condition, {path}, options);
    if (!all) return all.status();
    return std::move(all.value().front());
  }
  const std::string driver =
      condition.kind == ConditionKind::kMemcheck ? std::string("emulator") : options.driver;
  auto replayed = replay(path, driver);
  if (!replayed) return replayed.status();
  const Replayed& r = *replayed;
  Evaluation e;
  std::optional<int32_t> result = observed_result(r);
  switch (condition.kind) {
    case ConditionKind::kMismatch:
      if (r.error) {
        e.holds = true;
        e.why = "the replay failed: " + r.error->to_string();
      } else {
        e.holds = r.result->verdict() == replayer::Verdict::kMismatched;
        e.why = replayer::verdict_name(r.result->verdict());
      }
      break;
    case ConditionKind::kError:
      e.holds = result && *result == condition.result;
      e.why = result ? "the replay met CUresult " + std::to_string(*result)
                     : std::string("no call failed");
      break;
    case ConditionKind::kMemcheck:
      e.holds = result && (*result == kIllegalAddress || *result == kMisalignedAddress);
      e.why = result ? "the replay met CUresult " + std::to_string(*result)
                     : std::string("no invalid access");
      break;
    case ConditionKind::kCommand:
    case ConditionKind::kMismatchBetween:
    case ConditionKind::kSlower:
      break;
  }
  return e;
}

}  // namespace cusnap::reduce
