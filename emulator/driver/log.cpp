#include "driver/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "cusnap/common/log_level.h"
#include "driver/unsupported.h"

namespace cusnap::emu::driver {
namespace {

// Default "warn": the diagnostics a user needs to understand a failure (memcheck errors, device
// assert messages, PTX the emulator refuses, one line per unsupported API call) reach stderr
// without any setup, as a GPU's error would reach them through its return code and
// compute-sanitizer. `off` silences everything.
constexpr LogLevel kDefaultLevel = LogLevel::kWarn;

// CUSNAP_LOG_LEVEL through the one parser (cusnap/common/log_level.h). The emulator has no
// trace or critical messages: trace shows debug, critical shows errors.
LogLevel level_from_env() {
  common::ParsedLogLevel parsed = common::log_level_from_env();
  if (!parsed.valid) {
    std::fprintf(stderr, "[cusnap-emu warn] %s='%s' is not one of %s; using warn\n",
                 common::kLogLevelVariable, std::getenv(common::kLogLevelVariable),
                 common::kLogLevelValues);
  }
  switch (parsed.level) {
    case common::LogLevel::kTrace:
    case common::LogLevel::kDebug:
      return LogLevel::kDebug;
    case common::LogLevel::kInfo:
      return LogLevel::kInfo;
    case common::LogLevel::kWarn:
      return LogLevel::kWarn;
    case common::LogLevel::kError:
    case common::LogLevel::kCritical:
      return LogLevel::kError;
    case common::LogLevel::kOff:
      return LogLevel::kOff;
  }
  return kDefaultLevel;
}

LogLevel current_level() {
  static const LogLevel level = level_from_env();
  return level;
}

// Read when the library loads, so that an invalid value is reported even by a process the
// emulator has nothing else to say to.
[[maybe_unused]] const LogLevel g_level_at_load = current_level();

}  // namespace

bool log_enabled(LogLevel level) {
  return level != LogLevel::kOff && static_cast<int>(level) <= static_cast<int>(current_level());
}

void log(LogLevel level, const char* format, ...) {
  if (!log_enabled(level)) return;
  static const char* const kLevelNames[] = {"", "error", "warn", "info", "debug"};
  char buffer[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  std::fprintf(stderr, "[cusnap-emu %s] %s\n", kLevelNames[static_cast<int>(level)], buffer);
}

CUresult unsupported_call(const char* name) noexcept {
  try {
    static std::mutex mutex;
    static std::set<std::string> logged;
    std::lock_guard lock(mutex);
    if (logged.insert(name).second) {
      log(LogLevel::kWarn, "%s is not supported by the cusnap emulator (CUDA_ERROR_NOT_SUPPORTED)",
          name);
    }
  } catch (...) {
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace cusnap::emu::driver
