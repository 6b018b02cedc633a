// Errors of the replayer, as values with context.
//
// A replay fails for three kinds of reasons: the capture (unreadable, damaged, hostile or
// describing something the replayer cannot do), the target (driver missing, device too old,
// not enough memory) or a driver call that failed while replaying. Each error names what it can
// of: the capture call (seq) and record kind it was replaying, the captured handle or address
// involved, and the CUresult the driver returned. Nothing in replayer/ throws across its API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace cusnap::replayer {

enum class ErrorKind : uint8_t {
  kCapture,      // the capture cannot be read or is inconsistent / hostile
  kUnsupported,  // the capture uses something this replayer does not implement
  kTarget,       // the driver or device cannot run this capture (checked before starting)
  kDriver,       // a driver call failed during the replay
  kInvalidArgument,
  kIo,
};

const char* error_kind_name(ErrorKind kind);

class Error {
 public:
  Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  Error& at_call(uint64_t seq) {
    seq_ = seq;
    return *this;
  }
  Error& in_record(std::string kind) {
    record_ = std::move(kind);
    return *this;
  }
  Error& with_handle(uint64_t handle) {
    handle_ = handle;
    return *this;
  }
  Error& with_address(uint64_t address) {
    address_ = address;
    return *this;
  }
  Error& with_result(int result) {
    result_ = result;
    return *this;
  }

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  std::optional<uint64_t> seq() const { return seq_; }
  const std::string& record() const { return record_; }
  std::optional<uint64_t> handle() const { return handle_; }
  std::optional<uint64_t> address() const { return address_; }
  std::optional<int> result() const { return result_; }

  // "driver: cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (call 17, launch, handle 0x..)"
  std::string to_string() const;

 private:
  ErrorKind kind_;
  std::string message_;
  std::optional<uint64_t> seq_;
  std::string record_;
  std::optional<uint64_t> handle_;
  std::optional<uint64_t> address_;
  std::optional<int> result_;
};

// A value or an Error (C++20 has no std::expected).
template <typename T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT(implicit)
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT(implicit)

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

// For functions that return nothing but may fail: std::nullopt is success.
using MaybeError = std::optional<Error>;

}  // namespace cusnap::replayer
