#include "cusnap/format/status.h"

namespace cusnap::format {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kIo:
      return "io error";
    case ErrorCode::kNotACapture:
      return "not a capture";
    case ErrorCode::kUnsupportedVersion:
      return "unsupported version";
    case ErrorCode::kTruncated:
      return "truncated";
    case ErrorCode::kCorrupt:
      return "corrupt";
    case ErrorCode::kMalformed:
      return "malformed";
    case ErrorCode::kLimitExceeded:
      return "limit exceeded";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kWouldBlock:
      return "would block";
    case ErrorCode::kClosed:
      return "closed";
  }
  return "unknown error";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string out = error_code_name(code_);
  out += ": ";
  out += message_;
  std::string ctx;
  auto add = [&ctx](const std::string& part) {
    if (!ctx.empty()) ctx += ", ";
    ctx += part;
  };
  if (!file_.empty()) add("file " + file_);
  if (frame_) add("frame " + std::to_string(*frame_));
  if (offset_) add("offset " + std::to_string(*offset_));
  if (call_) add("call " + std::to_string(*call_));
  if (!expected_.empty() || !found_.empty()) add("expected " + expected_ + ", found " + found_);
  if (!ctx.empty()) out += " (" + ctx + ")";
  return out;
}

}  // namespace cusnap::format
