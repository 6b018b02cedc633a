// CUDA arrays and mipmapped arrays: creation, descriptors, levels and destruction (array.h).
// Copies into and out of arrays are copy.cpp's (CU_MEMORYTYPE_ARRAY sides of its regions).
#include "driver/array.h"

#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/log.h"
#include "driver/memory.h"
#include "driver/state.h"

namespace cusnap::emu::driver {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<CudaArray*>& live_arrays() {
  static std::unordered_set<CudaArray*> s;
  return s;
}
std::unordered_set<MipmappedArray*>& live_mipmapped() {
  static std::unordered_set<MipmappedArray*> s;
  return s;
}

constexpr unsigned kKnownFlags = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
                                 CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER;

// The driver's extent rules for a CUDA_ARRAY3D_DESCRIPTOR (the device limits of device.cpp):
// Height 0 means 1D, Depth 0 means not 3D; layered arrays keep their layer count in Depth.
CUresult check_descriptor(const CUDA_ARRAY3D_DESCRIPTOR& d) {
  if (format_bytes(d.Format) == 0) return CUDA_ERROR_INVALID_VALUE;
  if (d.NumChannels != 1 && d.NumChannels != 2 && d.NumChannels != 4)
    return CUDA_ERROR_INVALID_VALUE;
  if (d.Width == 0) return CUDA_ERROR_INVALID_VALUE;
  if (d.Height == 0 && d.Depth != 0 && !(d.Flags & CUDA_ARRAY3D_LAYERED))
    return CUDA_ERROR_INVALID_VALUE;
  if (d.Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_DEPTH_TEXTURE |
                 CUDA_ARRAY3D_COLOR_ATTACHMENT)) {
    log(LogLevel::kError,
        "cuArray3DCreate: sparse, deferred-mapping, depth and colour-attachment arrays are not "
        "supported by the emulator");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (d.Flags & ~kKnownFlags) return CUDA_ERROR_INVALID_VALUE;
  if (d.Flags & CUDA_ARRAY3D_CUBEMAP) {
    if (d.Width != d.Height) return CUDA_ERROR_INVALID_VALUE;
    const bool layered = (d.Flags & CUDA_ARRAY3D_LAYERED) != 0;
    if (layered ? d.Depth == 0 || d.Depth % 6 != 0 : d.Depth != 6) return CUDA_ERROR_INVALID_VALUE;
  }
  if (d.Flags & CUDA_ARRAY3D_LAYERED) {
    if (d.Depth == 0 || d.Depth > 2048) return CUDA_ERROR_INVALID_VALUE;
    if (d.Width > 32768 || d.Height > 32768) return CUDA_ERROR_INVALID_VALUE;
  } else if (d.Depth != 0) {
    if (d.Width > 16384 || d.Height > 16384 || d.Depth > 16384) return CUDA_ERROR_INVALID_VALUE;
  } else if (d.Height != 0) {
    if (d.Width > 131072 || d.Height > 65536) return CUDA_ERROR_INVALID_VALUE;
  } else if (d.Width > 131072) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult make_array(Context* ctx, const CUDA_ARRAY3D_DESCRIPTOR& d, CUmipmappedArray owner,
                    std::unique_ptr<CudaArray>* out) {
  auto a = std::make_unique<CudaArray>();
  a->desc = d;
  a->context = ctx->handle();
  a->owner = owner;
  a->texel_bytes = format_bytes(d.Format) * d.NumChannels;
  a->row_pitch = uint64_t{a->texel_bytes} * d.Width;
  a->slice_pitch = a->row_pitch * std::max<size_t>(d.Height, 1);
  a->bytes = a->slice_pitch * std::max<size_t>(d.Depth, 1);
  if (!allocations().charge(a->bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  a->data = static_cast<uint8_t*>(map_anonymous(a->bytes));
  if (a->data == nullptr) {
    allocations().refund(a->bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *out = std::move(a);
  return CUDA_SUCCESS;
}

CUresult create_array(const CUDA_ARRAY3D_DESCRIPTOR& d, CUarray* pHandle) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (pHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_descriptor(d); r != CUDA_SUCCESS) return r;
  ptx::TexelFormat f;
  if (!texel_format(d.Format, &f)) {
    log(LogLevel::kError,
        "cuArrayCreate: array format 0x%x is not supported by the emulator (only the 8/16/32-bit "
        "integer, half and float formats)",
        static_cast<unsigned>(d.Format));
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  std::unique_ptr<CudaArray> a;
  if (CUresult r = make_array(ctx, d, nullptr, &a); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(registry_mutex());
  live_arrays().insert(a.get());
  *pHandle = reinterpret_cast<CUarray>(a.release());
  return CUDA_SUCCESS;
}

CUDA_ARRAY3D_DESCRIPTOR from_2d(const CUDA_ARRAY_DESCRIPTOR& d) {
  CUDA_ARRAY3D_DESCRIPTOR out{};
  out.Width = d.Width;
  out.Height = d.Height;
  out.Format = d.Format;
  out.NumChannels = d.NumChannels;
  return out;
}

}  // namespace

CudaArray::~CudaArray() {
  if (data != nullptr) {
    unmap_anonymous(data, bytes);
    allocations().refund(bytes);
  }
}

uint32_t format_bytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 0;
  }
}

bool texel_format(CUarray_format format, ptx::TexelFormat* out) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
      *out = ptx::TexelFormat::kU8;
      return true;
    case CU_AD_FORMAT_UNSIGNED_INT16:
      *out = ptx::TexelFormat::kU16;
      return true;
    case CU_AD_FORMAT_UNSIGNED_INT32:
      *out = ptx::TexelFormat::kU32;
      return true;
    case CU_AD_FORMAT_SIGNED_INT8:
      *out = ptx::TexelFormat::kS8;
      return true;
    case CU_AD_FORMAT_SIGNED_INT16:
      *out = ptx::TexelFormat::kS16;
      return true;
    case CU_AD_FORMAT_SIGNED_INT32:
      *out = ptx::TexelFormat::kS32;
      return true;
    case CU_AD_FORMAT_HALF:
      *out = ptx::TexelFormat::kF16;
      return true;
    case CU_AD_FORMAT_FLOAT:
      *out = ptx::TexelFormat::kF32;
      return true;
    default:
      return false;
  }
}

ptx::ImageView image_of(const CudaArray& a) {
  ptx::ImageView v;
  v.data = a.data;
  v.row_pitch = a.row_pitch;
  v.slice_pitch = a.slice_pitch;
  v.width = static_cast<uint32_t>(a.desc.Width);
  v.height = static_cast<uint32_t>(std::max<size_t>(a.desc.Height, 1));
  texel_format(a.desc.Format, &v.format);
  v.channels = static_cast<uint8_t>(a.desc.NumChannels);
  if (a.desc.Flags & CUDA_ARRAY3D_LAYERED) {
    v.layers = static_cast<uint32_t>(a.desc.Depth);
    v.dims = a.desc.Height == 0 ? 1 : 2;
  } else if (a.desc.Flags & CUDA_ARRAY3D_CUBEMAP) {
    v.layers = 6;
    v.dims = 2;
  } else {
    v.depth = static_cast<uint32_t>(std::max<size_t>(a.desc.Depth, 1));
    v.dims = a.desc.Depth != 0 ? 3 : (a.desc.Height != 0 ? 2 : 1);
  }
  return v;
}

CudaArray* find_array(CUarray handle) {
  auto* a = reinterpret_cast<CudaArray*>(handle);
  std::lock_guard lock(registry_mutex());
  if (live_arrays().count(a)) return a;
  // A mipmap level is live while its mipmapped array is.
  for (MipmappedArray* m : live_mipmapped())
    for (auto& level : m->levels)
      if (level.get() == a) return a;
  return nullptr;
}

MipmappedArray* find_mipmapped_array(CUmipmappedArray handle) {
  auto* m = reinterpret_cast<MipmappedArray*>(handle);
  std::lock_guard lock(registry_mutex());
  return live_mipmapped().count(m) ? m : nullptr;
}

}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;
namespace ptx = cusnap::emu::ptx;

CUSNAP_EXPORT CUresult CUDAAPI cuArrayCreate_v2(CUarray* pHandle,
                                                const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  return guarded("cuArrayCreate", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return create_array(from_2d(*pAllocateArray), pHandle);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuArray3DCreate_v2(CUarray* pHandle,
                                                  const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  return guarded("cuArray3DCreate", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return create_array(*pAllocateArray, pHandle);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* pArrayDescriptor,
                                                       CUarray hArray) {
  return guarded("cuArrayGetDescriptor", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pArrayDescriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CudaArray* a = find_array(hArray);
    if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    // A 3D or layered array has no 2D descriptor (the driver answers INVALID_VALUE).
    if (a->desc.Depth != 0) return CUDA_ERROR_INVALID_VALUE;
    pArrayDescriptor->Width = a->desc.Width;
    pArrayDescriptor->Height = a->desc.Height;
    pArrayDescriptor->Format = a->desc.Format;
    pArrayDescriptor->NumChannels = a->desc.NumChannels;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor,
                                                         CUarray hArray) {
  return guarded("cuArray3DGetDescriptor", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pArrayDescriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CudaArray* a = find_array(hArray);
    if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    *pArrayDescriptor = a->desc;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray hArray) {
  return guarded("cuArrayDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    auto* a = reinterpret_cast<CudaArray*>(hArray);
    {
      std::lock_guard lock(registry_mutex());
      if (!live_arrays().erase(a)) return CUDA_ERROR_INVALID_HANDLE;  // incl. mipmap levels
    }
    // Work already queued that copies into or out of the array must finish first.
    if (Context* ctx = context_from_handle(a->context)) ctx->synchronize();
    delete a;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuArrayGetMemoryRequirements(
    CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements, CUarray array, CUdevice device) {
  return guarded("cuArrayGetMemoryRequirements", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (memoryRequirements == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    CudaArray* a = find_array(array);
    if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    // The documented use is sizing a deferred-mapping array's backing memory; the emulator's
    // arrays are packed, so their size is the texel bytes, at the texture alignment.
    constexpr uint64_t kAlignment = 512;
    *memoryRequirements = {};
    memoryRequirements->size = (a->bytes + kAlignment - 1) / kAlignment * kAlignment;
    memoryRequirements->alignment = kAlignment;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray* pHandle,
                                                      const CUDA_ARRAY3D_DESCRIPTOR* pDesc,
                                                      unsigned int numMipmapLevels) {
  return guarded("cuMipmappedArrayCreate", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (pHandle == nullptr || pDesc == nullptr || numMipmapLevels == 0)
      return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = check_descriptor(*pDesc); r != CUDA_SUCCESS) return r;
    ptx::TexelFormat f;
    if (!texel_format(pDesc->Format, &f)) return CUDA_ERROR_NOT_SUPPORTED;
    // At most 1 + floor(log2(largest extent)) levels, each half the previous (at least 1).
    size_t largest = std::max({pDesc->Width, pDesc->Height, pDesc->Depth});
    unsigned max_levels = 1;
    while ((largest >> max_levels) != 0) ++max_levels;
    if (numMipmapLevels > max_levels || numMipmapLevels > ptx::kMaxMipLevels)
      return CUDA_ERROR_INVALID_VALUE;
    auto m = std::make_unique<MipmappedArray>();
    m->desc = *pDesc;
    m->context = ctx->handle();
    const bool layered = (pDesc->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    for (unsigned l = 0; l < numMipmapLevels; ++l) {
      CUDA_ARRAY3D_DESCRIPTOR d = *pDesc;
      d.Width = std::max<size_t>(pDesc->Width >> l, 1);
      if (d.Height != 0) d.Height = std::max<size_t>(pDesc->Height >> l, 1);
      if (d.Depth != 0 && !layered) d.Depth = std::max<size_t>(pDesc->Depth >> l, 1);
      std::unique_ptr<CudaArray> level;
      if (CUresult r = make_array(ctx, d, reinterpret_cast<CUmipmappedArray>(m.get()), &level);
          r != CUDA_SUCCESS)
        return r;
      m->levels.push_back(std::move(level));
    }
    std::lock_guard lock(registry_mutex());
    live_mipmapped().insert(m.get());
    *pHandle = reinterpret_cast<CUmipmappedArray>(m.release());
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMipmappedArrayGetLevel(CUarray* pLevelArray,
                                                        CUmipmappedArray hMipmappedArray,
                                                        unsigned int level) {
  return guarded("cuMipmappedArrayGetLevel", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pLevelArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
    MipmappedArray* m = find_mipmapped_array(hMipmappedArray);
    if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (level >= m->levels.size()) return CUDA_ERROR_INVALID_VALUE;
    *pLevelArray = reinterpret_cast<CUarray>(m->levels[level].get());
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  return guarded("cuMipmappedArrayDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    auto* m = reinterpret_cast<MipmappedArray*>(hMipmappedArray);
    {
      std::lock_guard lock(registry_mutex());
      if (!live_mipmapped().erase(m)) return CUDA_ERROR_INVALID_HANDLE;
    }
    if (Context* ctx = context_from_handle(m->context)) ctx->synchronize();
    delete m;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements,
                                                                  CUarray_format format,
                                                                  unsigned numChannels,
                                                                  CUdevice dev) {
  return guarded("cuDeviceGetTexture1DLinearMaxWidth", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (maxWidthInElements == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (format_bytes(format) == 0 || (numChannels != 1 && numChannels != 2 && numChannels != 4))
      return CUDA_ERROR_INVALID_VALUE;
    // CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH (2^28 texels) for every element size.
    *maxWidthInElements = size_t{1} << 28;
    return CUDA_SUCCESS;
  });
}

// Multi-planar formats (NV12, P010, ...) and sparse arrays are refused at creation, so no array
// has planes or sparse properties: the driver's answer for such an array is INVALID_VALUE.
CUSNAP_EXPORT CUresult CUDAAPI cuArrayGetPlane(CUarray* pPlaneArray, CUarray hArray,
                                               unsigned int planeIdx) {
  return guarded("cuArrayGetPlane", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pPlaneArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (find_array(hArray) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    (void)planeIdx;
    return CUDA_ERROR_INVALID_VALUE;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI
cuArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* sparseProperties, CUarray array) {
  return guarded("cuArrayGetSparseProperties", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (sparseProperties == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (find_array(array) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_ERROR_INVALID_VALUE;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMipmappedArrayGetSparseProperties(
    CUDA_ARRAY_SPARSE_PROPERTIES* sparseProperties, CUmipmappedArray mipmap) {
  return guarded("cuMipmappedArrayGetSparseProperties", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (sparseProperties == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (find_mipmapped_array(mipmap) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_ERROR_INVALID_VALUE;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMipmappedArrayGetMemoryRequirements(
    CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements, CUmipmappedArray mipmap, CUdevice device) {
  return guarded("cuMipmappedArrayGetMemoryRequirements", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (memoryRequirements == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    MipmappedArray* m = find_mipmapped_array(mipmap);
    if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    constexpr uint64_t kAlignment = 512;
    uint64_t total = 0;
    for (const auto& level : m->levels)
      total += (level->bytes + kAlignment - 1) / kAlignment * kAlignment;
    *memoryRequirements = {};
    memoryRequirements->size = total;
    memoryRequirements->alignment = kAlignment;
    return CUDA_SUCCESS;
  });
}
