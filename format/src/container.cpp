#include "cusnap/format/container.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "internal.h"

namespace cusnap::format {

namespace {

std::string hex64(uint64_t v) {
  char buf[19];
  snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

uint64_t checksum_of(const uint8_t* p, size_t n) { return checksum64({p, n}); }

}  // namespace

const char* frame_kind_name(FrameKind kind) {
  switch (kind) {
    case FrameKind::kHeader:
      return "header";
    case FrameKind::kCalls:
      return "calls";
    case FrameKind::kBlob:
      return "blob";
    case FrameKind::kIndex:
      return "index";
  }
  return "unknown";
}

bool is_known_frame_kind(uint8_t kind) { return kind >= 1 && kind <= 4; }

void FileHeader::encode(std::span<uint8_t, kFileHeaderSize> out) const {
  std::memcpy(out.data(), kFileMagic.data(), kFileMagic.size());
  store_le16(out.data() + 8, version_major);
  store_le16(out.data() + 10, version_minor);
  store_le32(out.data() + 12, flags);
  store_le64(out.data() + 16, 0);
  store_le64(out.data() + 24, checksum_of(out.data(), 24));
}

Result<FileHeader> FileHeader::decode(std::span<const uint8_t, kFileHeaderSize> in) {
  if (!std::equal(kFileMagic.begin(), kFileMagic.end(), in.begin())) {
    return Status::error(ErrorCode::kNotACapture, "file magic missing").at_offset(0);
  }
  uint64_t stored = load_le64(in.data() + 24);
  uint64_t actual = checksum_of(in.data(), 24);
  if (detail::checksums_verified() && stored != actual) {
    return Status::error(ErrorCode::kCorrupt, "file header checksum mismatch")
        .at_offset(0)
        .expected_found(hex64(stored), hex64(actual));
  }
  FileHeader h;
  h.version_major = load_le16(in.data() + 8);
  h.version_minor = load_le16(in.data() + 10);
  h.flags = load_le32(in.data() + 12);
  if (h.version_major != kContainerVersionMajor) {
    return Status::error(ErrorCode::kUnsupportedVersion, "container major version")
        .at_offset(8)
        .expected_found(std::to_string(kContainerVersionMajor), std::to_string(h.version_major));
  }
  if (h.flags != 0) {
    return Status::error(ErrorCode::kUnsupportedVersion, "unknown file header flags")
        .at_offset(12)
        .expected_found("0", std::to_string(h.flags));
  }
  return h;
}

void FrameHeader::encode(std::span<uint8_t, kFrameHeaderSize> out) const {
  uint8_t* p = out.data();
  std::memset(p, 0, kFrameHeaderSize);
  store_le32(p, kFrameMagic);
  p[4] = static_cast<uint8_t>(kind);
  p[5] = static_cast<uint8_t>(codec);
  store_le16(p + 6, flags);
  store_le64(p + 8, stored_size);
  store_le64(p + 16, raw_size);
  if (kind == FrameKind::kCalls) {
    store_le64(p + 24, first_seq);
    store_le64(p + 32, last_seq);
    store_le32(p + 40, record_count);
  } else if (kind == FrameKind::kBlob) {
    store_le64(p + 24, blob_id.high);
    store_le64(p + 32, blob_id.low);
    store_le64(p + 40, chunk_offset);
    store_le64(p + 48, blob_size);
  }
  store_le64(p + 56, payload_checksum);
  store_le64(p + 64, frame_index);
  store_le64(p + 72, checksum_of(p, 72));
}

Result<FrameHeader> FrameHeader::decode(std::span<const uint8_t, kFrameHeaderSize> in) {
  const uint8_t* p = in.data();
  auto bad = [](const char* what) { return Status::error(ErrorCode::kCorrupt, what); };
  uint32_t magic = load_le32(p);
  if (magic != kFrameMagic) {
    return bad("frame magic missing").expected_found(hex64(kFrameMagic), hex64(magic));
  }
  uint64_t stored = load_le64(p + 72);
  uint64_t actual = checksum_of(p, 72);
  if (detail::checksums_verified() && stored != actual) {
    return bad("frame header checksum mismatch").expected_found(hex64(stored), hex64(actual));
  }
  FrameHeader h;
  if (!is_known_frame_kind(p[4])) {
    return Status::error(ErrorCode::kMalformed, "unknown frame kind")
        .expected_found("1..4", std::to_string(p[4]));
  }
  h.kind = static_cast<FrameKind>(p[4]);
  if (p[5] > static_cast<uint8_t>(Codec::kZstd)) {
    return Status::error(ErrorCode::kMalformed, "unknown codec")
        .expected_found("0..1", std::to_string(p[5]));
  }
  h.codec = static_cast<Codec>(p[5]);
  h.flags = load_le16(p + 6);
  if (h.flags != 0) {
    return Status::error(ErrorCode::kMalformed, "unknown frame flags")
        .expected_found("0", std::to_string(h.flags));
  }
  h.stored_size = load_le64(p + 8);
  h.raw_size = load_le64(p + 16);
  if (h.codec == Codec::kNone && h.stored_size != h.raw_size) {
    return Status::error(ErrorCode::kMalformed, "uncompressed frame with stored != raw size")
        .expected_found(std::to_string(h.raw_size), std::to_string(h.stored_size));
  }
  if (h.kind == FrameKind::kCalls) {
    h.first_seq = load_le64(p + 24);
    h.last_seq = load_le64(p + 32);
    h.record_count = load_le32(p + 40);
    if (h.last_seq < h.first_seq || h.last_seq - h.first_seq + 1 != h.record_count) {
      return Status::error(ErrorCode::kMalformed, "call frame seq range and record count disagree")
          .expected_found(std::to_string(h.record_count) + " records",
                          std::to_string(h.first_seq) + ".." + std::to_string(h.last_seq));
    }
  } else if (h.kind == FrameKind::kBlob) {
    h.blob_id = BlobId{load_le64(p + 24), load_le64(p + 32)};
    h.chunk_offset = load_le64(p + 40);
    h.blob_size = load_le64(p + 48);
    if (h.chunk_offset > h.blob_size || h.raw_size > h.blob_size - h.chunk_offset) {
      return Status::error(ErrorCode::kMalformed, "blob chunk extends past the blob")
          .expected_found("<= " + std::to_string(h.blob_size),
                          std::to_string(h.chunk_offset) + "+" + std::to_string(h.raw_size));
    }
  }
  h.payload_checksum = load_le64(p + 56);
  h.frame_index = load_le64(p + 64);
  return h;
}

void Trailer::encode(std::span<uint8_t, kTrailerSize> out) const {
  std::memcpy(out.data(), kTrailerMagic.data(), kTrailerMagic.size());
  store_le64(out.data() + 8, index_offset);
  store_le64(out.data() + 16, trailer_offset);
  store_le64(out.data() + 24, checksum_of(out.data(), 24));
}

Result<Trailer> Trailer::decode(std::span<const uint8_t, kTrailerSize> in) {
  if (!std::equal(kTrailerMagic.begin(), kTrailerMagic.end(), in.begin())) {
    return Status::error(ErrorCode::kNotFound, "no trailer magic");
  }
  uint64_t stored = load_le64(in.data() + 24);
  uint64_t actual = checksum_of(in.data(), 24);
  if (detail::checksums_verified() && stored != actual) {
    return Status::error(ErrorCode::kCorrupt, "trailer checksum mismatch")
        .expected_found(hex64(stored), hex64(actual));
  }
  Trailer t;
  t.index_offset = load_le64(in.data() + 8);
  t.trailer_offset = load_le64(in.data() + 16);
  return t;
}

}  // namespace cusnap::format
