#include "replayer/driver.h"

#include <dlfcn.h>

#include <cstdio>

#include "cusnap/common/driver_search.h"

namespace cusnap::replayer {

Expected<std::unique_ptr<Driver>> Driver::open(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return Error(ErrorKind::kInvalidArgument, "driver path must be absolute: '" + path + "'");
  }
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    return Error(ErrorKind::kTarget,
                 "cannot load driver " + path + ": " + (why ? why : "unknown error"));
  }
  auto get_proc =
      reinterpret_cast<PFN_cuGetProcAddress_v12000>(::dlsym(library, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    return Error(ErrorKind::kTarget, path + " has no cuGetProcAddress_v2: not a CUDA 12+ driver");
  }
  std::unique_ptr<Driver> driver(new Driver);
  driver->path_ = path;
  std::string missing_required;
#define CUSNAP_REPLAYER_BIND(name, version, required)                                             \
  {                                                                                               \
    void* fn = nullptr;                                                                           \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                  \
    CUresult r = get_proc(#name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);              \
    if (r == CUDA_SUCCESS && fn != nullptr && found == CU_GET_PROC_ADDRESS_SUCCESS) {             \
      driver->api_.name = reinterpret_cast<PFN_##name##_v##version>(fn);                          \
    } else if (required) {                                                                        \
      missing_required += std::string(missing_required.empty() ? "" : ", ") + #name "@" #version; \
    } else {                                                                                      \
      driver->missing_.push_back(#name "@" #version);                                             \
    }                                                                                             \
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
  return api_.cuMemAddressReserve && api_.cuMemAddressFree && api_.cuMemCreate &&
         api_.cuMemRelease && api_.cuMemMap && api_.cuMemUnmap && api_.cuMemSetAccess &&
         api_.cuMemGetAllocationGranularity;
}

std::string Driver::error_name(CUresult result) const {
  const char* name = nullptr;
  if (api_.cuGetErrorName != nullptr && api_.cuGetErrorName(result, &name) == CUDA_SUCCESS &&
      name != nullptr) {
    return name;
  }
  return "CUresult " + std::to_string(static_cast<int>(result));
}

Error Driver::failure(const std::string& what, CUresult result) const {
  Error e(ErrorKind::kDriver, what + " failed: " + error_name(result));
  e.with_result(static_cast<int>(result));
  return e;
}

Expected<DriverChoice> resolve_driver(const std::string& spec) {
  common::DriverSearch found = common::find_driver_for_executable(spec);
  if (!found.ok()) {
    bool named = spec != "auto" && spec != "emulator";
    return Error(named ? ErrorKind::kInvalidArgument : ErrorKind::kTarget, found.error);
  }
  return DriverChoice{found.path, found.reason};
}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kCapture:
      return "capture";
    case ErrorKind::kUnsupported:
      return "unsupported";
    case ErrorKind::kTarget:
      return "target";
    case ErrorKind::kDriver:
      return "driver";
    case ErrorKind::kInvalidArgument:
      return "invalid argument";
    case ErrorKind::kIo:
      return "i/o";
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
