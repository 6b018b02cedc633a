// Reader internals shared by reader_open.cpp (open, footer, scan), reader.cpp (access) and
// reader_verify.cpp (deep checks).
#pragma once

#include <capnp/dynamic.h>
#include <capnp/serialize.h>

#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "byte_source.h"
#include "cusnap/format/reader.h"
#include "cusnap/format/record_handles.h"
#include "cusnap/format/record_sizes.h"
#include "internal.h"

namespace cusnap::format {

// A decompressed payload, 8-byte aligned so Cap'n Proto can read it in place.
struct Payload {
  kj::Array<capnp::word> words;
  size_t size = 0;
  std::span<const uint8_t> bytes() const {
    return {reinterpret_cast<const uint8_t*>(words.begin()), size};
  }
};

// A call frame split into its messages.
struct DecodedCallFrame {
  Payload payload;
  uint64_t first_seq = 0;
  uint64_t offset = 0;            // of the frame in the file
  uint64_t payload_checksum = 0;  // its header's, which the stored bytes were checked against
  std::vector<size_t> starts;     // word offset of each message; starts.back() == payload end
};

// What a scan learns about one call record.
struct RecordFacts {
  uint64_t seq = 0;
  uint16_t which = 0;
  bool is_launch = false;
  uint64_t launch_ordinal = 0;
  std::vector<BlobId> blob_refs;           // deep scans only: the blobs the record names
  std::vector<BlobSizeClaim> size_claims;  // deep scans only: what those blobs must hold
  Status size_problem;                     // deep scans only: sizes that contradict each other
  Status handle_problem;                   // deep scans only: a handle replay cannot resolve
};

struct CallRef::State {
  std::shared_ptr<const DecodedCallFrame> frame;
  kj::ArrayPtr<const capnp::word> message;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader;
};

struct ScanResult {
  detail::IndexData index;
  IntegrityReport report;
};

class Reader::Impl {
 public:
  std::unique_ptr<detail::ByteSource> src;
  ReaderOptions options;
  FileHeader file_header;
  Payload header_payload;
  std::unique_ptr<capnp::FlatArrayMessageReader> header_reader;
  detail::IndexData index;
  IntegrityReport recovery;
  std::unordered_map<BlobId, size_t, BlobIdHash> blob_pos;
  std::vector<uint32_t> call_frames;  // indices of kCalls frames, in seq order
  uint32_t cached_index = UINT32_MAX;
  std::shared_ptr<const DecodedCallFrame> cached;
  // Call frames whose every record a deep scan (verify()) walked field by field, by file offset,
  // with the payload checksum of the bytes it walked: make_call_ref need not walk them again
  // (the replay reads every record after a verify: the second walk was a third of its reading).
  mutable std::unordered_map<uint64_t, uint64_t> walked_frames;

  capnp::ReaderOptions capnp_options() const {
    capnp::ReaderOptions o;
    o.traversalLimitInWords = options.traversal_limit_words;
    o.nestingLimit = options.nesting_limit;
    return o;
  }

  // Reads and validates the frame header at `offset`: checksum, frame index, payload within the
  // file, raw size within limits.
  Result<FrameHeader> read_frame_header(uint64_t offset, uint64_t expected_index) const;
  // Reads the payload of a frame whose header was validated, checks its checksum, decompresses.
  // With decompress == false only the checksum is checked and the payload holds stored bytes.
  Result<Payload> read_payload(const FrameHeader& header, uint64_t offset, uint64_t frame_index,
                               bool decompress = true) const;
  // Reads frame `index` of the index, checking that its header matches what the index says.
  Result<FrameHeader> checked_header(uint32_t index) const;
  // Splits a call frame payload into messages, checking the seq of each. `facts` (optional)
  // receives what the scan needs; `deep` walks every field of every record, and `handles`
  // and `sizes` (deep scans) follow the handles records create and use and their sizes.
  static Status split_calls(const FrameHeader& header, const Payload& payload,
                            const capnp::ReaderOptions& opts, std::vector<size_t>& starts,
                            std::vector<RecordFacts>* facts, bool deep,
                            HandleChecker* handles = nullptr, RecordSizeChecker* sizes = nullptr);
  Result<std::shared_ptr<const DecodedCallFrame>> decode_call_frame(uint32_t index);

  // Scans every frame from the start (see reader.h). `deep`: also decompress blobs and check their
  // hashes, walk every record, and compare the index frame with the scan.
  ScanResult scan(bool deep, const std::function<void(uint64_t, uint64_t)>& progress) const;
  Status load_footer();
  void adopt_index(detail::IndexData data);

  Result<CallRef> make_call_ref(std::shared_ptr<const DecodedCallFrame> frame, uint32_t frame_index,
                                uint64_t seq) const;
};

// Walks every field of a struct through Cap'n Proto's dynamic API so that a pointer of the wrong
// type or out of bounds is found now (kj::Exception) rather than by a later consumer.
void walk_all_fields(capnp::DynamicStruct::Reader reader);

}  // namespace cusnap::format
