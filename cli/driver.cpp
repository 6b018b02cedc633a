// `cusnap driver [auto|emulator|PATH]`: which libcuda.so.1 `cusnap capture` and `cusnap replay`
// would run on for that request on this machine (the one lookup, cusnap/common/driver_search.h),
// so that scripts (scripts/gpu-check) ask it instead of searching themselves.
// stdout: the driver's absolute path, one line. stderr: how it was chosen and what was passed over.
// --paths: what this cusnap resolved for itself (executable, interceptor, emulator), a line each.
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
  auto paths = std::make_shared<bool>(false);
  cmd->add_flag("--paths", *paths,
                "print instead what this cusnap resolved for itself: its executable, the "
                "interceptor capture injects and the emulator (exit 2 when one is missing)");
  cmd->callback([request, verbose, paths, &exit_code] {
    if (*paths) {
      // The lookups capture and --driver emulator make, so that a test (or a user) can see that
      // an installed copy uses its own tree (docs/install.md).
      std::string self = common::executable_path();
      common::DriverSearch shim = common::find_interceptor(self);
      common::DriverSearch emulator = common::find_driver_for_executable("emulator");
      std::printf("executable %s\n", self.c_str());
      std::printf("interceptor %s\n", shim.ok() ? shim.path.c_str() : "(not found)");
      std::printf("emulator %s\n", emulator.ok() ? emulator.path.c_str() : "(not found)");
      for (const common::DriverSearch* s : {&shim, &emulator})
        if (!s->ok()) std::fprintf(stderr, "cusnap driver: %s\n", s->error.c_str());
      exit_code = shim.ok() && emulator.ok() ? 0 : 2;
      return;
    }
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
