// A fake "real driver" that carries the static CUDA runtime through all of its start-up
// look-ups (interceptor.cudart_lookups). Behind the shim it plays NVIDIA's driver:
//   * the empty-name probe gets success, a NULL pointer and CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
//     as documented for cuGetProcAddress_v2 (CUSNAP_FAKE_PROBE=not_found: CUDA_ERROR_NOT_FOUND
//     and a NULL pointer instead, the other answer drivers give; the runtime accepts both);
//   * cuInit succeeds and cuDriverGetVersion says 13000, so the runtime accepts the driver;
//   * every other name is "found": the answer is a callable function of its own for exactly
//     that request (name, version, flags) that returns CUDA_ERROR_NOT_SUPPORTED, so a pointer
//     passed through the shim untouched can be traced back to the request it answered
//     (cusnap_fake_request_of);
//   * cuGetExportTable refuses every table (CUDA_ERROR_NOT_SUPPORTED): the runtime makes all
//     its look-ups before it asks for one, and fails cleanly afterwards (cuda-facts.md).
// The exported cu* functions are answered with themselves, so a real driver's name-to-pointer
// consistency (dlsym and cuGetProcAddress agree) holds for them.
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kNotFound = 500;
constexpr int kNotSupported = 801;
constexpr int kDriverVersion = 13000;
constexpr int kSymbolNotFound = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND

// One distinct function per answered request. The store of I keeps every body different, so
// identical-code folding cannot merge two answers into one address.
constexpr int kPoolSize = 2048;
std::atomic<int> g_last_called{-1};

template <int I>
int pool_function() {
  g_last_called.store(I, std::memory_order_relaxed);
  return kNotSupported;
}

template <int... I>
constexpr std::array<void*, sizeof...(I)> make_pool(std::integer_sequence<int, I...>) {
  return {reinterpret_cast<void*>(&pool_function<I>)...};
}

const std::array<void*, kPoolSize> kPool = make_pool(std::make_integer_sequence<int, kPoolSize>{});

struct Requests {
  std::mutex mutex;
  std::array<std::string, kPoolSize> keys;  // "name@version/flags" answered by kPool[i]
  int used = 0;
};

Requests& requests() {
  static Requests* r = new Requests();  // never destroyed: answers may be called at exit
  return *r;
}

std::string request_key(const char* symbol, int version, unsigned long long flags) {
  return std::string(symbol) + "@" + std::to_string(version) + "/" + std::to_string(flags);
}

// The pool entry answering this request (the same one when it is asked again), or nullptr when
// the pool is exhausted.
void* pool_answer(const char* symbol, int version, unsigned long long flags) {
  std::string key = request_key(symbol, version, flags);
  Requests& r = requests();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (int i = 0; i < r.used; ++i) {
    if (r.keys[i] == key) return kPool[i];
  }
  if (r.used == kPoolSize) return nullptr;
  r.keys[r.used] = std::move(key);
  return kPool[r.used++];
}

}  // namespace

FAKE_EXPORT int cuInit(unsigned int) { return kSuccess; }

FAKE_EXPORT int cuDriverGetVersion(int* version) {
  if (version == nullptr) return kInvalidValue;
  *version = kDriverVersion;
  return kSuccess;
}

FAKE_EXPORT int cuGetExportTable(const void** table, const void*) {
  if (table != nullptr) *table = nullptr;
  return kNotSupported;
}

FAKE_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                    unsigned long long flags, int* status);

FAKE_EXPORT int cuGetProcAddress(const char* symbol, void** pfn, int version,
                                 unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}

FAKE_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                    unsigned long long flags, int* status) {
  if (symbol == nullptr || pfn == nullptr) return kInvalidValue;
  if (version > kDriverVersion) return kInvalidValue;  // newer than this driver, as documented
  void* answer = nullptr;
  if (symbol[0] == '\0') {
    *pfn = nullptr;
    if (status != nullptr) *status = kSymbolNotFound;
    const char* probe = std::getenv("CUSNAP_FAKE_PROBE");
    return probe != nullptr && std::strcmp(probe, "not_found") == 0 ? kNotFound : kSuccess;
  }
  if (std::strcmp(symbol, "cuInit") == 0) {
    answer = reinterpret_cast<void*>(&cuInit);
  } else if (std::strcmp(symbol, "cuDriverGetVersion") == 0) {
    answer = reinterpret_cast<void*>(&cuDriverGetVersion);
  } else if (std::strcmp(symbol, "cuGetExportTable") == 0) {
    answer = reinterpret_cast<void*>(&cuGetExportTable);
  } else if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    answer = version >= 12000 ? reinterpret_cast<void*>(&cuGetProcAddress_v2)
                              : reinterpret_cast<void*>(&cuGetProcAddress);
  } else {
    answer = pool_answer(symbol, version, flags);
  }
  *pfn = answer;
  if (status != nullptr) *status = answer != nullptr ? 0 : kSymbolNotFound;
  return kSuccess;
}

// Test introspection (not a driver entry point): the request ("name@version/flags") that `pfn`
// answered, or nullptr when `pfn` is not one of this fake's per-request answers.
FAKE_EXPORT const char* cusnap_fake_request_of(const void* pfn) {
  Requests& r = requests();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (int i = 0; i < r.used; ++i) {
    if (kPool[i] == pfn) return r.keys[i].c_str();
  }
  return nullptr;
}
