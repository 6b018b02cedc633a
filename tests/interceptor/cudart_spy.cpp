// A "spy" libcuda.so.1 for interceptor.cudart_lookups: it sits in front of the shim
// (runtime -> spy -> shim -> fake driver) and logs every cuGetProcAddress answer exactly as the
// runtime receives it, without any test hook inside the shim.
//
// The static CUDA runtime dlopens "libcuda.so.1" (the spy, first on LD_LIBRARY_PATH) and dlsyms
// only cuGetProcAddress_v2; the spy forwards it to the shim (dlopened by the absolute path in
// CUSNAP_SPY_SHIM). The runtime then asks for cuGetProcAddress itself (at 11030 and 12000) and
// makes every later look-up through the pointers it got, which would bypass the spy. So when
// the shim answers such a self-look-up with its own cuGetProcAddress or cuGetProcAddress_v2, the
// spy logs that answer and hands the runtime a forwarder of the same ABI that calls exactly the
// pointer the shim returned. Every other answer reaches the runtime unchanged.
//
// One line per request in CUSNAP_SPY_LOG, tab-separated:
//   entry  symbol  version  flags  result  status  kind  answer  chosen
// entry: the spy entry point it came through (dlsym_v1, dlsym_v2, self_v1, self_v2);
// status: the symbolStatus written (-1 for the v1 ABI); kind/answer: "null -", "shim <exported
// symbol>" (dladdr found the exact start of a shim symbol), "shim-inexact <sym+offset>",
// "fake <name@version/flags>" (the fake driver's answer to that request, passed through), or
// "other <object path>"; chosen: the export the fake driver chose for that request
// (cusnap_fake_choice_of), "-" when it answered with no export, "?" when it was never asked.
#include <dlfcn.h>
#include <stdlib.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#define SPY_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using GetProcV1 = int (*)(const char*, void**, int, unsigned long long);
using GetProcV2 = int (*)(const char*, void**, int, unsigned long long, int*);
using RequestOf = const char* (*)(const void*);
using ChoiceOf = const char* (*)(const char*);

constexpr int kNotInitialized = 3;  // CUDA_ERROR_NOT_INITIALIZED

std::string real_path(const char* path) {
  if (path == nullptr) return {};
  char* resolved = ::realpath(path, nullptr);
  if (resolved == nullptr) return path;
  std::string result = resolved;
  std::free(resolved);
  return result;
}

struct Spy {
  std::mutex mutex;
  FILE* log = nullptr;
  void* shim = nullptr;
  std::string shim_path;
  std::string fake_path;
  RequestOf fake_request_of = nullptr;
  ChoiceOf fake_choice_of = nullptr;
  GetProcV1 shim_v1 = nullptr;
  GetProcV2 shim_v2 = nullptr;
  std::atomic<GetProcV1> self_v1{nullptr};  // what the shim answered for the self-look-ups
  std::atomic<GetProcV2> self_v2{nullptr};
};

Spy& spy() {
  static Spy* s = [] {
    auto* state = new Spy();  // never destroyed: the runtime may look up during exit
    const char* shim = std::getenv("CUSNAP_SPY_SHIM");
    const char* log = std::getenv("CUSNAP_SPY_LOG");
    if (log != nullptr) state->log = std::fopen(log, "w");
    if (shim != nullptr && shim[0] == '/') {
      state->shim = ::dlopen(shim, RTLD_NOW | RTLD_LOCAL);
      state->shim_path = real_path(shim);
    }
    if (state->shim == nullptr) {
      std::fprintf(stderr, "cudart_spy: cannot load the shim from CUSNAP_SPY_SHIM=%s: %s\n",
                   shim != nullptr ? shim : "(unset)", ::dlerror());
    } else {
      state->shim_v1 = reinterpret_cast<GetProcV1>(::dlsym(state->shim, "cuGetProcAddress"));
      state->shim_v2 = reinterpret_cast<GetProcV2>(::dlsym(state->shim, "cuGetProcAddress_v2"));
    }
    state->fake_path = real_path(std::getenv("CUSNAP_REAL_DRIVER"));
    return state;
  }();
  return *s;
}

// The shim opened the fake by this same path; finds its introspection entry points there.
void find_fake(Spy& s) {
  if (s.fake_request_of != nullptr || s.fake_path.empty()) return;
  void* fake = ::dlopen(s.fake_path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (fake == nullptr) return;
  s.fake_request_of = reinterpret_cast<RequestOf>(::dlsym(fake, "cusnap_fake_request_of"));
  s.fake_choice_of = reinterpret_cast<ChoiceOf>(::dlsym(fake, "cusnap_fake_choice_of"));
}

// What the fake chose for the request (see the file comment).
std::string chosen_by_fake(Spy& s, const char* symbol, int version, unsigned long long flags) {
  find_fake(s);
  if (s.fake_choice_of == nullptr || symbol == nullptr) return "?";
  std::string key =
      std::string(symbol) + "@" + std::to_string(version) + "/" + std::to_string(flags);
  const char* chosen = s.fake_choice_of(key.c_str());
  if (chosen == nullptr) return "?";
  return chosen[0] == '\0' ? "-" : chosen;
}

// "kind\tanswer" for a pointer the runtime is about to receive.
std::string describe(Spy& s, void* pfn) {
  if (pfn == nullptr) return "null\t-";
  Dl_info info{};
  if (::dladdr(pfn, &info) == 0 || info.dli_fname == nullptr) return "other\t(unmapped)";
  std::string object = real_path(info.dli_fname);
  if (object == s.shim_path) {
    if (info.dli_sname != nullptr && info.dli_saddr == pfn)
      return std::string("shim\t") + info.dli_sname;
    bool named = info.dli_sname != nullptr;
    const void* base = named ? info.dli_saddr : info.dli_fbase;
    std::uintptr_t offset =
        reinterpret_cast<std::uintptr_t>(pfn) - reinterpret_cast<std::uintptr_t>(base);
    return std::string("shim-inexact\t") + (named ? info.dli_sname : "(object base)") + "+" +
           std::to_string(offset);
  }
  if (!s.fake_path.empty() && object == s.fake_path) {
    const char* request = s.fake_request_of != nullptr ? s.fake_request_of(pfn) : nullptr;
    return std::string("fake\t") + (request != nullptr ? request : "?");
  }
  return "other\t" + object;
}

int spy_v1(const char* symbol, void** pfn, int version, unsigned long long flags);
int spy_v2(const char* symbol, void** pfn, int version, unsigned long long flags, int* status);

// Logs one answer and, for a self-look-up the shim answered with its own entry point, swaps in
// the spy's forwarder of the same ABI (see the file comment).
void observe(const char* entry, const char* symbol, void** pfn, int version,
             unsigned long long flags, int result, const int* status) {
  Spy& s = spy();
  std::lock_guard<std::mutex> lock(s.mutex);
  void* answer = pfn != nullptr ? *pfn : nullptr;
  find_fake(s);
  std::string what = describe(s, answer);
  std::string chosen = chosen_by_fake(s, symbol, version, flags);
  if (s.log != nullptr) {
    std::fprintf(s.log, "%s\t%s\t%d\t%llu\t%d\t%d\t%s\t%s\n", entry,
                 symbol != nullptr ? symbol : "(null)", version, flags, result,
                 status != nullptr ? *status : -1, what.c_str(), chosen.c_str());
    std::fflush(s.log);
  }
  if (result != 0 || answer == nullptr || symbol == nullptr ||
      std::strcmp(symbol, "cuGetProcAddress") != 0)
    return;
  if (what == "shim\tcuGetProcAddress") {
    s.self_v1.store(reinterpret_cast<GetProcV1>(answer));
    *pfn = reinterpret_cast<void*>(&spy_v1);
  } else if (what == "shim\tcuGetProcAddress_v2") {
    s.self_v2.store(reinterpret_cast<GetProcV2>(answer));
    *pfn = reinterpret_cast<void*>(&spy_v2);
  }
}

int spy_v1(const char* symbol, void** pfn, int version, unsigned long long flags) {
  GetProcV1 target = spy().self_v1.load();
  if (target == nullptr) return kNotInitialized;
  int result = target(symbol, pfn, version, flags);
  observe("self_v1", symbol, pfn, version, flags, result, nullptr);
  return result;
}

int spy_v2(const char* symbol, void** pfn, int version, unsigned long long flags, int* status) {
  GetProcV2 target = spy().self_v2.load();
  if (target == nullptr) return kNotInitialized;
  int result = target(symbol, pfn, version, flags, status);
  observe("self_v2", symbol, pfn, version, flags, result, status);
  return result;
}

}  // namespace

SPY_EXPORT int cuGetProcAddress(const char* symbol, void** pfn, int version,
                                unsigned long long flags) {
  GetProcV1 target = spy().shim_v1;
  if (target == nullptr) return kNotInitialized;
  int result = target(symbol, pfn, version, flags);
  observe("dlsym_v1", symbol, pfn, version, flags, result, nullptr);
  return result;
}

SPY_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                   unsigned long long flags, int* status) {
  GetProcV2 target = spy().shim_v2;
  if (target == nullptr) return kNotInitialized;
  int result = target(symbol, pfn, version, flags, status);
  observe("dlsym_v2", symbol, pfn, version, flags, result, status);
  return result;
}
