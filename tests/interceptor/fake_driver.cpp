// A fake "real driver" for the cuGetProcAddress tests (interceptor.<case>, interceptor.proc_choice)
// whose answers deliberately differ from the toolkit headers, by a hand-written table
// (choose() below): the shim must hand back its wrapper of exactly the export the driver chose,
// pass a pointer that is none of the driver's exports through untouched, and leave the result
// and symbolStatus as the driver set them. Every export records that it was called
// (fake_driver_last_called), and cuGetProcAddress records the request it got
// (fake_driver_last_request), so the tests can see that the shim forwards flags and versions
// unchanged and that a call through the answer reaches the function the driver chose.
#include <cstdio>
#include <cstring>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kNotFound = 500;
constexpr int kNotSupported = 801;
constexpr int kSymbolFound = 0;           // CU_GET_PROC_ADDRESS_SUCCESS
constexpr int kSymbolNotFound = 1;        // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
constexpr int kVersionNotSufficient = 2;  // CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT

const char* g_last_called = "";
char g_last_request[256] = "";

int called(const char* name) {
  g_last_called = name;
  return kNotSupported;
}

// An entry point of a newer ABI: callable, but exported under no name the shim knows.
int future_entry_point() { return called("(future entry point)"); }

}  // namespace

FAKE_EXPORT int cuInit(unsigned int) {
  called("cuInit");
  return kSuccess;
}
FAKE_EXPORT int cuMemAlloc() { return called("cuMemAlloc"); }
FAKE_EXPORT int cuMemAlloc_v2() { return called("cuMemAlloc_v2"); }
FAKE_EXPORT int cuLaunchKernel() { return called("cuLaunchKernel"); }
FAKE_EXPORT int cuLaunchKernel_ptsz() { return called("cuLaunchKernel_ptsz"); }
FAKE_EXPORT int cuStreamBeginCapture() { return called("cuStreamBeginCapture"); }
FAKE_EXPORT int cuStreamBeginCapture_v2() { return called("cuStreamBeginCapture_v2"); }
FAKE_EXPORT int cuMemcpy() { return called("cuMemcpy"); }
FAKE_EXPORT int cuMemcpy_ptds() { return called("cuMemcpy_ptds"); }
FAKE_EXPORT int cuCtxSynchronize() { return called("cuCtxSynchronize"); }

FAKE_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                    unsigned long long flags, int* status);

FAKE_EXPORT int cuGetProcAddress(const char* symbol, void** pfn, int version,
                                 unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}

namespace {

// The fake's answers, on purpose not the headers' (which would give cuMemAlloc_v2 from 3020,
// cuLaunchKernel_ptsz only for the per-thread flag, cuStreamBeginCapture before 10010):
void* choose(const char* symbol, int version, unsigned long long flags) {
  bool per_thread = (flags & 2) != 0;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
  auto is = [symbol](const char* name) { return std::strcmp(symbol, name) == 0; };
  if (is("cuInit")) return reinterpret_cast<void*>(&cuInit);
  if (is("cuMemAlloc")) return reinterpret_cast<void*>(&cuMemAlloc);  // always the 32-bit ABI
  if (is("cuLaunchKernel")) {                                         // the stream variants swapped
    return per_thread ? reinterpret_cast<void*>(&cuLaunchKernel)
                      : reinterpret_cast<void*>(&cuLaunchKernel_ptsz);
  }
  if (is("cuStreamBeginCapture")) return reinterpret_cast<void*>(&cuStreamBeginCapture_v2);
  if (is("cuMemcpy")) {
    return per_thread ? reinterpret_cast<void*>(&cuMemcpy_ptds)
                      : reinterpret_cast<void*>(&cuMemcpy);
  }
  if (is("cuCtxSynchronize")) return reinterpret_cast<void*>(&cuCtxSynchronize);
  if (is("cuGetProcAddress")) {
    return version >= 12000 ? reinterpret_cast<void*>(&cuGetProcAddress_v2)
                            : reinterpret_cast<void*>(&cuGetProcAddress);
  }
  if (is("cuFutureEntryPoint") || is("cuCtxCreate")) {
    return reinterpret_cast<void*>(&future_entry_point);  // cuCtxCreate: a new ABI of a known name
  }
  return nullptr;
}

}  // namespace

FAKE_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                    unsigned long long flags, int* status) {
  if (symbol == nullptr || pfn == nullptr) return kInvalidValue;
  std::snprintf(g_last_request, sizeof g_last_request, "%s@%d/%llu", symbol, version, flags);
  if (std::strcmp(symbol, "cuVersionedLater") == 0) {  // exists, but only after `version`
    *pfn = nullptr;
    if (status != nullptr) *status = kVersionNotSufficient;
    return kNotFound;
  }
  void* answer = symbol[0] != '\0' ? choose(symbol, version, flags) : nullptr;
  *pfn = answer;
  if (status != nullptr) *status = answer != nullptr ? kSymbolFound : kSymbolNotFound;
  // The empty-name probe succeeds with NULL (as documented); other unknown names are not found.
  return answer != nullptr || symbol[0] == '\0' ? kSuccess : kNotFound;
}

// Test introspection (not driver entry points).
FAKE_EXPORT void* fake_driver_future_entry_point() {
  return reinterpret_cast<void*>(&future_entry_point);
}
FAKE_EXPORT const char* fake_driver_last_called() { return g_last_called; }
FAKE_EXPORT const char* fake_driver_last_request() { return g_last_request; }
