// The real driver behind the shim, opened by absolute path (never by soname: the shim itself is
// the libcuda.so.1 the loader found) with RTLD_LOCAL so its exports never shadow the shim's.
//
// Which driver: the one driver lookup of cusnap (cusnap/common/driver_search.h, `auto`):
// CUSNAP_REAL_DRIVER (an absolute path, what `cusnap capture --driver` sets); if unset, the first
// NVIDIA driver at the usual system locations that is not a cusnap interceptor; else the emulator
// of this cusnap tree (a warning names it; an installed copy never falls back to a build tree's).
// The decision is made once per process.
#pragma once

#include <string>

namespace cusnap::icpt {

struct RealDriver {
  bool loaded = false;
  std::string path;        // absolute path that was dlopen'ed
  std::string error;       // why nothing could be loaded
  int exported = 0;        // driver symbols the real library provides
  bool fell_back = false;  // no CUSNAP_REAL_DRIVER and no NVIDIA driver: the emulator (warned)
};

// Loads the driver and fills g_real. Idempotent and thread-safe (first caller does the work).
const RealDriver& load_real_driver() noexcept;

}  // namespace cusnap::icpt
