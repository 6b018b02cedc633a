// `cusnap minimize`: the smallest capture of whole calls for which a condition still holds
// (docs/minimize.md); the work is cusnap::reduce's, the replays go through runner/.
#pragma once

#include <CLI/CLI.hpp>

namespace cusnap::cli {

void register_minimize(CLI::App& app, int& exit_code);

}  // namespace cusnap::cli
