// The code images nvcc writes, read from the bytes alone: what an image is, how many bytes it
// spans, the entries of a fatbin container and their (decompressed) payloads. Shared by the
// emulator (which runs the PTX) and the interceptor (which stores images and reads parameter
// layouts out of them); the version-2 wrapper flattening both rely on is in flatten.h.
//
// Layouts (what nvcc 13 writes; docs/format.md does not cover CUDA images, so they are here):
//   * the fatbin wrapper (`__fatBinC_Wrapper_t`, one per object file in `.nvFatBinSegment`,
//     magic 0x466243B1), what the CUDA runtime hands to cuLibraryLoadData:
//       u32 magic, u32 version, u64 data, u64 filename_or_fatbins   (24 bytes)
//     - version 1 (ordinary `nvcc -c`, and each `-rdc=true` object file): `data` points at the
//       object's fatbin container; the last field is NULL. In an rdc object that container holds
//       the translation unit's PTX (option string `--compile-only`) and a *relocatable* cubin per
//       SASS target; the runtime never registers these v1 wrappers on their own.
//     - version 2 (the object `nvcc -dlink` writes, the one the runtime registers for an rdc
//       program): `data` points at the device-linked fatbin, which holds only the linked
//       (executable) cubins, no PTX (no entries at all for a PTX-only build);
//       `filename_or_fatbins` points at a NULL-terminated array of `const void*`, the
//       "prelinked fatbins": the `data` of every rdc object's v1 wrapper, including the device
//       runtime's (libcudadevrt's `cuda_device_runtime.cu`: relocatable cubins for every
//       architecture and PTX for the newest only, compute_121 with nvcc 13.0). That array is in
//       .bss, filled by static constructors (`__cudaRegisterLinkedBinary_<id>`) before main().
//     A v2 wrapper is therefore not one contiguous byte range (see flatten.h).
//   * a fatbin container (magic kContainerMagic): u32 magic, u16 version, u16 header size, u64
//     size of the entries that follow the header; each entry is a header (64, 80, 96 or 112
//     bytes: its own size field says) and a payload padded to 8 bytes: PTX (kind 1) or an ELF
//     cubin (kind 2), compressed with zstd (flag 0x8000) or as a raw LZ4 block (flag 0x2000);
//   * PTX text (NUL-terminated);
//   * a bare ELF cubin.
//
// Images come from applications as bare pointers, so sizes are read from headers: functions that
// take only a pointer trust it to be readable as far as its headers say (as a driver does), those
// that take a `limit` never read past it. Nothing here throws except std::bad_alloc; failures are
// values that say what was wrong and at which byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cusnap::fatbin {

inline constexpr uint32_t kWrapperMagic = 0x466243B1;
inline constexpr uint32_t kContainerMagic = 0xBA55ED50;
inline constexpr uint32_t kWrapperVersion = 1;     // data -> the object's fatbin
inline constexpr uint32_t kWrapperVersionRdc = 2;  // data -> linked fatbin, + prelinked list
inline constexpr size_t kWrapperSize = 24;
inline constexpr size_t kContainerHeaderSize = 16;  // the smallest valid container header
inline constexpr size_t kMinEntryHeaderSize = 64;
// A prelinked list longer than this is taken as a corrupt pointer (one entry per rdc object file).
inline constexpr size_t kMaxPrelinkedFatbins = 65536;
// A container, cubin or decompressed payload larger than this is taken as a corrupt header.
inline constexpr uint64_t kMaxImageBytes = uint64_t{4} << 30;
inline constexpr uint16_t kEntryPtx = 1;
inline constexpr uint16_t kEntryElf = 2;
inline constexpr uint64_t kFlagLz4 = 0x2000;
inline constexpr uint64_t kFlagZstd = 0x8000;

enum class ImageKind : uint8_t { kWrapper, kContainer, kElf, kPtxText, kUnknown };

// Classifies an image by its first bytes: a known magic, else PTX text when the first bytes (up
// to 8, or the terminating NUL) are printable text, else kUnknown. Reads at most 8 bytes, fewer
// when a NUL comes first.
ImageKind classify(const void* image);

struct Wrapper {
  uint32_t version = 0;
  const void* data = nullptr;          // the fatbin container (v2: the device-linked one)
  std::vector<const void*> prelinked;  // v2 only: the relocatable fatbins, without the NULL
  std::string error;                   // empty on success
};

// Reads a fatbin wrapper: its magic, its version (1 or 2; anything else is an error naming it),
// a non-NULL data pointer, and for version 2 the NULL-terminated prelinked list (which must be
// present). Does not look at what the pointers point to.
Wrapper read_wrapper(const void* image);

struct Entry {
  uint16_t kind = 0;  // kEntryPtx or kEntryElf (others are listed, never interpreted)
  uint32_t sm = 0;    // 75 for sm_75 / compute_75
  uint16_t ptx_major = 0, ptx_minor = 0;
  uint64_t flags = 0;
  size_t header_offset = 0;      // from the container start
  size_t header_size = 0;        // the entry header, options string included
  size_t payload_offset = 0;     // header_offset + header_size
  uint64_t payload_size = 0;     // padded
  uint32_t compressed_size = 0;  // 0 when not compressed
  uint64_t uncompressed_size = 0;
  // The whole entry (header + payload) is [header_offset, payload_offset + payload_size).
  size_t end_offset() const { return payload_offset + static_cast<size_t>(payload_size); }
};

struct Container {
  std::vector<Entry> entries;  // on error: the entries before the bad one
  size_t header_size = 0;
  size_t total_size = 0;  // header + entries: how many bytes the container occupies
  std::string error;      // empty on success
};

// The size a container header declares (header size + entries size), or 0 when `data` does not
// start with a plausible container header. Reads 16 bytes; does not walk the entries.
uint64_t container_size(const void* data);

// Parses a container header and walks its entry headers. `limit` bounds every read when the
// caller knows how many bytes are there (0: trust the header, as for a bare pointer handed to the
// driver). Errors name the byte offset (from the container start) of what is wrong.
Container parse_container(const void* data, size_t limit = 0);

// Decompresses (or copies) one entry's payload into `out`. For PTX the text ends at its first
// NUL (the padding is dropped). On failure returns false and says why, with the entry's offset.
bool entry_payload(const void* container, const Entry& entry, std::string* out, std::string* error);

// The extent of a 64-bit ELF image: the furthest of its header tables and of the section
// (SHT_NOBITS excluded) and segment contents they describe. 0 for anything else or an extent over
// kMaxImageBytes. `limit` as for parse_container: a table outside it gives 0.
uint64_t elf_size(const void* image, size_t limit = 0);

// The number of bytes an image occupies from its pointer: a container's declared size, an ELF
// extent, a version-1 wrapper's container, or strlen + 1 for PTX text; 0 for an unrecognised or
// broken image. For a version-2 wrapper: the size of its device-linked container only, since the
// prelinked fatbins are separate ranges (flatten.h makes one image of them).
uint64_t image_size(const void* image);

// "0x%08X" (for messages that name a magic number).
std::string hex32(uint32_t value);

// Why an image classify() calls kUnknown is none of the known kinds: its magic at offset 0 and
// the magics it was compared with (reads 4 bytes).
std::string unknown_image_error(const void* image);

}  // namespace cusnap::fatbin
