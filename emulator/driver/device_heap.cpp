// Device-side malloc/free (device_heap.h).
#include "driver/device_heap.h"

#include "driver/context.h"
#include "driver/memory.h"

namespace cusnap::emu::driver {

namespace {

constexpr uint64_t kAlignment = 16;  // what device malloc guarantees

}  // namespace

DeviceHeap::~DeviceHeap() {
  if (base_ != 0) release_device_heap(base_);
}

bool DeviceHeap::in_use() const {
  std::lock_guard lock(mutex_);
  return made_;
}

uint64_t DeviceHeap::allocate(uint64_t size) {
  if (size == 0 || size > UINT64_MAX - kAlignment) return 0;
  const uint64_t bytes = (size + kAlignment - 1) / kAlignment * kAlignment;
  std::lock_guard lock(mutex_);
  if (!made_) {
    made_ = true;
    const uint64_t heap = context_->limit(CU_LIMIT_MALLOC_HEAP_SIZE) / kAlignment * kAlignment;
    CUdeviceptr base = 0;
    if (heap != 0 && allocate_device_heap(context_, heap, &base) == CUDA_SUCCESS) {
      base_ = base;
      size_ = heap;
      free_[base_] = size_;
    }
  }
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const uint64_t address = it->first;
    const uint64_t left = it->second - bytes;
    free_.erase(it);
    if (left != 0) free_[address + bytes] = left;
    used_[address] = bytes;
    return address;
  }
  return 0;
}

bool DeviceHeap::release(uint64_t address) {
  std::lock_guard lock(mutex_);
  auto used = used_.find(address);
  if (used == used_.end()) return false;
  uint64_t start = address, bytes = used->second;
  used_.erase(used);
  // Merged with the free blocks right after and right before it.
  auto next = free_.find(start + bytes);
  if (next != free_.end()) {
    bytes += next->second;
    free_.erase(next);
  }
  auto after = free_.lower_bound(start);
  if (after != free_.begin()) {
    auto before = std::prev(after);
    if (before->first + before->second == start) {
      start = before->first;
      bytes += before->second;
      free_.erase(before);
    }
  }
  free_[start] = bytes;
  return true;
}

}  // namespace cusnap::emu::driver
