// cuGetProcAddress through the shim, against a fake driver (fake_driver.cpp) whose answers
// deliberately differ from the toolkit headers: the answer is the shim's wrapper of exactly the
// export the driver chose, a call through it reaches that export, flags and versions reach the
// driver unchanged, a pointer that is none of the driver's exports passes through untouched
// (logged once per name), and the result and symbolStatus are the driver's.
#include <dlfcn.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using GetProcV2 = int (*)(const char*, void**, int, unsigned long long, int*);
using GetProc = int (*)(const char*, void**, int, unsigned long long);
using Introspect = const char* (*)();

constexpr unsigned long long kLegacyStream = 1;     // CU_GET_PROC_ADDRESS_LEGACY_STREAM
constexpr unsigned long long kPerThreadStream = 2;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

struct Loaded {
  void* shim = nullptr;
  void* fake = nullptr;
  void* future_entry_point = nullptr;
  GetProcV2 get_proc = nullptr;
  GetProc get_proc_v1 = nullptr;
  Introspect last_called = nullptr;
  Introspect last_request = nullptr;
  std::string log_path;
};

const Loaded& loaded() {
  static Loaded handles = [] {
    Loaded l;
    ::unsetenv("CUSNAP_CAPTURE_OUTPUT");  // pass-through mode: nothing is written
    ::setenv("CUSNAP_REAL_DRIVER", CUSNAP_TEST_FAKE_DRIVER, 1);
    // The shim's log, to count its messages (read by the shim once, when it first logs).
    l.log_path = (std::filesystem::temp_directory_path() /
                  ("cusnap_proc_table_" + std::to_string(::getpid()) + ".log"))
                     .string();
    std::remove(l.log_path.c_str());
    ::setenv("CUSNAP_LOG_FILE", l.log_path.c_str(), 1);
    l.fake = ::dlopen(CUSNAP_TEST_FAKE_DRIVER, RTLD_NOW | RTLD_LOCAL);
    l.shim = ::dlopen(CUSNAP_TEST_SHIM, RTLD_NOW | RTLD_LOCAL);
    if (l.fake != nullptr) {
      auto future =
          reinterpret_cast<void* (*)()>(::dlsym(l.fake, "fake_driver_future_entry_point"));
      l.future_entry_point = future != nullptr ? future() : nullptr;
      l.last_called = reinterpret_cast<Introspect>(::dlsym(l.fake, "fake_driver_last_called"));
      l.last_request = reinterpret_cast<Introspect>(::dlsym(l.fake, "fake_driver_last_request"));
    }
    if (l.shim != nullptr) {
      l.get_proc = reinterpret_cast<GetProcV2>(::dlsym(l.shim, "cuGetProcAddress_v2"));
      l.get_proc_v1 = reinterpret_cast<GetProc>(::dlsym(l.shim, "cuGetProcAddress"));
    }
    return l;
  }();
  REQUIRE(handles.shim != nullptr);
  REQUIRE(handles.fake != nullptr);
  REQUIRE(handles.future_entry_point != nullptr);
  REQUIRE(handles.get_proc != nullptr);
  REQUIRE(handles.get_proc_v1 != nullptr);
  REQUIRE(handles.last_called != nullptr);
  REQUIRE(handles.last_request != nullptr);
  return handles;
}

struct Case {
  const char* name;
  int version;
  unsigned long long flags;
  const char* chosen;   // the export the fake driver answers with (fake_driver.cpp)
  const char* headers;  // what the toolkit headers would select, for the record
};

// Each differs from what the headers would select, except where noted.
const Case kCases[] = {
    {"cuMemAlloc", 3020, 0, "cuMemAlloc", "cuMemAlloc_v2"},
    {"cuMemAlloc", 13000, kLegacyStream, "cuMemAlloc", "cuMemAlloc_v2"},
    {"cuLaunchKernel", 7000, 0, "cuLaunchKernel_ptsz", "cuLaunchKernel"},
    {"cuLaunchKernel", 7000, kPerThreadStream, "cuLaunchKernel", "cuLaunchKernel_ptsz"},
    {"cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture_v2", "cuStreamBeginCapture"},
    {"cuMemcpy", 7000, kPerThreadStream, "cuMemcpy_ptds", "cuMemcpy_ptds"},  // agrees
    {"cuMemcpy", 7000, kLegacyStream, "cuMemcpy", "cuMemcpy"},               // agrees
    {"cuGetProcAddress", 11030, 0, "cuGetProcAddress", "cuGetProcAddress"},
    {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", "cuGetProcAddress_v2"},
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("cuGetProcAddress answers the wrapper of the export the driver chose") {
  const Loaded& l = loaded();
  for (const Case& c : kCases) {
    INFO(c.name << "@" << c.version << " flags=" << c.flags << ": the driver chose " << c.chosen
                << ", the headers say " << c.headers);
    void* expected = ::dlsym(l.shim, c.chosen);
    REQUIRE(expected != nullptr);
    void* pfn = nullptr;
    int status = -1;
    REQUIRE(l.get_proc(c.name, &pfn, c.version, c.flags, &status) == 0);
    CHECK(std::string(l.last_request()) ==
          std::string(c.name) + "@" + std::to_string(c.version) + "/" + std::to_string(c.flags));
    CHECK(status == 0);
    CHECK(pfn == expected);
    void* pfn_v1 = nullptr;
    REQUIRE(l.get_proc_v1(c.name, &pfn_v1, c.version, c.flags) == 0);
    CHECK(pfn_v1 == expected);
  }
}

TEST_CASE("a call through the answer reaches the export the driver chose") {
  const Loaded& l = loaded();
  for (const Case& c : kCases) {
    if (std::string(c.name) == "cuGetProcAddress") continue;
    INFO(c.name << "@" << c.version << " flags=" << c.flags << ": the driver chose " << c.chosen);
    void* pfn = nullptr;
    REQUIRE(l.get_proc(c.name, &pfn, c.version, c.flags, nullptr) == 0);
    REQUIRE(pfn != nullptr);
    // The fake ignores its arguments; zeros keep the wrappers' own reads harmless.
    using Call = int (*)(void*, void*, void*, void*, void*, void*);
    int result = reinterpret_cast<Call>(pfn)(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    CHECK(result == 801);  // the fake's CUDA_ERROR_NOT_SUPPORTED, returned unchanged
    CHECK(std::string(l.last_called()) == c.chosen);
  }
}

TEST_CASE("a pointer that is none of the driver's exports passes through untouched, logged once") {
  const Loaded& l = loaded();
  // A name the shim does not know, and a known name answered with a new ABI (no export of it).
  for (const char* name : {"cuFutureEntryPoint", "cuCtxCreate"}) {
    INFO(name);
    for (int version : {12000, 13000}) {
      for (unsigned long long flags : {0ull, kPerThreadStream}) {
        void* pfn = nullptr;
        int status = -1;
        REQUIRE(l.get_proc(name, &pfn, version, flags, &status) == 0);
        CHECK(status == 0);
        CHECK(pfn == l.future_entry_point);
        void* pfn_v1 = nullptr;
        REQUIRE(l.get_proc_v1(name, &pfn_v1, version, flags) == 0);
        CHECK(pfn_v1 == l.future_entry_point);
      }
    }
    std::string log = read_file(l.log_path);
    INFO("shim log:\n" << log);
    CHECK(count(log, std::string("cuGetProcAddress(") + name + ",") == 1);
  }
}

TEST_CASE("cuGetProcAddress keeps the driver's result, NULL and symbolStatus") {
  const Loaded& l = loaded();
  void* pfn = reinterpret_cast<void*>(1);
  int status = -1;
  // Empty-name probe: whatever the driver says is what the application gets.
  REQUIRE(l.get_proc("", &pfn, 13000, 0, &status) == 0);
  CHECK(pfn == nullptr);
  CHECK(status == 1);  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  pfn = reinterpret_cast<void*>(1);
  status = -1;
  CHECK(l.get_proc("cuNotARealEntryPoint", &pfn, 13000, 0, &status) == 500);
  CHECK(pfn == nullptr);
  CHECK(status == 1);
  pfn = reinterpret_cast<void*>(1);
  status = -1;
  CHECK(l.get_proc("cuVersionedLater", &pfn, 12000, kPerThreadStream, &status) == 500);
  CHECK(std::string(l.last_request()) == "cuVersionedLater@12000/2");
  CHECK(pfn == nullptr);
  CHECK(status == 2);  // CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
  pfn = reinterpret_cast<void*>(1);
  CHECK(l.get_proc_v1("cuVersionedLater", &pfn, 12000, 0) == 500);
  CHECK(pfn == nullptr);
}
