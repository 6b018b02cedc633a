#include "handles.h"

#include <algorithm>
#include <cstring>

#include "shim_runtime.h"

namespace cusnap::icpt {

HandleTable& HandleTable::instance() {
  static HandleTable* table = new HandleTable();  // never destroyed: used until exit
  return *table;
}

void HandleTable::put(uint64_t handle, FunctionInfo info) {
  std::unique_lock lock(mutex_);
  functions_[handle] = std::move(info);
}

std::optional<FunctionInfo> HandleTable::find(uint64_t handle) const {
  std::shared_lock lock(mutex_);
  auto it = functions_.find(handle);
  if (it == functions_.end()) return std::nullopt;
  return it->second;
}

void HandleTable::set_layout(uint64_t handle, std::vector<ParamSlot> layout, uint64_t seq, LayoutSource source) {
  std::unique_lock lock(mutex_);
  FunctionInfo& info = functions_[handle];
  info.layout = std::move(layout);
  info.layout_source = source;
  info.layout_seq = seq;
}

void HandleTable::put_module_layouts(uint64_t module, ImageLayouts layouts) {
  std::unique_lock lock(mutex_);
  module_layouts_[module] = std::move(layouts);
}

std::optional<ImageLayout> HandleTable::image_layout(uint64_t module, const std::string& entry) const {
  std::shared_lock lock(mutex_);
  auto it = module_layouts_.find(module);
  if (it == module_layouts_.end()) return std::nullopt;
  auto found = it->second.find(entry);
  if (found == it->second.end()) return std::nullopt;
  return found->second;
}

bool HandleTable::first_warning(uint64_t handle) {
  std::unique_lock lock(mutex_);
  FunctionInfo& info = functions_[handle];
  bool first = !info.warned_no_layout;
  info.warned_no_layout = true;
  return first;
}

void HandleTable::forget_module(uint64_t module) {
  std::unique_lock lock(mutex_);
  std::erase_if(functions_, [module](const auto& entry) { return entry.second.module == module; });
  module_layouts_.erase(module);
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
    if (auto f = CUSNAP_REAL(cuKernelGetName); f && f(&name, reinterpret_cast<CUkernel>(handle)) == CUDA_SUCCESS) {
      return name != nullptr ? name : "";
    }
  }
  if (auto f = CUSNAP_REAL(cuFuncGetName); f && f(&name, reinterpret_cast<CUfunction>(handle)) == CUDA_SUCCESS) {
    return name != nullptr ? name : "";
  }
  return "";
}

std::vector<uint8_t> pack_params(const std::vector<ParamSlot>& layout, void** kernel_params) {
  size_t total = 0;
  for (const ParamSlot& slot : layout) total = std::max<size_t>(total, size_t{slot.offset} + slot.size);
  std::vector<uint8_t> bytes(total);
  if (kernel_params == nullptr) return bytes;
  for (size_t i = 0; i < layout.size(); ++i) {
    if (kernel_params[i] != nullptr) std::memcpy(bytes.data() + layout[i].offset, kernel_params[i], layout[i].size);
  }
  return bytes;
}

}  // namespace cusnap::icpt
