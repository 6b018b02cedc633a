// Legacy texture and surface references and memory pools (schema 8): the reference a module's
// variable names (by module and name), every setter's arguments, and the pool calls with their
// properties, so that a replay looks up the same references, applies the same state and
// recreates the pools (docs/format.md, "Texture references and memory pools"). Getters of
// references are pure queries (annotations.json) and stay generic records; the pool getters that
// return a handle or a value are typed, so a replay can map the pool.

#include "hooks.h"
#include "session.h"

namespace cusnap::icpt {
namespace {

using RefOp = schema::TexRefCall::Op;
using PoolOp = schema::MemPoolCall::Op;

schema::TexRefCall::Builder begin_ref(CallScope& call, RefOp op, const void* ref) {
  auto t = call.record().initTexRef();
  t.setOp(op);
  t.setRef(handle_value(ref));
  return t;
}

void record_lookup(CallScope& call, RefOp op, CUresult result, const void* const* out,
                   CUmodule module, const char* name) {
  auto t = begin_ref(call, op, result == CUDA_SUCCESS && out != nullptr ? *out : nullptr);
  t.setModule(handle_value(module));
  if (name != nullptr) t.setName(name);
  call.commit();
}

void record_address_2d(CallScope& call, CUtexref ref, const CUDA_ARRAY_DESCRIPTOR* desc,
                       CUdeviceptr dptr, size_t pitch) {
  auto t = begin_ref(call, RefOp::SET_ADDRESS2D, ref);
  t.setAddress(dptr);
  t.setPitch(pitch);
  if (desc != nullptr) {
    t.setFormat(static_cast<int32_t>(desc->Format));
    t.setChannels(desc->NumChannels);
    t.setWidth(desc->Width);
    t.setHeight(desc->Height);
  }
  call.commit();
}

schema::MemPoolCall::Builder begin_pool(CallScope& call, PoolOp op, const void* pool) {
  auto p = call.record().initMemPool();
  p.setOp(op);
  p.setPool(handle_value(pool));
  return p;
}

// CUmemPool_attribute values: the reuse policies are int, the thresholds and counters cuuint64_t.
bool int_attribute(CUmemPool_attribute attr) {
  return attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
         attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
         attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

uint64_t attribute_value(CUmemPool_attribute attr, const void* value) {
  if (value == nullptr) return 0;
  if (int_attribute(attr)) {
    return static_cast<uint64_t>(static_cast<int64_t>(*static_cast<const int*>(value)));
  }
  return *static_cast<const cuuint64_t*>(value);
}

void record_attribute(CallScope& call, PoolOp op, CUresult result, CUmemoryPool pool,
                      CUmemPool_attribute attr, const void* value) {
  auto p = begin_pool(call, op, pool);
  p.setAttribute(static_cast<int32_t>(attr));
  // A failed get wrote nothing: its value is not read.
  if (op == PoolOp::SET_ATTRIBUTE || result == CUDA_SUCCESS)
    p.setValue(attribute_value(attr, value));
  call.commit();
}

void record_device_pool(CallScope& call, PoolOp op, CUresult result, const CUmemoryPool* pool,
                        CUdevice device) {
  auto p = begin_pool(call, op, result == CUDA_SUCCESS && pool != nullptr ? *pool : nullptr);
  p.setDevice(device);
  call.commit();
}

}  // namespace

namespace hooks {

// ---- texture and surface references

CUSNAP_POST_HOOK(cuModuleGetTexRef)
(CallScope& call, CUresult result, CUtexref* pTexRef, CUmodule hmod, const char* name) {
  record_lookup(call, RefOp::GET_TEX_REF, result, reinterpret_cast<const void* const*>(pTexRef),
                hmod, name);
}

CUSNAP_POST_HOOK(cuModuleGetSurfRef)
(CallScope& call, CUresult result, CUsurfref* pSurfRef, CUmodule hmod, const char* name) {
  record_lookup(call, RefOp::GET_SURF_REF, result, reinterpret_cast<const void* const*>(pSurfRef),
                hmod, name);
}

CUSNAP_POST_HOOK(cuTexRefCreate)(CallScope& call, CUresult result, CUtexref* pTexRef) {
  begin_ref(call, RefOp::CREATE, result == CUDA_SUCCESS && pTexRef != nullptr ? *pTexRef : nullptr);
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefDestroy)(CallScope& call, CUresult, CUtexref hTexRef) {
  begin_ref(call, RefOp::DESTROY, hTexRef);
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetArray)
(CallScope& call, CUresult, CUtexref hTexRef, CUarray hArray, unsigned int Flags) {
  auto t = begin_ref(call, RefOp::SET_ARRAY, hTexRef);
  t.setArray(handle_value(hArray));
  t.setFlags(Flags);
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetMipmappedArray)
(CallScope& call, CUresult, CUtexref hTexRef, CUmipmappedArray hMipmappedArray,
 unsigned int Flags) {
  auto t = begin_ref(call, RefOp::SET_MIPMAPPED_ARRAY, hTexRef);
  t.setMipmapped(handle_value(hMipmappedArray));
  t.setFlags(Flags);
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetAddress_v2)
(CallScope& call, CUresult result, size_t* ByteOffset, CUtexref hTexRef, CUdeviceptr dptr,
 size_t bytes) {
  auto t = begin_ref(call, RefOp::SET_ADDRESS, hTexRef);
  t.setAddress(dptr);
  t.setBytes(bytes);
  if (result == CUDA_SUCCESS && ByteOffset != nullptr) t.setByteOffset(*ByteOffset);
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetAddress2D_v3)
(CallScope& call, CUresult, CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc, CUdeviceptr dptr,
 size_t Pitch) {
  record_address_2d(call, hTexRef, desc, dptr, Pitch);
}

// The CUDA 4.0 name of the same entry point (cuda.h binds cuTexRefSetAddress2D to _v3).
CUSNAP_POST_HOOK(cuTexRefSetAddress2D_v2)
(CallScope& call, CUresult, CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc, CUdeviceptr dptr,
 size_t Pitch) {
  record_address_2d(call, hTexRef, desc, dptr, Pitch);
}

CUSNAP_POST_HOOK(cuTexRefSetFormat)
(CallScope& call, CUresult, CUtexref hTexRef, CUarray_format fmt, int NumPackedComponents) {
  auto t = begin_ref(call, RefOp::SET_FORMAT, hTexRef);
  t.setFormat(static_cast<int32_t>(fmt));
  t.setChannels(static_cast<uint32_t>(NumPackedComponents));
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetAddressMode)
(CallScope& call, CUresult, CUtexref hTexRef, int dim, CUaddress_mode am) {
  auto t = begin_ref(call, RefOp::SET_ADDRESS_MODE, hTexRef);
  t.setDim(dim);
  t.setMode(static_cast<int32_t>(am));
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetFilterMode)
(CallScope& call, CUresult, CUtexref hTexRef, CUfilter_mode fm) {
  begin_ref(call, RefOp::SET_FILTER_MODE, hTexRef).setMode(static_cast<int32_t>(fm));
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetMipmapFilterMode)
(CallScope& call, CUresult, CUtexref hTexRef, CUfilter_mode fm) {
  begin_ref(call, RefOp::SET_MIPMAP_FILTER_MODE, hTexRef).setMode(static_cast<int32_t>(fm));
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetMipmapLevelBias)
(CallScope& call, CUresult, CUtexref hTexRef, float bias) {
  begin_ref(call, RefOp::SET_MIPMAP_LEVEL_BIAS, hTexRef).setBias(bias);
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetMipmapLevelClamp)
(CallScope& call, CUresult, CUtexref hTexRef, float minMipmapLevelClamp,
 float maxMipmapLevelClamp) {
  auto t = begin_ref(call, RefOp::SET_MIPMAP_LEVEL_CLAMP, hTexRef);
  t.setMinClamp(minMipmapLevelClamp);
  t.setMaxClamp(maxMipmapLevelClamp);
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetMaxAnisotropy)
(CallScope& call, CUresult, CUtexref hTexRef, unsigned int maxAniso) {
  begin_ref(call, RefOp::SET_MAX_ANISOTROPY, hTexRef).setMaxAnisotropy(maxAniso);
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetBorderColor)
(CallScope& call, CUresult, CUtexref hTexRef, float* pBorderColor) {
  auto t = begin_ref(call, RefOp::SET_BORDER_COLOR, hTexRef);
  if (pBorderColor != nullptr) {
    auto border = t.initBorderColor(4);
    for (unsigned i = 0; i < 4; ++i) border.set(i, pBorderColor[i]);
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuTexRefSetFlags)
(CallScope& call, CUresult, CUtexref hTexRef, unsigned int Flags) {
  begin_ref(call, RefOp::SET_FLAGS, hTexRef).setFlags(Flags);
  call.commit();
}

CUSNAP_POST_HOOK(cuSurfRefSetArray)
(CallScope& call, CUresult, CUsurfref hSurfRef, CUarray hArray, unsigned int Flags) {
  auto t = begin_ref(call, RefOp::SURF_SET_ARRAY, hSurfRef);
  t.setArray(handle_value(hArray));
  t.setFlags(Flags);
  call.commit();
}

CUSNAP_POST_HOOK(cuParamSetTexRef)
(CallScope& call, CUresult, CUfunction hfunc, int texunit, CUtexref hTexRef) {
  auto t = begin_ref(call, RefOp::PARAM_SET_TEX_REF, hTexRef);
  t.setFunction(handle_value(hfunc));
  t.setTexUnit(texunit);
  call.commit();
}

// ---- memory pools

CUSNAP_POST_HOOK(cuMemPoolCreate)
(CallScope& call, CUresult result, CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  auto p =
      begin_pool(call, PoolOp::CREATE, result == CUDA_SUCCESS && pool != nullptr ? *pool : nullptr);
  if (poolProps != nullptr) {
    p.setAllocationType(static_cast<int32_t>(poolProps->allocType));
    p.setHandleTypes(static_cast<int32_t>(poolProps->handleTypes));
    p.setLocationType(static_cast<int32_t>(poolProps->location.type));
    p.setLocationId(poolProps->location.id);
    p.setMaxSize(poolProps->maxSize);
    p.setUsage(poolProps->usage);
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuMemPoolDestroy)(CallScope& call, CUresult, CUmemoryPool pool) {
  begin_pool(call, PoolOp::DESTROY, pool);
  call.commit();
}

CUSNAP_POST_HOOK(cuMemPoolSetAttribute)
(CallScope& call, CUresult result, CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  record_attribute(call, PoolOp::SET_ATTRIBUTE, result, pool, attr, value);
}

CUSNAP_POST_HOOK(cuMemPoolGetAttribute)
(CallScope& call, CUresult result, CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  record_attribute(call, PoolOp::GET_ATTRIBUTE, result, pool, attr, value);
}

CUSNAP_POST_HOOK(cuMemPoolTrimTo)
(CallScope& call, CUresult, CUmemoryPool pool, size_t minBytesToKeep) {
  begin_pool(call, PoolOp::TRIM_TO, pool).setMinBytesToKeep(minBytesToKeep);
  call.commit();
}

CUSNAP_POST_HOOK(cuMemPoolSetAccess)
(CallScope& call, CUresult, CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  auto p = begin_pool(call, PoolOp::SET_ACCESS, pool);
  // The descriptors are bounded by the devices of the process; a huge count is an error the
  // driver reported, not a list to copy.
  constexpr size_t kMaxDescriptors = 1024;
  if (map != nullptr && count <= kMaxDescriptors) {
    auto list = p.initAccessDescriptors(static_cast<unsigned>(count));
    for (size_t i = 0; i < count; ++i) {
      list[i].setLocationType(static_cast<int32_t>(map[i].location.type));
      list[i].setLocationId(map[i].location.id);
      list[i].setFlags(static_cast<uint64_t>(map[i].flags));
    }
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuDeviceSetMemPool)(CallScope& call, CUresult, CUdevice dev, CUmemoryPool pool) {
  begin_pool(call, PoolOp::DEVICE_SET_MEM_POOL, pool).setDevice(dev);
  call.commit();
}

CUSNAP_POST_HOOK(cuDeviceGetMemPool)
(CallScope& call, CUresult result, CUmemoryPool* pool, CUdevice dev) {
  record_device_pool(call, PoolOp::DEVICE_GET_MEM_POOL, result, pool, dev);
}

CUSNAP_POST_HOOK(cuDeviceGetDefaultMemPool)
(CallScope& call, CUresult result, CUmemoryPool* pool_out, CUdevice dev) {
  record_device_pool(call, PoolOp::DEVICE_GET_DEFAULT_MEM_POOL, result, pool_out, dev);
}

}  // namespace hooks
}  // namespace cusnap::icpt
