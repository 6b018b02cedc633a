// Whether the handles a call record uses were created by an earlier record (issue #15).
//
// A handle no earlier record created is usually a capture that started late (the application
// obtained it before the interceptor was loaded): the replayer copes with most of those (an
// unknown stream runs on the default stream, an unknown event's uses are skipped, a launch of an
// unknown function finds the kernel by name), so they are *findings*, counted per kind with the
// first call of each. A record the replayer cannot replay for a handle reason is corrupt:
// check() says so, and `Reader::verify()` stops there. The rules follow what the replayer's
// executor does (replayer/execute.cpp, execute_launch.cpp); docs/format.md, "Handle rules".
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "cusnap/format/capture.capnp.h"  // generated from format/schema/capture.capnp
#include "cusnap/format/status.h"

namespace cusnap::format {

enum class HandleKind : uint8_t { kContext, kModule, kFunction, kStream, kEvent };
inline constexpr size_t kHandleKinds = 5;
const char* handle_kind_name(HandleKind kind);  // "context", "module", ...

// Uses of handles of one kind that no earlier record created (or creates of a handle already
// live), and the first such call.
struct HandleFinding {
  uint64_t calls = 0;         // records that did it
  uint64_t handles = 0;       // distinct handle values involved
  uint64_t first_seq = 0;     // the first record that did it
  uint64_t first_handle = 0;  // and the handle it named
  std::string first_api;      // and its apiName
};

struct HandleReport {
  std::array<HandleFinding, kHandleKinds> never_created;  // used, no earlier record created it
  std::array<HandleFinding, kHandleKinds> created_twice;  // created again while still live
  bool empty() const;
};

// Follows records in seq order. Records that failed at capture (result != 0) neither create nor
// use anything: the replayer skips them.
class HandleChecker {
 public:
  // kMalformed (with the call) for a record the replayer cannot replay for a handle reason;
  // otherwise notes its findings and returns OK.
  Status check(schema::CallRecord::Reader r);
  const HandleReport& report() const { return report_; }

 private:
  void use(HandleKind kind, uint64_t handle, uint64_t seq, const char* api);
  void create(HandleKind kind, uint64_t handle, uint64_t seq, const char* api);
  void destroy(HandleKind kind, uint64_t handle);
  void note(HandleFinding& f, std::unordered_set<uint64_t>& seen, uint64_t handle, uint64_t seq,
            const char* api);

  std::array<std::unordered_set<uint64_t>, kHandleKinds> ever_;  // created by some record
  std::array<std::unordered_set<uint64_t>, kHandleKinds> live_;  // created, not destroyed
  std::array<std::unordered_set<uint64_t>, kHandleKinds> unknown_seen_;
  std::array<std::unordered_set<uint64_t>, kHandleKinds> twice_seen_;
  HandleReport report_;
};

}  // namespace cusnap::format
