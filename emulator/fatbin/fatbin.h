// Reading the code images nvcc produces, as far as the emulator needs them: find the PTX.
//
// Accepted images (see shared/design/cuda-facts.md, "Fatbin container"):
//   * the fatbin wrapper (`.nvFatBinSegment`, magic 0x466243B1) that points at a container;
//   * a fatbin container (magic 0xBA55ED50): a header and a list of entries, each PTX (kind 1)
//     or an ELF cubin (kind 2), PTX possibly compressed with zstd (flag 0x8000) or as a raw LZ4
//     block (flag 0x2000);
//   * PTX text (NUL-terminated);
//   * a bare ELF cubin, recognised only to be refused: the emulator executes PTX, never SASS.
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
inline constexpr uint16_t kEntryPtx = 1;
inline constexpr uint16_t kEntryElf = 2;
inline constexpr uint64_t kFlagLz4 = 0x2000;
inline constexpr uint64_t kFlagZstd = 0x8000;

enum class ImageKind : uint8_t { kWrapper, kContainer, kElf, kPtxText };

// Classifies an image by its first bytes (anything that is not a known binary is PTX text).
ImageKind classify(const void* image);

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
// or strlen + 1 for PTX text. Used to copy "preserved" binaries at call time.
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
PtxSelection select_ptx(const void* image, uint32_t target_sm);

}  // namespace cusnap::emu::fatbin
