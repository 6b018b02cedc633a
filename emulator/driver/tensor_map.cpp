// Tensor maps (cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2colWide,
// cuTensorMapReplaceAddress): the 128-byte CUtensorMap holds the emulator's own encoding
// (ptx::TensorMapImage, engine.h), which cp.async.bulk.tensor reads.
//
// Arguments are checked as cuda.h documents them, in its order, and answer
// CUDA_ERROR_INVALID_VALUE when they break a rule. Valid maps the PTX engine cannot copy exactly
// are CUDA_ERROR_NOT_SUPPORTED (logged): interleaved layouts, swizzling (its exact bank pattern
// is not documented where the emulator could check it), the NaN out-of-bounds fill (its NaN
// is not documented either), element strides other than 1, the tf32/ftz and packed sub-byte
// types, and im2col maps.
#include <cstring>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/log.h"
#include "driver/state.h"
#include "ptx/engine.h"
#include "ptx/swizzle.h"

using namespace cusnap::emu::driver;

namespace {

using cusnap::emu::ptx::kTensorMapMagic;
using cusnap::emu::ptx::kTensorMapVersion;
using cusnap::emu::ptx::set_tensor_map_key;
using cusnap::emu::ptx::Swizzle;
using cusnap::emu::ptx::swizzle_span;
using cusnap::emu::ptx::tensor_map_of;
using cusnap::emu::ptx::TensorMapImage;

// Bytes per element, 0 for the packed sub-byte types.
uint32_t element_size(CUtensorMapDataType t) {
  switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
      return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
      return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return 4;
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

bool is_packed(CUtensorMapDataType t) {
  return t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B || t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B ||
         t == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
}

bool is_float(CUtensorMapDataType t) {
  switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return true;
    default:
      return false;
  }
}

CUresult invalid(const char* name, const char* why) {
  log(LogLevel::kWarn, "%s: %s (CUDA_ERROR_INVALID_VALUE)", name, why);
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult not_supported(const char* name, const char* why) {
  log(LogLevel::kWarn, "%s: %s is not supported by the emulator (CUDA_ERROR_NOT_SUPPORTED)", name,
      why);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// The rules cuda.h documents alike for tiled and im2col maps (cuTensorMapEncodeTiled,
// cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2colWide), in its order; `min_rank` is 1 for tiled
// maps and 3 for im2col ones. The caller checked its own NULL pointers first.
CUresult check_common(const char* kName, const CUtensorMap* tensorMap,
                      CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                      cuuint32_t min_rank, const void* globalAddress, const cuuint64_t* globalDim,
                      const cuuint64_t* globalStrides, const cuuint32_t* elementStrides,
                      CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                      CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  if (tensorMap == nullptr || globalDim == nullptr || elementStrides == nullptr ||
      (tensorRank > 1 && globalStrides == nullptr))
    return invalid(kName, "a NULL argument");
  if (reinterpret_cast<uintptr_t>(tensorMap) % 64 != 0)
    return invalid(kName, "tensorMap must be 64-byte aligned");
  const uint32_t esize = element_size(tensorDataType);
  if (esize == 0 && !is_packed(tensorDataType)) return invalid(kName, "unknown tensorDataType");
  if (interleave < CU_TENSOR_MAP_INTERLEAVE_NONE || interleave > CU_TENSOR_MAP_INTERLEAVE_32B)
    return invalid(kName, "unknown interleave");
  if (swizzle < CU_TENSOR_MAP_SWIZZLE_NONE || swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B)
    return invalid(kName, "unknown swizzle");
  if (l2Promotion < CU_TENSOR_MAP_L2_PROMOTION_NONE ||
      l2Promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B)
    return invalid(kName, "unknown l2Promotion");
  if (oobFill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE &&
      oobFill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return invalid(kName, "unknown oobFill");
  if (tensorRank < min_rank || tensorRank > 5)
    return invalid(kName, min_rank == 1 ? "tensorRank must be 1..5" : "tensorRank must be 3..5");
  const bool interleaved = interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  if (interleaved && tensorRank < 3)
    return invalid(kName, "an interleaved layout needs tensorRank >= 3");
  const bool align32 = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ||
                       tensorDataType == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B ||
                       tensorDataType == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B;
  const uintptr_t address = reinterpret_cast<uintptr_t>(globalAddress);
  if (address % (align32 ? 32 : 16) != 0)
    return invalid(kName, align32 ? "globalAddress must be 32-byte aligned"
                                  : "globalAddress must be 16-byte aligned");
  for (cuuint32_t i = 0; i < tensorRank; ++i)
    if (globalDim[i] == 0 || globalDim[i] > (cuuint64_t{1} << 32))
      return invalid(kName, "globalDim must be in [1, 2^32]");
  if ((tensorDataType == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B ||
       tensorDataType == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B) &&
      globalDim[0] % 128 != 0)
    return invalid(kName, "globalDim[0] of this packed type must be a multiple of 128");
  if (tensorDataType == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && globalDim[0] % 2 != 0)
    return invalid(kName, "globalDim[0] of 16U4_ALIGN8B must be even");
  for (cuuint32_t i = 0; i + 1 < tensorRank; ++i) {
    if (globalStrides[i] % (align32 ? 32 : 16) != 0)
      return invalid(kName, align32 ? "globalStrides must be multiples of 32"
                                    : "globalStrides must be multiples of 16");
    if (globalStrides[i] >= (cuuint64_t{1} << 40))
      return invalid(kName, "globalStrides must be less than 2^40");
  }
  for (cuuint32_t i = 0; i < tensorRank; ++i)
    if (elementStrides[i] == 0 || elementStrides[i] > 8)
      return invalid(kName, "elementStrides must be in [1, 8]");
  if (tensorDataType == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B && interleaved)
    return invalid(kName, "16U6_ALIGN16B needs CU_TENSOR_MAP_INTERLEAVE_NONE");
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_32B && swizzle != CU_TENSOR_MAP_SWIZZLE_32B)
    return invalid(kName, "CU_TENSOR_MAP_INTERLEAVE_32B needs CU_TENSOR_MAP_SWIZZLE_32B");
  if (oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA &&
      (!is_float(tensorDataType) || is_packed(tensorDataType)))
    return invalid(kName, "the NaN out-of-bounds fill needs a floating-point tensorDataType");
  return CUDA_SUCCESS;
}

// The bounding box's inner dimension (bytes) against the swizzle span, when not interleaved.
CUresult check_swizzle_span(const char* kName, CUtensorMapDataType tensorDataType,
                            CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                            uint64_t inner_elements) {
  const uint32_t esize = element_size(tensorDataType);
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE || swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ||
      esize == 0)
    return CUDA_SUCCESS;
  const uint64_t span = swizzle == CU_TENSOR_MAP_SWIZZLE_32B   ? 32
                        : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64
                                                               : 128;
  if (inner_elements * esize > span)
    return invalid(kName, "the box's inner dimension exceeds the swizzle span");
  return CUDA_SUCCESS;
}

// channelsPerPixel and pixelsPerColumn of the im2col encoders, and their box's inner dimension
// (channelsPerPixel elements) against the swizzle span.
CUresult check_pixels(const char* kName, CUtensorMapDataType tensorDataType,
                      CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                      cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn) {
  if (channelsPerPixel > 256) return invalid(kName, "channelsPerPixel must be at most 256");
  if ((tensorDataType == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B ||
       tensorDataType == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B) &&
      channelsPerPixel != 128)
    return invalid(kName, "channelsPerPixel of this packed type must be 128");
  if (pixelsPerColumn > 1024) return invalid(kName, "pixelsPerColumn must be at most 1024");
  return check_swizzle_span(kName, tensorDataType, interleave, swizzle, channelsPerPixel);
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
    const cuuint32_t* boxDim, const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  static constexpr const char* kName = "cuTensorMapEncodeTiled";
  return guarded(kName, [&]() -> CUresult {
    Context* ctx;
    if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
    if (boxDim == nullptr) return invalid(kName, "a NULL argument");
    if (CUresult r =
            check_common(kName, tensorMap, tensorDataType, tensorRank, 1, globalAddress, globalDim,
                         globalStrides, elementStrides, interleave, swizzle, l2Promotion, oobFill);
        r != CUDA_SUCCESS)
      return r;
    const uint32_t esize = element_size(tensorDataType);
    const bool interleaved = interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
    for (cuuint32_t i = 0; i < tensorRank; ++i)
      if (boxDim[i] == 0 || boxDim[i] > 256) return invalid(kName, "boxDim must be in [1, 256]");
    if (!interleaved && esize != 0 && (boxDim[0] * esize) % 16 != 0)
      return invalid(kName, "boxDim[0] times the element size must be a multiple of 16 bytes");
    if ((tensorDataType == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B ||
         tensorDataType == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B) &&
        boxDim[0] != 128)
      return invalid(kName, "boxDim[0] of this packed type must be 128");
    if (CUresult r = check_swizzle_span(kName, tensorDataType, interleave, swizzle, boxDim[0]);
        r != CUDA_SUCCESS)
      return r;

    // Valid; what the PTX engine copies exactly.
    if (is_packed(tensorDataType)) return not_supported(kName, "a packed sub-byte tensorDataType");
    if (tensorDataType == CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ ||
        tensorDataType == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 ||
        tensorDataType == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ)
      return not_supported(kName, "a tf32/ftz tensorDataType (a conversion on copy)");
    if (interleaved) return not_supported(kName, "an interleaved layout");
    if (swizzle > CU_TENSOR_MAP_SWIZZLE_128B)
      return not_supported(kName,
                           "the CU_TENSOR_MAP_SWIZZLE_128B_ATOM_* swizzles (their chunk pattern is "
                           "not confirmed from documentation)");
    if (swizzle != CU_TENSOR_MAP_SWIZZLE_NONE &&
        boxDim[0] * esize != swizzle_span(static_cast<Swizzle>(swizzle)))
      return not_supported(kName,
                           "a swizzled box whose inner dimension is narrower than the swizzle "
                           "span (the padding of its rows is not confirmed from documentation)");
    if (oobFill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
      return not_supported(kName, "the NaN out-of-bounds fill");
    for (cuuint32_t i = 1; i < tensorRank; ++i)
      if (elementStrides[i] != 1) return not_supported(kName, "an element stride other than 1");

    TensorMapImage m;
    m.magic = kTensorMapMagic;
    m.version = kTensorMapVersion;
    set_tensor_map_key(m, device_config().tensor_map_key);
    m.data_type = static_cast<uint8_t>(tensorDataType);
    m.rank = static_cast<uint8_t>(tensorRank);
    m.element_size = static_cast<uint8_t>(esize);
    m.l2_promotion = static_cast<uint8_t>(l2Promotion);
    m.swizzle = static_cast<uint8_t>(swizzle);
    m.address = reinterpret_cast<uintptr_t>(globalAddress);
    for (cuuint32_t i = 0; i < tensorRank; ++i) {
      m.dim[i] = globalDim[i];
      m.stride[i] = i == 0 ? esize : globalStrides[i - 1];
      m.box[i] = static_cast<uint16_t>(boxDim[i]);
    }
    static_assert(sizeof(CUtensorMap) == sizeof(TensorMapImage));
    std::memcpy(tensorMap, &m, sizeof m);
    return CUDA_SUCCESS;
  });
}

// Im2col maps pass the documented checks; every valid one is then refused: the PTX engine
// refuses the im2col modes of cp.async.bulk.tensor at load, so no kernel could use the map.
CUSNAP_EXPORT CUresult CUDAAPI cuTensorMapEncodeIm2col(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
    const int* pixelBoxLowerCorner, const int* pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
    cuuint32_t pixelsPerColumn, const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  static constexpr const char* kName = "cuTensorMapEncodeIm2col";
  return guarded(kName, [&]() -> CUresult {
    Context* ctx;
    if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
    if (pixelBoxLowerCorner == nullptr || pixelBoxUpperCorner == nullptr)
      return invalid(kName, "a NULL argument");
    if (CUresult r =
            check_common(kName, tensorMap, tensorDataType, tensorRank, 3, globalAddress, globalDim,
                         globalStrides, elementStrides, interleave, swizzle, l2Promotion, oobFill);
        r != CUDA_SUCCESS)
      return r;
    // One offset per spatial dimension (rank - 2 of them), in a range that narrows with the rank.
    const int limit = tensorRank == 3 ? 32768 : tensorRank == 4 ? 128 : 16;
    for (cuuint32_t i = 0; i + 2 < tensorRank; ++i)
      for (int corner : {pixelBoxLowerCorner[i], pixelBoxUpperCorner[i]})
        if (corner < -limit || corner >= limit)
          return invalid(kName, tensorRank == 3   ? "pixel box offsets must be in [-32768, 32767]"
                                : tensorRank == 4 ? "pixel box offsets must be in [-128, 127]"
                                                  : "pixel box offsets must be in [-16, 15]");
    if (CUresult r = check_pixels(kName, tensorDataType, interleave, swizzle, channelsPerPixel,
                                  pixelsPerColumn);
        r != CUDA_SUCCESS)
      return r;
    return not_supported(kName, "an im2col tensor map (cp.async.bulk.tensor .im2col is refused)");
  });
}

// As cuTensorMapEncodeIm2col; cuda.h documents this encoder for compute capability 10.0 and up
// only, so on a smaller emulated device (CUSNAP_EMU_SM) a valid map is refused for that reason.
CUSNAP_EXPORT CUresult CUDAAPI cuTensorMapEncodeIm2colWide(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
    int pixelBoxLowerCornerWidth, int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel,
    cuuint32_t pixelsPerColumn, const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  static constexpr const char* kName = "cuTensorMapEncodeIm2colWide";
  return guarded(kName, [&]() -> CUresult {
    Context* ctx;
    if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r =
            check_common(kName, tensorMap, tensorDataType, tensorRank, 3, globalAddress, globalDim,
                         globalStrides, elementStrides, interleave, swizzle, l2Promotion, oobFill);
        r != CUDA_SUCCESS)
      return r;
    for (int corner : {pixelBoxLowerCornerWidth, pixelBoxUpperCornerWidth})
      if (corner < -32768 || corner > 32767)
        return invalid(kName, "pixel box width offsets must be in [-32768, 32767]");
    if (mode != CU_TENSOR_MAP_IM2COL_WIDE_MODE_W && mode != CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128)
      return invalid(kName, "unknown mode");
    // pixelsPerColumn is ignored in W128 mode.
    if (CUresult r =
            check_pixels(kName, tensorDataType, interleave, swizzle, channelsPerPixel,
                         mode == CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128 ? 1 : pixelsPerColumn);
        r != CUDA_SUCCESS)
      return r;
    if (device_config().sm < 100)
      return not_supported(kName,
                           "a wide im2col tensor map on a device below compute capability "
                           "10.0 (CUSNAP_EMU_SM)");
    return not_supported(kName, "an im2col tensor map (cp.async.bulk.tensor .im2col is refused)");
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTensorMapReplaceAddress(CUtensorMap* tensorMap,
                                                         void* globalAddress) {
  static constexpr const char* kName = "cuTensorMapReplaceAddress";
  return guarded(kName, [&]() -> CUresult {
    Context* ctx;
    if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
    if (tensorMap == nullptr) return invalid(kName, "a NULL argument");
    if (reinterpret_cast<uintptr_t>(tensorMap) % 64 != 0)
      return invalid(kName, "tensorMap must be 64-byte aligned");
    TensorMapImage m;
    std::memcpy(static_cast<void*>(&m), tensorMap, sizeof m);
    if (m.magic != kTensorMapMagic || m.version != kTensorMapVersion)
      return invalid(kName, "tensorMap was not encoded by cuTensorMapEncodeTiled");
    if (!tensor_map_of(m, device_config().tensor_map_key))
      return invalid(kName,
                     "tensorMap was encoded by another driver (its encoding key is not this "
                     "driver's CUSNAP_EMU_TENSOR_MAP_KEY)");
    const uintptr_t address = reinterpret_cast<uintptr_t>(globalAddress);
    if (address % 16 != 0) return invalid(kName, "globalAddress must be 16-byte aligned");
    m.address = address;
    std::memcpy(tensorMap, &m, sizeof m);
    return CUDA_SUCCESS;
  });
}
