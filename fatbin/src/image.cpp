// What an image is and how many bytes it spans (fatbin.h).
#include <elf.h>

#include <cstdio>
#include <cstring>

#include "cusnap/fatbin/fatbin.h"
#include "load.h"

namespace cusnap::fatbin {
namespace {

// PTX text starts with printable characters (directives, comments, whitespace).
bool looks_like_text(const uint8_t* p) {
  for (int i = 0; i < 8 && p[i] != 0; ++i) {
    if (p[i] < 0x09 || (p[i] > 0x0d && p[i] < 0x20) || p[i] > 0x7e) return false;
  }
  return true;
}

}  // namespace

std::string hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", value);
  return text;
}

std::string unknown_image_error(const void* image) {
  return "unrecognised image: magic " + hex32(detail::load<uint32_t>(image, 0)) +
         " at offset 0 is none of fatbin wrapper (" + hex32(kWrapperMagic) +
         "), fatbin container (" + hex32(kContainerMagic) + "), ELF, or PTX text";
}

ImageKind classify(const void* image) {
  const auto* p = static_cast<const uint8_t*>(image);
  // Text first, so that a short PTX string is never read past its NUL. No magic is printable
  // (nor is ELF's 0x7f), so the order decides nothing else.
  if (looks_like_text(p)) return ImageKind::kPtxText;
  uint32_t magic = detail::load<uint32_t>(p, 0);
  if (magic == kWrapperMagic) return ImageKind::kWrapper;
  if (magic == kContainerMagic) return ImageKind::kContainer;
  if (std::memcmp(p, ELFMAG, SELFMAG) == 0) return ImageKind::kElf;
  return ImageKind::kUnknown;
}

Wrapper read_wrapper(const void* image) {
  Wrapper result;
  uint32_t magic = detail::load<uint32_t>(image, 0);
  if (magic != kWrapperMagic) {
    result.error = "fatbin wrapper: bad magic " + hex32(magic) + " at offset 0 (expected " +
                   hex32(kWrapperMagic) + ")";
    return result;
  }
  // u32 magic, u32 version, u64 data, u64 filename (v1, unused) or prelinked list (v2).
  uint32_t version = detail::load<uint32_t>(image, 4);
  if (version != kWrapperVersion && version != kWrapperVersionRdc) {
    result.error = "fatbin wrapper: unknown version " + std::to_string(version) +
                   " at offset 4 (known: 1, and 2 for relocatable device code)";
    return result;
  }
  result.version = version;
  result.data = reinterpret_cast<const void*>(detail::load<uint64_t>(image, 8));
  if (result.data == nullptr) {
    result.error = "fatbin wrapper v" + std::to_string(version) + ": NULL data pointer at offset 8";
    return result;
  }
  if (version == kWrapperVersionRdc) {
    const void* list = reinterpret_cast<const void*>(detail::load<uint64_t>(image, 16));
    if (list == nullptr) {
      result.error = "fatbin wrapper v2: no prelinked fatbin list (NULL at offset 16)";
      return result;
    }
    for (size_t i = 0;; ++i) {
      if (i == kMaxPrelinkedFatbins) {
        result.error = "fatbin wrapper v2: prelinked fatbin list has no NULL terminator within " +
                       std::to_string(kMaxPrelinkedFatbins) + " entries";
        result.prelinked.clear();
        return result;
      }
      const void* fatbin =
          reinterpret_cast<const void*>(detail::load<uint64_t>(list, i * sizeof(uint64_t)));
      if (fatbin == nullptr) break;
      result.prelinked.push_back(fatbin);
    }
  }
  return result;
}

uint64_t elf_size(const void* image, size_t limit) {
  const auto* p = static_cast<const uint8_t*>(image);
  if ((limit != 0 && limit < sizeof(Elf64_Ehdr)) || std::memcmp(p, ELFMAG, SELFMAG) != 0 ||
      p[EI_CLASS] != ELFCLASS64) {
    return 0;
  }
  auto header = detail::load<Elf64_Ehdr>(p, 0);
  uint64_t end = sizeof header;
  bool bad = false;
  auto extend = [&](uint64_t offset, uint64_t size) {
    if (offset > kMaxImageBytes || size > kMaxImageBytes) {
      bad = true;
    } else if (offset + size > end) {
      end = offset + size;
    }
  };
  extend(header.e_shoff, uint64_t{header.e_shnum} * header.e_shentsize);
  extend(header.e_phoff, uint64_t{header.e_phnum} * header.e_phentsize);
  if (bad || end > kMaxImageBytes || (limit != 0 && end > limit)) return 0;
  // The tables are inside the image; now the contents they describe.
  if (header.e_shoff != 0 && header.e_shentsize == sizeof(Elf64_Shdr)) {
    for (unsigned i = 0; i < header.e_shnum; ++i) {
      auto section = detail::load<Elf64_Shdr>(p, header.e_shoff + i * sizeof(Elf64_Shdr));
      if (section.sh_type != SHT_NOBITS) extend(section.sh_offset, section.sh_size);
    }
  }
  if (header.e_phoff != 0 && header.e_phentsize == sizeof(Elf64_Phdr)) {
    for (unsigned i = 0; i < header.e_phnum; ++i) {
      auto segment = detail::load<Elf64_Phdr>(p, header.e_phoff + i * sizeof(Elf64_Phdr));
      extend(segment.p_offset, segment.p_filesz);
    }
  }
  if (bad || end > kMaxImageBytes || (limit != 0 && end > limit)) return 0;
  return end;
}

uint64_t container_size(const void* data) {
  if (detail::load<uint32_t>(data, 0) != kContainerMagic) return 0;
  uint16_t header_size = detail::load<uint16_t>(data, 6);
  uint64_t entries_size = detail::load<uint64_t>(data, 8);
  if (header_size < kContainerHeaderSize || entries_size > kMaxImageBytes - header_size) return 0;
  return header_size + entries_size;
}

uint64_t image_size(const void* image) {
  switch (classify(image)) {
    case ImageKind::kWrapper: {
      Wrapper wrapper = read_wrapper(image);
      if (!wrapper.error.empty() || classify(wrapper.data) != ImageKind::kContainer) return 0;
      return container_size(wrapper.data);
    }
    case ImageKind::kContainer:
      return container_size(image);
    case ImageKind::kElf:
      return elf_size(image);
    case ImageKind::kPtxText:
      return std::strlen(static_cast<const char*>(image)) + 1;
    case ImageKind::kUnknown:
      break;
  }
  return 0;
}

}  // namespace cusnap::fatbin
