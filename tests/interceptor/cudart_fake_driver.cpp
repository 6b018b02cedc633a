// A fake "real driver" that carries the static CUDA runtime through all of its start-up
// look-ups (interceptor.cudart_lookups). Behind the shim it plays a driver that chooses its
// cuGetProcAddress answers differently from the toolkit headers:
//   * the empty-name probe gets success, a NULL pointer and CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
//     as documented for cuGetProcAddress_v2 (CUSNAP_FAKE_PROBE=not_found: CUDA_ERROR_NOT_FOUND
//     and a NULL pointer instead, the other answer drivers give; the runtime accepts both);
//   * cuInit succeeds and cuDriverGetVersion says 13000, so the runtime accepts the driver;
//     cuGetProcAddress answers itself as NVIDIA's driver does (the plain ABI before 12000);
//   * it exports every cu* entry point of the toolkit's stub libcuda.so
//   (generated_fake_exports.inc:
//     names only), each a function of its own returning CUDA_ERROR_NOT_SUPPORTED; every other
//     name is answered by the hand-written rule of choose_export() below, which looks only at
//     the name -- never at the requested version, and at the per-thread flag only to disobey it
//     for some names -- so for a large share of the runtime's requests it picks another ABI than
//     the headers would (the oldest, the newest, the other stream variant), and for a quarter of
//     the names it answers with a function that is no export at all (as a newer driver's new
//     ABI would be): a callable function of its own for exactly that request, so a pointer
//     passed through the shim untouched can be traced back to it (cusnap_fake_request_of);
//     cusnap_fake_choice_of says which export answered a request;
//   * cuGetExportTable refuses every table (CUDA_ERROR_NOT_SUPPORTED): the runtime makes all
//     its look-ups before it asks for one, and fails cleanly afterwards (cuda-facts.md).
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// The exported entry points: one distinct function each (the store keeps the bodies apart).
enum EntryIndex : int {
#define FAKE_ENTRY(name) kEntry_##name,
#include "generated_fake_exports.inc"
#undef FAKE_ENTRY
  kEntryCount
};

std::atomic<int> g_last_export{-1};

}  // namespace

#define FAKE_ENTRY(name)                                           \
  FAKE_EXPORT int name() {                                         \
    g_last_export.store(kEntry_##name, std::memory_order_relaxed); \
    return kNotSupported;                                          \
  }
#include "generated_fake_exports.inc"
#undef FAKE_ENTRY

namespace {

struct Export {
  const char* name;
  void* function;
};

const Export kExports[] = {
#define FAKE_ENTRY(name) {#name, reinterpret_cast<void*>(&name)},
#include "generated_fake_exports.inc"
#undef FAKE_ENTRY
};

bool is_stream_suffix(std::string_view rest) { return rest == "_ptsz" || rest == "_ptds"; }

// Whether `exported` is an ABI of `name`: name, name_v<N>, each optionally _ptsz/_ptds.
bool is_abi_of(std::string_view exported, std::string_view name) {
  if (exported.substr(0, name.size()) != name) return false;
  std::string_view rest = exported.substr(name.size());
  if (rest.empty() || is_stream_suffix(rest)) return true;
  if (rest.substr(0, 2) != "_v") return false;
  size_t digits = 2;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  return digits > 2 && (digits == rest.size() || is_stream_suffix(rest.substr(digits)));
}

int abi_number(std::string_view exported, std::string_view name) {
  std::string_view rest = exported.substr(name.size());
  if (rest.substr(0, 2) != "_v") return 1;
  return std::atoi(std::string(rest.substr(2)).c_str());
}

bool is_per_thread(std::string_view exported) {
  return exported.size() > 5 && is_stream_suffix(exported.substr(exported.size() - 5));
}

// This fake's own choice for a request, by a rule that ignores the version. The policy is a
// function of the name only (so one name is answered consistently): 0 the oldest ABI, default
// stream whatever the flags; 1 the newest ABI with the stream variant opposite to the one asked
// for; 2 the newest ABI, flags honoured; 3 no export at all (nullptr: a new ABI).
const Export* choose_export(std::string_view name, bool per_thread) {
  unsigned hash = 0;
  for (char c : name) hash = hash * 31u + static_cast<unsigned char>(c);
  unsigned policy = hash % 4u;
  if (policy == 3) return nullptr;
  std::vector<const Export*> candidates;
  for (const Export& e : kExports) {
    if (is_abi_of(e.name, name)) candidates.push_back(&e);
  }
  bool want_threaded = policy == 0 ? false : policy == 1 ? !per_thread : per_thread;
  const Export* best = nullptr;
  for (const Export* e : candidates) {
    if (is_per_thread(e->name) != want_threaded) continue;
    int abi = abi_number(e->name, name);
    if (best == nullptr ||
        (policy == 0 ? abi < abi_number(best->name, name) : abi > abi_number(best->name, name))) {
      best = e;
    }
  }
  if (best == nullptr && !candidates.empty()) best = candidates.front();  // only the other kind
  return best;
}

struct Choices {
  std::mutex mutex;
  std::vector<std::pair<std::string, const char*>> made;  // request key -> export name
};

Choices& choices() {
  static Choices* c = new Choices();  // never destroyed
  return *c;
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
  const char* chosen_name = nullptr;  // the export answering, nullptr for a pool answer
  if (std::strcmp(symbol, "cuInit") == 0) {
    answer = reinterpret_cast<void*>(&cuInit);
    chosen_name = "cuInit";
  } else if (std::strcmp(symbol, "cuDriverGetVersion") == 0) {
    answer = reinterpret_cast<void*>(&cuDriverGetVersion);
    chosen_name = "cuDriverGetVersion";
  } else if (std::strcmp(symbol, "cuGetExportTable") == 0) {
    answer = reinterpret_cast<void*>(&cuGetExportTable);
    chosen_name = "cuGetExportTable";
  } else if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    bool v2 = version >= 12000;
    answer = v2 ? reinterpret_cast<void*>(&cuGetProcAddress_v2)
                : reinterpret_cast<void*>(&cuGetProcAddress);
    chosen_name = v2 ? "cuGetProcAddress_v2" : "cuGetProcAddress";
  } else if (const Export* chosen = choose_export(symbol, (flags & 2) != 0)) {
    answer = chosen->function;
    chosen_name = chosen->name;
  } else {
    answer = pool_answer(symbol, version, flags);
  }
  if (chosen_name != nullptr) {
    Choices& c = choices();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.made.emplace_back(request_key(symbol, version, flags), chosen_name);
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

// Test introspection: the export that answered the request "name@version/flags", "" when the
// answer was no export (a pool function), nullptr when it was never asked.
FAKE_EXPORT const char* cusnap_fake_choice_of(const char* request) {
  Choices& c = choices();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const auto& [key, name] : c.made) {
    if (key == request) return name;
  }
  Requests& r = requests();
  std::lock_guard<std::mutex> pool_lock(r.mutex);
  for (int i = 0; i < r.used; ++i) {
    if (r.keys[i] == request) return "";
  }
  return nullptr;
}

// Test introspection: the export called last (through whatever pointer), nullptr when none was.
FAKE_EXPORT const char* cusnap_fake_last_export() {
  int index = g_last_export.load(std::memory_order_relaxed);
  return index >= 0 ? kExports[index].name : nullptr;
}
