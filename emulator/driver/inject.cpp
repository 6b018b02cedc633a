// CUSNAP_EMU_INJECT: parsing (see inject.h). Applying the rules is the launch path's job
// (launch.cpp), which is the only place a kernel's stores and emulated time are known.
#include "driver/inject.h"

#include <cmath>
#include <cstdlib>
#include <mutex>

namespace cusnap::emu::driver {
namespace {

// Splits at ';' and ','; empty entries (a trailing separator, spaces only) are skipped.
std::vector<std::string> entries(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  auto flush = [&] {
    size_t first = current.find_first_not_of(" \t");
    if (first != std::string::npos) {
      size_t last = current.find_last_not_of(" \t");
      out.push_back(current.substr(first, last - first + 1));
    }
    current.clear();
  };
  for (char c : text) {
    if (c == ';' || c == ',') {
      flush();
    } else {
      current += c;
    }
  }
  flush();
  return out;
}

bool parse_factor(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v) || v <= 0) return false;
  *out = v;
  return true;
}

}  // namespace

std::optional<InjectRules> InjectRules::parse(const std::string& text, std::string* error) {
  InjectRules rules;
  for (const std::string& entry : entries(text)) {
    InjectRule rule;
    std::string rest;
    if (entry.rfind("flip:", 0) == 0) {
      rule.kind = InjectRule::Kind::kFlip;
      rule.pattern = entry.substr(5);
    } else if (entry.rfind("slow:", 0) == 0) {
      rule.kind = InjectRule::Kind::kSlow;
      rest = entry.substr(5);
      // The factor follows the last ':', so a REGEX may contain ':' (ns::kernel).
      size_t colon = rest.rfind(':');
      if (colon == std::string::npos) {
        *error = "'" + entry + "': slow needs slow:REGEX:FACTOR";
        return std::nullopt;
      }
      rule.pattern = rest.substr(0, colon);
      if (!parse_factor(rest.substr(colon + 1), &rule.factor)) {
        *error = "'" + entry + "': FACTOR '" + rest.substr(colon + 1) +
                 "' is not a positive finite number";
        return std::nullopt;
      }
    } else {
      *error = "'" + entry + "': not flip:REGEX or slow:REGEX:FACTOR";
      return std::nullopt;
    }
    if (rule.pattern.empty()) {
      *error = "'" + entry + "': empty REGEX (use . for every kernel)";
      return std::nullopt;
    }
    std::string regex_error;
    auto filter = common::KernelFilter::create("regex:" + rule.pattern,
                                               common::KernelNameBase::kFunction, &regex_error);
    if (!filter) {
      *error = "'" + entry + "': bad REGEX: " + regex_error;
      return std::nullopt;
    }
    rules.rules_.push_back(std::move(rule));
    rules.filters_.push_back(std::move(*filter));
  }
  return rules;
}

InjectPlan InjectRules::plan_for(const std::string& mangled) const {
  InjectPlan plan;
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (!filters_[i].matches(mangled)) continue;
    if (rules_[i].kind == InjectRule::Kind::kFlip) {
      plan.flip = true;
    } else {
      plan.slow *= rules_[i].factor;
    }
  }
  return plan;
}

namespace {

struct ProcessRules {
  InjectRules rules;
  std::string error;
};

const ProcessRules& process_rules() {
  static const ProcessRules parsed = [] {
    ProcessRules p;
    const char* text = std::getenv("CUSNAP_EMU_INJECT");
    if (text == nullptr) return p;
    std::string error;
    if (auto rules = InjectRules::parse(text, &error)) {
      p.rules = std::move(*rules);
    } else {
      p.error = "CUSNAP_EMU_INJECT=" + std::string(text) + ": " + error;
    }
    return p;
  }();
  return parsed;
}

}  // namespace

const InjectRules& inject_rules() { return process_rules().rules; }
const std::string& inject_error() { return process_rules().error; }

}  // namespace cusnap::emu::driver
