// cuGetProcAddress answered ABI-exactly. The real driver is asked first (its status and result
// are what the application gets); when it finds the symbol, the pointer handed back is the
// shim's wrapper for exactly the exported symbol that implements (name, version, per-thread
// flag) -- the table generated from cudaTypedefs.h by the same model the emulator uses.
// Names the table does not know (a driver newer than the toolkit) pass through untouched and
// are logged once. cuGetExportTable is a plain pass-through (never wrapped: the runtime checks
// the integrity of those private tables).
#pragma once

#include <string_view>

#include "generated_shim_api.h"

namespace cusnap::icpt {

// The symbol for `name` at `version`: the newest ABI not newer than `version`, the per-thread
// variant when asked for and one exists. -1 when the name is unknown or only exists later.
int proc_symbol(std::string_view name, int version, bool per_thread) noexcept;

}  // namespace cusnap::icpt
