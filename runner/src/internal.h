// Between the runner sources.
#pragma once

#include <memory>
#include <string>

#include "cusnap/runner/runner.h"

namespace cusnap::runner::detail {

// "env K=V ... CUSNAP replay ..." shell-quoted: the {command} of a template, a Slurm task's line.
std::string command_line(const std::string& cusnap, const ReplayJob& job);

std::unique_ptr<Runner> make_slurm_runner(const RunnerOptions& options);

}  // namespace cusnap::runner::detail
