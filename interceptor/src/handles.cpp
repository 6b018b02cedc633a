#include "handles.h"

#include <algorithm>
#include <cstring>

#include "shim_runtime.h"

namespace cusnap::icpt {

HandleTable& HandleTable::instance() {
  static HandleTable* table = new HandleTable();  // never destroyed: used until exit
  return *table;
}

namespace {

// A per-thread, direct-mapped cache of table entries (see lookup_cached).
struct CachedFunction {
  uint64_t handle = 0;
  uint64_t generation = UINT64_MAX;  // never a real generation: empty slot
  bool known = false;
  LaunchFacts facts;
};
constexpr size_t kCacheSlots = 16;
thread_local CachedFunction t_cache[kCacheSlots];

size_t cache_slot(uint64_t handle) noexcept {
  // Handles are pointers: drop the alignment bits, mix in higher ones.
  return static_cast<size_t>((handle >> 4) ^ (handle >> 12)) % kCacheSlots;
}

}  // namespace

void HandleTable::put(uint64_t handle, FunctionInfo info) {
  std::unique_lock lock(mutex_);
  functions_[handle] = std::move(info);
  changed();
}

const LaunchFacts* HandleTable::lookup_cached(uint64_t handle) {
  CachedFunction& slot = t_cache[cache_slot(handle)];
  // Acquire pairs with changed(): a generation equal to the one the slot was filled under means
  // no change happened since, so the copy is still what the table holds.
  if (slot.handle == handle && slot.generation == generation_.load(std::memory_order_acquire)) {
    return slot.known ? &slot.facts : nullptr;
  }
  std::shared_lock lock(mutex_);
  uint64_t generation =
      generation_.load(std::memory_order_relaxed);  // stable while we hold the lock
  slot.generation = UINT64_MAX;  // invalid until filled: the copy below may throw
  slot.handle = handle;
  auto it = functions_.find(handle);
  slot.known = it != functions_.end();
  if (slot.known) {
    // Copy assignment reuses the slot's string and vector capacity: no allocation once warm.
    slot.facts.info = it->second;
    slot.facts.params_bytes = params_size(slot.facts.info.layout);
  }
  slot.generation = generation;
  return slot.known ? &slot.facts : nullptr;
}

void HandleTable::learn(uint64_t handle, const std::string& name,
                        const std::vector<ParamSlot>* layout, LayoutSource source) {
  std::unique_lock lock(mutex_);
  auto [it, inserted] = functions_.try_emplace(handle);
  FunctionInfo& info = it->second;
  bool change = inserted;
  if (info.name.empty() && !name.empty()) {
    info.name = name;
    change = true;
  }
  if (layout != nullptr) {
    info.layout = *layout;
    info.layout_source = source;
    info.layout_seq = UINT64_MAX;
    change = true;
  }
  // A function whose layout nobody can tell comes here on every launch: leave the caches alone.
  if (change) changed();
}

std::optional<FunctionInfo> HandleTable::find(uint64_t handle) const {
  std::shared_lock lock(mutex_);
  auto it = functions_.find(handle);
  if (it == functions_.end()) return std::nullopt;
  return it->second;
}

void HandleTable::put_module_layouts(uint64_t module, ImageLayouts layouts) {
  std::unique_lock lock(mutex_);
  module_layouts_[module] = std::move(layouts);
}

std::optional<ImageLayout> HandleTable::image_layout(uint64_t module,
                                                     const std::string& entry) const {
  std::shared_lock lock(mutex_);
  auto it = module_layouts_.find(module);
  if (it == module_layouts_.end()) return std::nullopt;
  auto found = it->second.find(entry);
  if (found == it->second.end()) return std::nullopt;
  return found->second;
}

bool HandleTable::first_warning(uint64_t handle) {
  std::unique_lock lock(mutex_);
  auto [it, inserted] = functions_.try_emplace(handle);
  bool first = !it->second.warned_no_layout;
  it->second.warned_no_layout = true;
  if (inserted) changed();
  return first;
}

void HandleTable::forget_module(uint64_t module) {
  std::unique_lock lock(mutex_);
  std::erase_if(functions_, [module](const auto& entry) { return entry.second.module == module; });
  module_layouts_.erase(module);
  changed();
}

void HandleTable::set_layout_seq(uint64_t handle, uint64_t seq) {
  std::unique_lock lock(mutex_);
  auto it = functions_.find(handle);
  if (it == functions_.end() || it->second.layout_source == LayoutSource::kUnknown) return;
  it->second.layout_seq = seq;
  changed();
}

std::optional<std::vector<ParamSlot>> query_param_layout(uint64_t handle, bool is_kernel) noexcept {
  constexpr size_t kMaxParams = 4096;  // 32,764 parameter bytes allow at most this many
  auto func_info = CUSNAP_REAL(cuFuncGetParamInfo);
  auto kernel_info = CUSNAP_REAL(cuKernelGetParamInfo);
  try {
    std::vector<ParamSlot> layout;
    for (size_t index = 0; index < kMaxParams; ++index) {
      size_t offset = 0, size = 0;
      CUresult result = CUDA_ERROR_NOT_SUPPORTED;
      if (is_kernel && kernel_info != nullptr) {
        result = kernel_info(reinterpret_cast<CUkernel>(handle), index, &offset, &size);
      } else if (!is_kernel && func_info != nullptr) {
        result = func_info(reinterpret_cast<CUfunction>(handle), index, &offset, &size);
      }
      if (result == CUDA_ERROR_INVALID_VALUE) return layout;  // past the last parameter
      if (result != CUDA_SUCCESS) return std::nullopt;
      layout.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(size)});
    }
    return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
}

std::string query_function_name(uint64_t handle, bool is_kernel) noexcept {
  const char* name = nullptr;
  if (is_kernel) {
    if (auto f = CUSNAP_REAL(cuKernelGetName);
        f && f(&name, reinterpret_cast<CUkernel>(handle)) == CUDA_SUCCESS) {
      return name != nullptr ? name : "";
    }
  }
  if (auto f = CUSNAP_REAL(cuFuncGetName);
      f && f(&name, reinterpret_cast<CUfunction>(handle)) == CUDA_SUCCESS) {
    return name != nullptr ? name : "";
  }
  return "";
}

size_t params_size(const std::vector<ParamSlot>& layout) noexcept {
  size_t total = 0;
  for (const ParamSlot& slot : layout)
    total = std::max<size_t>(total, size_t{slot.offset} + slot.size);
  return total;
}

void pack_params(const std::vector<ParamSlot>& layout, void** kernel_params,
                 uint8_t* out) noexcept {
  if (kernel_params == nullptr) return;
  for (size_t i = 0; i < layout.size(); ++i) {
    const void* from = kernel_params[i];
    if (from == nullptr) continue;
    uint8_t* to = out + layout[i].offset;
    // Most parameters are scalars or pointers: fixed-size copies compile to single moves.
    switch (layout[i].size) {
      case 4:
        std::memcpy(to, from, 4);
        break;
      case 8:
        std::memcpy(to, from, 8);
        break;
      default:
        std::memcpy(to, from, layout[i].size);
        break;
    }
  }
}

}  // namespace cusnap::icpt
