#include "proc_address.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hooks.h"
#include "log.h"
#include "shim_runtime.h"

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

// The driver's exports (and the shim's wrappers of them) by address, built once from g_real (filled
// by load_real_driver, which every wrapper has run before it gets here): sorted (address, id)
// pairs.
struct ExportIndex {
  std::vector<std::pair<uintptr_t, int>> by_address;

  ExportIndex() {
    for (int id = 0; id < kSymbolCount; ++id) {
      if (g_real[id] != nullptr)
        by_address.emplace_back(reinterpret_cast<uintptr_t>(g_real[id]), id);
      // A driver whose own references bind to the global scope may hand out the shim's wrapper
      // itself: that already is the wrapper of that export.
      by_address.emplace_back(reinterpret_cast<uintptr_t>(kWrappers[id]), id);
    }
    std::sort(by_address.begin(), by_address.end());
  }
};

const ExportIndex& export_index() {
  static const ExportIndex* index = new ExportIndex();  // never destroyed: used until the end
  return *index;
}

// Replaces the real driver's answer by the shim's wrapper of the export it is.
void substitute(const char* symbol, int version, cuuint64_t flags, void** pfn) {
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  int modelled = proc_symbol(symbol, version, per_thread);
  int id = export_at(*pfn, modelled);
  if (id < 0) {
    std::string key = std::string("proc:") + symbol;
    log_once(LogLevel::kWarn, key.c_str(),
             "cuGetProcAddress(%s, %d, flags=%llu): the driver answered %p, none of its exports "
             "the shim knows; passed through, its calls are not recorded",
             symbol, version, static_cast<unsigned long long>(flags), *pfn);
    return;
  }
  if (id != modelled && log_enabled(LogLevel::kDebug)) {
    std::string key = std::string("procdiff:") + symbol + "@" + std::to_string(version) + "/" +
                      std::to_string(flags);
    log_once(LogLevel::kDebug, key.c_str(),
             "cuGetProcAddress(%s, %d, flags=%llu): the driver chose %s, the headers suggest %s",
             symbol, version, static_cast<unsigned long long>(flags), kSymbolNames[id],
             modelled >= 0 ? kSymbolNames[modelled] : "nothing");
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

int export_at(const void* pfn, int preferred) noexcept {
  const auto& exports = export_index().by_address;
  auto address = reinterpret_cast<uintptr_t>(pfn);
  auto first = std::lower_bound(exports.begin(), exports.end(), std::make_pair(address, -1));
  int found = -1;
  for (auto it = first; it != exports.end() && it->first == address; ++it) {
    if (it->second == preferred) return preferred;
    if (found < 0) found = it->second;
  }
  return found;
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
