// Tensor maps (schema 8): cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
// cuTensorMapEncodeIm2colWide and cuTensorMapReplaceAddress with every argument and the 128 bytes
// the driver encoded. The encoding is the driver's own: a replay encodes the map again with these
// arguments on its driver and finds the captured bytes in launch parameters and copies to
// substitute them (docs/format.md and docs/replay.md, "Tensor maps").
#include <cstring>

#include "hooks.h"
#include "session.h"

namespace cusnap::icpt {
namespace {

using TensorMapOp = schema::TensorMapCall::Op;
constexpr cuuint32_t kMaxRank = 5;  // cuda.h: tensorRank is at most 5

schema::TensorMapCall::Builder begin_map(CallScope& call, TensorMapOp op, CUresult result,
                                         const CUtensorMap* map) {
  auto t = call.record().initTensorMap();
  t.setOp(op);
  t.setHostAddress(reinterpret_cast<uint64_t>(map));
  if (result == CUDA_SUCCESS && map != nullptr)
    t.setEncoded(capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(map), sizeof *map));
  return t;
}

// The arguments every encoder shares. Arrays are read only up to the rank the driver accepts
// (a larger rank is recorded without them: the call failed and read nothing either).
void set_common(schema::TensorMapCall::Builder t, CUtensorMapDataType type, cuuint32_t rank,
                void* address, const cuuint64_t* dim, const cuuint64_t* strides,
                const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                CUtensorMapFloatOOBfill oob) {
  t.setDataType(static_cast<int32_t>(type));
  t.setRank(rank);
  t.setGlobalAddress(reinterpret_cast<uint64_t>(address));
  t.setInterleave(static_cast<int32_t>(interleave));
  t.setSwizzle(static_cast<int32_t>(swizzle));
  t.setL2Promotion(static_cast<int32_t>(l2));
  t.setOobFill(static_cast<int32_t>(oob));
  if (rank == 0 || rank > kMaxRank) return;
  if (dim != nullptr) {
    auto list = t.initGlobalDim(rank);
    for (cuuint32_t i = 0; i < rank; ++i) list.set(i, dim[i]);
  }
  if (strides != nullptr && rank > 1) {
    auto list = t.initGlobalStrides(rank - 1);
    for (cuuint32_t i = 0; i + 1 < rank; ++i) list.set(i, strides[i]);
  }
  if (element_strides != nullptr) {
    auto list = t.initElementStrides(rank);
    for (cuuint32_t i = 0; i < rank; ++i) list.set(i, element_strides[i]);
  }
}

// What cuTensorMapReplaceAddress found in the map before it changed it (pre hook -> post hook,
// same thread, same call).
thread_local CUtensorMap t_previous;
thread_local bool t_has_previous = false;

}  // namespace

namespace hooks {

CUSNAP_POST_HOOK(cuTensorMapEncodeTiled)
(CallScope& call, CUresult result, CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
 cuuint32_t tensorRank, void* globalAddress, const cuuint64_t* globalDim,
 const cuuint64_t* globalStrides, const cuuint32_t* boxDim, const cuuint32_t* elementStrides,
 CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
 CUtensorMapFloatOOBfill oobFill) {
  auto t = begin_map(call, TensorMapOp::ENCODE_TILED, result, tensorMap);
  set_common(t, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides, elementStrides,
             interleave, swizzle, l2Promotion, oobFill);
  if (boxDim != nullptr && tensorRank > 0 && tensorRank <= kMaxRank) {
    auto list = t.initBoxDim(tensorRank);
    for (cuuint32_t i = 0; i < tensorRank; ++i) list.set(i, boxDim[i]);
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuTensorMapEncodeIm2col)
(CallScope& call, CUresult result, CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
 cuuint32_t tensorRank, void* globalAddress, const cuuint64_t* globalDim,
 const cuuint64_t* globalStrides, const int* pixelBoxLowerCorner, const int* pixelBoxUpperCorner,
 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn, const cuuint32_t* elementStrides,
 CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
 CUtensorMapFloatOOBfill oobFill) {
  auto t = begin_map(call, TensorMapOp::ENCODE_IM2COL, result, tensorMap);
  set_common(t, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides, elementStrides,
             interleave, swizzle, l2Promotion, oobFill);
  t.setChannelsPerPixel(channelsPerPixel);
  t.setPixelsPerColumn(pixelsPerColumn);
  // cuda.h: the corners have tensorRank - 2 spatial dimensions (rank 3 to 5).
  if (tensorRank >= 3 && tensorRank <= kMaxRank) {
    if (pixelBoxLowerCorner != nullptr) {
      auto list = t.initPixelBoxLowerCorner(tensorRank - 2);
      for (cuuint32_t i = 0; i + 2 < tensorRank; ++i) list.set(i, pixelBoxLowerCorner[i]);
    }
    if (pixelBoxUpperCorner != nullptr) {
      auto list = t.initPixelBoxUpperCorner(tensorRank - 2);
      for (cuuint32_t i = 0; i + 2 < tensorRank; ++i) list.set(i, pixelBoxUpperCorner[i]);
    }
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuTensorMapEncodeIm2colWide)
(CallScope& call, CUresult result, CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
 cuuint32_t tensorRank, void* globalAddress, const cuuint64_t* globalDim,
 const cuuint64_t* globalStrides, int pixelBoxLowerCornerWidth, int pixelBoxUpperCornerWidth,
 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn, const cuuint32_t* elementStrides,
 CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle,
 CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  auto t = begin_map(call, TensorMapOp::ENCODE_IM2COL_WIDE, result, tensorMap);
  set_common(t, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides, elementStrides,
             interleave, swizzle, l2Promotion, oobFill);
  t.setChannelsPerPixel(channelsPerPixel);
  t.setPixelsPerColumn(pixelsPerColumn);
  t.setWideMode(static_cast<int32_t>(mode));
  t.initPixelBoxLowerCorner(1).set(0, pixelBoxLowerCornerWidth);
  t.initPixelBoxUpperCorner(1).set(0, pixelBoxUpperCornerWidth);
  call.commit();
}

CUSNAP_PRE_HOOK(cuTensorMapReplaceAddress)
(CallScope&, CUtensorMap* tensorMap, void*) {
  t_has_previous = tensorMap != nullptr;
  if (t_has_previous) std::memcpy(&t_previous, tensorMap, sizeof t_previous);
}

CUSNAP_POST_HOOK(cuTensorMapReplaceAddress)
(CallScope& call, CUresult result, CUtensorMap* tensorMap, void* globalAddress) {
  auto t = begin_map(call, TensorMapOp::REPLACE_ADDRESS, result, tensorMap);
  t.setGlobalAddress(reinterpret_cast<uint64_t>(globalAddress));
  if (t_has_previous) {
    t.setPrevious(
        capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(&t_previous), sizeof t_previous));
  }
  t_has_previous = false;
  call.commit();
}

}  // namespace hooks
}  // namespace cusnap::icpt
