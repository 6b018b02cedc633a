#include "reseal.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/container.h"

namespace cusnap::test {

namespace {

uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t load_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

void store_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// The checksum at `at` over bytes [begin, at) (docs/format.md: each header ends with the
// XXH3-64 of the bytes before it).
void seal(std::vector<uint8_t>& bytes, size_t begin, size_t at) {
  store_le64(bytes.data() + at,
             format::checksum64(std::span<const uint8_t>(bytes.data() + begin, at - begin)));
}

}  // namespace

size_t reseal_checksums(std::vector<uint8_t>& bytes) {
  using namespace format;
  if (bytes.size() < kFileHeaderSize) return 0;
  seal(bytes, 0, 24);
  size_t frames = 0;
  uint64_t offset = kFileHeaderSize;
  while (bytes.size() - offset >= kFrameHeaderSize) {
    uint8_t* h = bytes.data() + offset;
    if (load_le32(h) != kFrameMagic) break;
    uint64_t stored = load_le64(h + 8);
    if (stored > bytes.size() - offset - kFrameHeaderSize) break;
    store_le64(h + 56, checksum64(std::span<const uint8_t>(h + kFrameHeaderSize, stored)));
    seal(bytes, offset, offset + 72);
    offset += kFrameHeaderSize + stored;
    ++frames;
  }
  if (bytes.size() >= kFileHeaderSize + kTrailerSize) {
    size_t t = bytes.size() - kTrailerSize;
    if (std::equal(kTrailerMagic.begin(), kTrailerMagic.end(), bytes.begin() + t)) {
      seal(bytes, t, t + 24);
    }
  }
  return frames;
}

}  // namespace cusnap::test
