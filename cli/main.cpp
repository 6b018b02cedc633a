// cusnap: the command-line tool. Subcommands live in one file each (see subcommands.h).
#include <kj/exception.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <new>
#include <string>

#include "common.h"
#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/container.h"
#include "subcommands.h"
#ifdef CUSNAP_CLI_HAVE_CAPTURE
#include "capture.h"
#endif
#ifdef CUSNAP_CLI_HAVE_REPLAY
#include "replay.h"
#endif
#ifdef CUSNAP_CLI_HAVE_REDACT
#include "minimize.h"
#include "redact.h"
#endif

int main(int argc, char** argv) {
  using namespace cusnap;
  std::ios::sync_with_stdio(false);
  cli::init_logging();

  CLI::App app{"cusnap: capture, inspect and replay the CUDA driver-API calls of an application"};
  app.set_version_flag("--version",
                       std::string("cusnap ") + CUSNAP_CLI_VERSION + " (capture schema " +
                           std::to_string(format::schema::SCHEMA_VERSION) + ", container " +
                           std::to_string(format::kContainerVersionMajor) + "." +
                           std::to_string(format::kContainerVersionMinor) +
                           ", driver API of CUDA " CUSNAP_CLI_CUDA_VERSION
                           " from toolkit " CUSNAP_CLI_CUDA_TOOLKIT_VERSION ")");
  app.require_subcommand(1);
  app.footer(
      "Logging goes to stderr; set CUSNAP_LOG_LEVEL="
      "trace|debug|info|warn|error|critical|off (or 0-5).");

  int exit_code = cli::kExitOk;
  cli::register_info(app, exit_code);
  cli::register_dump(app, exit_code);
  cli::register_verify(app, exit_code);
  cli::register_driver(app, exit_code);
  cli::register_extract(app, exit_code);
#ifdef CUSNAP_CLI_HAVE_CAPTURE
  cli::register_capture(app, exit_code);
#endif
#ifdef CUSNAP_CLI_HAVE_REPLAY
  cli::register_replay(app, exit_code);
#endif
#ifdef CUSNAP_CLI_HAVE_COMPARE
  cli::register_compare(app, exit_code);
#endif
#ifdef CUSNAP_CLI_HAVE_RUNNER
  cli::register_bisect(app, exit_code);
  cli::register_matrix(app, exit_code);
#endif
#ifdef CUSNAP_CLI_HAVE_REDACT
  cli::register_redact(app, exit_code);
  cli::register_minimize(app, exit_code);
#endif
#ifdef CUSNAP_CLI_HAVE_EXPORT
  cli::register_export(app, exit_code);
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end parsing with code 0; every real usage error exits 1.
    int rc = app.exit(e);
    if (rc == 0) return cli::kExitOk;
#ifdef CUSNAP_CLI_HAVE_COMPARE
    // compare's 1 means "flagged": its usage errors are its could-not-compare code.
    for (const CLI::App* sub : app.get_subcommands()) {
      if (sub->get_name() == "compare") return cli::kExitCompareFailed;
    }
#endif
    return cli::kExitUsageOrIo;
  } catch (const kj::Exception& e) {
    // The reader validates records before handing them out, so this is a missed check; still an
    // error exit, never an abort. Cap'n Proto only throws on contents that break its rules.
    spdlog::error("cusnap: malformed capture contents: {}", e.getDescription().cStr());
    return cli::kExitCorrupt;
  } catch (const std::bad_alloc&) {
    spdlog::error("cusnap: out of memory");
    return cli::kExitUsageOrIo;
  }
  return exit_code;
}
