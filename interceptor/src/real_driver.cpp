#include "real_driver.h"

#include <dlfcn.h>

#include <mutex>

#include "cusnap/common/driver_search.h"
#include "cusnap/common/library_mark.h"
#include "log.h"
#include "shim_runtime.h"

// What the driver search recognises as the cusnap interceptor, copies included (it never opens
// itself, nor another copy of itself, as the real driver).
CUSNAP_MARK_LIBRARY("interceptor");

namespace cusnap::icpt {
namespace {

// The one driver lookup (cusnap/common/driver_search.h), as `auto`: CUSNAP_REAL_DRIVER (what
// `cusnap capture` sets), else NVIDIA's driver at the system paths, else the emulator of this
// cusnap tree (never a build tree's from an installed copy). Never probed: the shim does not
// initialise a driver on its application's behalf.
std::string choose_path(RealDriver& driver) {
  common::DriverSearchOptions options;
  options.self = common::library_path_of(reinterpret_cast<const void*>(&load_real_driver));
  common::DriverSearch found = common::find_driver("auto", options);
  if (!found.ok()) {
    driver.error = found.error;
    return {};
  }
  // Not CUSNAP_REAL_DRIVER and no NVIDIA driver: the application runs on the CPU emulator,
  // which its user must hear about.
  driver.fell_back = found.role == common::LibraryRole::kEmulator &&
                     found.reason.rfind("auto: no usable system driver", 0) == 0;
  return found.path;
}

void load(RealDriver& driver) {
  std::string path = choose_path(driver);
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

const RealDriver& load_real_driver() noexcept {
  static RealDriver* driver = new RealDriver();  // never destroyed: used until the very end
  static std::once_flag once;
  try {
    std::call_once(once, [] {
      load(*driver);
      if (driver->loaded && driver->fell_back) {
        log(LogLevel::kWarn,
            "no NVIDIA driver found at the system paths; running on the cusnap emulator %s (a "
            "CPU implementation of the driver API; set CUSNAP_REAL_DRIVER to choose)",
            driver->path.c_str());
      } else if (driver->loaded) {
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
