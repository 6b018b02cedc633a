#include "image_size.h"

#include <elf.h>

#include <cstring>

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
