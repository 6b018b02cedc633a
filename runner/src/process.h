// Child processes for the runners: spawn with an environment and a log file, wait, capture.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace cusnap::runner::detail {

// Starts argv[0] (a path) with the current environment plus `overrides`, stdout and stderr to
// `log` (truncated; /dev/null when empty). -1 + `error` when it cannot be started.
pid_t spawn(const std::vector<std::string>& argv,
            const std::vector<std::pair<std::string, std::string>>& overrides,
            const std::string& log, std::string* error);
// Blocks until `pid` ends: its exit status, 128 + signal when killed.
int wait_for(pid_t pid);
// Non-blocking: true with `status` set when `pid` has ended.
bool poll_exit(pid_t pid, int* status);
// Runs argv to its end, capturing stdout and stderr; the exit status, -1 when it cannot start
// (`error` says why: e.g. sbatch not installed).
int run_capture(const std::vector<std::string>& argv, std::string* out, std::string* err,
                std::string* error);
// Argument vector as one shell-like line, for messages.
std::string join(const std::vector<std::string>& argv);

}  // namespace cusnap::runner::detail
