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
  if (const char* base = env("CUSNAP_SNAPSHOT_KERNEL_BASE")) config.snapshot_kernel_base = base;
  config.launch_skip = static_cast<uint64_t>(env_long("CUSNAP_LAUNCH_SKIP", 0, 0, LONG_MAX));
  config.launch_count = static_cast<uint64_t>(env_long("CUSNAP_LAUNCH_COUNT", 0, 0, LONG_MAX));
  config.snapshot_outputs = env_long("CUSNAP_SNAPSHOT_OUTPUTS", 0, 0, 1) == 1;
  if (const char* hash = env("CUSNAP_SNAPSHOT_HASH")) config.snapshot_hash = hash;
  config.snapshot_chunk_bytes = static_cast<uint64_t>(env_long(
      "CUSNAP_SNAPSHOT_CHUNK", static_cast<long>(kDefaultSnapshotChunkBytes),
      static_cast<long>(kMinSnapshotChunkBytes), static_cast<long>(kMaxSnapshotChunkBytes)));
  return config;
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
