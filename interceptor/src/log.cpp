#include "log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "cusnap/common/log_level.h"

namespace cusnap::icpt {
namespace {

LogLevel to_shim_level(common::LogLevel level) {
  switch (level) {
    case common::LogLevel::kTrace:
      return LogLevel::kTrace;
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
  return LogLevel::kWarn;
}

struct LogSink {
  common::ParsedLogLevel parsed = common::log_level_from_env();
  LogLevel level = to_shim_level(parsed.level);
  int fd = 2;
  std::mutex once_mutex;
  std::set<std::string> seen;

  LogSink() {
    if (const char* path = std::getenv("CUSNAP_LOG_FILE"); path != nullptr && *path != '\0') {
      int opened = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (opened >= 0) fd = opened;
    }
  }
};

// One line, one write(): lines of several threads never interleave.
void vwrite(int fd, LogLevel level, const char* format, va_list args) noexcept {
  char buffer[1024];
  static const char* const kTags[] = {"trace", "debug", "info", "warn", "error", "off"};
  int prefix = std::snprintf(buffer, sizeof buffer, "cusnap[%d] %s: ", static_cast<int>(::getpid()),
                             kTags[static_cast<int>(level)]);
  if (prefix < 0) return;
  int body = std::vsnprintf(buffer + prefix, sizeof buffer - prefix - 1, format, args);
  if (body < 0) return;
  size_t length = std::min(sizeof buffer - 2, static_cast<size_t>(prefix + body));
  buffer[length++] = '\n';
  ssize_t ignored = ::write(fd, buffer, length);
  (void)ignored;
}

void write_line(int fd, LogLevel level, const char* format, ...) noexcept
    __attribute__((format(printf, 3, 4)));
void write_line(int fd, LogLevel level, const char* format, ...) noexcept {
  va_list args;
  va_start(args, format);
  vwrite(fd, level, format, args);
  va_end(args);
}

LogSink* make_sink() {
  auto* instance = new LogSink();
  if (!instance->parsed.valid) {  // said once, at the level used instead (warn)
    write_line(instance->fd, LogLevel::kWarn, "%s='%s' is not one of %s; using warn",
               common::kLogLevelVariable, std::getenv(common::kLogLevelVariable),
               common::kLogLevelValues);
  }
  return instance;
}

LogSink& sink() {
  static LogSink* instance = make_sink();  // never destroyed: usable from atexit and signals
  return *instance;
}

void vlog(LogLevel level, const char* format, va_list args) noexcept {
  vwrite(sink().fd, level, format, args);
}

}  // namespace

bool log_enabled(LogLevel level) noexcept {
  return level >= sink().level && level != LogLevel::kOff;
}

void log(LogLevel level, const char* format, ...) noexcept {
  if (!log_enabled(level)) return;
  va_list args;
  va_start(args, format);
  vlog(level, format, args);
  va_end(args);
}

void log_once(LogLevel level, const char* key, const char* format, ...) noexcept {
  if (!log_enabled(level)) return;
  try {
    std::lock_guard lock(sink().once_mutex);
    if (!sink().seen.insert(key).second) return;
  } catch (...) {
    return;
  }
  va_list args;
  va_start(args, format);
  vlog(level, format, args);
  va_end(args);
}

}  // namespace cusnap::icpt
