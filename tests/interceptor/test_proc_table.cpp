// cuGetProcAddress through the shim, against a fake driver and the answers computed from
// driver_api.py's model (gen_expected_proc.py): ABI-exact wrappers, flags honoured, unknown names
// passed through untouched, the empty-name probe answered as the driver answers it.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

namespace {

struct Expected {
  const char* name;
  int version;
  unsigned long long flags;
  const char* symbol;
};

const Expected kExpected[] = {
#include "expected_proc.inc"
};

using GetProcV2 = int (*)(const char*, void**, int, unsigned long long, int*);
using GetProc = int (*)(const char*, void**, int, unsigned long long);

struct Loaded {
  void* shim = nullptr;
  void* fake = nullptr;
  void* fake_answer = nullptr;
};

const Loaded& loaded() {
  static Loaded handles = [] {
    Loaded l;
    ::unsetenv("CUSNAP_CAPTURE_OUTPUT");  // pass-through mode: nothing is written
    ::setenv("CUSNAP_REAL_DRIVER", CUSNAP_TEST_FAKE_DRIVER, 1);
    l.fake = ::dlopen(CUSNAP_TEST_FAKE_DRIVER, RTLD_NOW | RTLD_LOCAL);
    l.shim = ::dlopen(CUSNAP_TEST_SHIM, RTLD_NOW | RTLD_LOCAL);
    if (l.fake != nullptr) {
      auto answer = reinterpret_cast<void* (*)()>(::dlsym(l.fake, "fake_driver_answer"));
      l.fake_answer = answer != nullptr ? answer() : nullptr;
    }
    return l;
  }();
  return handles;
}

}  // namespace

TEST_CASE("the shim answers cuGetProcAddress_v2 with the wrapper of exactly the right symbol") {
  const Loaded& l = loaded();
  REQUIRE(l.shim != nullptr);
  REQUIRE(l.fake_answer != nullptr);
  auto get_proc = reinterpret_cast<GetProcV2>(::dlsym(l.shim, "cuGetProcAddress_v2"));
  auto get_proc_v1 = reinterpret_cast<GetProc>(::dlsym(l.shim, "cuGetProcAddress"));
  REQUIRE(get_proc != nullptr);
  REQUIRE(get_proc_v1 != nullptr);
  size_t checked = 0;
  for (const Expected& e : kExpected) {
    void* pfn = nullptr;
    int status = -1;
    INFO(e.name << "@" << e.version << " flags=" << e.flags << " expected " << e.symbol);
    REQUIRE(get_proc(e.name, &pfn, e.version, e.flags, &status) == 0);
    REQUIRE(status == 0);
    void* expected = e.symbol[0] != '\0' ? ::dlsym(l.shim, e.symbol) : l.fake_answer;
    REQUIRE(expected != nullptr);
    REQUIRE(pfn == expected);
    void* pfn_v1 = nullptr;
    REQUIRE(get_proc_v1(e.name, &pfn_v1, e.version, e.flags) == 0);
    REQUIRE(pfn_v1 == expected);
    ++checked;
  }
  CHECK(checked > 1000);
}

TEST_CASE("the CUDA runtime's start-up look-ups resolve as the runtime expects") {
  const Loaded& l = loaded();
  REQUIRE(l.shim != nullptr);
  auto get_proc = reinterpret_cast<GetProcV2>(::dlsym(l.shim, "cuGetProcAddress_v2"));
  REQUIRE(get_proc != nullptr);
  void* pfn = reinterpret_cast<void*>(1);
  int status = -1;
  // Empty-name probe: whatever the driver says is what the application gets.
  REQUIRE(get_proc("", &pfn, 13000, 0, &status) == 0);
  CHECK(pfn == nullptr);
  CHECK(status == 1);
  // Self look-ups.
  REQUIRE(get_proc("cuGetProcAddress", &pfn, 11030, 0, &status) == 0);
  CHECK(pfn == ::dlsym(l.shim, "cuGetProcAddress"));
  REQUIRE(get_proc("cuGetProcAddress", &pfn, 12000, 0, &status) == 0);
  CHECK(pfn == ::dlsym(l.shim, "cuGetProcAddress_v2"));
  // Per-thread default stream flag selects the _ptsz variant; the same name at two versions is
  // two ABIs.
  REQUIRE(get_proc("cuLaunchKernel", &pfn, 7000, 2, &status) == 0);
  CHECK(pfn == ::dlsym(l.shim, "cuLaunchKernel_ptsz"));
  REQUIRE(get_proc("cuLaunchKernel", &pfn, 7000, 0, &status) == 0);
  CHECK(pfn == ::dlsym(l.shim, "cuLaunchKernel"));
  REQUIRE(get_proc("cuStreamBeginCapture", &pfn, 10000, 0, &status) == 0);
  CHECK(pfn == ::dlsym(l.shim, "cuStreamBeginCapture"));
  REQUIRE(get_proc("cuStreamBeginCapture", &pfn, 10010, 0, &status) == 0);
  CHECK(pfn == ::dlsym(l.shim, "cuStreamBeginCapture_v2"));
  // Unknown names pass through untouched.
  REQUIRE(get_proc("cuNotARealEntryPoint", &pfn, 13000, 0, &status) == 0);
  CHECK(pfn == l.fake_answer);
}
