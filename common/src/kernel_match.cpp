#include "cusnap/common/kernel_match.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace cusnap::common {

std::optional<LaunchFilter> LaunchFilter::create(const std::string& kernel_regex, uint64_t skip,
                                                 uint64_t count, std::string* error) {
  LaunchFilter filter;
  filter.skip_ = skip;
  filter.count_ = count;
  std::string pattern = kernel_regex;
  if (pattern.rfind("regex:", 0) == 0) pattern = pattern.substr(6);
  if (!pattern.empty()) {
    try {
      filter.regex_.emplace(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      if (error != nullptr) *error = "--kernel-name '" + kernel_regex + "': " + e.what();
      return std::nullopt;
    }
  }
  return filter;
}

bool LaunchFilter::matches(const std::string& name) const {
  return !regex_ || std::regex_search(name, *regex_) || std::regex_search(demangle(name), *regex_);
}

bool LaunchFilter::select(const std::string& name) {
  if (!matches(name)) return false;
  if (matched_++ < skip_) return false;
  if (count_ != 0 && selected_ >= count_) return false;
  ++selected_;
  return true;
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

}  // namespace cusnap::common
