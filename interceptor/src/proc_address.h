// cuGetProcAddress answered from what the real driver chose. The real driver is asked first (its
// status, result and symbolStatus are what the application gets); when it hands back a pointer,
// the shim identifies which of the driver's own exports that pointer is (the addresses dlsym
// found for every exported symbol the shim knows, real_driver.cpp) and hands back its wrapper of
// exactly that export, so the call is recorded as the ABI the driver really chose -- whatever
// the requested version, flags or the toolkit headers would suggest (an older ABI for an old
// version, `_v2` vs plain, `_ptsz` vs `_ptds`). A pointer that is none of those exports (a newer
// driver's new ABI, an internal entry point) passes through untouched and unrecorded, logged once
// per name. cuGetExportTable is a plain pass-through (never wrapped: the runtime checks the
// integrity of those private tables).
#pragma once

#include <string_view>

#include "generated_shim_api.h"

namespace cusnap::icpt {

// The symbol the toolkit headers' model selects for `name` at `version`: the newest ABI not newer
// than `version`, the per-thread variant when asked for and one exists. -1 when the name is
// unknown or only exists later. Only a tie-breaker: when several exports of the driver share one
// address (aliases), the one the model names is preferred.
int proc_symbol(std::string_view name, int version, bool per_thread) noexcept;

// The export of the real driver whose address is `pfn`, or -1 when it is none the shim knows.
// `preferred` (a SymbolId or -1) wins when several exports share the address.
int export_at(const void* pfn, int preferred) noexcept;

}  // namespace cusnap::icpt
