// Capture reader: random access to calls, launches and blobs, plus integrity checking.
//
// Trust model: the file is untrusted input. Every size, offset and index is checked against the
// file size and the configured limits before use; every payload's checksum is verified when it
// is read; Cap'n Proto messages are read with traversal and nesting limits, and every field of a
// record (and of the header) is decoded once before it is handed out, because checksums only
// catch accidents (XXH3 is not a MAC); blob contents are re-hashed on read. Any violation
// becomes a Status naming the frame (and call), never a crash, a kj::Exception out of a
// CallRef, an allocation sized by a forged count, or an out-of-bounds read.
//
// Opening: the reader first looks for a valid trailer and index frame (a cleanly closed file).
// When there is none (a killed writer, or damage near the end), it scans the frames from the
// start, stops at the first frame that is incomplete or fails its checks, and rebuilds the index
// from everything before it. recovery() says which happened ("capture ends after call N").
// The file header and the header frame must be intact in either case, otherwise open fails.
//
// A Reader is not thread-safe (it caches decoded frames); open one per thread. CallRef objects
// own what they point to and stay valid after the Reader moves on or is destroyed.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/capture.capnp.h"  // generated from format/schema/capture.capnp
#include "cusnap/format/container.h"
#include "cusnap/format/index.h"
#include "cusnap/format/record_handles.h"
#include "cusnap/format/status.h"

namespace cusnap::format {

// The blob a record's BlobId field names (all zero: none).
inline BlobId to_blob(schema::BlobId::Reader id) { return BlobId{id.getHigh(), id.getLow()}; }

struct ReaderOptions {
  uint64_t max_frame_raw_bytes = 256ull << 20;   // larger frames are rejected (kLimitExceeded)
  uint64_t traversal_limit_words = 64ull << 20;  // per message (Cap'n Proto ReaderOptions)
  int nesting_limit = 64;
  uint64_t max_blob_bytes = 16ull << 30;  // read_blob refuses larger blobs (kLimitExceeded)
  bool use_footer = true;  // false: always scan and rebuild (what verify() does internally)
};

enum class Integrity : uint8_t {
  kWhole,      // every frame present and valid, index and trailer valid
  kTruncated,  // the file ends inside a frame (or before the index): a killed writer
  kCorrupt,    // a complete frame (or the trailer) fails a checksum or structural check
};
const char* integrity_name(Integrity integrity);

struct IntegrityReport {
  Integrity state = Integrity::kWhole;
  bool footer_used = false;               // the index came from the file's trailer (not rebuilt)
  bool deep_checked = false;              // produced by verify(): payloads decoded, blobs re-hashed
  uint64_t good_frames = 0;               // frames before the point where reading stopped
  std::optional<uint64_t> last_good_seq;  // last call in a complete, valid frame
  uint64_t end_offset = 0;  // truncated: where readable data ends; corrupt: bad frame offset
  std::optional<uint64_t> bad_frame;  // corrupt: index of the failing frame
  Status detail;                      // why reading stopped (OK when whole)
  // verify(): handles used that no earlier record created, created twice while live (findings,
  // not corruption: format/record_handles.h).
  HandleReport handles;

  // "whole (N calls)", "truncated: capture ends after call N (byte offset X)",
  // "corrupt: frame K at offset X failed: <reason>; last good call N".
  std::string summary() const;
};

struct CaptureStats {
  uint64_t file_bytes = 0;
  uint64_t frames = 0;
  uint64_t call_frames = 0;
  uint64_t blob_frames = 0;
  uint64_t calls = 0;
  uint64_t launches = 0;
  uint64_t blobs = 0;
  uint64_t blob_bytes_unique = 0;  // uncompressed sizes of distinct blobs
  uint64_t blob_bytes_stored = 0;  // their payload bytes in the file
  uint64_t call_bytes_raw = 0;
  uint64_t call_bytes_stored = 0;
  // From the writer's own statistics in the index (absent when the index was rebuilt):
  std::optional<uint64_t> blob_puts;
  std::optional<uint64_t> blob_bytes_logical;  // what the app uploaded, dedup hits included
};

// A decoded call record. Owns the decoded frame it lives in.
class CallRef {
 public:
  CallRef(CallRef&&) noexcept;
  CallRef& operator=(CallRef&&) noexcept;
  ~CallRef();

  schema::CallRecord::Reader get() const;
  uint64_t seq() const { return seq_; }
  uint32_t frame() const { return frame_; }
  // The record as stored: one message in standard Cap'n Proto framing.
  std::span<const uint8_t> message_bytes() const;

  struct State;

 private:
  friend class Reader;
  CallRef(std::unique_ptr<State> state, uint64_t seq, uint32_t frame);
  std::unique_ptr<State> state_;
  uint64_t seq_ = 0;
  uint32_t frame_ = 0;
};

class Reader {
 public:
  static Result<std::unique_ptr<Reader>> open(const std::string& path,
                                              const ReaderOptions& options = {});
  // Reads from memory the caller keeps alive for the Reader's lifetime (tests, fuzzer).
  static Result<std::unique_ptr<Reader>> open_memory(std::span<const uint8_t> bytes,
                                                     const ReaderOptions& options = {});
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const FileHeader& file_header() const;
  schema::CaptureHeader::Reader header() const;
  uint64_t file_size() const;
  const std::string& path() const;

  // How the index was obtained (footer or scan) and, after a scan, where and why it stopped.
  const IntegrityReport& recovery() const;

  const std::vector<FrameInfo>& frames() const;
  const std::vector<BlobInfo>& blobs() const;
  const std::vector<LaunchInfo>& launches() const;
  uint64_t call_count() const;  // calls are seqs 0 .. call_count()-1
  const BlobInfo* find_blob(const BlobId& id) const;
  // Records per CallRecord union member (index = schema::CallRecord::Which value).
  const std::vector<uint64_t>& kind_counts() const;
  CaptureStats stats() const;

  Result<CallRef> call(uint64_t seq);
  Result<CallRef> launch(uint64_t ordinal);
  // Calls fn for every record with seq >= first_seq in order; stops early when fn returns false.
  // A record (or a whole call frame) that cannot be decoded ends the walk with its Status
  // (naming the call and the frame) unless `on_bad` is given: then on_bad gets that Status and
  // the walk goes on with the next readable record when it returns true.
  Status for_each_call(const std::function<bool(const CallRef&)>& fn, uint64_t first_seq = 0,
                       const std::function<bool(const Status&)>& on_bad = {});

  // The whole blob, hash verified.
  Result<std::vector<uint8_t>> read_blob(const BlobId& id);
  // Streams a blob chunk by chunk in offset order (bounded memory). The hash can only be checked
  // at the end: a kCorrupt result means the bytes already delivered must be discarded.
  Status read_blob_chunks(
      const BlobId& id,
      const std::function<Status(uint64_t offset, std::span<const uint8_t>)>& sink);

  // Decompressed, checksum-verified payload of frame `index`.
  Result<std::vector<uint8_t>> frame_payload(uint32_t index);

  // Full check of the file, independent of the index: scans every frame, verifies checksums,
  // decodes every call record (seq continuity), re-hashes every blob, checks the index frame
  // against the scan and the trailer. `progress` (optional) gets (bytes done, total).
  IntegrityReport verify(const std::function<void(uint64_t, uint64_t)>& progress = {});

  class Impl;

 private:
  explicit Reader(std::unique_ptr<Impl> impl);
  static Result<std::unique_ptr<Reader>> open_impl(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Calls fn with every BlobId a record names, in field order: null ids and the ids of hash-only
// snapshot chunks (hashes of bytes the file deliberately does not hold) are left out.
void for_each_blob_ref(schema::CallRecord::Reader record,
                       const std::function<void(const BlobId&)>& fn);

// Name of a CallRecord union member ("launch", "memcpy", ...) or "unknown(<n>)".
std::string call_kind_name(uint16_t which);
// Number of CallRecord union members this build knows.
uint16_t call_kind_count();

}  // namespace cusnap::format
