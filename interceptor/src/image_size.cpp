#include "image_size.h"

#include <elf.h>

#include <cstring>
#include <new>

namespace cusnap::icpt {
namespace {

constexpr uint32_t kFatbinWrapperMagic = 0x466243B1;
constexpr uint32_t kFatbinMagic = 0xBA55ED50;

template <typename T>
T load(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

ImageView fatbin(const uint8_t* p) {
  // u32 magic, u16 version, u16 header size, u64 size of the entries that follow the header.
  uint16_t header_size = load<uint16_t>(p + 6);
  uint64_t entries = load<uint64_t>(p + 8);
  if (header_size < 16 || entries > kMaxImageBytes) return {};
  return {ImageKind::kFatbin, p, header_size + entries};
}

// One fatbin entry, as a byte range of its container (header + payload).
struct EntryRange {
  const uint8_t* begin;
  size_t size;
  uint16_t kind;  // 1 PTX, 2 ELF cubin
};

// The entries of a fatbin container, or false when a header runs past the container's end.
bool fatbin_entries(const uint8_t* p, std::vector<EntryRange>* out) {
  ImageView view = fatbin(p);
  if (view.kind != ImageKind::kFatbin) return false;
  uint16_t header_size = load<uint16_t>(p + 6);
  size_t offset = header_size;
  while (offset < view.size) {
    if (view.size - offset < 64) return false;
    uint32_t entry_header = load<uint32_t>(p + offset + 4);
    uint64_t payload = load<uint64_t>(p + offset + 8);
    if (entry_header < 64 || entry_header > view.size - offset || payload > view.size - offset - entry_header) {
      return false;
    }
    out->push_back({p + offset, entry_header + payload, load<uint16_t>(p + offset)});
    offset += entry_header + payload;
  }
  return true;
}

// A version-2 wrapper flattened into one owned fatbin (see image_size.h).
ImageView flatten_rdc(const uint8_t* linked, const uint8_t* list) {
  constexpr size_t kMaxPrelinked = 65536;
  std::vector<EntryRange> entries;
  if (!fatbin_entries(linked, &entries)) return {};
  std::vector<EntryRange> ptx;
  size_t fatbins_with_ptx = 0;
  for (size_t i = 0;; ++i) {
    if (i == kMaxPrelinked) return {};
    const auto* prelinked = reinterpret_cast<const uint8_t*>(load<uint64_t>(list + i * sizeof(uint64_t)));
    if (prelinked == nullptr) break;
    if (load<uint32_t>(prelinked) != kFatbinMagic) return {};
    std::vector<EntryRange> unit;
    if (!fatbin_entries(prelinked, &unit)) return {};
    bool has_ptx = false;
    for (const EntryRange& entry : unit) {
      if (entry.kind != 1) continue;
      ptx.push_back(entry);
      has_ptx = true;
    }
    fatbins_with_ptx += has_ptx ? 1 : 0;
  }
  if (fatbins_with_ptx == 1) entries.insert(entries.end(), ptx.begin(), ptx.end());

  uint16_t header_size = load<uint16_t>(linked + 6);
  auto bytes = std::make_shared<std::vector<uint8_t>>(linked, linked + header_size);
  for (const EntryRange& entry : entries) bytes->insert(bytes->end(), entry.begin, entry.begin + entry.size);
  uint64_t entries_size = bytes->size() - header_size;
  if (entries_size > kMaxImageBytes) return {};
  std::memcpy(bytes->data() + 8, &entries_size, sizeof entries_size);
  ImageView view{ImageKind::kFatbinWrapper, bytes->data(), bytes->size()};
  view.owned = std::move(bytes);
  return view;
}

ImageView elf(const uint8_t* p) {
  if (p[EI_CLASS] != ELFCLASS64) return {};
  Elf64_Ehdr header;
  std::memcpy(&header, p, sizeof header);
  uint64_t end = sizeof header;
  auto extend = [&](uint64_t offset, uint64_t size) {
    if (offset <= kMaxImageBytes && size <= kMaxImageBytes && offset + size > end) end = offset + size;
  };
  extend(header.e_shoff, uint64_t{header.e_shnum} * header.e_shentsize);
  extend(header.e_phoff, uint64_t{header.e_phnum} * header.e_phentsize);
  if (end > kMaxImageBytes) return {};
  if (header.e_shoff != 0 && header.e_shentsize == sizeof(Elf64_Shdr)) {
    for (unsigned i = 0; i < header.e_shnum; ++i) {
      Elf64_Shdr section;
      std::memcpy(&section, p + header.e_shoff + i * sizeof(Elf64_Shdr), sizeof section);
      if (section.sh_type != SHT_NOBITS) extend(section.sh_offset, section.sh_size);
    }
  }
  if (header.e_phoff != 0 && header.e_phentsize == sizeof(Elf64_Phdr)) {
    for (unsigned i = 0; i < header.e_phnum; ++i) {
      Elf64_Phdr segment;
      std::memcpy(&segment, p + header.e_phoff + i * sizeof(Elf64_Phdr), sizeof segment);
      extend(segment.p_offset, segment.p_filesz);
    }
  }
  if (end > kMaxImageBytes) return {};
  return {ImageKind::kCubin, p, end};
}

bool looks_like_text(const uint8_t* p) {
  for (int i = 0; i < 8 && p[i] != 0; ++i) {
    if (p[i] < 0x09 || (p[i] > 0x0d && p[i] < 0x20) || p[i] > 0x7e) return false;
  }
  return true;
}

}  // namespace

ImageView inspect_image(const void* image) noexcept {
  if (image == nullptr) return {};
  const auto* p = static_cast<const uint8_t*>(image);
  uint32_t magic = load<uint32_t>(p);
  if (magic == kFatbinWrapperMagic) {
    uint32_t version = load<uint32_t>(p + 4);
    const auto* data = reinterpret_cast<const uint8_t*>(load<uint64_t>(p + 8));
    if ((version != 1 && version != 2) || data == nullptr || load<uint32_t>(data) != kFatbinMagic) return {};
    if (version == 2) {
      const auto* list = reinterpret_cast<const uint8_t*>(load<uint64_t>(p + 16));
      if (list == nullptr) return {};
      try {
        return flatten_rdc(data, list);
      } catch (const std::bad_alloc&) {
        return {};
      }
    }
    ImageView view = fatbin(data);
    if (view.kind == ImageKind::kFatbin) view.kind = ImageKind::kFatbinWrapper;
    return view;
  }
  if (magic == kFatbinMagic) return fatbin(p);
  if (std::memcmp(p, ELFMAG, SELFMAG) == 0) return elf(p);
  if (looks_like_text(p)) {
    size_t size = std::strlen(reinterpret_cast<const char*>(p));
    return {ImageKind::kPtx, p, size};
  }
  return {};
}

}  // namespace cusnap::icpt
