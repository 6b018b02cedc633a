// Which libcuda.so.1 cusnap runs on: the one driver lookup of `cusnap capture`, `cusnap replay`
// and the interceptor, so that `--driver auto` means the same driver to all three on one machine
// (docs/cli.md, "Driver selection", is the user's description of exactly this).
//
// A request is "auto", "emulator" or a path:
//   auto      1. $CUSNAP_REAL_DRIVER when set, the one override (an absolute path, which must be a
//                file and not the cusnap interceptor; anything else is an error naming it);
//             2. NVIDIA's driver: the first of kSystemDriverPaths that is a file, is not the cusnap
//                interceptor and, when the caller gives a probe (the CLI and the replayer do; the
//                interceptor never initialises a driver on its application's behalf), initialises
//                and reports a device;
//             3. the emulator, as for "emulator".
//   emulator  1. $CUSNAP_EMULATOR_PATH when set (it must be the cusnap emulator);
//             2. the emulator of the cusnap tree the searching program or library belongs to
//                (DriverSearchOptions::self): the build tree or a scripts/gpu-bundle copy of it,
//                <root>/{bin/cusnap, interceptor/lib/, emulator/lib/}, or an installed layout,
//                <prefix>/{bin/cusnap, lib/cusnap/interceptor/, lib/cusnap/emulator/};
//             3. the emulator of the build tree cusnap was compiled in (kBuildEmulatorPath),
//                only when `self` lies inside that build tree: an installed or copied cusnap
//                never falls back to a build tree (it may be another version, or gone).
//             A candidate of 2. or 3. counts when it is the cusnap emulator.
//   a path    that file (relative paths from the working directory), which must be a file and
//             not the cusnap interceptor.
// "The cusnap interceptor" and "the cusnap emulator" are recognised by the ELF note each of them
// carries (library_mark.h), read from the file without loading it, so a copy of the interceptor
// under another name or at a system path is refused as well. Nothing here dlopen()s a candidate
// except the probe the caller passes. Failures are values naming every path tried.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace cusnap::common {

inline constexpr const char* kRealDriverVariable = "CUSNAP_REAL_DRIVER";
inline constexpr const char* kEmulatorPathVariable = "CUSNAP_EMULATOR_PATH";

// Where distributions, NVIDIA's container toolkit and WSL put NVIDIA's driver, in search order.
// LD_LIBRARY_PATH is never searched: that is where `cusnap capture` puts the interceptor.
inline constexpr const char* kSystemDriverPaths[] = {
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
    "/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1",
    "/usr/local/nvidia/lib64/libcuda.so.1",
    "/usr/lib/wsl/lib/libcuda.so.1",
    "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
    "/usr/lib/libcuda.so.1",
};

// <build directory>/emulator/lib/libcuda.so.1 of the build this library was compiled in.
extern const char* const kBuildEmulatorPath;

// What a library file says it is (library_mark.h); kOther for NVIDIA's driver and anything
// unmarked, unreadable or not a 64-bit little-endian ELF file.
enum class LibraryRole : uint8_t { kOther, kInterceptor, kEmulator };
LibraryRole library_role(const std::string& path);

// A probe for auto's system drivers: true when the driver at `path` initialises and reports at
// least one device; `detail` says how many ("1 device") or why not.
using DriverProbe = std::function<bool(const std::string& path, std::string* detail)>;

struct DriverSearchOptions {
  // The cusnap executable or library doing the search (emulator step 2); empty: skip that step.
  std::string self;
  // Prefix of every kSystemDriverPaths entry ("" in production; tests point it at a directory).
  std::string system_root;
  // Emulator step 3 (used only when `self` lies in <tree> of <tree>/emulator/lib/libcuda.so.1);
  // empty: skip it.
  std::string build_emulator = kBuildEmulatorPath;
  DriverProbe probe;  // empty: system drivers are not probed
};

struct DriverSearch {
  std::string path;  // absolute; empty on failure
  std::string
      reason;  // how it was chosen: "given path", "emulator", "auto: CUSNAP_REAL_DRIVER", ...
  LibraryRole role = LibraryRole::kOther;
  std::vector<std::string> tried;  // "<path>: <why not>" for every candidate passed over
  std::string error;               // empty on success; else names the request and every path tried

  bool ok() const { return error.empty(); }
};

// The cusnap interceptor (the shim `cusnap capture` puts in front of the driver) of the tree
// `self` belongs to, the same trees as emulator step 2: $CUSNAP_INTERCEPTOR_DIR when set (the
// directory holding it), else <root>/interceptor/lib/ or <prefix>/lib/cusnap/interceptor/ with
// `self` at <root>/bin/cusnap. A candidate counts when its libcuda.so.1 carries the
// interceptor's mark. On success `path` is the libcuda.so.1 (its directory holds the LD_AUDIT
// helper too); an installed cusnap never reaches into a build tree.
inline constexpr const char* kInterceptorDirVariable = "CUSNAP_INTERCEPTOR_DIR";
DriverSearch find_interceptor(const std::string& self);

// Resolves a request ("auto", "emulator" or a path) as described above.
DriverSearch find_driver(std::string_view request, const DriverSearchOptions& options);

// The emulator alone (what "emulator" resolves to).
DriverSearch find_emulator(const DriverSearchOptions& options);

// The running executable's absolute path (/proc/self/exe), or empty.
std::string executable_path();

// The absolute path of the shared object (or executable) that contains `address`, or empty.
std::string library_path_of(const void* address);

// The probe the CLI and the replayer use: dlopen()s the driver in a forked child (so that neither
// a misbehaving driver nor CUDA state reaches the caller), calls cuInit(0) and cuDeviceGetCount.
// Declared here, defined in driver_probe.cpp: code that never probes does not link it.
bool probe_driver_in_child(const std::string& path, std::string* detail);

// What every cusnap executable asks (`cusnap capture`, `cusnap replay`, `cusnap driver`): the
// request resolved for the running executable (`self`), system drivers probed in a child.
// Defined in driver_probe.cpp, next to the probe.
DriverSearch find_driver_for_executable(std::string_view request);

}  // namespace cusnap::common
