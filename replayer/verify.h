// Verification of a replay against what the application saw at capture time.
//
// --verify checksum (the default): every device-to-host copy the capture holds a checksum for
// (XXH3-64 of the bytes the application received) is repeated into a host buffer, hashed the
// same way and compared. Asynchronous copies are compared once they are known to be complete
// (at the next synchronisation the capture made, or at the end): the verdict does not depend on
// when it is computed, only the bytes do. The first mismatch (lowest call number) is reported
// with the launches that ran before it and the allocation the copy read from.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cusnap::replayer {

enum class VerifyMode : uint8_t { kNone, kChecksum };

enum class VerifyState : uint8_t {
  kMatched,
  kMismatched,
  kUnverified,  // no checksum in the capture, or verification off
};
const char* verify_state_name(VerifyState state);

struct LaunchRef {
  uint64_t seq = 0;
  uint64_t ordinal = 0;
  std::string kernel;
};

// A kernel the replay ran whose blocks can observe each other's order (the emulator says so:
// docs/emulator.md, "Determinism"), so its results on a device, which runs blocks in any order,
// can differ from run to run: a mismatch after it may be that, not a bug.
struct OrderDependentKernel {
  std::string kernel;
  uint64_t first_seq = 0;  // the first launch of it in the replay
  std::string reason;      // the instruction and PTX line that make it so
};

struct AllocationRef {
  uint64_t seq = 0;      // the allocation record
  uint64_t address = 0;  // captured base
  uint64_t size = 0;
  std::string kind;
};

struct CopyCheck {
  uint64_t seq = 0;
  uint64_t address = 0;  // captured source address
  uint64_t size = 0;
  VerifyState state = VerifyState::kUnverified;
  uint64_t expected = 0;
  uint64_t actual = 0;
  uint64_t launches_before = 0;            // launches replayed before this copy
  std::vector<LaunchRef> recent_launches;  // the last few of them, oldest first
  std::optional<AllocationRef> allocation;
  // Order-dependent kernels launched before this copy (known only on the emulator), oldest first.
  std::vector<OrderDependentKernel> order_dependent;
  std::string output;  // --save-outputs: the file (in ReplayResult::outputs_dir) with its bytes
};

struct VerifySummary {
  uint64_t matched = 0;
  uint64_t mismatched = 0;
  uint64_t unverified = 0;
  uint64_t order_dependent = 0;  // mismatches after an order-dependent kernel
  std::optional<CopyCheck> first_mismatch;
  bool ok() const { return mismatched == 0; }
};

// XXH3-64, the checksum the interceptor records for device-to-host copies.
uint64_t copy_checksum(std::span<const uint8_t> bytes);

// Counts and the first mismatch (lowest seq) of a set of checks.
VerifySummary summarize_checks(const std::vector<CopyCheck>& checks);

// "call 42: device-to-host copy of 4096 bytes from 0x7f.. (allocation of call 3, 4096 bytes)
//  expected xxh3 0x.., got 0x..; 2 launches before it: #0 vector_add (call 17), ..."
std::string describe_mismatch(const CopyCheck& check);

// "; order-dependent: ..." for a mismatch after `kernels` (empty when there are none).
std::string describe_order_dependence(const std::vector<OrderDependentKernel>& kernels);

}  // namespace cusnap::replayer
