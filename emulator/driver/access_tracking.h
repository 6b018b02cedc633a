// Access tracking (docs/emulator.md, "Access tracking"): opt-in, per launch, the chunks of
// driver memory a kernel read and wrote, served to clients through cuGetExportTable
// (cusnap/common/emulator_access.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cusnap/common/emulator_access.h"

namespace cusnap::emu::driver {

// The chunk size launches queued now are tracked at; 0 when tracking is off (the default).
uint64_t tracking_chunk_bytes();
// A tracked launch completed: its sets become the last launch's.
void note_tracked_launch(const std::string& kernel, int status, uint64_t chunk_bytes,
                         std::vector<uint64_t> read_chunks, std::vector<uint64_t> written_chunks);
const common::EmulatorAccessTable* access_table();

}  // namespace cusnap::emu::driver
