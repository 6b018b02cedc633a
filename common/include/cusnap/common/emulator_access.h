// The emulator's export table (docs/emulator.md, "Access tracking" and "Determinism"): the one
// contract between the cusnap emulator, which serves it from cuGetExportTable, and the tools that
// ask for it through whatever driver they loaded (never by linking the emulator): access
// tracking, and which kernels' results depend on the order their blocks run in. A driver that
// is not the emulator answers the UUID with an error (it does not know it), which is how a
// client learns it cannot track. Plain C types only: functions return CUresult values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cusnap::common {

// cuGetExportTable(&table, &kEmulatorAccessTableId) with this CUuuid's 16 bytes.
inline constexpr unsigned char kEmulatorAccessTableId[16] = {
    0x63, 0x75, 0x73, 0x6e, 0x61, 0x70, 0x2d, 0x61,   // "cusnap-a"
    0x63, 0x63, 0x65, 0x73, 0x73, 0x2d, 0x76, 0x31};  // "ccess-v1"

// What one tracked launch touched. The arrays belong to the emulator and stay valid until the
// next take_last_launch or enable call of the same process.
struct EmulatorLaunchAccesses {
  uint64_t chunk_bytes;         // the granularity the launch was tracked at
  uint64_t serial;              // tracked launches completed since the process started
  int status;                   // the launch's CUresult (CUDA_SUCCESS or why it failed)
  const char* kernel;           // the .entry name (mangled), NUL-terminated
  const uint64_t* read_chunks;  // chunk-aligned device addresses, ascending, unique
  size_t read_count;
  const uint64_t* written_chunks;
  size_t written_count;
};

struct EmulatorAccessTable {
  size_t size;  // sizeof(EmulatorAccessTable) of the emulator: later versions only append
  // Tracks every launch queued after the call at `chunk_bytes` (a power of two), or stops
  // tracking with 0. CUDA_ERROR_INVALID_VALUE for another value. Forgets any untaken launch.
  int (*enable)(uint64_t chunk_bytes);
  // Moves the most recently completed tracked launch into `out` (and forgets older ones):
  // CUDA_SUCCESS, or CUDA_ERROR_NOT_FOUND when no tracked launch completed since the last take
  // or enable (synchronize first: launches complete asynchronously), CUDA_ERROR_INVALID_VALUE
  // for a null `out`.
  int (*take_last_launch)(EmulatorLaunchAccesses* out);
  // Appended (check `size`): whether the blocks of `function` (a CUfunction or CUkernel of this
  // driver) can observe each other's order, so that its results on a device, which runs blocks
  // in any order, may differ from run to run and from the emulator's. CUDA_SUCCESS with *reason
  // null (they cannot) or the instruction and PTX line that make them order-dependent, e.g.
  // "'atom.global.inc.u32' (not commutative: ...) at PTX line 65" (valid while the function's
  // module is loaded); CUDA_ERROR_INVALID_HANDLE for what is not a function, INVALID_VALUE for a
  // null `reason`. Tracking need not be enabled.
  int (*order_dependence)(const void* function, const char** reason);
};

}  // namespace cusnap::common
