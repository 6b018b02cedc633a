// What the shim knows about the application's code handles. CUfunction and CUkernel are kept in
// one table keyed by the handle value, because the CUDA runtime launches a CUkernel cast to
// CUfunction: a launch just looks its handle up, whichever call produced it.
//
// Parameter layouts come from the driver (cuFuncGetParamInfo / cuKernelGetParamInfo, 12.4+),
// asked right after the call that produced the handle and, if that fails (lazy loading), again
// after the first launch; when the driver cannot tell, from the module's image itself: a cubin's
// `.nv.info`, else a PTX `.entry` signature (code_layouts.h), read once when the module is
// loaded. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace cusnap::icpt {

struct ParamSlot {
  uint32_t offset = 0;
  uint32_t size = 0;
};

enum class LayoutSource : uint8_t { kUnknown, kDriverQuery, kNvInfo, kPtxSignature };

// A layout read from a code image (code_layouts.h), by kernel name.
struct ImageLayout {
  std::vector<ParamSlot> layout;
  LayoutSource source = LayoutSource::kUnknown;  // kNvInfo or kPtxSignature
};
using ImageLayouts = std::map<std::string, ImageLayout, std::less<>>;

struct FunctionInfo {
  std::string name;
  uint64_t module = 0;       // CUmodule or CUlibrary it came from (0 unknown)
  bool is_kernel = false;    // a CUkernel (library kernel), else a CUfunction
  LayoutSource layout_source = LayoutSource::kUnknown;
  std::vector<ParamSlot> layout;
  uint64_t layout_seq = UINT64_MAX;  // seq of the record that carried the layout
  bool warned_no_layout = false;
};

class HandleTable {
 public:
  static HandleTable& instance();

  void put(uint64_t handle, FunctionInfo info);
  std::optional<FunctionInfo> find(uint64_t handle) const;
  void set_layout(uint64_t handle, std::vector<ParamSlot> layout, uint64_t seq,
                  LayoutSource source = LayoutSource::kDriverQuery);
  // The layouts a module's image describes (code_layouts.h), kept for the fallback.
  void put_module_layouts(uint64_t module, ImageLayouts layouts);
  // The image's layout of `entry` in `module` (and where it came from); std::nullopt when unknown.
  std::optional<ImageLayout> image_layout(uint64_t module, const std::string& entry) const;
  // True the first time it is called for `handle` (to warn once per function).
  bool first_warning(uint64_t handle);
  // Drops the functions of an unloaded module or library.
  void forget_module(uint64_t module);

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<uint64_t, FunctionInfo> functions_;
  std::unordered_map<uint64_t, ImageLayouts> module_layouts_;
};

// Asks the real driver for the parameter layout of a function or kernel. std::nullopt when the
// driver cannot tell (no ParamInfo API, or not materialised yet); an empty vector is a kernel
// without parameters.
std::optional<std::vector<ParamSlot>> query_param_layout(uint64_t handle, bool is_kernel) noexcept;

// The entry name of a function (cuFuncGetName) or kernel (cuKernelGetName), "" when unknown.
std::string query_function_name(uint64_t handle, bool is_kernel) noexcept;

// Packs the arguments `kernel_params[i]` into one buffer laid out by `layout`.
std::vector<uint8_t> pack_params(const std::vector<ParamSlot>& layout, void** kernel_params);

}  // namespace cusnap::icpt
