// Pieces every subcommand shares: exit codes, opening a capture with a useful error, logging.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cusnap/format/reader.h"
#include "cusnap/format/status.h"

namespace cusnap::cli {

// Process exit codes of every subcommand (documented in docs/cli.md; scripts rely on them).
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsageOrIo = 1;    // bad command line, unreadable file, internal error
inline constexpr int kExitTruncated = 2;    // the capture ends early (killed writer)
inline constexpr int kExitCorrupt = 3;      // a frame, blob, index or record fails its checks
inline constexpr int kExitNotACapture = 4;  // no cusnap file magic, or an unsupported version
// `capture`: the application ran but the shim never reached it (a static binary, one that opens
// libcuda by absolute path, or no CUDA at all), so no capture was written.
inline constexpr int kExitNoCapture = 10;  // (7, 8, 9: replay's, docs/cli.md)
// `compare`: 1 means "flagged" there (results differ or a kernel is slower, as diff(1) says
// "differ"), so everything that keeps it from comparing (a bad option, an unreadable or invalid
// report) is 11 instead of 1.
inline constexpr int kExitCompareFlagged = 1;
inline constexpr int kExitCompareFailed = 11;
// `minimize` (docs/minimize.md): the condition does not hold for the input (nothing written),
// or it no longer holds for the written capture (a nondeterministic condition?).
inline constexpr int kExitMinimizeInputDoesNotHold = 16;
inline constexpr int kExitMinimizeOutputDoesNotHold = 17;

// Maps a format error to the exit code above.
int exit_code_for(const format::Status& status);

// Opens `path` for reading. On failure logs nothing and returns the status with the file named.
format::Result<std::unique_ptr<format::Reader>> open_capture(const std::string& path);

// Prints "cusnap <command>: <message>" to stderr (through spdlog at error level) for a failed
// Status and returns its exit code.
int report_failure(const std::string& command, const format::Status& status);

// Configures the default spdlog logger: stderr only, level from CUSNAP_LOG_LEVEL through the one
// parser, cusnap/common/log_level.h (default warn). An invalid value is reported once.
void init_logging();

// "0x1a2b" for handles and addresses.
std::string hex(uint64_t value);

}  // namespace cusnap::cli
