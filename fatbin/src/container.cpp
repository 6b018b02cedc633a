// Fatbin container entries and their payloads (fatbin.h).
#include <lz4.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_decompressBound
#include <zstd.h>

#include "cusnap/fatbin/fatbin.h"
#include "load.h"

namespace cusnap::fatbin {

Container parse_container(const void* data, size_t limit) {
  Container result;
  if (limit != 0 && limit < kContainerHeaderSize) {
    result.error = "fatbin container: " + std::to_string(limit) + " bytes, shorter than its " +
                   std::to_string(kContainerHeaderSize) + "-byte header";
    return result;
  }
  uint32_t magic = detail::load<uint32_t>(data, 0);
  if (magic != kContainerMagic) {
    result.error = "fatbin container: bad magic " + hex32(magic) + " at offset 0 (expected " +
                   hex32(kContainerMagic) + ")";
    return result;
  }
  uint16_t header_size = detail::load<uint16_t>(data, 6);
  uint64_t entries_size = detail::load<uint64_t>(data, 8);
  if (header_size < kContainerHeaderSize || entries_size > kMaxImageBytes - header_size) {
    result.error = "fatbin container: implausible header at offset 0 (header size " +
                   std::to_string(header_size) + " at offset 6, entries size " +
                   std::to_string(entries_size) + " at offset 8)";
    return result;
  }
  result.header_size = header_size;
  result.total_size = header_size + entries_size;
  if (limit != 0 && result.total_size > limit) {
    result.error = "fatbin container: its header (offset 8) says " +
                   std::to_string(result.total_size) + " bytes but only " + std::to_string(limit) +
                   " are available";
    return result;
  }
  size_t offset = header_size;
  while (offset < result.total_size) {
    std::string where = "fatbin entry at offset " + std::to_string(offset);
    if (result.total_size - offset < kMinEntryHeaderSize) {
      result.error = where + ": truncated header (" + std::to_string(result.total_size - offset) +
                     " bytes left of the container, an entry header has at least " +
                     std::to_string(kMinEntryHeaderSize) + ")";
      return result;
    }
    Entry entry;
    entry.header_offset = offset;
    entry.kind = detail::load<uint16_t>(data, offset);
    entry.header_size = detail::load<uint32_t>(data, offset + 4);
    entry.payload_size = detail::load<uint64_t>(data, offset + 8);
    entry.compressed_size = detail::load<uint32_t>(data, offset + 16);
    entry.ptx_minor = detail::load<uint16_t>(data, offset + 24);
    entry.ptx_major = detail::load<uint16_t>(data, offset + 26);
    entry.sm = detail::load<uint32_t>(data, offset + 28);
    entry.flags = detail::load<uint64_t>(data, offset + 40);
    entry.uncompressed_size = detail::load<uint64_t>(data, offset + 56);
    size_t left = result.total_size - offset;
    if (entry.header_size < kMinEntryHeaderSize || entry.header_size > left ||
        entry.payload_size > left - entry.header_size) {
      result.error = where + ": header size " + std::to_string(entry.header_size) + " (offset " +
                     std::to_string(offset + 4) + ") + payload size " +
                     std::to_string(entry.payload_size) + " (offset " + std::to_string(offset + 8) +
                     ") run past the container end at " + std::to_string(result.total_size);
      return result;
    }
    entry.payload_offset = offset + entry.header_size;
    result.entries.push_back(entry);
    offset = entry.end_offset();
  }
  return result;
}

bool entry_payload(const void* container, const Entry& entry, std::string* out,
                   std::string* error) {
  const char* payload = static_cast<const char*>(container) + entry.payload_offset;
  auto where = [&entry] {
    return "fatbin entry at offset " + std::to_string(entry.header_offset) +
           " (payload at offset " + std::to_string(entry.payload_offset) + ")";
  };
  bool compressed = (entry.flags & (kFlagLz4 | kFlagZstd)) != 0 && entry.compressed_size != 0;
  if (!compressed) {
    out->assign(payload, entry.payload_size);
  } else {
    bool lz4 = (entry.flags & kFlagZstd) == 0;
    uint64_t max_out = lz4 ? static_cast<uint64_t>(LZ4_MAX_INPUT_SIZE) : kMaxImageBytes;
    if (entry.compressed_size > entry.payload_size || entry.compressed_size > max_out ||
        entry.uncompressed_size == 0 || entry.uncompressed_size > max_out) {
      *error = where() + ": implausible compressed size " + std::to_string(entry.compressed_size) +
               " (offset " + std::to_string(entry.header_offset + 16) + ") / uncompressed size " +
               std::to_string(entry.uncompressed_size) + " (offset " +
               std::to_string(entry.header_offset + 56) + ")";
      return false;
    }
    // The most the compressed bytes can expand to, checked before the output is allocated, so
    // that a forged uncompressed size cannot claim gigabytes for a few bytes of payload: an LZ4
    // block grows at most 255-fold (one length byte per 255 bytes of a match), a zstd frame at
    // most to the bound its frame and block headers give.
    uint64_t can_hold = lz4 ? uint64_t{entry.compressed_size} * 255 + 16
                            : ZSTD_decompressBound(payload, entry.compressed_size);
    if (!lz4 && can_hold == ZSTD_CONTENTSIZE_ERROR) {
      *error = where() + ": zstd: not a valid zstd frame";
      out->clear();
      return false;
    }
    if (entry.uncompressed_size > can_hold) {
      *error = where() + ": uncompressed size " + std::to_string(entry.uncompressed_size) +
               " (offset " + std::to_string(entry.header_offset + 56) + ") is more than its " +
               std::to_string(entry.compressed_size) + " compressed bytes can hold (" +
               std::to_string(can_hold) + ")";
      out->clear();
      return false;
    }
    out->assign(entry.uncompressed_size, '\0');
    if (!lz4) {
      size_t n = ZSTD_decompress(out->data(), out->size(), payload, entry.compressed_size);
      if (ZSTD_isError(n)) {
        *error = where() + ": zstd: " + ZSTD_getErrorName(n);
        out->clear();
        return false;
      }
      out->resize(n);
    } else {
      int n = LZ4_decompress_safe(payload, out->data(), static_cast<int>(entry.compressed_size),
                                  static_cast<int>(out->size()));
      if (n < 0) {
        *error = where() + ": the LZ4 block is corrupt";
        out->clear();
        return false;
      }
      out->resize(static_cast<size_t>(n));
    }
  }
  if (entry.kind == kEntryPtx) {
    size_t end = out->find('\0');
    if (end != std::string::npos) out->resize(end);
  }
  return true;
}

}  // namespace cusnap::fatbin
