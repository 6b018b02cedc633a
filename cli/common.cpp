#include "common.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

#include "cusnap/common/log_level.h"

namespace cusnap::cli {

int exit_code_for(const format::Status& status) {
  using format::ErrorCode;
  switch (status.code()) {
    case ErrorCode::kOk:
      return kExitOk;
    case ErrorCode::kTruncated:
      return kExitTruncated;
    case ErrorCode::kCorrupt:
    case ErrorCode::kMalformed:
    case ErrorCode::kLimitExceeded:
      return kExitCorrupt;
    case ErrorCode::kNotACapture:
    case ErrorCode::kUnsupportedVersion:
      return kExitNotACapture;
    default:
      return kExitUsageOrIo;
  }
}

format::Result<std::unique_ptr<format::Reader>> open_capture(const std::string& path) {
  auto reader = format::Reader::open(path);
  if (!reader) {
    format::Status st = reader.status();
    if (st.file().empty()) st.in_file(path);
    spdlog::debug("cannot open {}: {}", path, st.to_string());
    return st;
  }
  const format::IntegrityReport& recovery = reader.value()->recovery();
  spdlog::debug("opened {}: {} bytes, {} frames, {} calls, index from {}", path,
                reader.value()->file_size(), reader.value()->frames().size(),
                reader.value()->call_count(), recovery.footer_used ? "footer" : "scan");
  return reader;
}

int report_failure(const std::string& command, const format::Status& status) {
  spdlog::error("cusnap {}: {}", command, status.to_string());
  return exit_code_for(status);
}

void init_logging() {
  auto logger = spdlog::stderr_color_mt("cusnap");
  logger->set_pattern("%^%l%$: %v");
  spdlog::set_default_logger(logger);
  // The one CUSNAP_LOG_LEVEL parser (cusnap/common/log_level.h), mapped onto spdlog's levels.
  common::ParsedLogLevel parsed = common::log_level_from_env();
  spdlog::level::level_enum level = spdlog::level::warn;
  switch (parsed.level) {
    case common::LogLevel::kTrace:
      level = spdlog::level::trace;
      break;
    case common::LogLevel::kDebug:
      level = spdlog::level::debug;
      break;
    case common::LogLevel::kInfo:
      level = spdlog::level::info;
      break;
    case common::LogLevel::kWarn:
      level = spdlog::level::warn;
      break;
    case common::LogLevel::kError:
      level = spdlog::level::err;
      break;
    case common::LogLevel::kCritical:
      level = spdlog::level::critical;
      break;
    case common::LogLevel::kOff:
      level = spdlog::level::off;
      break;
  }
  spdlog::set_level(level);
  if (!parsed.valid) {
    spdlog::warn("{}='{}' is not one of {}; using warn", common::kLogLevelVariable,
                 std::getenv(common::kLogLevelVariable), common::kLogLevelValues);
  }
}

std::string hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace cusnap::cli
