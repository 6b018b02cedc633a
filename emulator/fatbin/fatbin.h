// Reading the code images nvcc produces, as far as the emulator needs them: find the PTX.
//
// Accepted images (see shared/design/cuda-facts.md, "Fatbin container"):
//   * the fatbin wrapper (`__fatBinC_Wrapper_t`, one per object file in `.nvFatBinSegment`,
//     magic 0x466243B1), what the CUDA runtime hands to cuLibraryLoadData:
//       u32 magic, u32 version, u64 data, u64 filename_or_fatbins   (24 bytes)
//     - version 1 (ordinary `nvcc -c`, and each `-rdc=true` object file): `data` points at the
//       object's fatbin container; the last field is NULL. In an rdc object that container holds
//       the translation unit's PTX (its entry carries the option string `--compile-only`) and a
//       *relocatable* cubin per SASS target, both zstd-compressed by default; the runtime never
//       registers these v1 wrappers of rdc objects on their own.
//     - version 2 (the object `nvcc -dlink` writes, the one the runtime registers for an rdc
//       program): `data` points at the device-linked fatbin, which holds only the linked
//       (executable) cubins, no PTX; `filename_or_fatbins` points at a NULL-terminated array
//       of `const void*`, the "prelinked fatbins": the `data` pointers of the v1 wrappers of
//       every rdc object linked into it. That array lives in .bss and is filled by the
//       objects' static constructors (`__cudaRegisterLinkedBinary_<id>`) before main().
//     A v2 wrapper is therefore not one contiguous byte range: its image is the linked fatbin
//     plus every prelinked fatbin, wherever the linker put them.
//   * a fatbin container (magic 0xBA55ED50): a header and a list of entries, each PTX (kind 1)
//     or an ELF cubin (kind 2), PTX possibly compressed with zstd (flag 0x8000) or as a raw LZ4
//     block (flag 0x2000);
//   * PTX text (NUL-terminated);
//   * a bare ELF cubin, recognised only to be refused: the emulator executes PTX, never SASS.
// Anything else (binary bytes that are none of these) is refused as unrecognised.
//
// Images come from the application as bare pointers, so sizes are read from headers. Nothing here
// throws; failures are values that say what was wrong and at which byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cusnap::emu::fatbin {

inline constexpr uint32_t kWrapperMagic = 0x466243B1;
inline constexpr uint32_t kContainerMagic = 0xBA55ED50;
inline constexpr uint32_t kWrapperVersion = 1;     // data -> the object's fatbin
inline constexpr uint32_t kWrapperVersionRdc = 2;  // data -> linked fatbin, + prelinked list
// A prelinked list longer than this is taken as a corrupt pointer (one entry per rdc object file).
inline constexpr size_t kMaxPrelinkedFatbins = 65536;
inline constexpr uint16_t kEntryPtx = 1;
inline constexpr uint16_t kEntryElf = 2;
inline constexpr uint64_t kFlagLz4 = 0x2000;
inline constexpr uint64_t kFlagZstd = 0x8000;

enum class ImageKind : uint8_t { kWrapper, kContainer, kElf, kPtxText, kUnknown };

// Classifies an image by its first bytes: a known magic, else PTX text when the first bytes (up
// to 8, or the terminating NUL) are printable text, else kUnknown.
ImageKind classify(const void* image);

struct Wrapper {
  uint32_t version = 0;
  const void* data = nullptr;               // the fatbin container (v2: the device-linked one)
  std::vector<const void*> prelinked;       // v2 only: the relocatable fatbins, without the NULL
  std::string error;                        // empty on success
};

// Reads a fatbin wrapper: checks its magic and version (1 or 2; anything else is an error naming
// it) and, for version 2, walks the NULL-terminated prelinked list. Does not parse containers.
Wrapper read_wrapper(const void* image);

struct Entry {
  uint16_t kind = 0;  // kEntryPtx or kEntryElf
  uint32_t sm = 0;    // 75 for sm_75 / compute_75
  uint16_t ptx_major = 0, ptx_minor = 0;
  uint64_t flags = 0;
  size_t payload_offset = 0;     // from the container start
  uint64_t payload_size = 0;     // padded
  uint32_t compressed_size = 0;  // 0 when not compressed
  uint64_t uncompressed_size = 0;
};

struct Container {
  std::vector<Entry> entries;
  size_t total_size = 0;  // header + entries: how many bytes the container occupies
  std::string error;      // empty on success
};

// Parses a container header and its entry headers. `limit` bounds reads when the caller knows
// the buffer size (0: trust the header, as for a bare pointer handed to the driver).
Container parse_container(const void* data, size_t limit = 0);

// Decompresses (or copies) one entry's payload. For PTX the trailing NULs are dropped.
bool entry_payload(const void* container, const Entry& entry, std::string* out, std::string* error);

// The number of bytes an image occupies: container size, ELF extent, wrapper -> its container,
// or strlen + 1 for PTX text (0 for an unrecognised image). For a version-2 wrapper this is the
// size of the device-linked container `data` points at only: the prelinked fatbins are separate
// ranges (see Wrapper), so a v2 image cannot be copied by one size.
size_t image_size(const void* image);

struct PtxSelection {
  std::string ptx;       // the text, without trailing NULs
  uint32_t sm = 0;       // the entry's target (0 for plain PTX text)
  bool sass_only = false;  // the image has machine code but no PTX: refuse it
  std::string error;       // empty on success
};

// Finds the PTX to run on an emulated sm_<target_sm>: from a wrapper or container the PTX entry
// with the highest sm not above the target (or, when every entry is newer, an error saying so);
// from PTX text the text itself. ELF images and PTX-less containers set `sass_only`.
// A version-2 wrapper: PTX in its linked container if there is any (nvcc 13 puts none there),
// else the PTX of its prelinked fatbins. Exactly one prelinked fatbin with PTX the target can run
// (a program with one rdc translation unit) is supported; PTX from several would need device
// linking across modules (extern functions and variables), which the emulator does not do, so
// that is an error saying so. Prelinked fatbins whose PTX is all newer than the target do not
// count: a PTX-only (`code=compute_XX`) rdc build also lists libcudadevrt's fatbin, whose PTX is
// for the newest architecture only, and its device-linked fatbin has no entries at all.
PtxSelection select_ptx(const void* image, uint32_t target_sm);

}  // namespace cusnap::emu::fatbin
