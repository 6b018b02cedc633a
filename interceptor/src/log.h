// Diagnostics of the interceptor. Never stdout (the application owns it): stderr, or the file
// named by CUSNAP_LOG_FILE. Level from CUSNAP_LOG_LEVEL through the one parser
// (cusnap/common/log_level.h; default warn; critical shows errors, the shim has nothing more
// severe; an invalid value is reported once). Safe to call from any thread; never throws.
#pragma once

#include <cstdarg>

namespace cusnap::icpt {

enum class LogLevel : int { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };

bool log_enabled(LogLevel level) noexcept;
void log(LogLevel level, const char* format, ...) noexcept __attribute__((format(printf, 2, 3)));
// Logs only the first time `key` (a string literal or other stable text) is seen.
void log_once(LogLevel level, const char* key, const char* format, ...) noexcept
    __attribute__((format(printf, 3, 4)));

}  // namespace cusnap::icpt
