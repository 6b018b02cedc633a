// Random-access, bounds-checked byte sources for the reader: a file (pread) or caller memory.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "cusnap/format/status.h"

namespace cusnap::format::detail {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Size fixed at open: a file that grows later is read as it was.
  virtual uint64_t size() const = 0;
  // Reads exactly out.size() bytes at `offset`; kTruncated when they are not all there.
  virtual Status read(uint64_t offset, std::span<uint8_t> out) const = 0;
  const std::string& name() const { return name_; }

 protected:
  explicit ByteSource(std::string name) : name_(std::move(name)) {}
  // True when [offset, offset + len) lies within [0, size).
  static bool in_bounds(uint64_t offset, uint64_t len, uint64_t size) {
    return offset <= size && len <= size - offset;
  }

 private:
  std::string name_;
};

Result<std::unique_ptr<ByteSource>> open_file_source(const std::string& path);
std::unique_ptr<ByteSource> memory_source(std::span<const uint8_t> bytes);

}  // namespace cusnap::format::detail
