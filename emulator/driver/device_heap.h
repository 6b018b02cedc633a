// Device-side malloc/free (docs/emulator.md, "Device heap"): one heap per context. Its memory is
// one device allocation of the context's CU_LIMIT_MALLOC_HEAP_SIZE (default 8 MiB), made at the
// first malloc, handed out first-fit in 16-byte-aligned blocks and merged again when freed.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "ptx/engine.h"

namespace cusnap::emu::driver {

class Context;

class DeviceHeap final : public ptx::DeviceHeap {
 public:
  explicit DeviceHeap(Context* context) : context_(context) {}
  ~DeviceHeap() override;  // frees the allocation (the context's work has finished)
  DeviceHeap(const DeviceHeap&) = delete;
  DeviceHeap& operator=(const DeviceHeap&) = delete;

  uint64_t allocate(uint64_t size) override;
  bool release(uint64_t address) override;
  // True once the first malloc made the heap's memory: its size can no longer change.
  bool in_use() const;

 private:
  Context* context_;
  mutable std::mutex mutex_;
  bool made_ = false;  // the allocation was attempted (it may have failed: then empty)
  uint64_t base_ = 0;  // the allocation (0: none)
  uint64_t size_ = 0;
  std::map<uint64_t, uint64_t> free_;  // address -> bytes, disjoint and not adjacent
  std::map<uint64_t, uint64_t> used_;  // address -> bytes handed out
};

}  // namespace cusnap::emu::driver
