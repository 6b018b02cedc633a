#include "fatbin/fatbin.h"

#include <lz4.h>
#include <zstd.h>

#include <cstring>
#include <elf.h>

namespace cusnap::emu::fatbin {
namespace {

template <class T>
T load(const void* base, size_t offset) {
  T value;
  std::memcpy(&value, static_cast<const uint8_t*>(base) + offset, sizeof(T));
  return value;
}

constexpr size_t kContainerHeaderSize = 16;
constexpr size_t kMinEntryHeaderSize = 64;
// Containers nvcc writes are at most a few hundred MiB; a larger size is a corrupt header.
constexpr uint64_t kMaxContainerBytes = uint64_t{1} << 34;

const void* wrapper_container(const void* image) {
  // u32 magic, u32 version, u64 pointer to the container, u64 filename / prelinked list.
  return reinterpret_cast<const void*>(load<uint64_t>(image, 8));
}

size_t elf_size(const void* image) {
  auto header = load<Elf64_Ehdr>(image, 0);
  size_t end = header.e_shoff + size_t{header.e_shnum} * header.e_shentsize;
  size_t ph_end = header.e_phoff + size_t{header.e_phnum} * header.e_phentsize;
  return end > ph_end ? end : ph_end;
}

}  // namespace

ImageKind classify(const void* image) {
  uint32_t magic = load<uint32_t>(image, 0);
  if (magic == kWrapperMagic) return ImageKind::kWrapper;
  if (magic == kContainerMagic) return ImageKind::kContainer;
  if (std::memcmp(image, ELFMAG, SELFMAG) == 0) return ImageKind::kElf;
  return ImageKind::kPtxText;
}

Container parse_container(const void* data, size_t limit) {
  Container result;
  if (limit != 0 && limit < kContainerHeaderSize) {
    result.error = "fatbin container: " + std::to_string(limit) + " bytes, shorter than its 16-byte header";
    return result;
  }
  if (load<uint32_t>(data, 0) != kContainerMagic) {
    result.error = "fatbin container: bad magic at offset 0";
    return result;
  }
  uint16_t header_size = load<uint16_t>(data, 6);
  uint64_t entries_size = load<uint64_t>(data, 8);
  if (header_size < kContainerHeaderSize || entries_size > kMaxContainerBytes) {
    result.error = "fatbin container: implausible header (header size " + std::to_string(header_size) +
                   ", entries size " + std::to_string(entries_size) + ")";
    return result;
  }
  result.total_size = header_size + entries_size;
  if (limit != 0 && result.total_size > limit) {
    result.error = "fatbin container: header says " + std::to_string(result.total_size) +
                   " bytes but only " + std::to_string(limit) + " are available";
    return result;
  }
  size_t offset = header_size;
  while (offset < result.total_size) {
    if (result.total_size - offset < kMinEntryHeaderSize) {
      result.error = "fatbin entry at offset " + std::to_string(offset) + ": truncated header";
      return result;
    }
    Entry entry;
    entry.kind = load<uint16_t>(data, offset);
    uint32_t entry_header_size = load<uint32_t>(data, offset + 4);
    entry.payload_size = load<uint64_t>(data, offset + 8);
    entry.compressed_size = load<uint32_t>(data, offset + 16);
    entry.ptx_minor = load<uint16_t>(data, offset + 24);
    entry.ptx_major = load<uint16_t>(data, offset + 26);
    entry.sm = load<uint32_t>(data, offset + 28);
    entry.flags = load<uint64_t>(data, offset + 40);
    entry.uncompressed_size = load<uint64_t>(data, offset + 56);
    if (entry_header_size < kMinEntryHeaderSize ||
        entry.payload_size > result.total_size - offset - entry_header_size) {
      result.error = "fatbin entry at offset " + std::to_string(offset) + ": header size " +
                     std::to_string(entry_header_size) + " / payload size " +
                     std::to_string(entry.payload_size) + " run past the container end " +
                     std::to_string(result.total_size);
      return result;
    }
    entry.payload_offset = offset + entry_header_size;
    result.entries.push_back(entry);
    offset = entry.payload_offset + entry.payload_size;
  }
  return result;
}

bool entry_payload(const void* container, const Entry& entry, std::string* out, std::string* error) {
  const char* payload = static_cast<const char*>(container) + entry.payload_offset;
  std::string where = "fatbin entry (payload at offset " + std::to_string(entry.payload_offset) + ")";
  bool compressed = (entry.flags & (kFlagLz4 | kFlagZstd)) != 0 && entry.compressed_size != 0;
  if (!compressed) {
    out->assign(payload, entry.payload_size);
  } else {
    if (entry.compressed_size > entry.payload_size || entry.uncompressed_size == 0 ||
        entry.uncompressed_size > kMaxContainerBytes) {
      *error = where + ": implausible compressed size " + std::to_string(entry.compressed_size) +
               " / uncompressed size " + std::to_string(entry.uncompressed_size);
      return false;
    }
    out->assign(entry.uncompressed_size, '\0');
    if (entry.flags & kFlagZstd) {
      size_t n = ZSTD_decompress(out->data(), out->size(), payload, entry.compressed_size);
      if (ZSTD_isError(n)) {
        *error = where + ": zstd: " + ZSTD_getErrorName(n);
        return false;
      }
      out->resize(n);
    } else {
      int n = LZ4_decompress_safe(payload, out->data(), static_cast<int>(entry.compressed_size),
                                  static_cast<int>(out->size()));
      if (n < 0) {
        *error = where + ": LZ4 block is corrupt";
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

size_t image_size(const void* image) {
  switch (classify(image)) {
    case ImageKind::kWrapper:
      return image_size(wrapper_container(image));
    case ImageKind::kContainer:
      return parse_container(image).total_size;
    case ImageKind::kElf:
      return elf_size(image);
    case ImageKind::kPtxText:
      return std::strlen(static_cast<const char*>(image)) + 1;
  }
  return 0;
}

PtxSelection select_ptx(const void* image, uint32_t target_sm) {
  PtxSelection result;
  const void* container = image;
  switch (classify(image)) {
    case ImageKind::kPtxText:
      result.ptx = static_cast<const char*>(image);
      return result;
    case ImageKind::kElf:
      result.sass_only = true;
      result.error = "the image is an ELF cubin (SASS only)";
      return result;
    case ImageKind::kWrapper:
      container = wrapper_container(image);
      if (container == nullptr || classify(container) != ImageKind::kContainer) {
        result.error = "fatbin wrapper: its data pointer does not point at a fatbin container";
        return result;
      }
      break;
    case ImageKind::kContainer:
      break;
  }
  Container parsed = parse_container(container);
  if (!parsed.error.empty()) {
    result.error = parsed.error;
    return result;
  }
  const Entry* best = nullptr;
  uint32_t oldest_ptx = 0;
  for (const Entry& entry : parsed.entries) {
    if (entry.kind != kEntryPtx) continue;
    if (oldest_ptx == 0 || entry.sm < oldest_ptx) oldest_ptx = entry.sm;
    if (entry.sm <= target_sm && (best == nullptr || entry.sm > best->sm)) best = &entry;
  }
  if (best == nullptr) {
    if (oldest_ptx == 0) {
      result.sass_only = true;
      result.error = "the fatbin has no PTX entry (SASS only)";
    } else {
      result.error = "every PTX entry targets a newer architecture (oldest compute_" +
                     std::to_string(oldest_ptx) + ") than the emulated sm_" + std::to_string(target_sm);
    }
    return result;
  }
  result.sm = best->sm;
  if (!entry_payload(container, *best, &result.ptx, &result.error)) result.ptx.clear();
  return result;
}

}  // namespace cusnap::emu::fatbin
