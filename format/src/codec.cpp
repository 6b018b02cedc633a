// Message framing, zstd and low-level I/O helpers.
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "internal.h"

namespace cusnap::format::detail {

size_t framed_size(Segments segments) {
  size_t total = ((segments.size() + 2) / 2) * 8;  // segment table, padded to a word
  for (const auto& seg : segments) total += seg.size() * sizeof(capnp::word);
  return total;
}

void write_framed(Segments segments, uint8_t* p) {
  size_t table_bytes = ((segments.size() + 2) / 2) * 8;
  std::memset(p, 0, table_bytes);
  store_le32(p, static_cast<uint32_t>(segments.size() - 1));
  for (size_t i = 0; i < segments.size(); ++i) {
    store_le32(p + 4 * (i + 1), static_cast<uint32_t>(segments[i].size()));
  }
  p += table_bytes;
  for (const auto& seg : segments) {
    std::memcpy(p, seg.begin(), seg.size() * sizeof(capnp::word));
    p += seg.size() * sizeof(capnp::word);
  }
}

void append_message(std::vector<uint8_t>& out, capnp::MessageBuilder& message) {
  Segments segments = message.getSegmentsForOutput();
  size_t pos = out.size();
  out.resize(pos + framed_size(segments));
  write_framed(segments, out.data() + pos);
}

ZstdCompressor::ZstdCompressor() : cctx_(ZSTD_createCCtx()) {}
ZstdCompressor::~ZstdCompressor() { ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_)); }

bool ZstdCompressor::compress(std::span<const uint8_t> in, int level, std::vector<uint8_t>& out) {
  if (cctx_ == nullptr) return false;
  out.resize(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(cctx_), out.data(), out.size(), in.data(),
                               in.size(), level);
  if (ZSTD_isError(n) || n >= in.size() - in.size() / 64) {
    out.clear();
    return false;
  }
  out.resize(n);
  return true;
}

size_t ZstdCompressor::compress_into(std::span<const uint8_t> in, int level, uint8_t* out,
                                     size_t capacity) {
  if (cctx_ == nullptr || capacity == 0) return 0;
  size_t n =
      ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(cctx_), out, capacity, in.data(), in.size(), level);
  return ZSTD_isError(n) ? 0 : n;
}

Status zstd_decompress(std::span<const uint8_t> in, std::span<uint8_t> out) {
  unsigned long long content = ZSTD_getFrameContentSize(in.data(), in.size());
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN) {
    return Status::error(ErrorCode::kMalformed, "payload is not a zstd frame with a content size");
  }
  if (content != out.size()) {
    return Status::error(ErrorCode::kMalformed, "zstd content size differs from raw_size")
        .expected_found(std::to_string(out.size()), std::to_string(content));
  }
  size_t frame = ZSTD_findFrameCompressedSize(in.data(), in.size());
  if (ZSTD_isError(frame) || frame != in.size()) {
    return Status::error(ErrorCode::kMalformed, "payload is not exactly one zstd frame");
  }
  size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n)) {
    return Status::error(ErrorCode::kMalformed, std::string("zstd: ") + ZSTD_getErrorName(n));
  }
  if (n != out.size()) {
    return Status::error(ErrorCode::kMalformed, "zstd produced fewer bytes than raw_size")
        .expected_found(std::to_string(out.size()), std::to_string(n));
  }
  return Status::ok();
}

void encode_frame_header(FrameHeader& header, std::span<const uint8_t> stored,
                         std::span<uint8_t, kFrameHeaderSize> out) {
  header.stored_size = stored.size();
  header.payload_checksum = checksum64(stored);
  header.encode(out);
}

Status write_all(int fd, const uint8_t* data, size_t size, const std::string& what) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::error(ErrorCode::kIo, std::string("write failed: ") + std::strerror(errno))
          .in_file(what);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status write_all_v(int fd, std::vector<struct iovec>& iov, const std::string& what) {
  size_t first = 0;
  while (first < iov.size()) {
    constexpr size_t kMaxIov = 1024;  // Linux UIO_MAXIOV
    int count = static_cast<int>(std::min(iov.size() - first, kMaxIov));
    ssize_t n = ::writev(fd, iov.data() + first, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::error(ErrorCode::kIo, std::string("write failed: ") + std::strerror(errno))
          .in_file(what);
    }
    auto done = static_cast<size_t>(n);
    while (first < iov.size() && done >= iov[first].iov_len) {
      done -= iov[first].iov_len;
      ++first;
    }
    if (done > 0) {
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + done;
      iov[first].iov_len -= done;
    }
  }
  return Status::ok();
}

}  // namespace cusnap::format::detail
