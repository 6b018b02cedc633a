#include "replayer/driver.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace cusnap::replayer {
namespace {

bool is_file(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string executable_dir() {
  char buffer[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return {};
  buffer[n] = '\0';
  return std::filesystem::path(buffer).parent_path().string();
}

// NVIDIA's driver as distributions install it. LD_LIBRARY_PATH is deliberately not consulted:
// cusnap capture puts its shim there.
constexpr std::array<const char*, 6> kSystemDrivers = {
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1",
    "/usr/lib/libcuda.so.1",                  "/usr/local/nvidia/lib64/libcuda.so.1",
    "/usr/lib/wsl/lib/libcuda.so.1",          "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
};

}  // namespace

Expected<std::unique_ptr<Driver>> Driver::open(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return Error(ErrorKind::kInvalidArgument, "driver path must be absolute: '" + path + "'");
  }
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    return Error(ErrorKind::kTarget, "cannot load driver " + path + ": " + (why ? why : "unknown error"));
  }
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(::dlsym(library, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    return Error(ErrorKind::kTarget, path + " has no cuGetProcAddress_v2: not a CUDA 12+ driver");
  }
  std::unique_ptr<Driver> driver(new Driver);
  driver->path_ = path;
  std::string missing_required;
#define CUSNAP_REPLAYER_BIND(name, version, required)                                            \
  {                                                                                              \
    void* fn = nullptr;                                                                          \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                 \
    CUresult r = get_proc(#name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);             \
    if (r == CUDA_SUCCESS && fn != nullptr && found == CU_GET_PROC_ADDRESS_SUCCESS) {            \
      driver->api_.name = reinterpret_cast<PFN_##name##_v##version>(fn);                         \
    } else if (required) {                                                                       \
      missing_required += std::string(missing_required.empty() ? "" : ", ") + #name "@" #version; \
    } else {                                                                                     \
      driver->missing_.push_back(#name "@" #version);                                            \
    }                                                                                            \
  }
  CUSNAP_REPLAYER_ENTRY_POINTS(CUSNAP_REPLAYER_BIND)
#undef CUSNAP_REPLAYER_BIND
  if (!missing_required.empty()) {
    return Error(ErrorKind::kTarget, path + " lacks required entry points: " + missing_required);
  }
  const DriverApi& api = driver->api_;
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    return driver->failure("cuInit with driver " + path, r);
  }
  if (CUresult r = api.cuDriverGetVersion(&driver->version_); r != CUDA_SUCCESS) {
    return driver->failure("cuDriverGetVersion", r);
  }
  return driver;
}

bool Driver::has_vmm() const {
  return api_.cuMemAddressReserve && api_.cuMemAddressFree && api_.cuMemCreate && api_.cuMemRelease &&
         api_.cuMemMap && api_.cuMemUnmap && api_.cuMemSetAccess && api_.cuMemGetAllocationGranularity;
}

std::string Driver::error_name(CUresult result) const {
  const char* name = nullptr;
  if (api_.cuGetErrorName != nullptr && api_.cuGetErrorName(result, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  return "CUresult " + std::to_string(static_cast<int>(result));
}

Error Driver::failure(const std::string& what, CUresult result) const {
  Error e(ErrorKind::kDriver, what + " failed: " + error_name(result));
  e.with_result(static_cast<int>(result));
  return e;
}

std::string emulator_path() {
  if (const char* env = std::getenv("CUSNAP_EMULATOR_PATH"); env != nullptr && *env != '\0') {
    return std::filesystem::absolute(env).string();
  }
#ifdef CUSNAP_REPLAYER_EMULATOR_BUILD_PATH
  if (is_file(CUSNAP_REPLAYER_EMULATOR_BUILD_PATH)) return CUSNAP_REPLAYER_EMULATOR_BUILD_PATH;
#endif
  std::string dir = executable_dir();
  if (!dir.empty()) {
    std::string installed = dir + "/../lib/cusnap/emulator/libcuda.so.1";
    if (is_file(installed)) return std::filesystem::weakly_canonical(installed).string();
  }
  return {};
}

Expected<DriverChoice> resolve_driver(const std::string& spec) {
  if (spec == "emulator") {
    std::string path = emulator_path();
    if (path.empty()) {
      return Error(ErrorKind::kTarget,
                   "the cusnap emulator was not found (set CUSNAP_EMULATOR_PATH to its libcuda.so.1)");
    }
    return DriverChoice{path, "emulator"};
  }
  if (spec != "auto") {
    std::string path = std::filesystem::absolute(spec).string();
    if (!is_file(path)) return Error(ErrorKind::kInvalidArgument, "--driver " + spec + ": no such file");
    return DriverChoice{path, "given path"};
  }
  for (const char* candidate : kSystemDrivers) {
    if (!is_file(candidate)) continue;
    // Probe: it must load, initialise and see at least one device.
    void* library = ::dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) continue;
    auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(::dlsym(library, "cuGetProcAddress_v2"));
    if (get_proc == nullptr) continue;
    void* init = nullptr;
    void* count = nullptr;
    CUdriverProcAddressQueryResult found;
    if (get_proc("cuInit", &init, 2000, 0, &found) != CUDA_SUCCESS || init == nullptr) continue;
    if (get_proc("cuDeviceGetCount", &count, 2000, 0, &found) != CUDA_SUCCESS || count == nullptr) continue;
    if (reinterpret_cast<PFN_cuInit_v2000>(init)(0) != CUDA_SUCCESS) continue;
    int devices = 0;
    if (reinterpret_cast<PFN_cuDeviceGetCount_v2000>(count)(&devices) != CUDA_SUCCESS || devices <= 0) continue;
    return DriverChoice{candidate, "auto: system driver with " + std::to_string(devices) + " device(s)"};
  }
  std::string path = emulator_path();
  if (path.empty()) {
    return Error(ErrorKind::kTarget, "--driver auto: no NVIDIA driver initialises a device and the emulator "
                                     "was not found (set CUSNAP_EMULATOR_PATH)");
  }
  return DriverChoice{path, "auto: no usable system driver, using the emulator"};
}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kCapture: return "capture";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kTarget: return "target";
    case ErrorKind::kDriver: return "driver";
    case ErrorKind::kInvalidArgument: return "invalid argument";
    case ErrorKind::kIo: return "i/o";
  }
  return "error";
}

std::string Error::to_string() const {
  std::string out = std::string(error_kind_name(kind_)) + ": " + message_;
  std::string context;
  auto add = [&](const std::string& part) { context += (context.empty() ? "" : ", ") + part; };
  auto hex = [](uint64_t v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(v));
    return std::string(buffer);
  };
  if (seq_) add("call " + std::to_string(*seq_));
  if (!record_.empty()) add(record_);
  if (handle_) add("handle " + hex(*handle_));
  if (address_) add("address " + hex(*address_));
  if (!context.empty()) out += " (" + context + ")";
  return out;
}

}  // namespace cusnap::replayer
