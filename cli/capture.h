// `cusnap capture [-o FILE] [--driver auto|emulator|PATH] [--force-overwrite] [--compress-level N]
//                 -- APP [ARGS...]`: runs APP with the cusnap interceptor as its libcuda.so.1 and
// writes everything it does on the GPU to a capture file (docs/capture.md).
#pragma once

#include <CLI/CLI.hpp>

namespace cusnap::cli {

// Adds the `capture` subcommand; when it runs, `exit_code` receives the application's exit code
// (128 + signal number when it was killed), or 1 when the capture could not be started.
void register_capture(CLI::App& app, int& exit_code);

}  // namespace cusnap::cli
