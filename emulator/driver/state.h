// Process-wide emulator state: initialisation, the emulated device's configuration and the
// registry that validates opaque handles before they are dereferenced.
#pragma once

#include <cstdint>
#include <string>

#include "generated_driver_api.h"

namespace cusnap::emu::driver {

inline constexpr int kDriverVersion = 13000;
inline constexpr uint64_t kDefaultTotalMemory = uint64_t{16} << 30;

struct DeviceConfig {
  int sm = 90;                          // CUSNAP_EMU_SM, e.g. "90" or "sm_86"
  uint64_t total_memory = kDefaultTotalMemory;  // CUSNAP_EMU_MEMORY, bytes or with K/M/G suffix
  std::string name;                     // "cusnap emulator (sm_90)"
};

const DeviceConfig& device_config();

// CUDA_SUCCESS after cuInit(0), CUDA_ERROR_NOT_INITIALIZED before.
CUresult check_initialized();
CUresult initialize(unsigned flags);
// CUDA_ERROR_INVALID_DEVICE unless `device` is the emulator's only device (ordinal 0).
CUresult check_device(CUdevice device);

enum class HandleKind : uint8_t { kContext, kStream, kEvent, kModule, kFunction, kLibrary, kPhysicalMemory };

void register_handle(const void* handle, HandleKind kind);
void unregister_handle(const void* handle);
bool is_handle(const void* handle, HandleKind kind);

template <class T>
T* handle_cast(const void* handle, HandleKind kind) {
  return is_handle(handle, kind) ? static_cast<T*>(const_cast<void*>(handle)) : nullptr;
}

}  // namespace cusnap::emu::driver
