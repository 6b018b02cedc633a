#include "cusnap/common/log_level.h"

#include <strings.h>

#include <cstdlib>

namespace cusnap::common {
namespace {

struct Name {
  const char* text;
  LogLevel level;
};

constexpr Name kNames[] = {
    {"trace", LogLevel::kTrace},       {"debug", LogLevel::kDebug},  {"info", LogLevel::kInfo},
    {"warn", LogLevel::kWarn},         {"warning", LogLevel::kWarn}, {"error", LogLevel::kError},
    {"critical", LogLevel::kCritical}, {"off", LogLevel::kOff},      {"none", LogLevel::kOff},
};

// Verbosity numbers: how much is shown, 0 nothing.
constexpr LogLevel kByNumber[] = {LogLevel::kOff,  LogLevel::kError, LogLevel::kWarn,
                                  LogLevel::kInfo, LogLevel::kDebug, LogLevel::kTrace};

}  // namespace

ParsedLogLevel parse_log_level(const char* text) noexcept {
  ParsedLogLevel out;
  if (text == nullptr || *text == '\0') return out;
  for (const Name& name : kNames) {
    if (::strcasecmp(text, name.text) == 0) {
      out.level = name.level;
      return out;
    }
  }
  // One decimal digit, nothing else ("05", "+1", " 2" and "3x" are not numbers here).
  if (text[0] >= '0' && text[0] <= '9' && text[1] == '\0') {
    unsigned number = static_cast<unsigned>(text[0] - '0');
    if (number < sizeof kByNumber / sizeof kByNumber[0]) {
      out.level = kByNumber[number];
      return out;
    }
  }
  out.valid = false;
  return out;
}

ParsedLogLevel log_level_from_env() noexcept {
  return parse_log_level(std::getenv(kLogLevelVariable));
}

const char* log_level_name(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
    case LogLevel::kCritical:
      return "critical";
    case LogLevel::kOff:
      return "off";
  }
  return "warn";
}

}  // namespace cusnap::common
