#include "cusnap/common/kernel_filter.h"

#include <cxxabi.h>

#include <cstdlib>
#include <regex>

namespace cusnap::common {

std::optional<KernelNameBase> parse_kernel_name_base(const std::string& text) {
  if (text == "function") return KernelNameBase::kFunction;
  if (text == "demangled") return KernelNameBase::kDemangled;
  if (text == "mangled") return KernelNameBase::kMangled;
  return std::nullopt;
}

std::string demangle_name(const std::string& mangled) {
  if (mangled.rfind("_Z", 0) != 0) return mangled;
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (out == nullptr || status != 0) {
    std::free(out);
    return mangled;
  }
  std::string result(out);
  std::free(out);
  return result;
}

namespace {

// "void ns::f<int>(float*, int)" -> "ns::f<int>": drops the parameter list (the last top-level
// parenthesised group) and a leading return type (text before the last top-level space).
std::string function_part(const std::string& demangled) {
  std::string name = demangled;
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      if (name[i] == ')') ++depth;
      if (name[i] == '(' && --depth == 0) {
        name.resize(i);
        break;
      }
    }
  }
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == ' ' && depth == 0) start = i + 1;
  }
  return name.substr(start);
}

}  // namespace

std::string kernel_name_in_base(const std::string& mangled, KernelNameBase base) {
  switch (base) {
    case KernelNameBase::kMangled:
      return mangled;
    case KernelNameBase::kDemangled:
      return demangle_name(mangled);
    case KernelNameBase::kFunction:
      break;
  }
  return function_part(demangle_name(mangled));
}

struct KernelFilter::Impl {
  KernelNameBase base = KernelNameBase::kFunction;
  bool all = false;
  std::string exact;
  std::optional<std::regex> regex;
};

KernelFilter::KernelFilter() : impl_(std::make_unique<Impl>()) {}
KernelFilter::KernelFilter(KernelFilter&&) noexcept = default;
KernelFilter& KernelFilter::operator=(KernelFilter&&) noexcept = default;
KernelFilter::~KernelFilter() = default;

std::optional<KernelFilter> KernelFilter::create(const std::string& filter, KernelNameBase base,
                                                 std::string* error) {
  KernelFilter out;
  out.impl_->base = base;
  if (filter.empty()) {
    out.impl_->all = true;
  } else if (filter.rfind("regex:", 0) == 0) {
    try {
      out.impl_->regex.emplace(filter.substr(6), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      if (error != nullptr) *error = "'" + filter + "': " + e.what();
      return std::nullopt;
    }
  } else {
    out.impl_->exact = filter;
  }
  return out;
}

bool KernelFilter::matches(const std::string& mangled_name) const {
  if (impl_->all) return true;
  std::string name = kernel_name_in_base(mangled_name, impl_->base);
  if (impl_->regex) return std::regex_search(name, *impl_->regex);
  return name == impl_->exact;
}

}  // namespace cusnap::common
