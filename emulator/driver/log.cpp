#include "driver/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cusnap/common/log_level.h"
#include "driver/api.h"
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

// The driver's error log (cuLogs*): every error and warning the emulator reports, whatever
// CUSNAP_LOG_LEVEL shows on stderr, kept in a buffer of at most kLogBufferBytes (the driver's
// documented size; the oldest messages go first) and handed to the registered callbacks.
constexpr size_t kLogBufferBytes = 25600;

struct LogCallback {
  CUlogsCallback function;
  void* data;
};

struct DriverLog {
  std::mutex mutex;
  std::deque<std::string> messages;  // the newest at the back
  size_t bytes = 0;                  // of `messages`, one '\n' each included
  CUlogIterator next = 0;            // the number of the next message ever written
  std::list<LogCallback> callbacks;  // CUlogsCallbackHandle: the entry's address
};

DriverLog& driver_log() {
  static DriverLog* log = new DriverLog;  // never destroyed: messages may come during exit
  return *log;
}

void keep(LogLevel level, const char* message) {
  if (level != LogLevel::kError && level != LogLevel::kWarn) return;
  DriverLog& d = driver_log();
  std::vector<LogCallback> callbacks;
  {
    std::lock_guard lock(d.mutex);
    std::string m(message);
    if (m.size() + 1 > kLogBufferBytes) m.resize(kLogBufferBytes - 1);
    d.bytes += m.size() + 1;
    d.messages.push_back(std::move(m));
    ++d.next;
    while (d.bytes > kLogBufferBytes) {
      d.bytes -= d.messages.front().size() + 1;
      d.messages.pop_front();
    }
    callbacks.assign(d.callbacks.begin(), d.callbacks.end());
  }
  // Called on the thread that reports, outside the log's lock; the emulator may hold other
  // locks, so a callback must not call back into the driver (docs/emulator.md).
  const CUlogLevel cu_level = level == LogLevel::kError ? CU_LOG_LEVEL_ERROR : CU_LOG_LEVEL_WARNING;
  for (const LogCallback& c : callbacks) {
    std::string copy(message);  // the callback's `char*` may be written to
    c.function(c.data, cu_level, copy.data(), copy.size());
  }
}

// The messages from `*iterator` (all kept ones when null) as the dump entry points write them:
// newline-separated, oldest first, led by a line saying how many were lost when the buffer no
// longer holds some of them. Advances the iterator to the end.
std::vector<std::string> take_messages(CUlogIterator* iterator) {
  DriverLog& d = driver_log();
  std::lock_guard lock(d.mutex);
  const CUlogIterator first_kept = d.next - static_cast<CUlogIterator>(d.messages.size());
  CUlogIterator from = iterator != nullptr ? *iterator : first_kept;
  std::vector<std::string> out;
  if (from < first_kept) {
    out.push_back("[cusnap-emu] " + std::to_string(first_kept - from) +
                  " earlier log messages were overwritten");
    from = first_kept;
  }
  for (CUlogIterator i = from; i < d.next; ++i) out.push_back(d.messages[i - first_kept]);
  if (iterator != nullptr) *iterator = d.next;
  return out;
}

}  // namespace

bool log_enabled(LogLevel level) {
  return level != LogLevel::kOff && static_cast<int>(level) <= static_cast<int>(current_level());
}

void log(LogLevel level, const char* format, ...) {
  const bool kept = level == LogLevel::kError || level == LogLevel::kWarn;
  if (!log_enabled(level) && !kept) return;
  static const char* const kLevelNames[] = {"", "error", "warn", "info", "debug"};
  char buffer[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  if (log_enabled(level))
    std::fprintf(stderr, "[cusnap-emu %s] %s\n", kLevelNames[static_cast<int>(level)], buffer);
  try {
    keep(level, buffer);
  } catch (...) {  // out of host memory: the message still reached stderr
  }
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

using namespace cusnap::emu::driver;

CUSNAP_EXPORT CUresult CUDAAPI cuLogsRegisterCallback(CUlogsCallback callbackFunc, void* userData,
                                                      CUlogsCallbackHandle* callback_out) {
  return guarded("cuLogsRegisterCallback", [&] {
    if (callbackFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
    DriverLog& d = driver_log();
    std::lock_guard lock(d.mutex);
    d.callbacks.push_back(LogCallback{callbackFunc, userData});
    if (callback_out != nullptr)
      *callback_out = reinterpret_cast<CUlogsCallbackHandle>(&d.callbacks.back());
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLogsUnregisterCallback(CUlogsCallbackHandle callback) {
  return guarded("cuLogsUnregisterCallback", [&] {
    DriverLog& d = driver_log();
    std::lock_guard lock(d.mutex);
    for (auto it = d.callbacks.begin(); it != d.callbacks.end(); ++it) {
      if (reinterpret_cast<CUlogsCallbackHandle>(&*it) == callback) {
        d.callbacks.erase(it);
        return CUDA_SUCCESS;
      }
    }
    return CUDA_ERROR_INVALID_VALUE;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLogsCurrent(CUlogIterator* iterator_out, unsigned int flags) {
  return guarded("cuLogsCurrent", [&] {
    if (iterator_out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    DriverLog& d = driver_log();
    std::lock_guard lock(d.mutex);
    *iterator_out = d.next;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLogsDumpToFile(CUlogIterator* iterator, const char* pathToFile,
                                                unsigned int flags) {
  return guarded("cuLogsDumpToFile", [&] {
    if (pathToFile == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::FILE* out = std::fopen(pathToFile, "w");
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    bool ok = true;
    for (const std::string& m : take_messages(iterator))
      ok = ok && std::fprintf(out, "%s\n", m.c_str()) >= 0;
    ok = std::fclose(out) == 0 && ok;
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

// "If the provided value in *size is not large enough to hold all buffered messages, a message
// will be added at the head of the buffer indicating this ... The final message in buffer will
// always be the most recent log message"; with no room for one message, *size is 0 and the
// answer CUDA_ERROR_INVALID_VALUE.
CUSNAP_EXPORT CUresult CUDAAPI cuLogsDumpToMemory(CUlogIterator* iterator, char* buffer,
                                                  size_t* size, unsigned int flags) {
  return guarded("cuLogsDumpToMemory", [&] {
    if (buffer == nullptr || size == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    const size_t capacity = *size;
    if (capacity == 0) return CUDA_ERROR_INVALID_VALUE;
    std::vector<std::string> messages = take_messages(iterator);
    auto joined_size = [](const std::vector<std::string>& list, size_t from) {
      size_t n = 0;
      for (size_t i = from; i < list.size(); ++i) n += list[i].size() + (i > from ? 1 : 0);
      return n;
    };
    size_t from = 0;
    std::string head;
    if (joined_size(messages, 0) + 1 > capacity) {
      // Keep the newest messages that fit after a line saying how many were left out.
      from = messages.size();
      while (from > 0) {
        const std::string line =
            "[cusnap-emu] " + std::to_string(from - 1) + " log messages did not fit in the buffer";
        if (line.size() + 1 + joined_size(messages, from - 1) + 1 > capacity) break;
        --from;
        head = line;
      }
      if (from == messages.size()) {
        *size = 0;
        buffer[0] = '\0';
        return messages.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
      }
      if (from == 0) head.clear();
    }
    std::string text = head;
    for (size_t i = from; i < messages.size(); ++i) {
      if (!text.empty()) text.push_back('\n');
      text += messages[i];
    }
    std::memcpy(buffer, text.c_str(), text.size() + 1);
    *size = text.size();
    return CUDA_SUCCESS;
  });
}
