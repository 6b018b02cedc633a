// Byte layout of a capture file (the container). docs/format.md is the normative description;
// this header is its executable form. All integers are little-endian, there is no padding, and
// every byte of the file is covered by exactly one checksum.
//
//   file   := FileHeader(32) Frame* [Trailer(32)]
//   Frame  := FrameHeader(80) payload(stored_size bytes)
//
// Frame 0 is always the header frame (a CaptureHeader message). Call frames hold many CallRecord
// messages; blob frames hold one chunk of one blob; the index frame (written once, at close) is
// followed by the trailer, which points back at it. A file without a valid trailer is still
// readable: the reader scans frames from the start and rebuilds the index.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/status.h"

namespace cusnap::format {

// Container version written by this code. Readers accept the same major and any minor.
inline constexpr uint16_t kContainerVersionMajor = 1;
inline constexpr uint16_t kContainerVersionMinor = 0;

inline constexpr std::array<uint8_t, 8> kFileMagic = {'C', 'U', 'S', 'N', 'A', 'P', 0, 0};
inline constexpr std::array<uint8_t, 8> kTrailerMagic = {'C', 'S', 'N', 'P', 'E', 'N', 'D', 0};
inline constexpr uint32_t kFrameMagic = 0x52465343;  // bytes "CSFR"

inline constexpr size_t kFileHeaderSize = 32;
inline constexpr size_t kFrameHeaderSize = 80;
inline constexpr size_t kTrailerSize = 32;

enum class FrameKind : uint8_t {
  kHeader = 1,  // payload: one CaptureHeader message
  kCalls = 2,   // payload: CallRecord messages back to back, seqs first_seq..last_seq
  kBlob = 3,    // payload: bytes [chunk_offset, chunk_offset + raw_size) of blob `blob_id`
  kIndex = 4,   // payload: one CaptureIndex message
};
const char* frame_kind_name(FrameKind kind);
bool is_known_frame_kind(uint8_t kind);

enum class Codec : uint8_t {
  kNone = 0,  // payload stored as is (stored_size == raw_size)
  kZstd = 1,  // payload is exactly one zstd frame whose content size is raw_size
};

// File header, offset 0.
//   0  magic[8]   "CUSNAP\0\0"
//   8  u16        version major
//   10 u16        version minor
//   12 u32        flags (0; readers reject unknown bits)
//   16 u64        reserved (0)
//   24 u64        XXH3-64 of bytes 0..23
struct FileHeader {
  uint16_t version_major = kContainerVersionMajor;
  uint16_t version_minor = kContainerVersionMinor;
  uint32_t flags = 0;

  void encode(std::span<uint8_t, kFileHeaderSize> out) const;
  static Result<FileHeader> decode(std::span<const uint8_t, kFileHeaderSize> in);
};

// Frame header, at the start of every frame.
//   0  u32  magic "CSFR"
//   4  u8   kind (FrameKind)
//   5  u8   codec (Codec)
//   6  u16  flags (0)
//   8  u64  stored_size: payload bytes following this header
//   16 u64  raw_size: payload bytes after decompression
//   24 32 bytes, by kind:
//        calls: u64 first_seq, u64 last_seq, u32 record_count, u32 0, u64 0
//        blob:  u64 blob_id.high, u64 blob_id.low, u64 chunk_offset, u64 blob_size
//        other: zero
//   56 u64  XXH3-64 of the stored payload bytes
//   64 u64  frame_index: ordinal of this frame in the file (header frame = 0)
//   72 u64  XXH3-64 of bytes 0..71
struct FrameHeader {
  FrameKind kind = FrameKind::kCalls;
  Codec codec = Codec::kNone;
  uint16_t flags = 0;
  uint64_t stored_size = 0;
  uint64_t raw_size = 0;
  // kCalls
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  uint32_t record_count = 0;
  // kBlob
  BlobId blob_id;
  uint64_t chunk_offset = 0;
  uint64_t blob_size = 0;

  uint64_t payload_checksum = 0;
  uint64_t frame_index = 0;

  void encode(std::span<uint8_t, kFrameHeaderSize> out) const;
  // Checks magic, header checksum, kind, codec, flags and kind-specific consistency
  // (record_count == last_seq - first_seq + 1, chunk within blob, none codec => sizes equal).
  // It cannot check sizes against the file: the caller does that.
  static Result<FrameHeader> decode(std::span<const uint8_t, kFrameHeaderSize> in);
};

// Trailer, the last 32 bytes of a cleanly closed file.
//   0  magic[8]  "CSNPEND\0"
//   8  u64       byte offset of the index frame's header
//   16 u64       byte offset of this trailer (== file size - 32)
//   24 u64       XXH3-64 of bytes 0..23
struct Trailer {
  uint64_t index_offset = 0;
  uint64_t trailer_offset = 0;

  void encode(std::span<uint8_t, kTrailerSize> out) const;
  static Result<Trailer> decode(std::span<const uint8_t, kTrailerSize> in);
};

// Little-endian helpers (the container never depends on host byte order).
inline void store_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void store_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void store_le16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint32_t load_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline uint16_t load_le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

}  // namespace cusnap::format
