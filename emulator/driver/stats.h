// Usage statistics of one process, for tests and tools that need to know what an application
// really asked of the driver without trusting the layer in between (the interceptor's tests
// compare a capture with these counts instead of counting with a debugger).
//
// Off unless CUSNAP_EMU_STATS names a file: then every note_* call counts, and at process exit
// (library destructor) the counts are written there as one JSON object (docs/schemas/
// emulator-stats.md; cusnap/common/json_writer.h writes it),
// through a temporary file renamed into place so a reader never sees half of it. `%p` in the
// name is replaced by the process id; a fork()ed child starts from zero counts. When the
// variable is unset, each note_* costs one predictable branch.
#pragma once

#include <cstdint>
#include <string_view>

#include "driver/memory.h"

namespace cusnap::emu::driver {

bool stats_enabled() noexcept;

// A launch entry point returned; `kernel` is the `.entry` name (empty when the handle was bad).
void note_launch(std::string_view kernel, bool succeeded) noexcept;

// A launch finished executing (on its stream's worker): the engine's counts for it and the host
// wall time the execution took. `thread_instructions` counts, for every executed warp
// instruction, the lanes that issued it; the bench divides it by wall time.
void note_execution(std::string_view kernel, uint64_t warp_instructions,
                    uint64_t thread_instructions, double seconds) noexcept;

enum class CopyDirection : uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice, kHostToHost };
// A copy (any cuMemcpy* entry point) was accepted; `bytes` is what it moves.
void note_copy(CopyDirection direction, uint64_t bytes) noexcept;
void note_memset(uint64_t bytes) noexcept;
// cuProfilerStart (`start`) or cuProfilerStop succeeded.
void note_profiler(bool start) noexcept;

// An allocation entered or left the allocation table (every kind, module variables included).
void note_allocation(AllocationKind kind, uint64_t bytes) noexcept;
void note_free(AllocationKind kind, uint64_t bytes) noexcept;

}  // namespace cusnap::emu::driver
