#include "replayer/verify.h"

#include <cstdio>

#include "cusnap/common/hex.h"
#include "cusnap/format/blob_id.h"

namespace cusnap::replayer {
namespace {

using common::hex;

}  // namespace

const char* verify_state_name(VerifyState state) {
  switch (state) {
    case VerifyState::kMatched:
      return "matched";
    case VerifyState::kMismatched:
      return "mismatched";
    case VerifyState::kUnverified:
      return "unverified";
  }
  return "?";
}

uint64_t copy_checksum(std::span<const uint8_t> bytes) { return format::checksum64(bytes); }

VerifySummary summarize_checks(const std::vector<CopyCheck>& checks) {
  VerifySummary summary;
  for (const CopyCheck& c : checks) {
    switch (c.state) {
      case VerifyState::kMatched:
        ++summary.matched;
        break;
      case VerifyState::kUnverified:
        ++summary.unverified;
        break;
      case VerifyState::kMismatched:
        ++summary.mismatched;
        if (!c.order_dependent.empty()) ++summary.order_dependent;
        if (!summary.first_mismatch || c.seq < summary.first_mismatch->seq)
          summary.first_mismatch = c;
        break;
    }
  }
  return summary;
}

std::string describe_mismatch(const CopyCheck& c) {
  std::string out = "call " + std::to_string(c.seq) + ": device-to-host copy of " +
                    std::to_string(c.size) + " bytes from " + hex(c.address);
  if (c.allocation) {
    out += " (" + c.allocation->kind + " allocation of call " + std::to_string(c.allocation->seq) +
           " at " + hex(c.allocation->address) + ", " + std::to_string(c.allocation->size) +
           " bytes)";
  }
  out += ": expected checksum " + hex(c.expected) + ", replay gave " + hex(c.actual) + "; " +
         std::to_string(c.launches_before) + " launch(es) before it";
  if (!c.recent_launches.empty()) {
    out += ", latest:";
    for (const LaunchRef& l : c.recent_launches) {
      out += " #" + std::to_string(l.ordinal) + " " + (l.kernel.empty() ? "?" : l.kernel) +
             " (call " + std::to_string(l.seq) + ")";
    }
  }
  return out + describe_order_dependence(c.order_dependent);
}

std::string describe_order_dependence(const std::vector<OrderDependentKernel>& kernels) {
  if (kernels.empty()) return {};
  std::string out = "; order-dependent: ";
  for (size_t i = 0; i < kernels.size(); ++i) {
    const OrderDependentKernel& k = kernels[i];
    out += (i ? "; " : "") + std::string("kernel ") + (k.kernel.empty() ? "?" : k.kernel) +
           " (first launched at call " + std::to_string(k.first_seq) + ") ran before it, " +
           k.reason;
  }
  return out +
         ". Its blocks observe each other's order, which a device chooses anew on every "
         "run, so its results can differ from the capture's without a bug";
}

}  // namespace cusnap::replayer
