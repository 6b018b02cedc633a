// The one driver lookup (cusnap/common/driver_search.h) against fake driver files laid out in a
// temporary directory: search order, the override, the emulator's places, refusal of the cusnap
// interceptor (copies included), and errors that name every path tried.
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cusnap/common/driver_search.h"

namespace fs = std::filesystem;
using namespace cusnap::common;

namespace {

// A fresh directory under $TMPDIR (or /tmp), removed at the end of the test case, with the
// variables the search reads unset for the duration.
class Sandbox {
 public:
  Sandbox() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cusnap-search-XXXXXX";
    char* made = ::mkdtemp(pattern.data());
    REQUIRE(made != nullptr);
    root_ = fs::canonical(made).string();  // the search compares real paths
    ::unsetenv(kRealDriverVariable);
    ::unsetenv(kEmulatorPathVariable);
  }
  ~Sandbox() {
    ::unsetenv(kRealDriverVariable);
    ::unsetenv(kEmulatorPathVariable);
    ::unsetenv(kInterceptorDirVariable);
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  const std::string& root() const { return root_; }

  // Copies `from` to <root>/<relative> and returns that path.
  std::string put(const std::string& from, const std::string& relative) const {
    fs::path to = fs::path(root_) / relative.substr(relative.front() == '/' ? 1 : 0);
    fs::create_directories(to.parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    return to.string();
  }

  // Options that see only this sandbox: system paths under it, no emulator of our own tree.
  DriverSearchOptions options() const {
    DriverSearchOptions o;
    o.system_root = root_;
    o.build_emulator.clear();
    return o;
  }

 private:
  std::string root_;
};

bool mentions(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("library roles are read from the file's ELF note", "[driver_search]") {
  CHECK(library_role(CUSNAP_TEST_FAKE_nvidia) == LibraryRole::kOther);
  CHECK(library_role(CUSNAP_TEST_FAKE_interceptor) == LibraryRole::kInterceptor);
  CHECK(library_role(CUSNAP_TEST_FAKE_emulator) == LibraryRole::kEmulator);
  CHECK(library_role("/nonexistent/libcuda.so.1") == LibraryRole::kOther);
  Sandbox box;
  std::string text = box.root() + "/not_elf";
  std::ofstream(text)
      << "just text, long enough to be read as an ELF header if it were one ............";
  CHECK(library_role(text) == LibraryRole::kOther);
#ifdef CUSNAP_TEST_BUILT_INTERCEPTOR
  CHECK(library_role(CUSNAP_TEST_BUILT_INTERCEPTOR) == LibraryRole::kInterceptor);
#endif
#ifdef CUSNAP_TEST_BUILT_EMULATOR
  CHECK(library_role(CUSNAP_TEST_BUILT_EMULATOR) == LibraryRole::kEmulator);
#endif
}

TEST_CASE("auto: the system paths in order, the cusnap interceptor refused", "[driver_search]") {
  Sandbox box;
  std::string first = std::string(kSystemDriverPaths[0]);
  std::string second = std::string(kSystemDriverPaths[1]);
  std::string last = std::string(kSystemDriverPaths[std::size(kSystemDriverPaths) - 1]);

  std::string later = box.put(CUSNAP_TEST_FAKE_nvidia, last);
  auto found = find_driver("auto", box.options());
  REQUIRE(found.ok());
  CHECK(found.path == later);
  CHECK(found.reason == "auto: system driver");
  CHECK(found.role == LibraryRole::kOther);

  std::string earlier = box.put(CUSNAP_TEST_FAKE_nvidia, second);
  found = find_driver("auto", box.options());
  REQUIRE(found.ok());
  CHECK(found.path == earlier);

  // A copy of the interceptor at the first system path (someone installed the shim there) is
  // passed over, and said to be.
  std::string shim = box.put(CUSNAP_TEST_FAKE_interceptor, first);
  found = find_driver("auto", box.options());
  REQUIRE(found.ok());
  CHECK(found.path == earlier);
  REQUIRE(found.tried.size() == 2);
  CHECK(found.tried[0] == std::string(kRealDriverVariable) + ": unset");
  CHECK(found.tried[1] == shim + ": the cusnap interceptor, not a driver");
}

TEST_CASE("auto with a probe: a system driver without a device is passed over", "[driver_search]") {
  Sandbox box;
  std::string empty = box.put(CUSNAP_TEST_FAKE_nodevice, kSystemDriverPaths[0]);
  std::string good = box.put(CUSNAP_TEST_FAKE_nvidia, kSystemDriverPaths[2]);
  DriverSearchOptions options = box.options();
  options.probe = probe_driver_in_child;
  auto found = find_driver("auto", options);
  REQUIRE(found.ok());
  CHECK(found.path == good);
  CHECK(found.reason == "auto: system driver with 1 device");
  REQUIRE(found.tried.size() == 3);
  CHECK(found.tried[1] == empty + ": no device");
  CHECK(mentions(found.tried[2], std::string(kSystemDriverPaths[1]) + ": missing"));

  // Without a probe the first file wins: the interceptor never initialises a driver itself.
  found = find_driver("auto", box.options());
  REQUIRE(found.ok());
  CHECK(found.path == empty);

  std::string detail;
  CHECK_FALSE(probe_driver_in_child(box.root() + "/missing.so", &detail));
  CHECK(detail == "dlopen failed");
}

TEST_CASE("auto without a system driver falls back to the emulator", "[driver_search]") {
  Sandbox box;
  std::string emulator = box.put(CUSNAP_TEST_FAKE_emulator, "build/emulator/lib/libcuda.so.1");
  DriverSearchOptions options = box.options();
  options.build_emulator = emulator;
  options.self = box.root() + "/build/tests/common/a_test";  // a program of that build tree
  auto found = find_driver("auto", options);
  REQUIRE(found.ok());
  CHECK(found.path == emulator);
  CHECK(found.role == LibraryRole::kEmulator);
  CHECK(found.reason == "auto: no usable system driver, using the emulator");
}

TEST_CASE("auto finding nothing names every path it tried", "[driver_search]") {
  Sandbox box;
  DriverSearchOptions options = box.options();
  options.build_emulator = box.root() + "/build/emulator/lib/libcuda.so.1";
  options.self = box.root() + "/build/tests/common/a_test";
  auto found = find_driver("auto", options);
  REQUIRE_FALSE(found.ok());
  CHECK(found.path.empty());
  CHECK(mentions(found.error, "--driver auto: no usable NVIDIA driver and no cusnap emulator"));
  CHECK(mentions(found.error, std::string(kRealDriverVariable) + ": unset"));
  CHECK(mentions(found.error, std::string(kEmulatorPathVariable) + ": unset"));
  for (const char* path : kSystemDriverPaths) {
    CHECK(mentions(found.error, box.root() + path + ": missing"));
  }
  CHECK(mentions(found.error, options.build_emulator + ": missing"));
}

TEST_CASE("CUSNAP_REAL_DRIVER overrides the search, and must name a usable file",
          "[driver_search]") {
  Sandbox box;
  box.put(CUSNAP_TEST_FAKE_nvidia, kSystemDriverPaths[0]);
  std::string chosen = box.put(CUSNAP_TEST_FAKE_nvidia, "elsewhere/libcuda.so.1");
  ::setenv(kRealDriverVariable, chosen.c_str(), 1);
  auto found = find_driver("auto", box.options());
  REQUIRE(found.ok());
  CHECK(found.path == chosen);
  CHECK(found.reason == "auto: CUSNAP_REAL_DRIVER");

  std::string missing = box.root() + "/no/such/libcuda.so.1";
  ::setenv(kRealDriverVariable, missing.c_str(), 1);
  found = find_driver("auto", box.options());
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error, "CUSNAP_REAL_DRIVER names no usable driver"));
  CHECK(mentions(found.error, "CUSNAP_REAL_DRIVER=" + missing + ": missing"));

  ::setenv(kRealDriverVariable, "relative/libcuda.so.1", 1);
  found = find_driver("auto", box.options());
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error, "relative/libcuda.so.1: not an absolute path"));

  std::string shim = box.put(CUSNAP_TEST_FAKE_interceptor, "renamed/libnot_cuda.so");
  ::setenv(kRealDriverVariable, shim.c_str(), 1);
  found = find_driver("auto", box.options());
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error, shim + ": the cusnap interceptor, not a driver"));
}

TEST_CASE("emulator: the override, then the caller's cusnap tree, then the build tree",
          "[driver_search]") {
  Sandbox box;
  // Build tree and scripts/gpu-bundle: <root>/bin/cusnap, <root>/interceptor/lib,
  // <root>/emulator/lib.
  std::string tree_emulator = box.put(CUSNAP_TEST_FAKE_emulator, "tree/emulator/lib/libcuda.so.1");
  DriverSearchOptions options = box.options();
  options.self = box.root() + "/tree/bin/cusnap";
  auto found = find_emulator(options);
  REQUIRE(found.ok());
  CHECK(found.path == tree_emulator);
  CHECK(found.reason == "emulator");
  options.self = box.root() + "/tree/interceptor/lib/libcuda.so.1";
  found = find_driver("emulator", options);
  REQUIRE(found.ok());
  CHECK(found.path == tree_emulator);

  // Installed: <prefix>/bin/cusnap, <prefix>/lib/cusnap/{interceptor,emulator}/.
  std::string installed =
      box.put(CUSNAP_TEST_FAKE_emulator, "prefix/lib/cusnap/emulator/libcuda.so.1");
  options.self = box.root() + "/prefix/bin/cusnap";
  found = find_emulator(options);
  REQUIRE(found.ok());
  CHECK(found.path == installed);
  options.self = box.root() + "/prefix/lib/cusnap/interceptor/libcuda.so.1";
  found = find_emulator(options);
  REQUIRE(found.ok());
  CHECK(found.path == installed);

  // A program of the build tree outside the cusnap layouts (a test): the build tree's emulator;
  // a file there that is not the emulator does not count.
  options.self = box.root() + "/build/tests/app";
  std::string build = box.put(CUSNAP_TEST_FAKE_nvidia, "build/emulator/lib/libcuda.so.1");
  options.build_emulator = build;
  found = find_emulator(options);
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error, build + ": not the cusnap emulator"));
  box.put(CUSNAP_TEST_FAKE_emulator, "build/emulator/lib/libcuda.so.1");
  found = find_emulator(options);
  REQUIRE(found.ok());
  CHECK(found.path == build);

  // The override comes first, and must be the emulator.
  std::string override_path = box.put(CUSNAP_TEST_FAKE_emulator, "custom/libcuda.so.1");
  ::setenv(kEmulatorPathVariable, override_path.c_str(), 1);
  found = find_emulator(options);
  REQUIRE(found.ok());
  CHECK(found.path == override_path);
  std::string missing = box.root() + "/custom/missing.so.1";
  ::setenv(kEmulatorPathVariable, missing.c_str(), 1);
  found = find_driver("emulator", options);
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error,
                 "--driver emulator: CUSNAP_EMULATOR_PATH does not name the cusnap emulator"));
  CHECK(mentions(found.error, "CUSNAP_EMULATOR_PATH=" + missing + ": missing"));
  std::string shim = box.put(CUSNAP_TEST_FAKE_interceptor, "custom/shim.so.1");
  ::setenv(kEmulatorPathVariable, shim.c_str(), 1);
  found = find_emulator(options);
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error, shim + ": not the cusnap emulator"));
}

TEST_CASE("interceptor: the override, then the caller's build or installed tree, marked only",
          "[driver_search]") {
  Sandbox box;
  // Nothing there: the error names every place tried.
  auto found = find_interceptor(box.root() + "/prefix/bin/cusnap");
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error, box.root() + "/prefix/interceptor/lib/libcuda.so.1: missing"));
  CHECK(mentions(found.error, box.root() + "/prefix/lib/cusnap/interceptor/libcuda.so.1: missing"));

  // Installed: <prefix>/bin/cusnap finds <prefix>/lib/cusnap/interceptor/; a build tree's
  // <root>/interceptor/lib/ comes first for a <root>/bin/cusnap.
  std::string installed =
      box.put(CUSNAP_TEST_FAKE_interceptor, "prefix/lib/cusnap/interceptor/libcuda.so.1");
  found = find_interceptor(box.root() + "/prefix/bin/cusnap");
  REQUIRE(found.ok());
  CHECK(found.path == installed);
  CHECK(found.role == LibraryRole::kInterceptor);
  std::string tree = box.put(CUSNAP_TEST_FAKE_interceptor, "prefix/interceptor/lib/libcuda.so.1");
  CHECK(find_interceptor(box.root() + "/prefix/bin/cusnap").path == tree);

  // A libcuda.so.1 that is not the interceptor (NVIDIA's, the emulator) does not count.
  box.put(CUSNAP_TEST_FAKE_emulator, "other/lib/cusnap/interceptor/libcuda.so.1");
  found = find_interceptor(box.root() + "/other/bin/cusnap");
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error,
                 "other/lib/cusnap/interceptor/libcuda.so.1: not the cusnap "
                 "interceptor"));
  // Not in a bin/ directory: no tree to look in.
  CHECK_FALSE(find_interceptor(box.root() + "/prefix/cusnap").ok());

  // The override names the directory and replaces the tree lookup.
  ::setenv(kInterceptorDirVariable, (box.root() + "/prefix/lib/cusnap/interceptor").c_str(), 1);
  CHECK(find_interceptor("").path == installed);
  ::setenv(kInterceptorDirVariable, (box.root() + "/other/lib/cusnap/interceptor").c_str(), 1);
  found = find_interceptor(box.root() + "/prefix/bin/cusnap");
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error, "not the cusnap interceptor"));
}

TEST_CASE("a given path: that file, relative to the working directory, never the interceptor",
          "[driver_search]") {
  Sandbox box;
  std::string driver = box.put(CUSNAP_TEST_FAKE_nvidia, "given/libcuda.so.1");
  auto found = find_driver(driver, box.options());
  REQUIRE(found.ok());
  CHECK(found.path == driver);
  CHECK(found.reason == "given path");

  char cwd[4096];
  REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  REQUIRE(::chdir(box.root().c_str()) == 0);
  found = find_driver("given/libcuda.so.1", box.options());
  REQUIRE(::chdir(cwd) == 0);
  REQUIRE(found.ok());
  CHECK(fs::equivalent(found.path, driver));
  CHECK(found.path.front() == '/');

  std::string missing = box.root() + "/given/missing.so.1";
  found = find_driver(missing, box.options());
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error, "--driver " + missing + ": no usable driver"));
  CHECK(mentions(found.error, missing + ": missing"));

  found = find_driver(box.root(), box.options());
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error, box.root() + ": not a regular file"));

  std::string shim = box.put(CUSNAP_TEST_FAKE_interceptor, "given/shim.so.1");
  found = find_driver(shim, box.options());
  REQUIRE_FALSE(found.ok());
  CHECK(mentions(found.error, shim + ": the cusnap interceptor, not a driver"));
}

TEST_CASE("an installed or copied cusnap never falls back to the build tree's emulator",
          "[driver_search]") {
  Sandbox box;
  std::string build = box.put(CUSNAP_TEST_FAKE_emulator, "build/emulator/lib/libcuda.so.1");
  box.put(CUSNAP_TEST_FAKE_interceptor, "prefix/lib/cusnap/interceptor/libcuda.so.1");
  DriverSearchOptions options = box.options();
  options.build_emulator = build;
  for (const std::string& self :
       {box.root() + "/prefix/bin/cusnap",
        box.root() + "/prefix/lib/cusnap/interceptor/libcuda.so.1",
        box.root() + "/build-copy/bin/cusnap", box.root() + "/buildx/app", std::string()}) {
    INFO("self: " << self);
    options.self = self;
    for (const char* request : {"auto", "emulator"}) {
      auto found = find_driver(request, options);
      INFO(request << ": " << found.path << found.error);
      REQUIRE_FALSE(found.ok());
      CHECK(mentions(found.error, build + ": not used: "));
      CHECK(mentions(found.error, "never falls back to a build tree"));
    }
  }
  // Its own emulator, once installed, is what it uses.
  std::string installed =
      box.put(CUSNAP_TEST_FAKE_emulator, "prefix/lib/cusnap/emulator/libcuda.so.1");
  options.self = box.root() + "/prefix/lib/cusnap/interceptor/libcuda.so.1";
  auto found = find_driver("auto", options);
  REQUIRE(found.ok());
  CHECK(found.path == installed);
}
