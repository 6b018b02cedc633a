// Internal helpers shared by the writer and the reader (not installed, not public API).
#pragma once

#include <capnp/message.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cusnap/format/container.h"
#include "cusnap/format/index.h"
#include "cusnap/format/status.h"

namespace cusnap::format::detail {

// Whether the reader compares stored checksums (file header, frame headers, trailer, payloads and
// blob ids) with the bytes. Always, except in a fuzz build: CUSNAP_FUZZ_NO_CHECKSUMS is set by the
// fuzz preset alone (CMakePresets.json), and even there only a fuzzer turns the checks off
// (format/fuzz/fuzz_support.h), so that mutated inputs get past them to the records, while the
// fuzz build's ordinary tests still see every check. This is the only place the switch is read.
#ifdef CUSNAP_FUZZ_NO_CHECKSUMS
inline std::atomic<bool> fuzz_skip_checksums{false};
inline bool checksums_verified() { return !fuzz_skip_checksums.load(std::memory_order_relaxed); }
#else
constexpr bool checksums_verified() { return true; }
#endif

// Standard Cap'n Proto stream framing (segment table + segments), exactly what
// capnp::writeMessage produces, without an intermediate copy: the framed size of a message's
// segments, writing them at `out` (which has framed_size bytes), and both onto a vector.
using Segments = kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>>;
size_t framed_size(Segments segments);
void write_framed(Segments segments, uint8_t* out);
void append_message(std::vector<uint8_t>& out, capnp::MessageBuilder& message);

// zstd one-shot compression of `in` at `level` into `out` (resized). Returns false when the result
// would not save at least 1/64 of the input (the caller then stores raw).
struct ZstdCompressor {
  ZstdCompressor();
  ~ZstdCompressor();
  ZstdCompressor(const ZstdCompressor&) = delete;
  ZstdCompressor& operator=(const ZstdCompressor&) = delete;
  bool compress(std::span<const uint8_t> in, int level, std::vector<uint8_t>& out);
  // One zstd frame of `in` into out[0, capacity): its size, or 0 when it does not fit (or failed).
  size_t compress_into(std::span<const uint8_t> in, int level, uint8_t* out, size_t capacity);
  void* cctx_;
};

// Decompresses one zstd frame of exactly `raw_size` bytes into `out` (which has raw_size bytes).
Status zstd_decompress(std::span<const uint8_t> in, std::span<uint8_t> out);

// Encodes a frame (header + payload) for a payload already in final (stored) form.
void encode_frame_header(FrameHeader& header, std::span<const uint8_t> stored,
                         std::span<uint8_t, kFrameHeaderSize> out);

// write(2) until done; EINTR-safe.
Status write_all(int fd, const uint8_t* data, size_t size, const std::string& what);
// writev(2) of every buffer in `iov` until done (adjusts `iov` on partial writes); EINTR-safe.
Status write_all_v(int fd, std::vector<struct iovec>& iov, const std::string& what);

// Writer statistics as kept in the index (WriterStats in the schema).
struct IndexStats {
  uint64_t blob_puts = 0;
  uint64_t blob_bytes_logical = 0;
  uint64_t blob_bytes_unique = 0;
  uint64_t blob_bytes_stored = 0;
  uint64_t call_bytes_raw = 0;
  uint64_t call_bytes_stored = 0;
};

struct IndexData {
  std::vector<FrameInfo> frames;
  std::vector<BlobInfo> blobs;
  std::vector<LaunchInfo> launches;
  uint64_t call_count = 0;
  std::vector<uint64_t> kind_counts;  // by CallRecord::Which
  std::optional<IndexStats> writer_stats;
};

// Serializes the index as one CaptureIndex message (standard framing).
std::vector<uint8_t> encode_index(const IndexData& index);
// Decodes and structurally validates an index against a file of `file_size` bytes whose index
// frame starts at `index_offset`. Any inconsistency is kMalformed. Every count is bounded by
// what the file can hold and every frame's raw size by `max_frame_raw_bytes` (the reader's
// limit) before anything is allocated from it.
Result<IndexData> decode_index(std::span<const uint8_t> message_bytes, uint64_t file_size,
                               uint64_t index_offset, uint64_t traversal_limit_words,
                               int nesting_limit, uint64_t max_frame_raw_bytes = UINT64_MAX);

}  // namespace cusnap::format::detail
