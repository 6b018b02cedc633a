// Host memory a copy reads or writes, as the interceptor hashes and stores it: one home for
// plain copies (record_copies.cpp) and memcpy graph nodes (graphs.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cusnap/format/blob_id.h"

namespace cusnap::icpt {

// A strided host region: `rows` rows of `width` bytes, `pitch` apart, in `slices` slices
// `slice_pitch` apart (1-D: one row).
struct HostRegion {
  const uint8_t* base = nullptr;
  size_t width = 0, rows = 1, pitch = 0, slices = 1, slice_pitch = 0;
  size_t bytes() const { return width * rows * slices; }
  std::vector<uint8_t> gather() const {
    std::vector<uint8_t> out(bytes());
    uint8_t* cursor = out.data();
    for (size_t z = 0; z < slices; ++z) {
      for (size_t y = 0; y < rows; ++y) {
        std::memcpy(cursor, base + z * slice_pitch + y * pitch, width);
        cursor += width;
      }
    }
    return out;
  }
  bool contiguous() const {
    return (rows == 1 || pitch == width) && (slices == 1 || slice_pitch == width * rows);
  }
};

inline uint64_t checksum(const HostRegion& region) {
  if (region.contiguous()) return format::checksum64({region.base, region.bytes()});
  std::vector<uint8_t> bytes = region.gather();
  return format::checksum64(bytes);
}

}  // namespace cusnap::icpt
