// Kernel selection by name, as Nsight Compute's `--kernel-name` / `--kernel-name-base` /
// `--launch-skip` / `--launch-count` do it (the one home of the concept; `cusnap capture
// --snapshot-kernels` uses it, docs/capture.md "Memory snapshots").
//
//   filter "NAME"          the kernel's name in the chosen base equals NAME exactly
//   filter "regex:EXPR"    ECMAScript EXPR is found somewhere in that name (std::regex_search)
//   filter ""              every kernel
// Name bases: kFunction (default): the demangled name without its parameter list and without a
// leading return type ("void scale<float>(float*, int)" -> "scale<float>"; an extern "C" name is
// itself); kDemangled: the full demangled name; kMangled: the name as the module has it.
// Selection counts the launches whose name matches: the first `skip` are passed over, then
// `count` (0: all the rest) are selected.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace cusnap::common {

enum class KernelNameBase : uint8_t { kFunction, kDemangled, kMangled };

// Parses "function" / "demangled" / "mangled".
std::optional<KernelNameBase> parse_kernel_name_base(const std::string& text);

// The demangled form of a mangled name (the name itself when it is not a C++ mangled name).
std::string demangle_name(const std::string& mangled);
// The name in `base`.
std::string kernel_name_in_base(const std::string& mangled, KernelNameBase base);

class KernelFilter {
 public:
  // Empty optional + `error` set when the regex does not compile.
  static std::optional<KernelFilter> create(const std::string& filter, KernelNameBase base,
                                            std::string* error);
  KernelFilter(KernelFilter&&) noexcept;
  KernelFilter& operator=(KernelFilter&&) noexcept;
  ~KernelFilter();

  bool matches(const std::string& mangled_name) const;

 private:
  KernelFilter();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Nsight-style launch counting over a filter; not thread-safe (callers serialise).
class LaunchSelection {
 public:
  LaunchSelection(KernelFilter filter, uint64_t skip, uint64_t count)
      : filter_(std::move(filter)), skip_(skip), count_(count) {}
  // Called once per launch in order; true when this launch is selected.
  bool select(const std::string& mangled_name) {
    if (!filter_.matches(mangled_name)) return false;
    if (matched_++ < skip_) return false;
    if (count_ != 0 && selected_ >= count_) return false;
    ++selected_;
    return true;
  }
  // True once `count` launches have been selected (nothing more can be).
  bool exhausted() const { return count_ != 0 && selected_ >= count_; }
  // Launches whose name matched so far, and those of them selected.
  uint64_t matched() const { return matched_; }
  uint64_t selected() const { return selected_; }

 private:
  KernelFilter filter_;
  uint64_t skip_, count_;
  uint64_t matched_ = 0, selected_ = 0;
};

}  // namespace cusnap::common
