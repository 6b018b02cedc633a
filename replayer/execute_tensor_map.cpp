// Tensor maps (docs/replay.md, "Tensor maps"): a CUtensorMap's 128 bytes are the capturing
// driver's private encoding, so the replay encodes every recorded map again on its own driver,
// with the global address translated like any other device address, and remembers captured
// bytes -> replay bytes. Kernel parameters (launches, kernel nodes) and host-to-device copies
// (copies, memcpy nodes) that carry a captured map where a map may sit (format/launch_params.h)
// get the replay's bytes instead.
#include <cstring>
#include <string>

#include "cusnap/format/launch_params.h"
#include "replayer/execute.h"

namespace cusnap::replayer {
namespace {

using MapBytes = std::array<uint8_t, 128>;
static_assert(sizeof(CUtensorMap) == sizeof(MapBytes));

Error unsupported(const Action& a, const std::string& what) {
  Error e(ErrorKind::kUnsupported, what);
  e.at_call(a.seq).in_record("tensorMap");
  return e;
}

const char* api_name(TensorMapOp::Kind kind) {
  switch (kind) {
    case TensorMapOp::Kind::kEncodeTiled:
      return "cuTensorMapEncodeTiled";
    case TensorMapOp::Kind::kEncodeIm2col:
      return "cuTensorMapEncodeIm2col";
    case TensorMapOp::Kind::kEncodeIm2colWide:
      return "cuTensorMapEncodeIm2colWide";
    case TensorMapOp::Kind::kReplaceAddress:
      break;
  }
  return "cuTensorMapReplaceAddress";
}

}  // namespace

MaybeError Executor::do_tensor_map(const Action& a, const TensorMapOp& op) {
  const char* api = api_name(op.kind);
  // The global address as the replay placed it. A map of memory no allocation record covers
  // (allocated before a late capture started) keeps the captured address, said once.
  uint64_t address = op.global_address;
  if (auto live = memory_->translate(op.global_address, 1)) {
    address = *live;
  } else if (op.global_address != 0 && warned_tensor_maps_.insert("(address)").second) {
    warn("tensor map of call " + std::to_string(a.seq) +
         ": its global address is in no captured allocation; encoded with the captured address");
  }
  void* global = reinterpret_cast<void*>(static_cast<uintptr_t>(address));
  CUtensorMap map{};
  CUresult r = CUDA_SUCCESS;
  switch (op.kind) {
    case TensorMapOp::Kind::kEncodeTiled:
      if (api_.cuTensorMapEncodeTiled == nullptr)
        return unsupported(a, "the driver has no " + std::string(api));
      r = api_.cuTensorMapEncodeTiled(&map, static_cast<CUtensorMapDataType>(op.data_type), op.rank,
                                      global, op.global_dim.data(), op.global_strides.data(),
                                      op.box_dim.data(), op.element_strides.data(),
                                      static_cast<CUtensorMapInterleave>(op.interleave),
                                      static_cast<CUtensorMapSwizzle>(op.swizzle),
                                      static_cast<CUtensorMapL2promotion>(op.l2_promotion),
                                      static_cast<CUtensorMapFloatOOBfill>(op.oob_fill));
      break;
    case TensorMapOp::Kind::kEncodeIm2col:
      if (api_.cuTensorMapEncodeIm2col == nullptr)
        return unsupported(a, "the driver has no " + std::string(api));
      r = api_.cuTensorMapEncodeIm2col(
          &map, static_cast<CUtensorMapDataType>(op.data_type), op.rank, global,
          op.global_dim.data(), op.global_strides.data(), op.lower_corner.data(),
          op.upper_corner.data(), op.channels_per_pixel, op.pixels_per_column,
          op.element_strides.data(), static_cast<CUtensorMapInterleave>(op.interleave),
          static_cast<CUtensorMapSwizzle>(op.swizzle),
          static_cast<CUtensorMapL2promotion>(op.l2_promotion),
          static_cast<CUtensorMapFloatOOBfill>(op.oob_fill));
      break;
    case TensorMapOp::Kind::kEncodeIm2colWide:
      if (api_.cuTensorMapEncodeIm2colWide == nullptr)
        return unsupported(a, "the driver has no " + std::string(api));
      r = api_.cuTensorMapEncodeIm2colWide(
          &map, static_cast<CUtensorMapDataType>(op.data_type), op.rank, global,
          op.global_dim.data(), op.global_strides.data(), op.lower_corner[0], op.upper_corner[0],
          op.channels_per_pixel, op.pixels_per_column, op.element_strides.data(),
          static_cast<CUtensorMapInterleave>(op.interleave),
          static_cast<CUtensorMapIm2ColWideMode>(op.wide_mode),
          static_cast<CUtensorMapSwizzle>(op.swizzle),
          static_cast<CUtensorMapL2promotion>(op.l2_promotion),
          static_cast<CUtensorMapFloatOOBfill>(op.oob_fill));
      break;
    case TensorMapOp::Kind::kReplaceAddress: {
      if (api_.cuTensorMapReplaceAddress == nullptr)
        return unsupported(a, "the driver has no " + std::string(api));
      auto it = tensor_maps_.find(op.previous);
      if (it == tensor_maps_.end()) {
        // The map it changed was never encoded in the capture: nothing to re-address.
        warn("cuTensorMapReplaceAddress (call " + std::to_string(a.seq) +
             ") changed a tensor map whose encode the capture did not record; its bytes are "
             "passed as captured");
        return std::nullopt;
      }
      std::memcpy(&map, it->second.data(), sizeof map);
      r = api_.cuTensorMapReplaceAddress(&map, global);
      break;
    }
  }
  if (r != CUDA_SUCCESS) return fail(a, api, r);
  MapBytes live;
  std::memcpy(live.data(), &map, sizeof map);
  tensor_maps_[op.encoded] = live;
  tensor_maps_back_[live] = op.encoded;
  return std::nullopt;
}

unsigned Executor::substitute_tensor_maps(std::vector<uint8_t>& params, const LaunchOp& op) {
  const bool has_layout = op.has_layout && !op.via_extra;
  unsigned replaced = 0;
  format::for_each_tensor_map_slot(params.size(), op.layout, has_layout, [&](size_t offset) {
    MapBytes captured;
    std::memcpy(captured.data(), params.data() + offset, captured.size());
    auto it = tensor_maps_.find(captured);
    if (it != tensor_maps_.end()) {
      std::memcpy(params.data() + offset, it->second.data(), it->second.size());
      ++replaced;
      return;
    }
    // A 128-byte, 64-byte-aligned parameter is where a __grid_constant__ CUtensorMap sits; one
    // that is no recorded map is passed as captured, which is right only on the same driver.
    if (has_layout && warned_tensor_maps_.insert(op.kernel_name).second) {
      warn("kernel '" + op.kernel_name + "': its 128-byte parameter at offset " +
           std::to_string(offset) +
           " is no tensor map the capture recorded an encode of; passed as captured (if it "
           "is a tensor map, its encoding is the capturing driver's)");
    }
  });
  return replaced;
}

unsigned Executor::substitute_tensor_maps(uint64_t address, std::vector<uint8_t>& bytes,
                                          bool back) {
  const auto& maps = back ? tensor_maps_back_ : tensor_maps_;
  if (maps.empty()) return 0;
  unsigned replaced = 0;
  format::for_each_tensor_map_window(address, bytes.size(), [&](size_t offset) {
    MapBytes found;
    std::memcpy(found.data(), bytes.data() + offset, found.size());
    auto it = maps.find(found);
    if (it == maps.end() || it->second == found) return;
    std::memcpy(bytes.data() + offset, it->second.data(), it->second.size());
    ++replaced;
  });
  return replaced;
}

}  // namespace cusnap::replayer
