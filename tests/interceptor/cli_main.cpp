// Scratch `cusnap` for the interceptor tests until cli/main.cpp registers `capture`: the same
// subcommands as the real tool plus capture. Built as <build>/bin-icpt/cusnap so that the
// build-tree lookups (<exe>/../interceptor/lib, <exe>/../emulator/lib) work as for bin/cusnap.
#include <string>

#include <CLI/CLI.hpp>

#include "capture.h"
#include "common.h"
#include "subcommands.h"

int main(int argc, char** argv) {
  using namespace cusnap;
  cli::init_logging();
  CLI::App app{"cusnap (interceptor test build)"};
  app.require_subcommand(1);
  int exit_code = cli::kExitOk;
  cli::register_info(app, exit_code);
  cli::register_dump(app, exit_code);
  cli::register_verify(app, exit_code);
  cli::register_capture(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? cli::kExitOk : cli::kExitUsageOrIo;
  }
  return exit_code;
}
