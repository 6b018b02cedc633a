// Texture and surface objects (cuTexObject*, cuSurfObject*): what a handle names, for the API
// and for the PTX engine's tex/tld4/txq/suld/sust/suq (ptx/interp_texture.cpp), which reads
// them through the allocation table's MemoryHost::texture/surface (array.h).
//
// A handle is a 64-bit number the emulator hands out (never 0). The object keeps its descriptors
// as given and is re-resolved at every lookup, so a kernel that samples an object whose array
// was destroyed fails with an error instead of reading freed memory.
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "driver/api.h"
#include "driver/array.h"
#include "driver/context.h"
#include "driver/log.h"
#include "driver/memory.h"
#include "driver/state.h"

namespace cusnap::emu::driver {
namespace {

struct TextureObject {
  CUDA_RESOURCE_DESC resource{};
  CUDA_TEXTURE_DESC texture{};
  bool is_surface = false;
  // A legacy reference (texref.cpp): its state is read at every lookup instead of the above.
  const void* reference = nullptr;
};

struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<uint64_t, TextureObject> objects;
  uint64_t next = 1;
};
Registry& registry() {
  static Registry r;
  return r;
}

constexpr uint64_t kLinearAlignment = 512;  // CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT
constexpr uint64_t kPitchAlignment = 32;    // CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT

}  // namespace

CUresult resolve_resource(const CUDA_RESOURCE_DESC& r, ptx::TextureView* out) {
  switch (r.resType) {
    case CU_RESOURCE_TYPE_ARRAY: {
      CudaArray* a = find_array(r.res.array.hArray);
      if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
      out->levels[0] = image_of(*a);
      out->level_count = 1;
      return CUDA_SUCCESS;
    }
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
      MipmappedArray* m = find_mipmapped_array(r.res.mipmap.hMipmappedArray);
      if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
      out->level_count = static_cast<uint32_t>(m->levels.size());
      for (uint32_t l = 0; l < out->level_count; ++l) out->levels[l] = image_of(*m->levels[l]);
      return CUDA_SUCCESS;
    }
    case CU_RESOURCE_TYPE_LINEAR:
    case CU_RESOURCE_TYPE_PITCH2D: {
      const bool pitched = r.resType == CU_RESOURCE_TYPE_PITCH2D;
      const CUdeviceptr p = pitched ? r.res.pitch2D.devPtr : r.res.linear.devPtr;
      const CUarray_format format = pitched ? r.res.pitch2D.format : r.res.linear.format;
      const unsigned channels = pitched ? r.res.pitch2D.numChannels : r.res.linear.numChannels;
      ptx::ImageView& v = out->levels[0];
      if (format_bytes(format) == 0) return CUDA_ERROR_INVALID_VALUE;
      if (channels != 1 && channels != 2 && channels != 4) return CUDA_ERROR_INVALID_VALUE;
      if (!texel_format(format, &v.format)) return CUDA_ERROR_NOT_SUPPORTED;
      v.channels = static_cast<uint8_t>(channels);
      const uint64_t tb = v.texel_bytes();
      if (pitched) {
        const auto& d = r.res.pitch2D;
        if (p % kPitchAlignment != 0 || d.pitchInBytes % kPitchAlignment != 0)
          return CUDA_ERROR_INVALID_VALUE;
        if (d.width == 0 || d.height == 0 || d.width * tb > d.pitchInBytes)
          return CUDA_ERROR_INVALID_VALUE;
        if (d.width > 131072 || d.height > 65000 || d.pitchInBytes > 2097120)
          return CUDA_ERROR_INVALID_VALUE;
        if (!allocations().contains(p, (d.height - 1) * d.pitchInBytes + d.width * tb))
          return CUDA_ERROR_INVALID_VALUE;
        v.width = static_cast<uint32_t>(d.width);
        v.height = static_cast<uint32_t>(d.height);
        v.row_pitch = d.pitchInBytes;
        v.dims = 2;
      } else {
        const auto& d = r.res.linear;
        if (p % kLinearAlignment != 0 || d.sizeInBytes < tb) return CUDA_ERROR_INVALID_VALUE;
        if (d.sizeInBytes / tb > (uint64_t{1} << 28)) return CUDA_ERROR_INVALID_VALUE;
        if (!allocations().contains(p, d.sizeInBytes)) return CUDA_ERROR_INVALID_VALUE;
        v.width = static_cast<uint32_t>(d.sizeInBytes / tb);
        v.row_pitch = d.sizeInBytes;
        v.dims = 1;
        out->linear_memory = true;
      }
      v.data = reinterpret_cast<uint8_t*>(p);
      out->device_memory = true;
      v.slice_pitch = v.row_pitch * v.height;
      out->level_count = 1;
      return CUDA_SUCCESS;
    }
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult sampling_state(const CUDA_TEXTURE_DESC& t, ptx::TextureView* v, const char* caller) {
  constexpr unsigned kKnownFlags = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                                   CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
                                   CU_TRSF_SEAMLESS_CUBEMAP;
  if (t.flags & ~kKnownFlags) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < 3; ++i) {
    switch (t.addressMode[i]) {
      case CU_TR_ADDRESS_MODE_WRAP:
        v->address[i] = ptx::AddressMode::kWrap;
        break;
      case CU_TR_ADDRESS_MODE_CLAMP:
        v->address[i] = ptx::AddressMode::kClamp;
        break;
      case CU_TR_ADDRESS_MODE_MIRROR:
        v->address[i] = ptx::AddressMode::kMirror;
        break;
      case CU_TR_ADDRESS_MODE_BORDER:
        v->address[i] = ptx::AddressMode::kBorder;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (t.filterMode != CU_TR_FILTER_MODE_POINT && t.filterMode != CU_TR_FILTER_MODE_LINEAR)
    return CUDA_ERROR_INVALID_VALUE;
  if (t.mipmapFilterMode != CU_TR_FILTER_MODE_POINT &&
      t.mipmapFilterMode != CU_TR_FILTER_MODE_LINEAR)
    return CUDA_ERROR_INVALID_VALUE;
  v->linear_filter = t.filterMode == CU_TR_FILTER_MODE_LINEAR;
  v->mip_linear = t.mipmapFilterMode == CU_TR_FILTER_MODE_LINEAR;
  v->normalized_coords = (t.flags & CU_TRSF_NORMALIZED_COORDINATES) != 0;
  // 32-bit integer texels have no normalized-float form: they are always read as integers.
  const ptx::TexelFormat f = v->levels[0].format;
  const bool narrow_int = f == ptx::TexelFormat::kU8 || f == ptx::TexelFormat::kU16 ||
                          f == ptx::TexelFormat::kS8 || f == ptx::TexelFormat::kS16;
  const bool int_format = narrow_int || f == ptx::TexelFormat::kU32 || f == ptx::TexelFormat::kS32;
  v->read_as_integer = int_format && (!narrow_int || (t.flags & CU_TRSF_READ_AS_INTEGER) != 0);
  for (int i = 0; i < 4; ++i) v->border[i] = t.borderColor[i];
  v->lod_bias = t.mipmapLevelBias;
  v->min_lod = t.minMipmapLevelClamp;
  v->max_lod = t.maxMipmapLevelClamp;
  const char* refused = nullptr;
  if (t.flags & CU_TRSF_SRGB)
    refused = "sRGB-to-linear conversion (CU_TRSF_SRGB)";
  else if (t.maxAnisotropy > 1)
    refused = "anisotropic filtering (maxAnisotropy > 1)";
  else if (v->linear_filter && v->read_as_integer)
    refused = "linear filtering of texels read as integers (a GPU returns floats only)";
  else if (t.flags & CU_TRSF_SEAMLESS_CUBEMAP)
    refused = "seamless cubemap filtering";
  if (refused != nullptr) {
    if (caller != nullptr)
      log(LogLevel::kError, "%s: %s is not supported by the emulator", caller, refused);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

namespace {

CUresult find_object(uint64_t handle, bool surface, TextureObject* out) {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  auto it = r.objects.find(handle);
  if (it == r.objects.end() || it->second.is_surface != surface) return CUDA_ERROR_INVALID_VALUE;
  *out = it->second;
  return CUDA_SUCCESS;
}

uint64_t insert(const TextureObject& o) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  uint64_t h = r.next++;
  r.objects.emplace(h, o);
  return h;
}

CUresult destroy(uint64_t handle, bool surface) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  auto it = r.objects.find(handle);
  if (it == r.objects.end() || it->second.is_surface != surface) return CUDA_ERROR_INVALID_VALUE;
  r.objects.erase(it);
  return CUDA_SUCCESS;
}

}  // namespace

bool lookup_texture(uint64_t handle, ptx::TextureView* out) {
  TextureObject o;
  if (find_object(handle, false, &o) != CUDA_SUCCESS) return false;
  *out = ptx::TextureView{};
  if (o.reference != nullptr) return reference_texture_view(o.reference, out);
  return resolve_resource(o.resource, out) == CUDA_SUCCESS &&
         sampling_state(o.texture, out, nullptr) == CUDA_SUCCESS;
}

bool lookup_surface(uint64_t handle, ptx::SurfaceView* out) {
  TextureObject o;
  if (find_object(handle, true, &o) != CUDA_SUCCESS) return false;
  if (o.reference != nullptr) return reference_surface_view(o.reference, out);
  ptx::TextureView v;
  if (resolve_resource(o.resource, &v) != CUDA_SUCCESS) return false;
  out->image = v.levels[0];
  return true;
}

uint64_t register_reference(const void* reference, bool surface) {
  TextureObject o;
  o.is_surface = surface;
  o.reference = reference;
  return insert(o);
}

void unregister_reference(uint64_t handle) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.objects.erase(handle);
}

bool AllocationTable::texture(uint64_t handle, ptx::TextureView* out) const {
  return lookup_texture(handle, out);
}
bool AllocationTable::surface(uint64_t handle, ptx::SurfaceView* out) const {
  return lookup_surface(handle, out);
}

}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;
namespace ptx = cusnap::emu::ptx;

CUSNAP_EXPORT CUresult CUDAAPI cuTexObjectCreate(CUtexObject* pTexObject,
                                                 const CUDA_RESOURCE_DESC* pResDesc,
                                                 const CUDA_TEXTURE_DESC* pTexDesc,
                                                 const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  return guarded("cuTexObjectCreate", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (pTexObject == nullptr || pResDesc == nullptr || pTexDesc == nullptr)
      return CUDA_ERROR_INVALID_VALUE;
    if (pResDesc->flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (pResViewDesc != nullptr) {
      log(LogLevel::kError, "cuTexObjectCreate: resource views are not supported by the emulator");
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    ptx::TextureView v;
    if (CUresult r = resolve_resource(*pResDesc, &v); r != CUDA_SUCCESS) return r;
    if (CUresult r = sampling_state(*pTexDesc, &v, "cuTexObjectCreate"); r != CUDA_SUCCESS)
      return r;
    TextureObject o;
    o.resource = *pResDesc;
    o.texture = *pTexDesc;
    *pTexObject = insert(o);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexObjectDestroy(CUtexObject texObject) {
  return guarded("cuTexObjectDestroy", [&] { return destroy(texObject, false); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc,
                                                          CUtexObject texObject) {
  return guarded("cuTexObjectGetResourceDesc", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pResDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
    TextureObject o;
    if (CUresult r = find_object(texObject, false, &o); r != CUDA_SUCCESS) return r;
    *pResDesc = o.resource;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc,
                                                         CUtexObject texObject) {
  return guarded("cuTexObjectGetTextureDesc", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pTexDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
    TextureObject o;
    if (CUresult r = find_object(texObject, false, &o); r != CUDA_SUCCESS) return r;
    *pTexDesc = o.texture;
    return CUDA_SUCCESS;
  });
}

// cuTexObjectCreate refuses resource views, so no object has one: the documented answer for an
// object without a view is CUDA_ERROR_INVALID_VALUE.
CUSNAP_EXPORT CUresult CUDAAPI cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC* pResViewDesc,
                                                              CUtexObject texObject) {
  return guarded("cuTexObjectGetResourceViewDesc", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    (void)pResViewDesc;
    (void)texObject;
    return CUDA_ERROR_INVALID_VALUE;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuSurfObjectCreate(CUsurfObject* pSurfObject,
                                                  const CUDA_RESOURCE_DESC* pResDesc) {
  return guarded("cuSurfObjectCreate", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (pSurfObject == nullptr || pResDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // Surfaces bind one array created with CUDA_ARRAY3D_SURFACE_LDST.
    if (pResDesc->flags != 0 || pResDesc->resType != CU_RESOURCE_TYPE_ARRAY)
      return CUDA_ERROR_INVALID_VALUE;
    CudaArray* a = find_array(pResDesc->res.array.hArray);
    if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (!(a->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST)) return CUDA_ERROR_INVALID_VALUE;
    TextureObject o;
    o.resource = *pResDesc;
    o.is_surface = true;
    *pSurfObject = insert(o);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuSurfObjectDestroy(CUsurfObject surfObject) {
  return guarded("cuSurfObjectDestroy", [&] { return destroy(surfObject, true); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc,
                                                           CUsurfObject surfObject) {
  return guarded("cuSurfObjectGetResourceDesc", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (pResDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
    TextureObject o;
    if (CUresult r = find_object(surfObject, true, &o); r != CUDA_SUCCESS) return r;
    *pResDesc = o.resource;
    return CUDA_SUCCESS;
  });
}
