// Which launches a --kernel-name / --launch-skip / --launch-count filter selects: the one matcher
// of replay timing and extraction, so that a filter means the same to both (Nsight Compute's
// rules): REGEX is ECMAScript, searched in the mangled name and in its demangled form; an
// optional "regex:" prefix as Nsight Compute writes it is accepted; an empty REGEX matches every
// kernel. Of the matching launches, the first `skip` are passed over and then `count` are
// selected (0: all the rest).
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>

namespace cusnap::common {

class LaunchFilter {
 public:
  // nullopt (and *error set, naming the pattern) when the regular expression is invalid.
  static std::optional<LaunchFilter> create(const std::string& kernel_regex, uint64_t skip,
                                            uint64_t count, std::string* error);
  // True when the name matches the regular expression (skip and count not applied).
  bool matches(const std::string& mangled_name) const;
  // Called once per launch in capture order; true when this launch is selected.
  bool select(const std::string& mangled_name);

 private:
  std::optional<std::regex> regex_;
  uint64_t skip_ = 0;
  uint64_t count_ = 0;
  uint64_t matched_ = 0;
  uint64_t selected_ = 0;
};

// abi::__cxa_demangle, or the name itself when it is not a mangled C++ name.
std::string demangle(const std::string& name);

}  // namespace cusnap::common
