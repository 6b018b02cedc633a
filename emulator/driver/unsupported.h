// Entry points the emulator does not implement (generated_unsupported.cpp) all end here.
#pragma once

#include "generated_driver_api.h"

namespace cusnap::emu::driver {

// Logs "<name> is not supported by the cusnap emulator" once per name (at warn level) and
// returns CUDA_ERROR_NOT_SUPPORTED. Never throws.
CUresult unsupported_call(const char* name) noexcept;

}  // namespace cusnap::emu::driver
