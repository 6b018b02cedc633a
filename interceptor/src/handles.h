// What the shim knows about the application's code handles. CUfunction and CUkernel are kept in
// one table keyed by the handle value, because the CUDA runtime launches a CUkernel cast to
// CUfunction: a launch just looks its handle up, whichever call produced it.
//
// Parameter layouts come from the driver (cuFuncGetParamInfo / cuKernelGetParamInfo, 12.4+),
// asked right after the call that produced the handle and, if that fails (lazy loading), again
// after the first launch; when the driver cannot tell, from the module's image itself: a cubin's
// `.nv.info`, else a PTX `.entry` signature (code_layouts.h), read once when the module is
// loaded. Thread-safe.
//
// Launch fast path: lookup_cached() answers from a small per-thread cache of copies, validated by
// a table-wide generation number that every change bumps, so a launch of a known function takes
// no lock, writes no shared cache line and allocates nothing (copies reuse their capacity).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cusnap/format/launch_record.h"

namespace cusnap::icpt {

// Where a parameter sits in the packed parameter buffer: the format's own type, so that a
// function's layout goes into launch records as it is.
using ParamSlot = format::LaunchParamSlot;

enum class LayoutSource : uint8_t { kUnknown, kDriverQuery, kNvInfo, kPtxSignature };

// A layout read from a code image (code_layouts.h), by kernel name.
struct ImageLayout {
  std::vector<ParamSlot> layout;
  LayoutSource source = LayoutSource::kUnknown;  // kNvInfo or kPtxSignature
};
using ImageLayouts = std::map<std::string, ImageLayout, std::less<>>;

struct FunctionInfo {
  std::string name;
  uint64_t module = 0;     // CUmodule or CUlibrary it came from (0 unknown)
  bool is_kernel = false;  // a CUkernel (library kernel), else a CUfunction
  LayoutSource layout_source = LayoutSource::kUnknown;
  std::vector<ParamSlot> layout;
  uint64_t layout_seq = UINT64_MAX;  // seq of the record that carried the layout
  bool warned_no_layout = false;
};

// What a launch needs to know of a function: its table entry, as copied into the calling thread's
// cache (HandleTable::lookup_cached), and the size of its parameter buffer.
struct LaunchFacts {
  FunctionInfo info;
  size_t params_bytes = 0;  // params_size(info.layout)
};

class HandleTable {
 public:
  static HandleTable& instance();

  void put(uint64_t handle, FunctionInfo info);
  std::optional<FunctionInfo> find(uint64_t handle) const;
  // The calling thread's copy of what the table knows about `handle` (nullptr: nothing), current
  // as of this call. Valid until the thread's next lookup_cached(); never shared between threads.
  const LaunchFacts* lookup_cached(uint64_t handle);
  // Learnt at launch time (the handle came from a call the shim did not see, or lazy loading):
  // adds the handle with `name` when it is unknown, fills an empty name, and sets the layout when
  // one is given.
  void learn(uint64_t handle, const std::string& name, const std::vector<ParamSlot>* layout,
             LayoutSource source);
  // The layouts a module's image describes (code_layouts.h), kept for the fallback.
  void put_module_layouts(uint64_t module, ImageLayouts layouts);
  // The image's layout of `entry` in `module` (and where it came from); std::nullopt when unknown.
  std::optional<ImageLayout> image_layout(uint64_t module, const std::string& entry) const;
  // True the first time it is called for `handle` (to warn once per function).
  bool first_warning(uint64_t handle);
  // Drops the functions of an unloaded module or library.
  void forget_module(uint64_t module);
  // A capture range's file restated the record that carried `handle`'s layout at `seq`
  // (capture_range.h): later launch records name that one.
  void set_layout_seq(uint64_t handle, uint64_t seq);

 private:
  // Called with mutex_ held exclusively after functions_ changed: invalidates every thread's cache.
  void changed() noexcept { generation_.fetch_add(1, std::memory_order_release); }

  mutable std::shared_mutex mutex_;
  std::atomic<uint64_t> generation_{0};
  std::unordered_map<uint64_t, FunctionInfo> functions_;
  std::unordered_map<uint64_t, ImageLayouts> module_layouts_;
};

// Asks the real driver for the parameter layout of a function or kernel. std::nullopt when the
// driver cannot tell (no ParamInfo API, or not materialised yet); an empty vector is a kernel
// without parameters.
std::optional<std::vector<ParamSlot>> query_param_layout(uint64_t handle, bool is_kernel) noexcept;

// The entry name of a function (cuFuncGetName) or kernel (cuKernelGetName), "" when unknown.
std::string query_function_name(uint64_t handle, bool is_kernel) noexcept;

// Bytes of the parameter buffer `layout` describes (end of its last slot).
size_t params_size(const std::vector<ParamSlot>& layout) noexcept;
// Packs the arguments `kernel_params[i]` into `out` (params_size(layout) bytes, zeroed).
void pack_params(const std::vector<ParamSlot>& layout, void** kernel_params, uint8_t* out) noexcept;

}  // namespace cusnap::icpt
