// Payload buffers for the writer pipeline: never zero-filled, recycled through a bounded pool.
//
// Why: a blob chunk is several MiB. Allocating a fresh buffer per chunk costs a page fault and a
// kernel page clear per 4 KiB (glibc serves such sizes with mmap), and std::vector::resize would
// clear it once more before we overwrite it. Recycling the same few buffers keeps them resident.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace cusnap::format::detail {

// An owned byte array whose contents start indeterminate (never value-initialized).
class ByteBuffer {
 public:
  ByteBuffer() = default;
  explicit ByteBuffer(size_t capacity)
      : data_(capacity == 0 ? nullptr : new uint8_t[capacity]), capacity_(capacity) {}

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t capacity() const { return capacity_; }
  size_t size() const { return size_; }
  void set_size(size_t size) { size_ = size <= capacity_ ? size : capacity_; }
  std::span<const uint8_t> bytes() const { return {data_.get(), size_}; }
  bool empty_buffer() const { return data_ == nullptr; }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

// (Header-only: small, and used by the writer pipeline alone.)
// Thread-safe free lists by power-of-two size class. Buffers of at least kMinPooledBytes are
// kept after release() while the idle total stays under `max_idle_bytes`; smaller ones are left
// to malloc, which serves them from its own bins without page faults.
class BufferPool {
 public:
  static constexpr size_t kMinPooledBytes = 64u << 10;

  explicit BufferPool(size_t max_idle_bytes) : max_idle_bytes_(max_idle_bytes) {}
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer with capacity >= `bytes` and size 0.
  ByteBuffer acquire(size_t bytes) {
    if (bytes < kMinPooledBytes) return ByteBuffer(bytes);
    size_t cls = size_class(bytes);
    {
      std::lock_guard lock(mu_);
      if (cls < free_.size() && !free_[cls].empty()) {
        ByteBuffer buffer = std::move(free_[cls].back());
        free_[cls].pop_back();
        idle_bytes_ -= buffer.capacity();
        buffer.set_size(0);
        return buffer;
      }
    }
    // Rounded up to the class so that every pooled buffer of a class serves every request of it.
    return ByteBuffer(size_t{1} << cls);
  }

  // Returns a buffer to the pool (or frees it when the pool is full or it is small).
  void release(ByteBuffer buffer) {
    size_t capacity = buffer.capacity();
    if (capacity < kMinPooledBytes || !std::has_single_bit(capacity)) return;  // freed here
    size_t cls = size_class(capacity);
    std::lock_guard lock(mu_);
    if (idle_bytes_ + capacity > max_idle_bytes_) return;
    if (free_.size() <= cls) free_.resize(cls + 1);
    idle_bytes_ += capacity;
    free_[cls].push_back(std::move(buffer));
  }

  size_t idle_bytes() const {
    std::lock_guard lock(mu_);
    return idle_bytes_;
  }

 private:
  // log2 of the capacity rounded up to a power of two.
  static size_t size_class(size_t bytes) {
    return static_cast<size_t>(std::bit_width(bytes <= 1 ? size_t{1} : bytes - 1));
  }

  const size_t max_idle_bytes_;
  mutable std::mutex mu_;
  std::vector<std::vector<ByteBuffer>> free_;  // indexed by size class
  size_t idle_bytes_ = 0;
};

}  // namespace cusnap::format::detail
