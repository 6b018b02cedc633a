// Finding this program's own fatbin wrapper the way the CUDA runtime receives it.
//
// `nvcc -c` puts one 24-byte wrapper (__fatBinC_Wrapper_t) per object file into the ELF section
// `.nvFatBinSegment`, and the start-up code it generates hands that wrapper's address to
// __cudaRegisterFatBinary; the runtime later passes the same address to cuLibraryLoadData. The
// section name starts with a dot, so the linker defines no __start_/__stop_ symbols for it, and
// defining the registration hook ourselves would clash with the static cudart. So the program
// reads its own section headers from /proc/self/exe and adds the load bias of the main
// executable (dl_iterate_phdr's first entry; non-zero for a PIE).
//
// Which wrappers the runtime registers (observed in nvcc 13 output, see
// fatbin/include/cusnap/fatbin/fatbin.h):
//   * ordinary objects: each object's version-1 wrapper;
//   * -rdc=true: the version-2 wrapper of the `nvcc -dlink` object, whose NULL-terminated
//     prelinked list holds the `data` pointers of the rdc objects' version-1 wrappers; those
//     version-1 wrappers are not registered on their own.
// So: every version-2 wrapper, plus every version-1 wrapper whose data no version-2 wrapper lists.
#pragma once

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace cusnap::samples {

struct FatbinWrapper {
  uint32_t magic;
  uint32_t version;
  const void* data;                 // fatbin container (v2: the device-linked one)
  const void* filename_or_fatbins;  // v1: NULL; v2: NULL-terminated list of prelinked fatbins
};
static_assert(sizeof(FatbinWrapper) == 24);

inline constexpr uint32_t kFatbinWrapperMagic = 0x466243B1;
inline constexpr uint32_t kFatbinContainerMagic = 0xBA55ED50;

struct SegmentWrappers {
  std::vector<const FatbinWrapper*> registered;  // what the runtime would register, in order
  size_t total = 0;                              // wrappers in the section
  std::string error;                             // empty on success
};

namespace detail {

inline int first_object_bias(dl_phdr_info* info, size_t, void* out) {
  *static_cast<uintptr_t*>(out) = info->dlpi_addr;
  return 1;  // the first object dl_iterate_phdr reports is the main program
}

// Reads `size` bytes at `offset` of an open file.
inline bool read_at(FILE* file, uint64_t offset, void* out, size_t size) {
  return std::fseek(file, static_cast<long>(offset), SEEK_SET) == 0 &&
         std::fread(out, 1, size, file) == size;
}

inline uint32_t load_u32(const void* p) {
  uint32_t value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

}  // namespace detail

// The `.nvFatBinSegment` wrappers of the running executable. Checks every wrapper's magic and
// version and that each data pointer (and each prelinked fatbin) starts with the container magic.
inline SegmentWrappers find_segment_wrappers() {
  SegmentWrappers result;
  FILE* file = std::fopen("/proc/self/exe", "rb");
  if (file == nullptr) {
    result.error = "cannot open /proc/self/exe";
    return result;
  }
  Elf64_Ehdr header;
  std::vector<Elf64_Shdr> sections;
  std::vector<char> names;
  bool ok = detail::read_at(file, 0, &header, sizeof header) &&
            std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
            header.e_ident[EI_CLASS] == ELFCLASS64 && header.e_shentsize == sizeof(Elf64_Shdr) &&
            header.e_shstrndx < header.e_shnum;
  if (ok) {
    sections.resize(header.e_shnum);
    ok = detail::read_at(file, header.e_shoff, sections.data(),
                         sections.size() * sizeof(Elf64_Shdr));
  }
  if (ok) {
    const Elf64_Shdr& strings = sections[header.e_shstrndx];
    names.resize(strings.sh_size + 1, '\0');
    ok = detail::read_at(file, strings.sh_offset, names.data(), strings.sh_size);
  }
  std::fclose(file);
  if (!ok) {
    result.error = "/proc/self/exe: cannot read the ELF64 section headers";
    return result;
  }
  const Elf64_Shdr* segment = nullptr;
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_name < names.size() &&
        std::strcmp(&names[section.sh_name], ".nvFatBinSegment") == 0) {
      segment = &section;
    }
  }
  if (segment == nullptr) {
    result.error =
        "the executable has no .nvFatBinSegment section (kernels not linked in by nvcc -c?)";
    return result;
  }
  if (segment->sh_size == 0 || segment->sh_size % sizeof(FatbinWrapper) != 0 ||
      segment->sh_addr == 0) {
    result.error = ".nvFatBinSegment: size " + std::to_string(segment->sh_size) +
                   " is not a non-zero multiple of the 24-byte wrapper";
    return result;
  }

  uintptr_t bias = 0;
  dl_iterate_phdr(detail::first_object_bias, &bias);
  const auto* wrappers = reinterpret_cast<const FatbinWrapper*>(bias + segment->sh_addr);
  result.total = segment->sh_size / sizeof(FatbinWrapper);

  std::vector<const void*> prelinked;  // data of wrappers that a version-2 wrapper links
  for (size_t i = 0; i < result.total; ++i) {
    const FatbinWrapper& w = wrappers[i];
    std::string where = ".nvFatBinSegment wrapper " + std::to_string(i);
    char magic[16];
    std::snprintf(magic, sizeof magic, "0x%08X", w.magic);
    if (w.magic != kFatbinWrapperMagic) {
      result.error = where + ": bad magic " + magic;
      return result;
    }
    if (w.version != 1 && w.version != 2) {
      result.error = where + ": unknown version " + std::to_string(w.version);
      return result;
    }
    if (w.data == nullptr || detail::load_u32(w.data) != kFatbinContainerMagic) {
      result.error = where + ": its data pointer is not a fatbin container";
      return result;
    }
    if (w.version == 2) {
      const auto* list = static_cast<const void* const*>(w.filename_or_fatbins);
      if (list == nullptr) {
        result.error = where + ": version 2 without a prelinked fatbin list";
        return result;
      }
      for (size_t j = 0; list[j] != nullptr; ++j) {
        if (detail::load_u32(list[j]) != kFatbinContainerMagic) {
          result.error =
              where + ": prelinked fatbin " + std::to_string(j) + " is not a fatbin container";
          return result;
        }
        prelinked.push_back(list[j]);
      }
    }
  }
  for (size_t i = 0; i < result.total; ++i) {
    const FatbinWrapper& w = wrappers[i];
    bool linked_elsewhere = false;
    for (const void* p : prelinked) linked_elsewhere |= w.version == 1 && p == w.data;
    if (!linked_elsewhere) result.registered.push_back(&w);
  }
  return result;
}

}  // namespace cusnap::samples
