#include "proc_address.h"

#include <algorithm>
#include <string>

#include "hooks.h"
#include "log.h"

namespace cusnap::icpt {
namespace {

struct ProcEntry {
  const char* name;
  int version;
  bool per_thread;
  SymbolId id;
};

const ProcEntry kProcTable[] = {
#include "generated_proc_table.inc"
};

// Replaces the real driver's answer by the shim's wrapper of the same ABI.
void substitute(const char* symbol, int version, cuuint64_t flags, void** pfn) {
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  int id = proc_symbol(symbol, version, per_thread);
  if (id < 0) {
    std::string key =
        std::string("proc:") + symbol + "@" + std::to_string(version) + "/" + std::to_string(flags);
    log_once(
        LogLevel::kInfo, key.c_str(),
        "cuGetProcAddress(%s, %d, flags=%llu): not in the shim's table, passed through unrecorded",
        symbol, version, static_cast<unsigned long long>(flags));
    return;
  }
  void* real = *pfn;
  if (g_real[id] == nullptr) {
    // The driver answers for a symbol it does not export: route the wrapper to its answer.
    __atomic_store_n(&g_real[id], real, __ATOMIC_RELEASE);
  } else if (g_real[id] != real && log_enabled(LogLevel::kDebug)) {
    std::string key = std::string("procdiff:") + kSymbolNames[id];
    log_once(LogLevel::kDebug, key.c_str(),
             "cuGetProcAddress(%s, %d): driver answered %p, export %s is %p", symbol, version, real,
             kSymbolNames[id], g_real[id]);
  }
  *pfn = kWrappers[id];
}

}  // namespace

int proc_symbol(std::string_view name, int version, bool per_thread) noexcept {
  auto first = std::lower_bound(
      std::begin(kProcTable), std::end(kProcTable), name,
      [](const ProcEntry& entry, std::string_view key) { return entry.name < key; });
  const ProcEntry* best_default = nullptr;
  const ProcEntry* best_per_thread = nullptr;
  for (auto it = first; it != std::end(kProcTable) && it->name == name; ++it) {
    if (it->version > version) continue;
    const ProcEntry*& best = it->per_thread ? best_per_thread : best_default;
    if (best == nullptr || it->version > best->version) best = &*it;
  }
  if (per_thread && best_per_thread != nullptr) return best_per_thread->id;
  if (best_default != nullptr) return best_default->id;
  return -1;
}

namespace hooks {

CUSNAP_CUSTOM(cuGetProcAddress)
(CallScope& call, const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  auto real = CUSNAP_REAL(cuGetProcAddress);
  if (real == nullptr) return call.missing();
  CUresult result = real(symbol, pfn, cudaVersion, flags);
  if (result == CUDA_SUCCESS && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
    call.guard([&] { substitute(symbol, cudaVersion, flags, pfn); });
  }
  return result;
}

CUSNAP_CUSTOM(cuGetProcAddress_v2)
(CallScope& call, const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
 CUdriverProcAddressQueryResult* symbolStatus) {
  auto real = CUSNAP_REAL(cuGetProcAddress_v2);
  if (real == nullptr) return call.missing();
  CUresult result = real(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (result == CUDA_SUCCESS && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
    call.guard([&] { substitute(symbol, cudaVersion, flags, pfn); });
  }
  return result;
}

}  // namespace hooks

}  // namespace cusnap::icpt
