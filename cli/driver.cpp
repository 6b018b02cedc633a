// `cusnap driver [auto|emulator|PATH]`: which libcuda.so.1 `cusnap capture` and `cusnap replay`
// would run on for that request on this machine (the one lookup, cusnap/common/driver_search.h),
// so that scripts (scripts/gpu-check) ask it instead of searching themselves.
// stdout: the driver's absolute path, one line. stderr: how it was chosen and what was passed over.
// Exit: 0 found, 2 none found (the error names every path tried).
#include <cstdio>
#include <memory>
#include <string>

#include "common.h"
#include "cusnap/common/driver_search.h"
#include "subcommands.h"

namespace cusnap::cli {

void register_driver(CLI::App& app, int& exit_code) {
  auto request = std::make_shared<std::string>("auto");
  auto verbose = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "driver", "Print the libcuda.so.1 that capture and replay would use for a --driver request");
  cmd->add_option("request", *request, "auto | emulator | PATH to a libcuda.so.1")
      ->capture_default_str();
  cmd->add_flag("-v,--verbose", *verbose, "also say how it was chosen and what was passed over");
  cmd->callback([request, verbose, &exit_code] {
    common::DriverSearch found = common::find_driver_for_executable(*request);
    if (!found.ok()) {
      std::fprintf(stderr, "cusnap driver: %s\n", found.error.c_str());
      exit_code = 2;
      return;
    }
    std::printf("%s\n", found.path.c_str());
    if (*verbose) {
      std::fprintf(stderr, "chosen: %s\n", found.reason.c_str());
      for (const std::string& t : found.tried) std::fprintf(stderr, "passed over: %s\n", t.c_str());
    }
    exit_code = 0;
  });
}

}  // namespace cusnap::cli
