// CUSNAP_LOG_LEVEL: the one parser. The CLI, the interceptor and the emulator each read the
// variable through parse_log_level() and map the level onto their own logger, so that one value
// means the same everywhere (docs/cli.md, "Log level").
//
// Values, case-insensitive, from the most output to none:
//   trace | debug | info | warn (or warning) | error | critical | off (or none)
//   or a verbosity number: 0 off, 1 error, 2 warn, 3 info, 4 debug, 5 trace (critical has none).
// Unset or empty: warn. Anything else (other words, other numbers, signs, spaces) is invalid:
// the level is then warn and `valid` is false, so that the consumer can say so once.
// A message of level M is shown when M >= the configured level (off shows nothing).
#pragma once

#include <cstdint>

namespace cusnap::common {

enum class LogLevel : uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };

inline constexpr const char* kLogLevelVariable = "CUSNAP_LOG_LEVEL";
inline constexpr LogLevel kDefaultLogLevel = LogLevel::kWarn;
// For messages about an invalid value.
inline constexpr const char* kLogLevelValues =
    "trace, debug, info, warn, error, critical, off (or 0 = off ... 5 = trace)";

struct ParsedLogLevel {
  LogLevel level = kDefaultLogLevel;
  bool valid = true;  // false: the text was not one of the values above (level is the default)
};

// Parses a value of CUSNAP_LOG_LEVEL; nullptr and "" give the default.
ParsedLogLevel parse_log_level(const char* text) noexcept;

// parse_log_level(getenv(kLogLevelVariable)).
ParsedLogLevel log_level_from_env() noexcept;

// "trace", "debug", "info", "warn", "error", "critical", "off".
const char* log_level_name(LogLevel level) noexcept;

}  // namespace cusnap::common
