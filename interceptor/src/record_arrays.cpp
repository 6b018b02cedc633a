// CUDA arrays, mipmapped arrays, texture and surface objects (schema 6): their descriptors and
// handles, so that a replay recreates them and maps the handles (docs/format.md, "Arrays and
// texture objects"). What enters an array is recorded by the copies (record_copies.cpp).
#include "hooks.h"
#include "session.h"

namespace cusnap::icpt {
namespace {

using ArrayOp = schema::ArrayCall::Op;
using ObjectOp = schema::TexObjectCall::Op;

schema::ArrayCall::Builder begin_array(CallScope& call, ArrayOp op) {
  auto a = call.record().initArray();
  a.setOp(op);
  return a;
}

void set_descriptor(schema::ArrayCall::Builder a, const CUDA_ARRAY3D_DESCRIPTOR& d) {
  a.setFormat(static_cast<int32_t>(d.Format));
  a.setChannels(d.NumChannels);
  a.setWidth(d.Width);
  a.setHeight(d.Height);
  a.setDepth(d.Depth);
  a.setFlags(d.Flags);
}

void set_resource(schema::ResourceDesc::Builder out, const CUDA_RESOURCE_DESC& r) {
  out.setType(static_cast<int32_t>(r.resType));
  out.setFlags(r.flags);
  switch (r.resType) {
    case CU_RESOURCE_TYPE_ARRAY:
      out.setArray(handle_value(r.res.array.hArray));
      break;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      out.setMipmapped(handle_value(r.res.mipmap.hMipmappedArray));
      break;
    case CU_RESOURCE_TYPE_LINEAR:
      out.setDevicePointer(r.res.linear.devPtr);
      out.setFormat(static_cast<int32_t>(r.res.linear.format));
      out.setChannels(r.res.linear.numChannels);
      out.setSizeInBytes(r.res.linear.sizeInBytes);
      break;
    case CU_RESOURCE_TYPE_PITCH2D:
      out.setDevicePointer(r.res.pitch2D.devPtr);
      out.setFormat(static_cast<int32_t>(r.res.pitch2D.format));
      out.setChannels(r.res.pitch2D.numChannels);
      out.setWidth(r.res.pitch2D.width);
      out.setHeight(r.res.pitch2D.height);
      out.setPitchInBytes(r.res.pitch2D.pitchInBytes);
      break;
  }
}

void set_texture(schema::TextureDesc::Builder out, const CUDA_TEXTURE_DESC& t) {
  auto modes = out.initAddressMode(3);
  for (unsigned i = 0; i < 3; ++i) modes.set(i, static_cast<int32_t>(t.addressMode[i]));
  out.setFilterMode(static_cast<int32_t>(t.filterMode));
  out.setFlags(t.flags);
  out.setMaxAnisotropy(t.maxAnisotropy);
  out.setMipmapFilterMode(static_cast<int32_t>(t.mipmapFilterMode));
  out.setMipmapLevelBias(t.mipmapLevelBias);
  out.setMinMipmapLevelClamp(t.minMipmapLevelClamp);
  out.setMaxMipmapLevelClamp(t.maxMipmapLevelClamp);
  auto border = out.initBorderColor(4);
  for (unsigned i = 0; i < 4; ++i) border.set(i, t.borderColor[i]);
}

void set_view(schema::ResourceViewDesc::Builder out, const CUDA_RESOURCE_VIEW_DESC& v) {
  out.setFormat(static_cast<int32_t>(v.format));
  out.setWidth(v.width);
  out.setHeight(v.height);
  out.setDepth(v.depth);
  out.setFirstMipmapLevel(v.firstMipmapLevel);
  out.setLastMipmapLevel(v.lastMipmapLevel);
  out.setFirstLayer(v.firstLayer);
  out.setLastLayer(v.lastLayer);
}

schema::TexObjectCall::Builder begin_object(CallScope& call, ObjectOp op, uint64_t object) {
  auto o = call.record().initTexObject();
  o.setOp(op);
  o.setObject(object);
  return o;
}

}  // namespace

namespace hooks {

CUSNAP_POST_HOOK(cuArrayCreate_v2)
(CallScope& call, CUresult result, CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  auto a = begin_array(call, ArrayOp::CREATE);
  if (result == CUDA_SUCCESS && pHandle != nullptr) a.setArray(handle_value(*pHandle));
  if (pAllocateArray != nullptr) {
    CUDA_ARRAY3D_DESCRIPTOR d{};
    d.Width = pAllocateArray->Width;
    d.Height = pAllocateArray->Height;
    d.Format = pAllocateArray->Format;
    d.NumChannels = pAllocateArray->NumChannels;
    set_descriptor(a, d);
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuArray3DCreate_v2)
(CallScope& call, CUresult result, CUarray* pHandle,
 const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  auto a = begin_array(call, ArrayOp::CREATE3D);
  if (result == CUDA_SUCCESS && pHandle != nullptr) a.setArray(handle_value(*pHandle));
  if (pAllocateArray != nullptr) set_descriptor(a, *pAllocateArray);
  call.commit();
}

CUSNAP_POST_HOOK(cuArrayDestroy)(CallScope& call, CUresult, CUarray hArray) {
  begin_array(call, ArrayOp::DESTROY).setArray(handle_value(hArray));
  call.commit();
}

CUSNAP_POST_HOOK(cuMipmappedArrayCreate)
(CallScope& call, CUresult result, CUmipmappedArray* pHandle,
 const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc, unsigned int numMipmapLevels) {
  auto a = begin_array(call, ArrayOp::MIPMAPPED_CREATE);
  if (result == CUDA_SUCCESS && pHandle != nullptr) a.setMipmapped(handle_value(*pHandle));
  if (pMipmappedArrayDesc != nullptr) set_descriptor(a, *pMipmappedArrayDesc);
  a.setLevels(numMipmapLevels);
  call.commit();
}

CUSNAP_POST_HOOK(cuMipmappedArrayGetLevel)
(CallScope& call, CUresult result, CUarray* pLevelArray, CUmipmappedArray hMipmappedArray,
 unsigned int level) {
  auto a = begin_array(call, ArrayOp::MIPMAPPED_GET_LEVEL);
  if (result == CUDA_SUCCESS && pLevelArray != nullptr) a.setArray(handle_value(*pLevelArray));
  a.setMipmapped(handle_value(hMipmappedArray));
  a.setLevel(level);
  call.commit();
}

CUSNAP_POST_HOOK(cuMipmappedArrayDestroy)
(CallScope& call, CUresult, CUmipmappedArray hMipmappedArray) {
  begin_array(call, ArrayOp::MIPMAPPED_DESTROY).setMipmapped(handle_value(hMipmappedArray));
  call.commit();
}

CUSNAP_POST_HOOK(cuTexObjectCreate)
(CallScope& call, CUresult result, CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
 const CUDA_TEXTURE_DESC* pTexDesc, const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  uint64_t object = result == CUDA_SUCCESS && pTexObject != nullptr ? *pTexObject : 0;
  auto o = begin_object(call, ObjectOp::TEXTURE_CREATE, object);
  if (pResDesc != nullptr) set_resource(o.initResource(), *pResDesc);
  if (pTexDesc != nullptr) set_texture(o.initTexture(), *pTexDesc);
  if (pResViewDesc != nullptr) {
    o.setHasView(true);
    set_view(o.initView(), *pResViewDesc);
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuTexObjectDestroy)(CallScope& call, CUresult, CUtexObject texObject) {
  begin_object(call, ObjectOp::TEXTURE_DESTROY, texObject);
  call.commit();
}

CUSNAP_POST_HOOK(cuSurfObjectCreate)
(CallScope& call, CUresult result, CUsurfObject* pSurfObject, const CUDA_RESOURCE_DESC* pResDesc) {
  uint64_t object = result == CUDA_SUCCESS && pSurfObject != nullptr ? *pSurfObject : 0;
  auto o = begin_object(call, ObjectOp::SURFACE_CREATE, object);
  if (pResDesc != nullptr) set_resource(o.initResource(), *pResDesc);
  call.commit();
}

CUSNAP_POST_HOOK(cuSurfObjectDestroy)(CallScope& call, CUresult, CUsurfObject surfObject) {
  begin_object(call, ObjectOp::SURFACE_DESTROY, surfObject);
  call.commit();
}

}  // namespace hooks
}  // namespace cusnap::icpt
