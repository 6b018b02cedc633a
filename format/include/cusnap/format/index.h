// The index of a capture: what the footer's index frame holds, and what a reader rebuilds by
// scanning when the footer is missing. Plain data, shared by the writer and the reader.
#pragma once

#include <cstdint>
#include <vector>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/container.h"

namespace cusnap::format {

// One frame as the index knows it.
struct FrameInfo {
  uint64_t offset = 0;  // of the frame header
  FrameKind kind = FrameKind::kCalls;
  uint64_t stored_size = 0;
  uint64_t raw_size = 0;
  uint64_t first_seq = 0;  // kCalls only
  uint64_t last_seq = 0;   // kCalls only
  uint64_t end_offset() const { return offset + kFrameHeaderSize + stored_size; }
};

struct BlobChunkRef {
  uint32_t frame = 0;  // index into frames()
  uint64_t chunk_offset = 0;
};

struct BlobInfo {
  BlobId id;
  uint64_t size = 0;
  uint64_t stored_bytes = 0;         // payload bytes of its frames in the file
  std::vector<BlobChunkRef> chunks;  // sorted by chunk_offset, covering [0, size) exactly
};

struct LaunchInfo {
  uint64_t ordinal = 0;
  uint64_t seq = 0;
  uint32_t frame = 0;  // index into frames()
};

}  // namespace cusnap::format
