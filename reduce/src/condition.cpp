// Conditions and their evaluation: a candidate capture replayed through replayer/ (as a library,
// the driver loaded at run time), or handed to the user's script.
#include "cusnap/reduce/condition.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "replayer/replay.h"

namespace cusnap::reduce {

using format::ErrorCode;
using format::Result;
using format::Status;

namespace {

constexpr int32_t kIllegalAddress = 700;     // CUDA_ERROR_ILLEGAL_ADDRESS
constexpr int32_t kMisalignedAddress = 716;  // CUDA_ERROR_MISALIGNED_ADDRESS

Status bad(const std::string& text, const std::string& why) {
  return Status::error(ErrorCode::kInvalidArgument, "--verify '" + text + "': " + why);
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

}  // namespace

Result<Condition> parse_condition(const std::string& text, const ResultLookup& lookup) {
  Condition c;
  c.text = text;
  if (text == "mismatch") {
    c.kind = ConditionKind::kMismatch;
    return c;
  }
  if (starts_with(text, "mismatch:"))
    return bad(text, "mismatch between two drivers needs `cusnap compare` (not yet)");
  if (starts_with(text, "slower:"))
    return bad(text, "slower:FACTOR needs `cusnap compare` (not yet)");
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
  return bad(text, "unknown condition (mismatch, memcheck, error:CUDA_ERROR_..., command:'...')");
}

Result<Evaluation> evaluate(const Condition& condition, const std::string& path,
                            const ConditionOptions& options) {
  if (condition.kind == ConditionKind::kCommand) return run_command(condition.command, path);
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
      break;
  }
  return e;
}

}  // namespace cusnap::reduce
