// Process-wide emulator state: initialisation, the emulated device's configuration and the
// registry that validates opaque handles before they are dereferenced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "generated_driver_api.h"

namespace cusnap::emu::driver {

inline constexpr int kDriverVersion = 13000;
inline constexpr uint64_t kDefaultTotalMemory = uint64_t{16} << 30;
inline constexpr double kDefaultTimeoutSeconds = 60;

// The host memory that backs device memory: physical RAM, or the process's cgroup limit when
// that is lower. The reported device memory is at most 1/kHostMemoryShare of it.
uint64_t host_memory_bytes();
inline constexpr uint64_t kHostMemoryShare = 2;

struct DeviceConfig {
  int sm = 90;  // CUSNAP_EMU_SM, e.g. "90" or "sm_86"
  // CUSNAP_EMU_MEMORY (bytes or with a K/M/G/T suffix), capped at half the host's memory.
  uint64_t total_memory = kDefaultTotalMemory;
  std::string name;  // "cusnap emulator (sm_90)"
  // CUSNAP_EMU_TIMEOUT: the launch watchdog in seconds (0: off). A launch that runs longer
  // fails with CUDA_ERROR_LAUNCH_TIMEOUT, so a kernel that never ends cannot hang the process.
  double timeout_seconds = kDefaultTimeoutSeconds;
  // CUSNAP_EMU_TENSOR_MAP_KEY: written into every tensor map this driver encodes and required of
  // the maps its kernels read, so that a map encoded by another driver (the bytes a capture
  // recorded) is refused instead of trusted; a replay must encode its maps again.
  // Default ptx::kDefaultTensorMapKey.
  uint32_t tensor_map_key = 0;
};

const DeviceConfig& device_config();

// CUDA_SUCCESS after cuInit(0), CUDA_ERROR_NOT_INITIALIZED before.
CUresult check_initialized();
CUresult initialize(unsigned flags);
// CUDA_ERROR_INVALID_DEVICE unless `device` is the emulator's only device (ordinal 0).
CUresult check_device(CUdevice device);

enum class HandleKind : uint8_t {
  kContext,
  kStream,
  kEvent,
  kModule,
  kFunction,
  kLibrary,
  kPhysicalMemory,
  kMemPool,
  kLinkState,
  kGraph,
  kGraphNode,
  kGraphExec,
  kUserObject,
  kAsyncCallback,
  kGreenContext,
  kResourceDesc,
  kTexRef,   // CUtexref (texref.cpp)
  kSurfRef,  // CUsurfref
};

// The registry of opaque handles. Every entry point validates a handle here before it
// dereferences it, so a garbage value (0x1234, a freed heap pointer) is answered with the
// driver's error code instead of a crash. A destroyed handle stays known as destroyed while its
// object's memory sits in a quarantine (the newest kHandleQuarantine destroyed objects are kept
// allocated), so its address cannot be reused by a new object of any kind: a stale handle is
// reported as destroyed instead of silently aliasing a newer object.
enum class HandleState : uint8_t { kUnknown, kLive, kDestroyed };
inline constexpr size_t kHandleQuarantine = 16384;

void register_handle(const void* handle, HandleKind kind);
bool is_handle(const void* handle, HandleKind kind);
HandleState handle_state(const void* handle, HandleKind kind);

// Destroys a handle's object: lookups answer kDestroyed from the first step on, the destructor
// runs now, and the memory (`object` must come from plain `new T`) is freed only when it leaves
// the quarantine.
void mark_destroyed(const void* handle, HandleKind kind);
void quarantine_storage(void* storage);
template <class T>
void destroy_handle(T* object, HandleKind kind) {
  if (object == nullptr) return;
  mark_destroyed(object, kind);
  object->~T();
  quarantine_storage(object);
}

template <class T>
T* handle_cast(const void* handle, HandleKind kind) {
  return is_handle(handle, kind) ? static_cast<T*>(const_cast<void*>(handle)) : nullptr;
}

}  // namespace cusnap::emu::driver
