#include "driver/state.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

#include "driver/inject.h"
#include "driver/log.h"
#include "ptx/engine.h"

namespace cusnap::emu::driver {
namespace {

int sm_from_env() {
  const char* text = std::getenv("CUSNAP_EMU_SM");
  if (text == nullptr) return 90;
  while (*text != '\0' && !std::isdigit(static_cast<unsigned char>(*text))) ++text;  // "sm_86"
  int sm = std::atoi(text);
  if (sm < 50 || sm > 130) {
    log(LogLevel::kWarn, "CUSNAP_EMU_SM=%s is not a compute capability like 90; using 90", text);
    return 90;
  }
  return sm;
}

// A cgroup limit file's value: bytes, or none for "max" / an unreadable file / no limit.
uint64_t read_limit(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
    return UINT64_MAX;
  return std::strtoull(text.c_str(), nullptr, 10);
}

// The smallest memory limit of the process's cgroup and its ancestors (v2: memory.max; v1:
// memory.limit_in_bytes), UINT64_MAX when there is none.
uint64_t cgroup_limit() {
  uint64_t limit = UINT64_MAX;
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    std::string root, file;
    if (controllers.empty()) {
      root = "/sys/fs/cgroup";
      file = "/memory.max";
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      root = "/sys/fs/cgroup/memory";
      file = "/memory.limit_in_bytes";
    } else {
      continue;
    }
    for (;;) {
      limit = std::min(limit, read_limit(root + (path == "/" ? "" : path) + file));
      if (path.empty() || path == "/") break;
      const size_t slash = path.rfind('/');
      path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
  }
  return limit;
}

uint64_t configured_memory() {
  const char* text = std::getenv("CUSNAP_EMU_MEMORY");
  if (text == nullptr || *text == '\0') return kDefaultTotalMemory;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  uint64_t scale = 1;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case 'K':
      scale = uint64_t{1} << 10;
      break;
    case 'M':
      scale = uint64_t{1} << 20;
      break;
    case 'G':
      scale = uint64_t{1} << 30;
      break;
    case 'T':
      scale = uint64_t{1} << 40;
      break;
    default:
      break;
  }
  if (!(value > 0)) {
    log(LogLevel::kWarn, "CUSNAP_EMU_MEMORY=%s is not a size; using 16G", text);
    return kDefaultTotalMemory;
  }
  return static_cast<uint64_t>(value * static_cast<double>(scale));
}

// What is reported: the configured size, but never more than kHostMemoryShare of what the host
// can back (so that a program sizing itself by cuMemGetInfo does not run into the OOM killer;
// its own host buffers usually mirror its device buffers).
uint64_t memory_from_env() {
  const uint64_t configured = configured_memory();
  const uint64_t cap = host_memory_bytes() / kHostMemoryShare / 4096 * 4096;
  if (configured <= cap) return configured;
  if (std::getenv("CUSNAP_EMU_MEMORY") != nullptr) {
    log(LogLevel::kWarn,
        "CUSNAP_EMU_MEMORY=%s is more than half of the host's memory; reporting %llu MiB of device "
        "memory",
        std::getenv("CUSNAP_EMU_MEMORY"), static_cast<unsigned long long>(cap >> 20));
  }
  return cap;
}

double timeout_from_env() {
  const char* text = std::getenv("CUSNAP_EMU_TIMEOUT");
  if (text == nullptr || *text == '\0') return kDefaultTimeoutSeconds;
  char* end = nullptr;
  double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(seconds >= 0) || seconds > 1e9) {
    log(LogLevel::kWarn, "CUSNAP_EMU_TIMEOUT=%s is not a number of seconds (0: no limit); using %g",
        text, kDefaultTimeoutSeconds);
    return kDefaultTimeoutSeconds;
  }
  return seconds;
}

uint32_t tensor_map_key_from_env() {
  constexpr uint32_t kDefault = ptx::kDefaultTensorMapKey;
  const char* text = std::getenv("CUSNAP_EMU_TENSOR_MAP_KEY");
  if (text == nullptr || *text == '\0') return kDefault;
  char* end = nullptr;
  errno = 0;
  unsigned long long key = std::strtoull(text, &end, 0);
  if (end == text || *end != '\0' || errno != 0 || key > 0xffffffffull) {
    log(LogLevel::kWarn, "CUSNAP_EMU_TENSOR_MAP_KEY=%s is not a 32-bit number; using 0x%x", text,
        kDefault);
    return kDefault;
  }
  return static_cast<uint32_t>(key);
}

std::atomic<bool> g_initialized{false};

struct HandleEntry {
  HandleKind kind;
  bool live;
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, HandleEntry> handles;
  std::deque<void*> quarantine;  // destroyed objects' memory, oldest first
};

Registry& registry() {
  static Registry* instance = new Registry;  // never destroyed: handles may be used at exit
  return *instance;
}

}  // namespace

uint64_t host_memory_bytes() {
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t physical = pages > 0 && page > 0
                            ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                            : UINT64_MAX;
    return std::min(physical, cgroup_limit());
  }();
  return bytes;
}

const DeviceConfig& device_config() {
  static const DeviceConfig config = [] {
    DeviceConfig c;
    c.sm = sm_from_env();
    c.total_memory = memory_from_env();
    c.timeout_seconds = timeout_from_env();
    c.tensor_map_key = tensor_map_key_from_env();
    c.name = "cusnap emulator (sm_" + std::to_string(c.sm) + ")";
    return c;
  }();
  return config;
}

CUresult check_initialized() {
  return g_initialized.load(std::memory_order_acquire) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult initialize(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  (void)device_config();
  // A malformed CUSNAP_EMU_INJECT is an error, never ignored: a test relying on an injected fault
  // must not pass because the fault silently did not happen.
  if (const std::string& error = inject_error(); !error.empty()) {
    log(LogLevel::kError, "%s", error.c_str());
    return CUDA_ERROR_INVALID_VALUE;
  }
  g_initialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult check_device(CUdevice device) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

void register_handle(const void* handle, HandleKind kind) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.handles[handle] = HandleEntry{kind, true};
}

bool is_handle(const void* handle, HandleKind kind) {
  return handle_state(handle, kind) == HandleState::kLive;
}

HandleState handle_state(const void* handle, HandleKind kind) {
  if (handle == nullptr) return HandleState::kUnknown;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.handles.find(handle);
  if (it == r.handles.end() || it->second.kind != kind) return HandleState::kUnknown;
  return it->second.live ? HandleState::kLive : HandleState::kDestroyed;
}

void mark_destroyed(const void* handle, HandleKind kind) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.handles[handle] = HandleEntry{kind, false};
}

void quarantine_storage(void* storage) {
  void* released = nullptr;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.quarantine.push_back(storage);
    if (r.quarantine.size() > kHandleQuarantine) {
      released = r.quarantine.front();
      r.quarantine.pop_front();
      // Forgotten before the memory is freed: once another object can be placed there, the
      // address is unknown (INVALID_HANDLE) rather than "destroyed".
      auto it = r.handles.find(released);
      if (it != r.handles.end() && !it->second.live) r.handles.erase(it);
    }
  }
  ::operator delete(released);
}

}  // namespace cusnap::emu::driver
