// How hand-written recorders hook into the generated wrappers (see tools/gen_shim.py).
//
//   CUSNAP_POST_HOOK(cuMemAlloc_v2)(CallScope& call, CUresult result, CUdeviceptr* dptr, size_t n)
//
// defines the post hook of cuMemAlloc_v2 (and of its _ptsz/_ptds twins when they have the same
// parameters). The generator finds hooks by this spelling and declares them with the exact ABI,
// so a definition with the wrong parameters fails to link. Hooks live in namespace
// cusnap::icpt::hooks, run only while recording, after the real call, on the calling thread, and
// write the call's record (call.record() ... call.commit()). Exceptions are caught by the wrapper.
//   CUSNAP_PRE_HOOK(sym)(CallScope& call, <params>)    before the real call
//   CUSNAP_CUSTOM(sym)(CallScope& call, <params>)      replaces the wrapper body, always runs
#pragma once

#include "generated_shim_api.h"
#include "shim_runtime.h"

#define CUSNAP_PRE_HOOK(symbol) void pre_##symbol
#define CUSNAP_POST_HOOK(symbol) void post_##symbol
#define CUSNAP_CUSTOM(symbol) CUresult custom_##symbol

namespace cusnap::icpt {
namespace schema = format::schema;

inline uint64_t handle_value(const void* handle) { return reinterpret_cast<uint64_t>(handle); }
}  // namespace cusnap::icpt
