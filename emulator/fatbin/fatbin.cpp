#include "fatbin/fatbin.h"

#include <lz4.h>
#include <zstd.h>

#include <cstdio>
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

std::string hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", value);
  return text;
}

// PTX text starts with printable characters (directives, comments, whitespace).
bool looks_like_text(const void* image) {
  const auto* p = static_cast<const uint8_t*>(image);
  for (int i = 0; i < 8 && p[i] != 0; ++i) {
    if (p[i] < 0x09 || (p[i] > 0x0d && p[i] < 0x20) || p[i] > 0x7e) return false;
  }
  return true;
}

enum class Pick : uint8_t { kFound, kNoPtx, kTooNew, kError };

// The best PTX entry of one container for sm_<target_sm>, into `result`.
Pick pick_ptx(const void* container, const char* what, uint32_t target_sm, PtxSelection* result) {
  if (container == nullptr || classify(container) != ImageKind::kContainer) {
    result->error = std::string(what) + " does not point at a fatbin container";
    return Pick::kError;
  }
  Container parsed = parse_container(container);
  if (!parsed.error.empty()) {
    result->error = std::string(what) + ": " + parsed.error;
    return Pick::kError;
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
      result->error = std::string(what) + " has no PTX entry (SASS only)";
      return Pick::kNoPtx;
    }
    result->error = "every PTX entry in " + std::string(what) +
                    " targets a newer architecture (oldest compute_" + std::to_string(oldest_ptx) +
                    ") than the emulated sm_" + std::to_string(target_sm);
    return Pick::kTooNew;
  }
  result->sm = best->sm;
  result->error.clear();
  if (!entry_payload(container, *best, &result->ptx, &result->error)) {
    result->ptx.clear();
    result->error = std::string(what) + ": " + result->error;
    return Pick::kError;
  }
  return Pick::kFound;
}

// A version-2 wrapper: the linked container's PTX if any, else the single prelinked fatbin's.
PtxSelection select_from_rdc_wrapper(const Wrapper& wrapper, uint32_t target_sm) {
  PtxSelection result;
  if (wrapper.data != nullptr) {
    Pick pick = pick_ptx(wrapper.data, "fatbin wrapper v2: the linked fatbin", target_sm, &result);
    if (pick == Pick::kFound || pick == Pick::kError) return result;
  }
  // Which prelinked fatbins carry PTX the target can run. PTX for newer architectures does not
  // count: a PTX-only rdc build also lists the device runtime's fatbin (libcudadevrt), whose only
  // PTX is for the newest architecture.
  std::vector<size_t> with_ptx;
  bool any_ptx = false;
  for (size_t i = 0; i < wrapper.prelinked.size(); ++i) {
    const void* container = wrapper.prelinked[i];
    std::string what = "fatbin wrapper v2: prelinked fatbin " + std::to_string(i);
    if (classify(container) != ImageKind::kContainer) {
      result.error = what + " is not a fatbin container (magic " + hex32(load<uint32_t>(container, 0)) + ")";
      return result;
    }
    Container parsed = parse_container(container);
    if (!parsed.error.empty()) {
      result.error = what + ": " + parsed.error;
      return result;
    }
    bool usable = false;
    for (const Entry& entry : parsed.entries) {
      if (entry.kind != kEntryPtx) continue;
      any_ptx = true;
      usable |= entry.sm <= target_sm;
    }
    if (usable) with_ptx.push_back(i);
  }
  if (with_ptx.empty()) {
    result.sass_only = !any_ptx;
    result.error = any_ptx ? "fatbin wrapper v2: every PTX entry of its prelinked fatbins targets a newer "
                             "architecture than the emulated sm_" + std::to_string(target_sm)
                           : "fatbin wrapper v2: neither the linked fatbin nor any of its " +
                                 std::to_string(wrapper.prelinked.size()) + " prelinked fatbins has a PTX entry";
    return result;
  }
  if (with_ptx.size() > 1) {
    result.error = "fatbin wrapper v2 (relocatable device code) with PTX in " +
                   std::to_string(with_ptx.size()) +
                   " prelinked fatbins: running them needs device linking of several PTX modules, "
                   "which the emulator does not support (one rdc translation unit only)";
    return result;
  }
  size_t index = with_ptx.front();
  std::string what = "fatbin wrapper v2: prelinked fatbin " + std::to_string(index);
  pick_ptx(wrapper.prelinked[index], what.c_str(), target_sm, &result);
  return result;
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
  return looks_like_text(image) ? ImageKind::kPtxText : ImageKind::kUnknown;
}

Wrapper read_wrapper(const void* image) {
  Wrapper result;
  uint32_t magic = load<uint32_t>(image, 0);
  if (magic != kWrapperMagic) {
    result.error = "fatbin wrapper: bad magic " + hex32(magic) + " at offset 0 (expected " +
                   hex32(kWrapperMagic) + ")";
    return result;
  }
  // u32 magic, u32 version, u64 data, u64 filename (v1, unused) or prelinked list (v2).
  uint32_t version = load<uint32_t>(image, 4);
  if (version != kWrapperVersion && version != kWrapperVersionRdc) {
    result.error = "fatbin wrapper: unknown version " + std::to_string(version) +
                   " at offset 4 (known: 1, and 2 for relocatable device code)";
    return result;
  }
  result.version = version;
  result.data = reinterpret_cast<const void*>(load<uint64_t>(image, 8));
  if (version == kWrapperVersionRdc) {
    const auto* list = reinterpret_cast<const uint8_t*>(load<uint64_t>(image, 16));
    if (list == nullptr) {
      result.error = "fatbin wrapper v2: no prelinked fatbin list (NULL at offset 16)";
      return result;
    }
    for (size_t i = 0;; ++i) {
      if (i == kMaxPrelinkedFatbins) {
        result.error = "fatbin wrapper v2: prelinked fatbin list has no NULL terminator within " +
                       std::to_string(kMaxPrelinkedFatbins) + " entries";
        return result;
      }
      const void* fatbin = reinterpret_cast<const void*>(load<uint64_t>(list, i * sizeof(uint64_t)));
      if (fatbin == nullptr) break;
      result.prelinked.push_back(fatbin);
    }
  }
  if (result.data == nullptr && result.prelinked.empty()) {
    result.error = "fatbin wrapper v" + std::to_string(version) + ": NULL data pointer at offset 8";
  }
  return result;
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
    case ImageKind::kWrapper: {
      Wrapper wrapper = read_wrapper(image);
      return wrapper.error.empty() && wrapper.data != nullptr ? image_size(wrapper.data) : 0;
    }
    case ImageKind::kUnknown:
      return 0;
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
  switch (classify(image)) {
    case ImageKind::kPtxText:
      result.ptx = static_cast<const char*>(image);
      return result;
    case ImageKind::kElf:
      result.sass_only = true;
      result.error = "the image is an ELF cubin (SASS only)";
      return result;
    case ImageKind::kUnknown:
      result.error = "unrecognised image: magic " + hex32(load<uint32_t>(image, 0)) +
                     " at offset 0 is none of fatbin wrapper (" + hex32(kWrapperMagic) +
                     "), fatbin container (" + hex32(kContainerMagic) + "), ELF, or PTX text";
      return result;
    case ImageKind::kWrapper: {
      Wrapper wrapper = read_wrapper(image);
      if (!wrapper.error.empty()) {
        result.error = wrapper.error;
        return result;
      }
      if (wrapper.version == kWrapperVersionRdc) return select_from_rdc_wrapper(wrapper, target_sm);
      Pick pick = pick_ptx(wrapper.data, "fatbin wrapper: its data pointer", target_sm, &result);
      result.sass_only = pick == Pick::kNoPtx;
      return result;
    }
    case ImageKind::kContainer:
      break;
  }
  Pick pick = pick_ptx(image, "the fatbin", target_sm, &result);
  result.sass_only = pick == Pick::kNoPtx;
  return result;
}

}  // namespace cusnap::emu::fatbin
