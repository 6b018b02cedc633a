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

namespace cusnap::icpt {
namespace {

LogLevel parse_level(const char* text) {
  if (text == nullptr) return LogLevel::kWarn;
  static const char* const kNames[] = {"trace", "debug", "info", "warn", "error", "off"};
  for (int i = 0; i < 6; ++i) {
    if (strcasecmp(text, kNames[i]) == 0) return static_cast<LogLevel>(i);
  }
  return LogLevel::kWarn;
}

struct LogSink {
  LogLevel level = parse_level(std::getenv("CUSNAP_LOG_LEVEL"));
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

LogSink& sink() {
  static LogSink* instance = new LogSink();  // never destroyed: usable from atexit and signals
  return *instance;
}

void vlog(LogLevel level, const char* format, va_list args) noexcept {
  char buffer[1024];
  static const char* const kTags[] = {"trace", "debug", "info", "warn", "error", "off"};
  int prefix = std::snprintf(buffer, sizeof buffer, "cusnap[%d] %s: ", static_cast<int>(::getpid()),
                             kTags[static_cast<int>(level)]);
  if (prefix < 0) return;
  int body = std::vsnprintf(buffer + prefix, sizeof buffer - prefix - 1, format, args);
  if (body < 0) return;
  size_t length = std::min(sizeof buffer - 2, static_cast<size_t>(prefix + body));
  buffer[length++] = '\n';
  ssize_t ignored = ::write(sink().fd, buffer, length);  // one write: lines never interleave
  (void)ignored;
}

}  // namespace

bool log_enabled(LogLevel level) noexcept { return level >= sink().level && level != LogLevel::kOff; }

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
