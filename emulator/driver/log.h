// The emulator's tiny logger. It lives inside someone else's process, so it writes to stderr
// only (never stdout), and only as much as CUSNAP_LOG_LEVEL (the one parser,
// cusnap/common/log_level.h; default warn) asks. Errors and warnings are what a user needs to see
// when something fails: memcheck diagnostics, refused PTX, one line per unsupported API entry
// point.
#pragma once

#include <cstdarg>

namespace cusnap::emu::driver {

enum class LogLevel : int { kOff = 0, kError = 1, kWarn = 2, kInfo = 3, kDebug = 4 };

bool log_enabled(LogLevel level);
void log(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace cusnap::emu::driver
