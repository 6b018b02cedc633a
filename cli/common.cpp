#include "common.h"

#include <cstdio>
#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace cusnap::cli {

int exit_code_for(const format::Status& status) {
  using format::ErrorCode;
  switch (status.code()) {
    case ErrorCode::kOk: return kExitOk;
    case ErrorCode::kTruncated: return kExitTruncated;
    case ErrorCode::kCorrupt:
    case ErrorCode::kMalformed:
    case ErrorCode::kLimitExceeded: return kExitCorrupt;
    case ErrorCode::kNotACapture:
    case ErrorCode::kUnsupportedVersion: return kExitNotACapture;
    default: return kExitUsageOrIo;
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
  spdlog::set_level(spdlog::level::warn);
  if (const char* env = std::getenv("CUSNAP_LOG_LEVEL"); env != nullptr && *env != '\0') {
    std::string value(env);
    auto level = spdlog::level::from_str(value);
    // from_str maps anything unknown to "off"; only believe it when the text really says off.
    if (level == spdlog::level::off && value != "off") {
      spdlog::warn("CUSNAP_LOG_LEVEL='{}' is not one of trace, debug, info, warn, error, "
                   "critical, off; using warn", value);
    } else {
      spdlog::set_level(level);
    }
  }
}

std::string hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace cusnap::cli
