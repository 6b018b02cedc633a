// Legacy texture and surface references (cuTexRef*, cuSurfRef*, cuModuleGetTexRef,
// cuModuleGetSurfRef, cuParamSetTexRef): the deprecated API of unified texture mode, where a
// module declares `.global .texref tex;` / `.global .surfref surf;` and the host binds memory and
// sampling state to it before a launch.
//
// A reference is an object of its own (CUtexref / CUsurfref, validated through the handle
// registry) with an entry in texture.cpp's object registry: the handle of that entry is what the
// module's variable holds (written at load), so tex/tld4/txq/suld/sust/suq naming the variable
// look the reference up like a texture or surface object, and the state they sample is the one
// set when the instruction runs. The descriptors are rebuilt from that state at every lookup and
// go through the same resolution and sampling checks as texture objects (one home for sampling);
// whatever would not sample exactly makes the lookup fail, which fails the launch naming the
// reference (interp_texture.cpp), never a guess.
//
// Error codes follow the driver API reference: the entry points document CUDA_ERROR_INVALID_VALUE
// for every bad argument, a bad reference handle and a bad array handle included.
#include <cstring>
#include <mutex>
#include <string>

#include "driver/api.h"
#include "driver/array.h"
#include "driver/context.h"
#include "driver/log.h"
#include "driver/memory.h"
#include "driver/module.h"
#include "driver/state.h"

namespace cusnap::emu::driver {
namespace {

constexpr uint64_t kTextureAlignment = 512;  // CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT

struct Reference {
  bool surface = false;
  Module* module = nullptr;  // the module whose variable it is; null for cuTexRefCreate
  uint64_t handle = 0;       // its entry in the object registry (texture.cpp)
  mutable std::mutex mutex;  // guards everything below
  // What is bound: CU_RESOURCE_TYPE_ARRAY / MIPMAPPED_ARRAY / LINEAR / PITCH2D, or nothing.
  bool bound = false;
  CUresourcetype type = CU_RESOURCE_TYPE_ARRAY;
  CUarray array = nullptr;
  CUmipmappedArray mipmap = nullptr;
  CUdeviceptr address = 0;                   // linear / pitch 2D: the (aligned) base
  size_t bytes = 0;                          // linear: the bytes from `address`
  CUDA_ARRAY_DESCRIPTOR pitched{};           // pitch 2D: as given to cuTexRefSetAddress2D
  size_t pitch = 0;                          // pitch 2D
  CUarray_format format = CUarray_format{};  // 0: never set (no format reads)
  int channels = 0;
  CUDA_TEXTURE_DESC texture{};  // address modes, filtering, flags, mipmap state, border colour
};

HandleKind kind_of(bool surface) { return surface ? HandleKind::kSurfRef : HandleKind::kTexRef; }

Reference* find_reference(const void* handle, bool surface) {
  return handle_cast<Reference>(handle, kind_of(surface));
}

Reference* make_reference(bool surface, Module* module) {
  auto* r = new Reference;
  r->surface = surface;
  r->module = module;
  r->handle = register_reference(r, surface);
  register_handle(r, kind_of(surface));
  return r;
}

void destroy_reference(Reference* r) {
  unregister_reference(r->handle);
  destroy_handle(r, kind_of(r->surface));
}

// Runs `body(reference)` under the reference's lock after the driver's argument checks.
template <class Body>
CUresult with_reference(const char* name, const void* handle, bool surface, Body&& body) {
  return guarded(name, [&]() -> CUresult {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Reference* ref = find_reference(handle, surface);
    if (ref == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(ref->mutex);
    return body(*ref);
  });
}

// A getter: *out = read(reference), INVALID_VALUE for a NULL `out`.
template <class T, class Read>
CUresult get_value(const char* name, CUtexref handle, T* out, Read&& read) {
  return with_reference(name, handle, false, [&](Reference& t) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *out = read(t);
    return CUDA_SUCCESS;
  });
}

CUresult refuse(const char* name, const char* what) {
  log(LogLevel::kError, "%s: %s is not supported by the emulator", name, what);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// The format of an array's texels as a reference binds them (CU_TRSA_OVERRIDE_FORMAT).
CUresult adopt_format(const char* name, Reference& t, const CUDA_ARRAY3D_DESCRIPTOR& d) {
  ptx::TexelFormat f;
  if (!texel_format(d.Format, &f)) return refuse(name, "this array format");
  t.format = d.Format;
  t.channels = static_cast<int>(d.NumChannels);
  return CUDA_SUCCESS;
}

bool valid_address_mode(CUaddress_mode m) {
  return m == CU_TR_ADDRESS_MODE_WRAP || m == CU_TR_ADDRESS_MODE_CLAMP ||
         m == CU_TR_ADDRESS_MODE_MIRROR || m == CU_TR_ADDRESS_MODE_BORDER;
}
bool valid_filter_mode(CUfilter_mode m) {
  return m == CU_TR_FILTER_MODE_POINT || m == CU_TR_FILTER_MODE_LINEAR;
}

// Whether a binding's own format (an array or 2D descriptor) is the reference's current one.
template <class Descriptor>
bool has_format(const Reference& t, const Descriptor& d) {
  return d.Format == t.format && static_cast<int>(d.NumChannels) == t.channels;
}

// The resource descriptor of what is bound, in the reference's current format; false when
// nothing is bound or the format set later disagrees with the binding's own.
bool resource_of(const Reference& t, CUDA_RESOURCE_DESC* out) {
  if (!t.bound) return false;
  *out = CUDA_RESOURCE_DESC{};
  out->resType = t.type;
  switch (t.type) {
    case CU_RESOURCE_TYPE_ARRAY: {
      const CudaArray* a = find_array(t.array);
      if (a == nullptr || !has_format(t, a->desc)) return false;
      out->res.array.hArray = t.array;
      return true;
    }
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
      const MipmappedArray* m = find_mipmapped_array(t.mipmap);
      if (m == nullptr || !has_format(t, m->desc)) return false;
      out->res.mipmap.hMipmappedArray = t.mipmap;
      return true;
    }
    case CU_RESOURCE_TYPE_LINEAR:
      out->res.linear.devPtr = t.address;
      out->res.linear.format = t.format;
      out->res.linear.numChannels = static_cast<unsigned>(t.channels);
      out->res.linear.sizeInBytes = t.bytes;
      return true;
    case CU_RESOURCE_TYPE_PITCH2D:
      if (!has_format(t, t.pitched)) return false;
      out->res.pitch2D.devPtr = t.address;
      out->res.pitch2D.format = t.format;
      out->res.pitch2D.numChannels = static_cast<unsigned>(t.channels);
      out->res.pitch2D.width = t.pitched.Width;
      out->res.pitch2D.height = t.pitched.Height;
      out->res.pitch2D.pitchInBytes = t.pitch;
      return true;
    default:
      return false;
  }
}

CUresult set_address_2d(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc, CUdeviceptr dptr,
                        size_t Pitch) {
  return with_reference("cuTexRefSetAddress2D", hTexRef, false, [&](Reference& t) {
    if (desc == nullptr || dptr % kTextureAlignment != 0) return CUDA_ERROR_INVALID_VALUE;
    CUDA_RESOURCE_DESC res{};
    res.resType = CU_RESOURCE_TYPE_PITCH2D;
    res.res.pitch2D.devPtr = dptr;
    res.res.pitch2D.format = desc->Format;
    res.res.pitch2D.numChannels = desc->NumChannels;
    res.res.pitch2D.width = desc->Width;
    res.res.pitch2D.height = desc->Height;
    res.res.pitch2D.pitchInBytes = Pitch;
    ptx::TextureView v;
    if (CUresult r = resolve_resource(res, &v); r != CUDA_SUCCESS) return r;
    t.bound = true;
    t.type = CU_RESOURCE_TYPE_PITCH2D;
    t.address = dptr;
    t.pitched = *desc;
    t.pitch = Pitch;
    t.format = desc->Format;
    t.channels = static_cast<int>(desc->NumChannels);
    return CUDA_SUCCESS;
  });
}

CUresult module_reference(void** out, CUmodule hmod, const char* name, bool surface) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Module* m = module_from_handle(hmod);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (out == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int index = m->program->find_variable(name);
  if (index < 0) return CUDA_ERROR_NOT_FOUND;
  const ptx::OpaqueKind want = surface ? ptx::OpaqueKind::kSurfref : ptx::OpaqueKind::kTexref;
  if (m->program->variables()[index].opaque != want) return CUDA_ERROR_NOT_FOUND;
  *out = m->references[index];
  return CUDA_SUCCESS;
}

}  // namespace

bool reference_texture_view(const void* reference, ptx::TextureView* out) {
  const auto* t = static_cast<const Reference*>(reference);
  CUDA_RESOURCE_DESC res;
  CUDA_TEXTURE_DESC tex;
  {
    std::lock_guard lock(t->mutex);
    if (!resource_of(*t, &res)) return false;
    tex = t->texture;
  }
  return resolve_resource(res, out) == CUDA_SUCCESS &&
         sampling_state(tex, out, nullptr) == CUDA_SUCCESS;
}

bool reference_surface_view(const void* reference, ptx::SurfaceView* out) {
  const auto* t = static_cast<const Reference*>(reference);
  CUarray array;
  {
    std::lock_guard lock(t->mutex);
    if (!t->bound) return false;
    array = t->array;
  }
  const CudaArray* a = find_array(array);
  if (a == nullptr || !(a->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST)) return false;
  out->image = image_of(*a);
  return true;
}

CUresult create_module_references(Module* module) {
  const auto& variables = module->program->variables();
  module->references.assign(variables.size(), nullptr);
  for (size_t i = 0; i < variables.size(); ++i) {
    if (variables[i].opaque == ptx::OpaqueKind::kNone) continue;
    Reference* r = make_reference(variables[i].opaque == ptx::OpaqueKind::kSurfref, module);
    module->references[i] = r;
    std::memcpy(reinterpret_cast<void*>(module->variable_addresses[i]), &r->handle, 8);
  }
  return CUDA_SUCCESS;
}

void destroy_module_references(Module* module) {
  for (void* r : module->references)
    if (r != nullptr) destroy_reference(static_cast<Reference*>(r));
  module->references.clear();
}

}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;
namespace ptx = cusnap::emu::ptx;

CUSNAP_EXPORT CUresult CUDAAPI cuModuleGetTexRef(CUtexref* pTexRef, CUmodule hmod,
                                                 const char* name) {
  return guarded("cuModuleGetTexRef", [&] {
    return module_reference(reinterpret_cast<void**>(pTexRef), hmod, name, false);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuModuleGetSurfRef(CUsurfref* pSurfRef, CUmodule hmod,
                                                  const char* name) {
  return guarded("cuModuleGetSurfRef", [&] {
    return module_reference(reinterpret_cast<void**>(pSurfRef), hmod, name, true);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefCreate(CUtexref* pTexRef) {
  return guarded("cuTexRefCreate", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (pTexRef == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pTexRef = reinterpret_cast<CUtexref>(make_reference(false, nullptr));
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefDestroy(CUtexref hTexRef) {
  return guarded("cuTexRefDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Reference* t = find_reference(hTexRef, false);
    // A module's reference belongs to the module (destroyed when it is unloaded).
    if (t == nullptr || t->module != nullptr) return CUDA_ERROR_INVALID_VALUE;
    destroy_reference(t);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetArray(CUtexref hTexRef, CUarray hArray,
                                                unsigned int Flags) {
  return with_reference("cuTexRefSetArray", hTexRef, false, [&](Reference& t) {
    const CudaArray* a = find_array(hArray);
    if (a == nullptr || Flags != CU_TRSA_OVERRIDE_FORMAT) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = adopt_format("cuTexRefSetArray", t, a->desc); r != CUDA_SUCCESS) return r;
    t.bound = true;
    t.type = CU_RESOURCE_TYPE_ARRAY;
    t.array = hArray;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetMipmappedArray(CUtexref hTexRef,
                                                         CUmipmappedArray hMipmappedArray,
                                                         unsigned int Flags) {
  return with_reference("cuTexRefSetMipmappedArray", hTexRef, false, [&](Reference& t) {
    const MipmappedArray* m = find_mipmapped_array(hMipmappedArray);
    if (m == nullptr || Flags != CU_TRSA_OVERRIDE_FORMAT) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = adopt_format("cuTexRefSetMipmappedArray", t, m->desc); r != CUDA_SUCCESS)
      return r;
    t.bound = true;
    t.type = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    t.mipmap = hMipmappedArray;
    return CUDA_SUCCESS;
  });
}

// The base is aligned down to the texture alignment and the offset passed back, as documented;
// the whole range (offset included) must lie in one allocation.
CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetAddress_v2(size_t* ByteOffset, CUtexref hTexRef,
                                                     CUdeviceptr dptr, size_t bytes) {
  return with_reference("cuTexRefSetAddress", hTexRef, false, [&](Reference& t) {
    const CUdeviceptr base = dptr / kTextureAlignment * kTextureAlignment;
    const size_t offset = dptr - base;
    if (bytes == 0 || bytes > SIZE_MAX - offset || !allocations().contains(base, bytes + offset))
      return CUDA_ERROR_INVALID_VALUE;
    t.bound = true;
    t.type = CU_RESOURCE_TYPE_LINEAR;
    t.address = base;
    t.bytes = bytes + offset;
    if (ByteOffset != nullptr) *ByteOffset = offset;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetAddress2D_v3(CUtexref hTexRef,
                                                       const CUDA_ARRAY_DESCRIPTOR* desc,
                                                       CUdeviceptr dptr, size_t Pitch) {
  return set_address_2d(hTexRef, desc, dptr, Pitch);
}

// The CUDA 4.0 name of the same entry point (same parameters); headers bind cuTexRefSetAddress2D
// to _v3.
CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetAddress2D_v2(CUtexref hTexRef,
                                                       const CUDA_ARRAY_DESCRIPTOR* desc,
                                                       CUdeviceptr dptr, size_t Pitch) {
  return set_address_2d(hTexRef, desc, dptr, Pitch);
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetFormat(CUtexref hTexRef, CUarray_format fmt,
                                                 int NumPackedComponents) {
  return with_reference("cuTexRefSetFormat", hTexRef, false, [&](Reference& t) {
    if (format_bytes(fmt) == 0) return CUDA_ERROR_INVALID_VALUE;
    if (NumPackedComponents != 1 && NumPackedComponents != 2 && NumPackedComponents != 4)
      return CUDA_ERROR_INVALID_VALUE;
    ptx::TexelFormat f;
    if (!texel_format(fmt, &f)) return refuse("cuTexRefSetFormat", "this format");
    t.format = fmt;
    t.channels = NumPackedComponents;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetAddressMode(CUtexref hTexRef, int dim,
                                                      CUaddress_mode am) {
  return with_reference("cuTexRefSetAddressMode", hTexRef, false, [&](Reference& t) {
    if (dim < 0 || dim > 2 || !valid_address_mode(am)) return CUDA_ERROR_INVALID_VALUE;
    t.texture.addressMode[dim] = am;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetFilterMode(CUtexref hTexRef, CUfilter_mode fm) {
  return with_reference("cuTexRefSetFilterMode", hTexRef, false, [&](Reference& t) {
    if (!valid_filter_mode(fm)) return CUDA_ERROR_INVALID_VALUE;
    t.texture.filterMode = fm;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetMipmapFilterMode(CUtexref hTexRef, CUfilter_mode fm) {
  return with_reference("cuTexRefSetMipmapFilterMode", hTexRef, false, [&](Reference& t) {
    if (!valid_filter_mode(fm)) return CUDA_ERROR_INVALID_VALUE;
    t.texture.mipmapFilterMode = fm;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetMipmapLevelBias(CUtexref hTexRef, float bias) {
  return with_reference("cuTexRefSetMipmapLevelBias", hTexRef, false, [&](Reference& t) {
    t.texture.mipmapLevelBias = bias;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetMipmapLevelClamp(CUtexref hTexRef,
                                                           float minMipmapLevelClamp,
                                                           float maxMipmapLevelClamp) {
  return with_reference("cuTexRefSetMipmapLevelClamp", hTexRef, false, [&](Reference& t) {
    t.texture.minMipmapLevelClamp = minMipmapLevelClamp;
    t.texture.maxMipmapLevelClamp = maxMipmapLevelClamp;
    return CUDA_SUCCESS;
  });
}

// Anisotropic filtering is refused here, as at cuTexObjectCreate (0 and 1 both mean none).
CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetMaxAnisotropy(CUtexref hTexRef, unsigned int maxAniso) {
  return with_reference("cuTexRefSetMaxAnisotropy", hTexRef, false, [&](Reference& t) {
    if (maxAniso > 1) return refuse("cuTexRefSetMaxAnisotropy", "anisotropic filtering");
    t.texture.maxAnisotropy = maxAniso;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetBorderColor(CUtexref hTexRef, float* pBorderColor) {
  return with_reference("cuTexRefSetBorderColor", hTexRef, false, [&](Reference& t) {
    if (pBorderColor == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(t.texture.borderColor, pBorderColor, sizeof t.texture.borderColor);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefSetFlags(CUtexref hTexRef, unsigned int Flags) {
  return with_reference("cuTexRefSetFlags", hTexRef, false, [&](Reference& t) {
    constexpr unsigned kKnown = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                                CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
                                CU_TRSF_SEAMLESS_CUBEMAP;
    if (Flags & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
    if (Flags & CU_TRSF_SRGB)
      return refuse("cuTexRefSetFlags", "sRGB-to-linear conversion (CU_TRSF_SRGB)");
    if (Flags & CU_TRSF_SEAMLESS_CUBEMAP)
      return refuse("cuTexRefSetFlags", "seamless cubemap filtering");
    t.texture.flags = Flags;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetAddress_v2(CUdeviceptr* pdptr, CUtexref hTexRef) {
  return with_reference("cuTexRefGetAddress", hTexRef, false, [&](Reference& t) {
    const bool memory =
        t.bound && (t.type == CU_RESOURCE_TYPE_LINEAR || t.type == CU_RESOURCE_TYPE_PITCH2D);
    if (pdptr == nullptr || !memory) return CUDA_ERROR_INVALID_VALUE;
    *pdptr = t.address;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetArray(CUarray* phArray, CUtexref hTexRef) {
  return with_reference("cuTexRefGetArray", hTexRef, false, [&](Reference& t) {
    if (phArray == nullptr || !t.bound || t.type != CU_RESOURCE_TYPE_ARRAY)
      return CUDA_ERROR_INVALID_VALUE;
    *phArray = t.array;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetMipmappedArray(CUmipmappedArray* phMipmappedArray,
                                                         CUtexref hTexRef) {
  return with_reference("cuTexRefGetMipmappedArray", hTexRef, false, [&](Reference& t) {
    if (phMipmappedArray == nullptr || !t.bound || t.type != CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
      return CUDA_ERROR_INVALID_VALUE;
    *phMipmappedArray = t.mipmap;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetAddressMode(CUaddress_mode* pam, CUtexref hTexRef,
                                                      int dim) {
  return with_reference("cuTexRefGetAddressMode", hTexRef, false, [&](Reference& t) {
    if (pam == nullptr || dim < 0 || dim > 2) return CUDA_ERROR_INVALID_VALUE;
    *pam = t.texture.addressMode[dim];
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetFilterMode(CUfilter_mode* pfm, CUtexref hTexRef) {
  return get_value("cuTexRefGetFilterMode", hTexRef, pfm,
                   [](const Reference& t) { return t.texture.filterMode; });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetFormat(CUarray_format* pFormat, int* pNumChannels,
                                                 CUtexref hTexRef) {
  return with_reference("cuTexRefGetFormat", hTexRef, false, [&](Reference& t) {
    if (pFormat != nullptr) *pFormat = t.format;
    if (pNumChannels != nullptr) *pNumChannels = t.channels;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetMipmapFilterMode(CUfilter_mode* pfm, CUtexref hTexRef) {
  return get_value("cuTexRefGetMipmapFilterMode", hTexRef, pfm,
                   [](const Reference& t) { return t.texture.mipmapFilterMode; });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetMipmapLevelBias(float* pbias, CUtexref hTexRef) {
  return get_value("cuTexRefGetMipmapLevelBias", hTexRef, pbias,
                   [](const Reference& t) { return t.texture.mipmapLevelBias; });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetMipmapLevelClamp(float* pminMipmapLevelClamp,
                                                           float* pmaxMipmapLevelClamp,
                                                           CUtexref hTexRef) {
  return with_reference("cuTexRefGetMipmapLevelClamp", hTexRef, false, [&](Reference& t) {
    if (pminMipmapLevelClamp == nullptr || pmaxMipmapLevelClamp == nullptr)
      return CUDA_ERROR_INVALID_VALUE;
    *pminMipmapLevelClamp = t.texture.minMipmapLevelClamp;
    *pmaxMipmapLevelClamp = t.texture.maxMipmapLevelClamp;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetMaxAnisotropy(int* pmaxAniso, CUtexref hTexRef) {
  return get_value("cuTexRefGetMaxAnisotropy", hTexRef, pmaxAniso,
                   [](const Reference& t) { return static_cast<int>(t.texture.maxAnisotropy); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetBorderColor(float* pBorderColor, CUtexref hTexRef) {
  return with_reference("cuTexRefGetBorderColor", hTexRef, false, [&](Reference& t) {
    if (pBorderColor == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(pBorderColor, t.texture.borderColor, sizeof t.texture.borderColor);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuTexRefGetFlags(unsigned int* pFlags, CUtexref hTexRef) {
  return get_value("cuTexRefGetFlags", hTexRef, pFlags,
                   [](const Reference& t) { return t.texture.flags; });
}

CUSNAP_EXPORT CUresult CUDAAPI cuSurfRefSetArray(CUsurfref hSurfRef, CUarray hArray,
                                                 unsigned int Flags) {
  return with_reference("cuSurfRefSetArray", hSurfRef, true, [&](Reference& s) {
    const CudaArray* a = find_array(hArray);
    if (a == nullptr || Flags != 0 || !(a->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST))
      return CUDA_ERROR_INVALID_VALUE;
    s.bound = true;
    s.type = CU_RESOURCE_TYPE_ARRAY;
    s.array = hArray;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuSurfRefGetArray(CUarray* phArray, CUsurfref hSurfRef) {
  return with_reference("cuSurfRefGetArray", hSurfRef, true, [&](Reference& s) {
    if (phArray == nullptr || !s.bound) return CUDA_ERROR_INVALID_VALUE;
    *phArray = s.array;
    return CUDA_SUCCESS;
  });
}

// "Makes the CUDA array or linear memory bound to the texture reference available to a device
// program as a texture": in unified mode every reference of the function's module already is, so
// after the documented checks (texunit CU_PARAM_TR_DEFAULT, a reference of that module) there is
// nothing to do.
CUSNAP_EXPORT CUresult CUDAAPI cuParamSetTexRef(CUfunction hfunc, int texunit, CUtexref hTexRef) {
  return guarded("cuParamSetTexRef", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Function* f = function_from_handle(hfunc);
    if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    const Reference* t = find_reference(hTexRef, false);
    if (texunit != CU_PARAM_TR_DEFAULT || t == nullptr || t->module != f->module)
      return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
  });
}
