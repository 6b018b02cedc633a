// The legacy execution-control state the shim mirrors per function (record_legacy_launch.cpp).
#pragma once

#include <cstdint>

namespace cusnap::icpt {

// Drops what the application set with cuFuncSetBlockShape/cuParamSet* for the functions of an
// unloaded module or library: a function handle created later may reuse the value.
void forget_legacy_launch_state(uint64_t module) noexcept;

}  // namespace cusnap::icpt
