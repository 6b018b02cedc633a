#include "byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cusnap::format::detail {

namespace {

Status out_of_bounds(const std::string& name, uint64_t offset, uint64_t len, uint64_t size) {
  return Status::error(ErrorCode::kTruncated, "read past the end of the data")
      .in_file(name)
      .at_offset(offset)
      .expected_found(std::to_string(len) + " bytes",
                      std::to_string(offset <= size ? size - offset : 0) + " bytes");
}

class FileSource final : public ByteSource {
 public:
  FileSource(int fd, uint64_t size, std::string path)
      : ByteSource(std::move(path)), fd_(fd), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  uint64_t size() const override { return size_; }
  Status read(uint64_t offset, std::span<uint8_t> out) const override {
    if (!in_bounds(offset, out.size(), size_))
      return out_of_bounds(name(), offset, out.size(), size_);
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n =
          ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::error(ErrorCode::kIo, std::string("read failed: ") + std::strerror(errno))
            .in_file(name())
            .at_offset(offset + done);
      }
      if (n == 0) {  // the file shrank after open
        return out_of_bounds(name(), offset, out.size(), offset + done);
      }
      done += static_cast<size_t>(n);
    }
    return Status::ok();
  }

 private:
  int fd_;
  uint64_t size_;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::span<const uint8_t> bytes) : ByteSource("<memory>"), bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  Status read(uint64_t offset, std::span<uint8_t> out) const override {
    if (!in_bounds(offset, out.size(), bytes_.size())) {
      return out_of_bounds(name(), offset, out.size(), bytes_.size());
    }
    if (!out.empty()) std::memcpy(out.data(), bytes_.data() + offset, out.size());
    return Status::ok();
  }

 private:
  std::span<const uint8_t> bytes_;
};

}  // namespace

Result<std::unique_ptr<ByteSource>> open_file_source(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::error(ErrorCode::kIo, std::string("cannot open: ") + std::strerror(errno))
        .in_file(path);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(ErrorCode::kIo, "not a regular file").in_file(path);
  }
  return std::unique_ptr<ByteSource>(
      std::make_unique<FileSource>(fd, static_cast<uint64_t>(st.st_size), path));
}

std::unique_ptr<ByteSource> memory_source(std::span<const uint8_t> bytes) {
  return std::make_unique<MemorySource>(bytes);
}

}  // namespace cusnap::format::detail
