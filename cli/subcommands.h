// One registration function per subcommand. Each adds its CLI11 subcommand to `app` and arranges
// for its exit code to be stored in `exit_code` when it runs (CLI11 callbacks cannot return one).
// capture.h and replay.h declare the capture and replay subcommands the same way.
#pragma once

#include <CLI/CLI.hpp>

namespace cusnap::cli {

void register_info(CLI::App& app, int& exit_code);
void register_dump(CLI::App& app, int& exit_code);
void register_verify(CLI::App& app, int& exit_code);
void register_driver(CLI::App& app, int& exit_code);
void register_extract(CLI::App& app, int& exit_code);
void register_compare(CLI::App& app, int& exit_code);  // when compare/ is built
#ifdef CUSNAP_CLI_HAVE_EXPORT
void register_export(CLI::App& app, int& exit_code);  // when timeline/ is built
#endif
#ifdef CUSNAP_CLI_HAVE_RUNNER
void register_bisect(CLI::App& app, int& exit_code);
void register_matrix(CLI::App& app, int& exit_code);
#endif

}  // namespace cusnap::cli
