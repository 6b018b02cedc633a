// probe_driver_in_child (driver_search.h): its own file, so that code which never probes (the
// interceptor) does not link fork() and dlopen() of candidate drivers.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "cusnap/common/driver_search.h"

namespace cusnap::common {
namespace {

// The child's exit status: what it found (device counts above kMaxDevices are reported as that).
enum ProbeExit : int {
  kLoadFailed = 1,
  kNoEntryPoints = 2,
  kInitFailed = 3,
  kCountFailed = 4,
  kNoDevice = 5
};
constexpr int kDevicesBase = 10;
constexpr int kMaxDevices = 100;

}  // namespace

bool probe_driver_in_child(const std::string& path, std::string* detail) {
  pid_t pid = ::fork();
  if (pid < 0) {
    *detail = "cannot probe (fork failed)";
    return false;
  }
  if (pid == 0) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) ::_exit(kLoadFailed);
    using InitFn = int (*)(unsigned);
    using CountFn = int (*)(int*);
    auto init = reinterpret_cast<InitFn>(::dlsym(handle, "cuInit"));
    auto count = reinterpret_cast<CountFn>(::dlsym(handle, "cuDeviceGetCount"));
    if (init == nullptr || count == nullptr) ::_exit(kNoEntryPoints);
    if (init(0) != 0) ::_exit(kInitFailed);
    int devices = 0;
    if (count(&devices) != 0) ::_exit(kCountFailed);
    if (devices <= 0) ::_exit(kNoDevice);
    ::_exit(kDevicesBase + (devices < kMaxDevices ? devices : kMaxDevices));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *detail = "cannot probe (waitpid failed)";
      return false;
    }
  }
  if (!WIFEXITED(status)) {
    *detail =
        "the probe died of signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return false;
  }
  int code = WEXITSTATUS(status);
  switch (code) {
    case kLoadFailed:
      *detail = "dlopen failed";
      return false;
    case kNoEntryPoints:
      *detail = "no cuInit / cuDeviceGetCount";
      return false;
    case kInitFailed:
      *detail = "cuInit(0) failed";
      return false;
    case kCountFailed:
      *detail = "cuDeviceGetCount failed";
      return false;
    case kNoDevice:
      *detail = "no device";
      return false;
    default:
      break;
  }
  if (code <= kDevicesBase) {
    *detail = "the probe exited with status " + std::to_string(code);
    return false;
  }
  int devices = code - kDevicesBase;
  *detail = std::to_string(devices) + (devices == 1 ? " device" : " devices");
  return true;
}

DriverSearch find_driver_for_executable(std::string_view request) {
  DriverSearchOptions options;
  options.self = executable_path();
  options.probe = probe_driver_in_child;
  return find_driver(request, options);
}

}  // namespace cusnap::common
