// `cusnap redact`: a capture with its data payloads replaced by seeded data, device pointers
// and what the user keeps left as they are (docs/redact.md); the work is cusnap::reduce's.
#pragma once

#include <CLI/CLI.hpp>

namespace cusnap::cli {

void register_redact(CLI::App& app, int& exit_code);

}  // namespace cusnap::cli
