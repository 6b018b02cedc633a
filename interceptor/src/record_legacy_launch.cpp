// Launches through the legacy execution-control API (cuFuncSetBlockShape, cuFuncSetSharedSize,
// cuParamSetSize/Seti/Setf/Setv, then cuLaunch, cuLaunchGrid or cuLaunchGridAsync). The driver
// keeps that configuration inside the function, where the shim cannot read it back, so the shim
// mirrors what each successful setter call gave. The setters get generic records that do not
// affect device state: what they set reaches replay through the launch records.
// Each launch is an ordinary `launch` record (a failed one too, with its result, as on the other
// launch paths, so that launch ordinals and snapshot selection count it alike): grid from the
// call (cuLaunch: 1x1x1), block and dynamic shared bytes from the mirrored state, the stream
// (cuLaunchGridAsync's, else 0) and the parameter buffer verbatim as `extra` bytes (viaExtra):
// it holds the bytes at the offsets the caller chose, which is what the driver hands the kernel,
// so replay passes it back with CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE. apiName stays the symbol
// the application called. Only these rare calls touch the mirror, under its own lock.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "handles.h"
#include "hooks.h"
#include "legacy_launch.h"
#include "session.h"
#include "snapshot.h"

namespace cusnap::icpt {
namespace {

struct LegacyState {
  uint64_t module = 0;  // where the function came from (0 unknown), for module unloads
  unsigned block[3] = {0, 0, 0};
  unsigned shared = 0;
  std::vector<uint8_t> written;  // the bytes cuParamSet* wrote, zero elsewhere
  bool size_set = false;
  unsigned size = 0;  // cuParamSetSize
};

std::mutex& state_mutex() {
  static std::mutex m;
  return m;
}

std::unordered_map<uint64_t, LegacyState>& states() {
  static auto* map = new std::unordered_map<uint64_t, LegacyState>();  // outlives exit-time calls
  return *map;
}

// The state of `f`, created on first use. Caller holds state_mutex().
LegacyState& state_of(CUfunction f) {
  auto [it, inserted] = states().try_emplace(handle_value(f));
  if (inserted) {
    if (auto info = HandleTable::instance().find(handle_value(f))) it->second.module = info->module;
  }
  return it->second;
}

// A setter's record: generic, and not device state the replayer must model (it would warn
// that replay may diverge): the launch records carry what the setters set.
void record_setter(CallScope& call) {
  call.record().initGeneric().setAffectsDeviceState(false);
  call.commit();
}

void param_write(CallScope& call, CUresult result, CUfunction f, int offset, const void* data,
                 size_t size) {
  record_setter(call);
  // The driver refused the write (bad offset, size or handle): it changed nothing.
  if (result != CUDA_SUCCESS || offset < 0 || (data == nullptr && size > 0)) return;
  std::lock_guard lock(state_mutex());
  std::vector<uint8_t>& buffer = state_of(f).written;
  size_t end = static_cast<size_t>(offset) + size;
  if (buffer.size() < end) buffer.resize(end, 0);
  if (size > 0) std::memcpy(buffer.data() + offset, data, size);
}

// What the launch ran with: the block shape, shared bytes and parameter buffer the application
// set. The buffer is the declared size (cuParamSetSize) when one was given, else what was
// written: the bytes the caller wrote at their offsets, zero between and after them.
struct LegacySnapshot {
  unsigned block[3];
  unsigned shared;
  std::vector<uint8_t> params;
};

LegacySnapshot current_state(CUfunction f) {
  std::lock_guard lock(state_mutex());
  const LegacyState& s = state_of(f);
  LegacySnapshot out{{s.block[0], s.block[1], s.block[2]}, s.shared, {}};
  out.params.assign(s.size_set ? s.size : s.written.size(), 0);
  std::memcpy(out.params.data(), s.written.data(), std::min(out.params.size(), s.written.size()));
  return out;
}

void record_legacy_launch(CallScope& call, CUfunction f, unsigned grid_x, unsigned grid_y,
                          CUstream stream) {
  LegacySnapshot s = current_state(f);
  HandleTable& table = HandleTable::instance();
  uint64_t handle = handle_value(f);
  const LaunchFacts* facts = table.lookup_cached(handle);
  if (facts == nullptr || facts->info.name.empty()) {
    // A function the shim did not see being created: ask its name once.
    table.learn(handle, query_function_name(handle, false), nullptr, LayoutSource::kUnknown);
    facts = table.lookup_cached(handle);
  }
  format::LaunchFields fields;
  fields.kind = schema::Launch::Kind::LAUNCH_KERNEL;
  fields.function = handle;
  fields.grid[0] = grid_x;
  fields.grid[1] = grid_y;
  fields.grid[2] = 1;
  std::memcpy(fields.block, s.block, sizeof fields.block);
  fields.shared_bytes = s.shared;
  fields.stream = handle_value(stream);
  if (facts != nullptr) fields.kernel_name = facts->info.name;
  fields.via_extra = true;
  fields.has_params = true;
  fields.params = std::span<const uint8_t>(s.params.data(), s.params.size());
  uint64_t ordinal = 0;
  uint64_t seq = commit_counted_launch([&] { return call.commit_launch(fields); }, &ordinal);
  snapshot_after(call, seq, ordinal);
}

}  // namespace

void forget_legacy_launch_state(uint64_t module) noexcept {
  std::lock_guard lock(state_mutex());
  std::erase_if(states(), [&](const auto& entry) { return entry.second.module == module; });
}

namespace hooks {

CUSNAP_POST_HOOK(cuFuncSetBlockShape)
(CallScope& call, CUresult result, CUfunction f, int x, int y, int z) {
  record_setter(call);
  if (result != CUDA_SUCCESS) return;
  std::lock_guard lock(state_mutex());
  LegacyState& s = state_of(f);
  s.block[0] = static_cast<unsigned>(x);
  s.block[1] = static_cast<unsigned>(y);
  s.block[2] = static_cast<unsigned>(z);
}

CUSNAP_POST_HOOK(cuFuncSetSharedSize)
(CallScope& call, CUresult result, CUfunction f, unsigned int bytes) {
  record_setter(call);
  if (result != CUDA_SUCCESS) return;
  std::lock_guard lock(state_mutex());
  state_of(f).shared = bytes;
}

CUSNAP_POST_HOOK(cuParamSetSize)
(CallScope& call, CUresult result, CUfunction f, unsigned int numbytes) {
  record_setter(call);
  if (result != CUDA_SUCCESS) return;
  std::lock_guard lock(state_mutex());
  LegacyState& s = state_of(f);
  s.size_set = true;
  s.size = numbytes;
}

CUSNAP_POST_HOOK(cuParamSeti)
(CallScope& call, CUresult result, CUfunction f, int offset, unsigned int value) {
  param_write(call, result, f, offset, &value, sizeof value);
}

CUSNAP_POST_HOOK(cuParamSetf)
(CallScope& call, CUresult result, CUfunction f, int offset, float value) {
  param_write(call, result, f, offset, &value, sizeof value);
}

CUSNAP_POST_HOOK(cuParamSetv)
(CallScope& call, CUresult result, CUfunction f, int offset, void* ptr, unsigned int numbytes) {
  param_write(call, result, f, offset, ptr, numbytes);
}

// Snapshots before selected launches (snapshot.h), as for cuLaunchKernel.
CUSNAP_PRE_HOOK(cuLaunch)(CallScope& call, CUfunction f) {
  if (snapshots_enabled()) snapshot_before(call, f, nullptr);
}

CUSNAP_PRE_HOOK(cuLaunchGrid)(CallScope& call, CUfunction f, int, int) {
  if (snapshots_enabled()) snapshot_before(call, f, nullptr);
}

CUSNAP_PRE_HOOK(cuLaunchGridAsync)(CallScope& call, CUfunction f, int, int, CUstream hStream) {
  if (snapshots_enabled()) snapshot_before(call, f, hStream);
}

CUSNAP_POST_HOOK(cuLaunch)(CallScope& call, CUresult, CUfunction f) {
  record_legacy_launch(call, f, 1, 1, nullptr);
}

CUSNAP_POST_HOOK(cuLaunchGrid)
(CallScope& call, CUresult, CUfunction f, int grid_width, int grid_height) {
  record_legacy_launch(call, f, static_cast<unsigned>(grid_width),
                       static_cast<unsigned>(grid_height), nullptr);
}

CUSNAP_POST_HOOK(cuLaunchGridAsync)
(CallScope& call, CUresult, CUfunction f, int grid_width, int grid_height, CUstream hStream) {
  record_legacy_launch(call, f, static_cast<unsigned>(grid_width),
                       static_cast<unsigned>(grid_height), hStream);
}

}  // namespace hooks
}  // namespace cusnap::icpt
