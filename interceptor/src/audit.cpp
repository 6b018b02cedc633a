// LD_AUDIT library: makes the dynamic loader find the cusnap shim for "libcuda.so.1" even in
// binaries whose DT_RPATH (searched before LD_LIBRARY_PATH) contains NVIDIA's driver.
//
// Only bare names are redirected (libcuda.so.1, libcuda.so), and only at the start of the search
// (LA_SER_ORIG): the shim opens the real driver by absolute path, which must never be redirected.
// The shim's path comes from CUSNAP_SHIM_PATH; unset, the library does nothing. Runs inside the
// loader: no C++ runtime, no allocation, no output.
#include <link.h>

#include <cstdlib>
#include <cstring>

#define CUSNAP_AUDIT_EXPORT extern "C" __attribute__((visibility("default")))

CUSNAP_AUDIT_EXPORT unsigned int la_version(unsigned int version) {
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

CUSNAP_AUDIT_EXPORT char* la_objsearch(const char* name, uintptr_t* cookie, unsigned int flag) {
  (void)cookie;
  if (flag != LA_SER_ORIG || name == nullptr) return const_cast<char*>(name);
  if (std::strcmp(name, "libcuda.so.1") != 0 && std::strcmp(name, "libcuda.so") != 0) {
    return const_cast<char*>(name);
  }
  const char* shim = std::getenv("CUSNAP_SHIM_PATH");
  if (shim == nullptr || shim[0] != '/') return const_cast<char*>(name);
  return const_cast<char*>(shim);
}
