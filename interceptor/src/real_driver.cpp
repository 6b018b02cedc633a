#include "real_driver.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>

#include "log.h"
#include "shim_runtime.h"

namespace cusnap::icpt {
namespace {

// Where distributions and containers put NVIDIA's driver.
const char* const kSystemDriverPaths[] = {
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
    "/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1",
    "/usr/local/nvidia/lib64/libcuda.so.1",
    "/usr/lib/wsl/lib/libcuda.so.1",
    "/usr/lib/libcuda.so.1",
};

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string choose_path(std::string& why_not) {
  const std::string self = own_library_path();
  if (const char* env = std::getenv("CUSNAP_REAL_DRIVER"); env != nullptr && *env != '\0') {
    std::string path = env;
    if (path.front() != '/') {
      why_not = "CUSNAP_REAL_DRIVER must be an absolute path, got '" + path + "'";
      return {};
    }
    if (same_file(path, self)) {
      why_not = "CUSNAP_REAL_DRIVER names the cusnap interceptor itself (" + path + ")";
      return {};
    }
    return path;
  }
  for (const char* candidate : kSystemDriverPaths) {
    if (file_exists(candidate) && !same_file(candidate, self)) return candidate;
  }
#ifdef CUSNAP_ICPT_EMULATOR_PATH
  if (file_exists(CUSNAP_ICPT_EMULATOR_PATH)) return CUSNAP_ICPT_EMULATOR_PATH;
#endif
  why_not = "no real CUDA driver found (set CUSNAP_REAL_DRIVER to its absolute path)";
  return {};
}

void load(RealDriver& driver) {
  std::string path = choose_path(driver.error);
  if (path.empty()) return;
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    driver.error = "dlopen(" + path + ") failed: " + (error != nullptr ? error : "unknown error");
    return;
  }
  for (int id = 0; id < kSymbolCount; ++id) {
    g_real[id] = ::dlsym(handle, kSymbolNames[id]);
    if (g_real[id] != nullptr) ++driver.exported;
  }
  driver.path = path;
  driver.loaded = true;
}

}  // namespace

std::string own_library_path() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&own_library_path), &info) == 0 || info.dli_fname == nullptr) return {};
  char* resolved = ::realpath(info.dli_fname, nullptr);
  if (resolved == nullptr) return info.dli_fname;
  std::string path = resolved;
  std::free(resolved);
  return path;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (a.empty() || b.empty() || ::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

const RealDriver& load_real_driver() noexcept {
  static RealDriver* driver = new RealDriver();  // never destroyed: used until the very end
  static std::once_flag once;
  try {
    std::call_once(once, [] {
      load(*driver);
      if (driver->loaded) {
        log(LogLevel::kInfo, "real driver %s (%d of %d driver symbols)", driver->path.c_str(),
            driver->exported, static_cast<int>(kSymbolCount));
      } else {
        log(LogLevel::kError, "%s; every CUDA call will fail", driver->error.c_str());
      }
    });
  } catch (...) {
    driver->error = "internal error while loading the real driver";
  }
  return *driver;
}

}  // namespace cusnap::icpt
