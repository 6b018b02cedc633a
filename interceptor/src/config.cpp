#include "cusnap/capture/config.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>

namespace cusnap::capture {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

long env_long(const char* name, long fallback, long low, long high) {
  const char* text = env(name);
  if (text == nullptr) return fallback;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high) return fallback;
  return value;
}

}  // namespace

CaptureConfig CaptureConfig::from_env() {
  CaptureConfig config;
  if (const char* output = env("CUSNAP_CAPTURE_OUTPUT")) {
    config.enabled = true;
    config.output_pattern = output;
  }
  config.root_pid = env_long("CUSNAP_CAPTURE_ROOT_PID", 0, 0, 1L << 30);
  config.force_overwrite = env_long("CUSNAP_FORCE_OVERWRITE", 0, 0, 1) == 1;
  config.compress_level = static_cast<int>(env_long("CUSNAP_COMPRESS_LEVEL", 3, 0, 19));
  config.compress_threads = static_cast<unsigned>(env_long("CUSNAP_COMPRESS_THREADS", 2, 1, 64));
  config.max_queued_bytes = static_cast<size_t>(env_long("CUSNAP_MAX_QUEUED_MB", 256, 1, 1L << 20))
                            << 20;
  if (const char* policy = env("CUSNAP_QUEUE_POLICY"))
    config.drop_when_full = std::strcmp(policy, "drop") == 0;
  config.dtoh_checksums = env_long("CUSNAP_DTOH_CHECKSUMS", 1, 0, 1) == 1;
  if (const char* kernels = env("CUSNAP_SNAPSHOT_KERNELS")) config.snapshot_kernels = kernels;
  if (const char* name = env("CUSNAP_KERNEL_NAME")) config.kernel_name = name;
  if (const char* base = env("CUSNAP_SNAPSHOT_KERNEL_BASE")) config.snapshot_kernel_base = base;
  config.launch_skip = static_cast<uint64_t>(env_long("CUSNAP_LAUNCH_SKIP", 0, 0, LONG_MAX));
  config.launch_count = static_cast<uint64_t>(env_long("CUSNAP_LAUNCH_COUNT", 0, 0, LONG_MAX));
  config.snapshot_outputs = env_long("CUSNAP_SNAPSHOT_OUTPUTS", 0, 0, 1) == 1;
  if (const char* hash = env("CUSNAP_SNAPSHOT_HASH")) config.snapshot_hash = hash;
  if (const char* range = env("CUSNAP_CAPTURE_RANGE")) config.capture_range = range;
  if (const char* end = env("CUSNAP_CAPTURE_RANGE_END")) config.capture_range_end = end;
  if (const char* nvtx = env("CUSNAP_NVTX_CAPTURE")) config.nvtx_capture = nvtx;
  config.snapshot_chunk_bytes = static_cast<uint64_t>(env_long(
      "CUSNAP_SNAPSHOT_CHUNK", static_cast<long>(kDefaultSnapshotChunkBytes),
      static_cast<long>(kMinSnapshotChunkBytes), static_cast<long>(kMaxSnapshotChunkBytes)));
  return config;
}

bool parse_range_settings(const CaptureConfig& config, RangeSettings& out, std::string& error) {
  using Trigger = RangeSettings::Trigger;
  out = RangeSettings{};
  const std::string& range = config.capture_range;
  if (range.empty() || range == "none") {
    out.trigger = Trigger::kNone;
  } else if (range == "cudaProfilerApi") {
    out.trigger = Trigger::kProfilerApi;
  } else if (range == "nvtx") {
    out.trigger = Trigger::kNvtx;
  } else if (range == "signal") {
    out.trigger = Trigger::kSignal;
  } else {
    error = "capture range '" + range + "': expected none, cudaProfilerApi, nvtx or signal";
    return false;
  }
  const std::string& end = config.capture_range_end;
  if (end.empty() || end == "stop") {
    out.repeat = false;
    out.max_ranges = 1;
  } else if (end == "repeat") {
    out.repeat = true;
    out.max_ranges = 0;
  } else if (end.rfind("repeat:", 0) == 0) {
    std::string count = end.substr(7);
    char* stop = nullptr;
    unsigned long n = std::strtoul(count.c_str(), &stop, 10);
    if (count.empty() || *stop != '\0' || n == 0 || n > 1000000) {
      error = "capture range end '" + end + "': N in repeat:N must be 1 to 1000000";
      return false;
    }
    out.repeat = true;
    out.max_ranges = static_cast<uint32_t>(n);
  } else {
    error = "capture range end '" + end + "': expected stop, repeat or repeat:N";
    return false;
  }
  if (out.trigger == Trigger::kNvtx) {
    const std::string& spec = config.nvtx_capture;
    size_t at = spec.rfind('@');
    out.nvtx_message = at == std::string::npos ? spec : spec.substr(0, at);
    out.nvtx_domain = at == std::string::npos ? "" : spec.substr(at + 1);
    if (out.nvtx_message.empty()) {
      error =
          "the nvtx capture range needs a MESSAGE[@DOMAIN] (--nvtx-capture, "
          "CUSNAP_NVTX_CAPTURE)";
      return false;
    }
  } else if (!config.nvtx_capture.empty()) {
    error = "--nvtx-capture (CUSNAP_NVTX_CAPTURE) needs the nvtx capture range";
    return false;
  }
  return true;
}

const char* range_trigger_name(RangeSettings::Trigger trigger) {
  switch (trigger) {
    case RangeSettings::Trigger::kProfilerApi:
      return "cudaProfilerApi";
    case RangeSettings::Trigger::kNvtx:
      return "nvtx";
    case RangeSettings::Trigger::kSignal:
      return "signal";
    case RangeSettings::Trigger::kNone:
      break;
  }
  return "none";
}

std::string expand_output_pattern(const std::string& pattern, long pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c != '%' || i + 1 == pattern.size()) {
      out += c;
      continue;
    }
    char next = pattern[i + 1];
    if (next == 'p') {
      out += std::to_string(pid);
      ++i;
    } else if (next == 'h') {
      char host[256] = {};
      if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown-host");
      out += host;
      ++i;
    } else if (next == '%') {
      out += '%';
      ++i;
    } else if (next == 'q' && i + 2 < pattern.size() && pattern[i + 2] == '{') {
      size_t close = pattern.find('}', i + 3);
      if (close == std::string::npos) {
        out += c;
        continue;
      }
      std::string name = pattern.substr(i + 3, close - i - 3);
      if (const char* value = std::getenv(name.c_str())) out += value;
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

std::string process_output_name(const CaptureConfig& config, long pid) {
  std::string name = expand_output_pattern(config.output_pattern, pid);
  bool has_pid = config.output_pattern.find("%p") != std::string::npos;
  if (has_pid || config.root_pid == 0 || config.root_pid == pid) return name;
  size_t slash = name.rfind('/');
  size_t dot = name.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1) {
    return name + "." + std::to_string(pid);
  }
  return name.substr(0, dot) + "." + std::to_string(pid) + name.substr(dot);
}

}  // namespace cusnap::capture

namespace cusnap::capture {

std::string range_output_name(const CaptureConfig& config, const RangeSettings& ranges, long pid,
                              uint32_t number) {
  std::string name = process_output_name(config, pid);
  const std::string n = std::to_string(number);
  bool replaced = false;
  for (size_t at = name.find("%n"); at != std::string::npos; at = name.find("%n", at + n.size())) {
    name.replace(at, 2, n);
    replaced = true;
  }
  if (replaced || !ranges.repeat) return name;
  size_t slash = name.rfind('/');
  size_t dot = name.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1)
    return name + "." + n;
  return name.substr(0, dot) + "." + n + name.substr(dot);
}

}  // namespace cusnap::capture
