// Where values the replay or a tool must recognise sit inside launch parameter bytes and copy
// payloads: the one home of these rules (replayer, extract, redact and emit use them).
//
// - Pointer-sized values (device addresses, texture/surface object handles): the 8-byte slots of
//   the parameter layout; without a layout (an opaque `extra` buffer) every 8-byte-aligned word.
// - Tensor maps (CUtensorMap, 128 bytes, 64-byte aligned): the 128-byte slots at 64-byte-aligned
//   offsets of the layout; without a layout, and in memory (a copy's payload), every 128-byte
//   window whose device address is 64-byte aligned. A window is a tensor map only when its bytes
//   equal a map the capture recorded (docs/replay.md, "Tensor maps").
//
// A layout is any range of slots with `offset`/`size` members (replayer::ParamSlot,
// format::LaunchParamSlot) or getOffset()/getSize() (schema::ParamSlot readers).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cusnap::format {

inline constexpr size_t kTensorMapBytes = 128;
inline constexpr size_t kTensorMapAlignment = 64;

namespace launch_params_detail {
template <class Slot>
uint64_t slot_offset(const Slot& s) {
  if constexpr (requires { s.getOffset(); })
    return s.getOffset();
  else
    return s.offset;
}
template <class Slot>
uint64_t slot_size(const Slot& s) {
  if constexpr (requires { s.getSize(); })
    return s.getSize();
  else
    return s.size;
}
}  // namespace launch_params_detail

// Calls f(offset) for every pointer-sized slot that lies inside `params_size` bytes.
template <class Layout, class F>
void for_each_word_slot(size_t params_size, const Layout& layout, bool has_layout, F&& f) {
  if (!has_layout) {
    for (size_t offset = 0; offset + 8 <= params_size; offset += 8) f(offset);
    return;
  }
  for (const auto& slot : layout) {
    uint64_t offset = launch_params_detail::slot_offset(slot);
    if (launch_params_detail::slot_size(slot) == 8 && offset + 8 <= params_size) f(offset);
  }
}

// Calls f(offset) for every place a tensor map may sit in launch parameters: every 128-byte slot
// of a layout, wherever it starts - NVIDIA's driver reports a __grid_constant__ CUtensorMap at
// offset 112 (an H200, driver 580: its offsets are not relative to a 64-byte-aligned base, so
// the map's 64-byte alignment does not show in them) - or, without a layout, every 64th byte.
template <class Layout, class F>
void for_each_tensor_map_slot(size_t params_size, const Layout& layout, bool has_layout, F&& f) {
  if (!has_layout) {
    for (size_t offset = 0; offset + kTensorMapBytes <= params_size; offset += kTensorMapAlignment)
      f(offset);
    return;
  }
  for (const auto& slot : layout) {
    uint64_t offset = launch_params_detail::slot_offset(slot);
    if (launch_params_detail::slot_size(slot) == kTensorMapBytes &&
        offset + kTensorMapBytes <= params_size)
      f(offset);
  }
}

// Calls f(offset) for every place a tensor map may sit in `size` bytes of memory that start at
// device address `address` (a host-to-device copy's payload).
template <class F>
void for_each_tensor_map_window(uint64_t address, size_t size, F&& f) {
  if (size < kTensorMapBytes) return;
  size_t first = static_cast<size_t>((kTensorMapAlignment - address % kTensorMapAlignment) %
                                     kTensorMapAlignment);
  for (size_t offset = first; offset + kTensorMapBytes <= size; offset += kTensorMapAlignment)
    f(offset);
}

}  // namespace cusnap::format
