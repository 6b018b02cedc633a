// Deliberate fault and slowdown injection (docs/emulator.md, "Fault injection"): the rules of
// CUSNAP_EMU_INJECT, so that tools that compare replays (cusnap bisect, cusnap matrix) can be
// tested without real driver versions. The parser depends on nothing but common/ (the kernel
// name filter), so tests compile this file on its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cusnap/common/kernel_filter.h"

namespace cusnap::emu::driver {

struct InjectRule {
  enum class Kind : uint8_t { kFlip, kSlow };
  Kind kind = Kind::kFlip;
  std::string pattern;  // the REGEX as written
  double factor = 1.0;  // kSlow: the emulated time is multiplied by it
};

// What the rules do to one launch of a kernel.
struct InjectPlan {
  bool flip = false;  // flip bit 0 of the lowest-addressed byte the launch stores to global
  double slow = 1.0;  // product of the factors of every matching slow rule
  bool any() const { return flip || slow != 1.0; }
};

class InjectRules {
 public:
  // "flip:REGEX" and "slow:REGEX:FACTOR" entries joined by ';' or ','; empty text: no rules.
  // Empty optional and `error` set (naming the entry) when the text is malformed.
  static std::optional<InjectRules> parse(const std::string& text, std::string* error);

  bool empty() const { return rules_.empty(); }
  const std::vector<InjectRule>& rules() const { return rules_; }
  // REGEX is matched (std::regex_search) against the kernel's function name, as `--kernel-name
  // regex:REGEX` matches it (common/kernel_filter.h); `mangled` is the name the module has.
  InjectPlan plan_for(const std::string& mangled) const;

 private:
  std::vector<InjectRule> rules_;
  std::vector<common::KernelFilter> filters_;  // one per rule
};

// The process's rules, from CUSNAP_EMU_INJECT, parsed once. When the value is malformed the
// rules are empty and inject_error() says why (cuInit then fails with it).
const InjectRules& inject_rules();
const std::string& inject_error();

}  // namespace cusnap::emu::driver
