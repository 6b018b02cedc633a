// The emulated device's attributes, shared by cuDeviceGetAttribute and the launch path.
#pragma once

#include "generated_driver_api.h"
#include "ptx/engine.h"

namespace cusnap::emu::driver {

// False for an attribute the emulator does not know (CUDA_ERROR_INVALID_VALUE).
bool device_attribute(CUdevice_attribute attribute, int* value);
// The limits the PTX engine enforces, consistent with the attribute table.
ptx::Limits engine_limits();

}  // namespace cusnap::emu::driver
