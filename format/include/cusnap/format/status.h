// Error values for the capture format.
//
// Everything that reads or writes a capture reports failure as a value that carries enough
// context to act on it: which file, which frame (index and byte offset), which call, and what was
// expected versus found. Nothing in format/ throws across its public API; Cap'n Proto exceptions
// raised while decoding untrusted bytes are caught at the boundary and turned into a Status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace cusnap::format {

enum class ErrorCode : uint8_t {
  kOk = 0,
  kIo,           // open/read/write/fsync failed (errno text in message)
  kNotACapture,  // file magic missing: not a cusnap capture at all
  kUnsupportedVersion,
  kTruncated,        // the bytes end before a structure they promise
  kCorrupt,          // a checksum, magic, size or hash does not match
  kMalformed,        // checksums fine, contents violate the format (bad capnp, bad index)
  kLimitExceeded,    // a size is larger than the configured reader/writer limit
  kNotFound,         // no such call / launch / blob
  kInvalidArgument,  // caller error (bad option, wrong message type)
  kWouldBlock,       // try_* variant: the writer queue is full right now
  kClosed,           // writer already closed or failed earlier
};

// Human-readable name of a code, e.g. "corrupt".
const char* error_code_name(ErrorCode code);

// An error (or success) with context. Absent context fields are std::nullopt / empty.
class Status {
 public:
  Status() = default;  // OK

  static Status ok() { return Status(); }
  static Status error(ErrorCode code, std::string message) {
    Status s;
    s.code_ = code;
    s.message_ = std::move(message);
    return s;
  }

  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Context setters return *this so call sites can chain: Status::error(..).at_offset(x).
  Status& in_file(std::string path) {
    file_ = std::move(path);
    return *this;
  }
  Status& in_frame(uint64_t index) {
    frame_ = index;
    return *this;
  }
  Status& at_offset(uint64_t offset) {
    offset_ = offset;
    return *this;
  }
  Status& at_call(uint64_t seq) {
    call_ = seq;
    return *this;
  }
  Status& expected_found(std::string expected, std::string found) {
    expected_ = std::move(expected);
    found_ = std::move(found);
    return *this;
  }

  const std::string& file() const { return file_; }
  std::optional<uint64_t> frame() const { return frame_; }
  std::optional<uint64_t> offset() const { return offset_; }
  std::optional<uint64_t> call() const { return call_; }
  const std::string& expected() const { return expected_; }
  const std::string& found() const { return found_; }

  // "corrupt: payload checksum mismatch (file x.cusnap, frame 3, offset 4096, expected ..., found
  // ...)"
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  std::string file_;
  std::optional<uint64_t> frame_;
  std::optional<uint64_t> offset_;
  std::optional<uint64_t> call_;
  std::string expected_;
  std::string found_;
};

// A value or an error. Minimal by design (C++20 has no std::expected).
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(implicit); must not be OK

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return std::get<T>(v_); }

  // The error; Status::ok() when this holds a value.
  Status status() const { return is_ok() ? Status() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace cusnap::format
