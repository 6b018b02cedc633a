// `cusnap redact`: a capture whose data payloads are replaced by seeded data of the same size, so
// that it can leave the building (docs/redact.md).
//
// Replaced: the bytes of host-to-device copy payloads (Memcpy.payload, DeferredResult.payload)
// and of memory snapshot chunks (device memory, module variables included). Kept: every 8-byte
// aligned word whose value falls inside (or at the end of) a range some record of the capture
// allocated or looked up (format/snapshot_ranges.h's rule of which records make ranges): device
// pointers, kept as structure; the allocations --keep-alloc names and those --keep-kernel-inputs'
// launches get pointers to in their parameters; code images, launch parameters and every other
// record field. Header: command line, environment values, host name, working directory, driver
// path, capture option values, module file paths and an extract's source path are blanked, or
// replaced by salted hashes with a salt. The replacement of the byte at device address A
// depends only on the seed and A, so the same input and seed give the same output file.
//
// Expectations: a redacted capture's device-to-host checksums and snapshot chunks describe the
// original data. They are recomputed ("resealed") by replaying the redacted capture on the
// reference driver (the emulator by default) and recorded so; when that replay fails, they are
// dropped (the capture then verifies nothing). RedactInfo says which.
//
// --verify CONDITION (condition.h): after redacting, the condition is decided on the redacted
// (resealed) capture; when it does not hold, original bytes are brought back by delta debugging
// (ddmin over pieces of the payloads, then over halves of the pieces kept, down to 8 bytes)
// until it does, and exactly those ranges are reported and recorded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cusnap/common/kernel_filter.h"
#include "cusnap/format/status.h"
#include "cusnap/reduce/condition.h"

namespace cusnap::reduce {

inline constexpr uint64_t kDefaultRedactSeed = 0x6375736e61707264ull;  // "cusnaprd"

struct RedactOptions {
  uint64_t seed = kDefaultRedactSeed;
  std::optional<std::string> salt;  // header fields as salted hashes (else blanked)
  // Code images (docs/redact.md, "Code images"): PTX comments and .file/.loc directives removed;
  // kernel and variable names replaced by salted hashes (the salt, else the seed) in every PTX
  // image and every record and header field that names them. Either leaves cubins out of
  // fatbins (the PTX stays, the driver JIT-compiles it) and refuses an image with no PTX.
  bool strip_ptx_comments = false;
  bool hash_names = false;
  std::vector<uint64_t> keep_alloc;  // addresses inside allocations kept original
  std::string keep_kernel_inputs;    // kernel filter (common/kernel_filter.h); empty: none
  common::KernelNameBase name_base = common::KernelNameBase::kFunction;
  std::optional<Condition> verify;
  ConditionOptions condition;
  std::string reference_driver = "emulator";            // resealing replays run here
  unsigned max_evaluations = 200;                       // --verify: condition evaluations at most
  std::function<void(const std::string&)> on_progress;  // one line per evaluation; may be empty
};

struct RedactedRange {
  uint64_t address = 0;  // captured device address of the first byte
  uint64_t size = 0;
  uint64_t allocation_address = 0;  // the range it lies in (0: none known)
  uint64_t allocation_seq = 0;      // the record that made that range
  std::string what;                 // the payload: "memcpy call 12", "beforeLaunch chunk ..."
};

enum class Expectations : uint8_t { kOriginal, kResealed, kDropped };
const char* expectations_name(Expectations e);  // "original", "resealed", "dropped"

struct RedactReport {
  uint64_t replaced_bytes = 0;
  uint64_t pointer_bytes = 0;
  uint64_t kept_allocation_bytes = 0;
  uint64_t restored_bytes = 0;
  unsigned rewritten_images = 0;        // code images rewritten (--strip-ptx-comments/--hash-names)
  unsigned cubin_entries_dropped = 0;   // cubin entries left out of those fatbins
  unsigned hashed_names = 0;            // distinct names --hash-names replaced
  std::vector<RedactedRange> restored;  // --verify: what had to stay original
  std::vector<RedactedRange> kept_allocations;  // --keep-alloc / --keep-kernel-inputs
  Expectations expectations = Expectations::kOriginal;
  std::string expectations_note;  // kDropped: why the reference replay failed
  unsigned evaluations = 0;
  bool budget_exhausted = false;  // --verify stopped at max_evaluations (restored: not minimal)
  std::string condition_why;      // the final evaluation's reason
  std::vector<std::string> notes;
};

// Writes the redacted capture of `in` to `out`. Errors: a corrupt input (as `cusnap verify`
// judges it: kCorrupt), a --keep-alloc address in no range, no reference driver, a --verify
// condition that does not hold for the input itself (kInvalidArgument), I/O.
format::Result<RedactReport> redact_capture(const std::string& in, const std::string& out,
                                            const RedactOptions& options);

}  // namespace cusnap::reduce
