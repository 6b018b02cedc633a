#include "driver/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "driver/unsupported.h"

namespace cusnap::emu::driver {
namespace {

// Default "warn": the diagnostics a user needs to understand a failure (memcheck errors, device
// assert messages, PTX the emulator refuses, one line per unsupported API call) reach stderr
// without any setup, as a GPU's error would reach them through its return code and
// compute-sanitizer. `off` silences everything.
constexpr LogLevel kDefaultLevel = LogLevel::kWarn;

LogLevel level_from_env() {
  const char* text = std::getenv("CUSNAP_LOG_LEVEL");
  if (text == nullptr || *text == '\0') return kDefaultLevel;
  static constexpr struct {
    const char* name;
    LogLevel level;
  } kNames[] = {{"off", LogLevel::kOff},   {"error", LogLevel::kError}, {"warn", LogLevel::kWarn},
                {"warning", LogLevel::kWarn}, {"info", LogLevel::kInfo}, {"debug", LogLevel::kDebug},
                {"trace", LogLevel::kDebug}, {"none", LogLevel::kOff}};
  for (const auto& entry : kNames) {
    if (strcasecmp(text, entry.name) == 0) return entry.level;
  }
  if (text[0] < '0' || text[0] > '9') return kDefaultLevel;  // unknown word: keep the default
  int number = std::atoi(text);
  if (number <= 0) return LogLevel::kOff;
  return number >= 4 ? LogLevel::kDebug : static_cast<LogLevel>(number);
}

LogLevel current_level() {
  static const LogLevel level = level_from_env();
  return level;
}

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
      log(LogLevel::kWarn, "%s is not supported by the cusnap emulator (CUDA_ERROR_NOT_SUPPORTED)", name);
    }
  } catch (...) {
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace cusnap::emu::driver
