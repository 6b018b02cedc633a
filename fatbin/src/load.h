// Unaligned little-endian loads from image bytes (images are byte arrays at any alignment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cusnap::fatbin::detail {

template <class T>
T load(const void* base, size_t offset) {
  T value;
  std::memcpy(&value, static_cast<const uint8_t*>(base) + offset, sizeof(T));
  return value;
}

}  // namespace cusnap::fatbin::detail
