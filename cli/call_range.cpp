#include "call_range.h"

#include <charconv>
#include <optional>

namespace cusnap::cli {

namespace {

std::optional<uint64_t> parse_u64(const std::string& s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

format::Status bad(const std::string& text, const std::string& why) {
  return format::Status::error(format::ErrorCode::kInvalidArgument, "--calls " + text + ": " + why);
}

}  // namespace

format::Result<CallRange> parse_call_range(const std::string& text, uint64_t call_count) {
  std::string count_text = call_count == 0 ? "the capture has no calls"
                           : call_count == 1
                               ? "the capture has 1 call (0)"
                               : "the capture has " + std::to_string(call_count) + " calls (0.." +
                                     std::to_string(call_count - 1) + ")";
  CallRange range;
  size_t colon = text.find(':');
  if (colon == std::string::npos) {
    auto n = parse_u64(text);
    if (!n) return bad(text, "expected A:B, A:, :B or N with decimal call numbers");
    if (*n >= call_count) return bad(text, "call " + text + " does not exist; " + count_text);
    return CallRange{*n, *n + 1};
  }
  std::string a = text.substr(0, colon);
  std::string b = text.substr(colon + 1);
  if (b.find(':') != std::string::npos) return bad(text, "more than one ':'");
  if (a.empty()) {
    range.begin = 0;
  } else if (auto v = parse_u64(a)) {
    range.begin = *v;
  } else {
    return bad(text, "start '" + a + "' is not a decimal call number");
  }
  if (b.empty()) {
    range.end = call_count;
  } else if (auto v = parse_u64(b)) {
    range.end = *v;
  } else {
    return bad(text, "end '" + b + "' is not a decimal call number");
  }
  if (range.begin > range.end) {
    return bad(text, "start " + std::to_string(range.begin) + " is after end " +
                         std::to_string(range.end) + " (the range is half-open: A:B is A..B-1)");
  }
  if (range.end > call_count) {
    return bad(text, "end " + std::to_string(range.end) + " is past the end; " + count_text +
                         ", so the largest end is " + std::to_string(call_count));
  }
  return range;
}

}  // namespace cusnap::cli
