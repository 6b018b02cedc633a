// Legacy texture and surface references and memory pools (docs/replay.md, "Texture references"
// and "Memory pools"): references looked up by name in the replayed modules and given their
// captured state again on the live arrays and addresses; pools recreated with their properties
// and attributes, captured pool handles mapped to the live ones.
#include <cstdio>
#include <string>

#include "cusnap/common/hex.h"
#include "replayer/execute.h"

// The reference API is deprecated in cuda.h; replaying it is this file's purpose.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace cusnap::replayer {
namespace {

using common::hex;

Error missing_entry(const Action& a, const char* record, const char* entry) {
  Error e(ErrorKind::kUnsupported, std::string("the driver has no ") + entry);
  e.at_call(a.seq).in_record(record);
  return e;
}

Error unknown_handle(const Action& a, const char* record, const std::string& what,
                     uint64_t captured) {
  return Error(ErrorKind::kCapture,
               what + " " + hex(captured) + " was not created by any earlier record")
      .at_call(a.seq)
      .in_record(record)
      .with_handle(captured);
}

// CUmemPool_attribute values whose type is int (the others are cuuint64_t).
bool int_pool_attribute(int32_t attribute) {
  return attribute == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
         attribute == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
         attribute == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

}  // namespace

MaybeError Executor::do_tex_ref(const Action& a, const TexRefOp& op) {
  using Kind = TexRefOp::Kind;
  const char* record = "texRef";
  // The entry point a record needs, or a clear refusal when the driver lacks it.
#define CUSNAP_NEED(entry) \
  if (api_.entry == nullptr) return missing_entry(a, record, #entry)
  if (op.kind == Kind::kGetTexRef || op.kind == Kind::kGetSurfRef) {
    auto m = modules_.find(op.module);
    if (m == modules_.end()) return unknown_handle(a, record, "module", op.module);
    if (m->second.is_library) {
      return Error(ErrorKind::kUnsupported, "texture reference of a library (not a module)")
          .at_call(a.seq)
          .in_record(record);
    }
    CUresult r = CUDA_SUCCESS;
    uint64_t live = 0;
    if (op.kind == Kind::kGetTexRef) {
      CUSNAP_NEED(cuModuleGetTexRef);
      CUtexref t = nullptr;
      r = api_.cuModuleGetTexRef(&t, m->second.module, op.name.c_str());
      live = reinterpret_cast<uint64_t>(t);
    } else {
      CUSNAP_NEED(cuModuleGetSurfRef);
      CUsurfref s = nullptr;
      r = api_.cuModuleGetSurfRef(&s, m->second.module, op.name.c_str());
      live = reinterpret_cast<uint64_t>(s);
    }
    if (r != CUDA_SUCCESS) {
      return fail(
          a, (op.kind == Kind::kGetTexRef ? "cuModuleGetTexRef " : "cuModuleGetSurfRef ") + op.name,
          r);
    }
    tex_refs_[op.ref] = LiveRef{live, op.module, false};
    return std::nullopt;
  }
  if (op.kind == Kind::kCreate) {
    CUSNAP_NEED(cuTexRefCreate);
    CUtexref t = nullptr;
    if (CUresult r = api_.cuTexRefCreate(&t); r != CUDA_SUCCESS)
      return fail(a, "cuTexRefCreate", r);
    tex_refs_[op.ref] = LiveRef{reinterpret_cast<uint64_t>(t), 0, true};
    return std::nullopt;
  }
  auto it = tex_refs_.find(op.ref);
  if (it == tex_refs_.end()) return unknown_handle(a, record, "texture reference", op.ref);
  const uint64_t live_value = it->second.live;
  CUtexref ref = reinterpret_cast<CUtexref>(live_value);
  CUresult r = CUDA_SUCCESS;
  const char* what = "texture reference setter";
  switch (op.kind) {
    case Kind::kDestroy:
      what = "cuTexRefDestroy";
      CUSNAP_NEED(cuTexRefDestroy);
      r = api_.cuTexRefDestroy(ref);
      tex_refs_.erase(it);
      break;
    case Kind::kSetArray:
    case Kind::kSurfSetArray: {
      auto array = array_for(a, op.array);
      if (!array) return array.error();
      if (op.kind == Kind::kSetArray) {
        what = "cuTexRefSetArray";
        CUSNAP_NEED(cuTexRefSetArray);
        r = api_.cuTexRefSetArray(ref, array.value(), op.flags);
      } else {
        what = "cuSurfRefSetArray";
        CUSNAP_NEED(cuSurfRefSetArray);
        r = api_.cuSurfRefSetArray(reinterpret_cast<CUsurfref>(live_value), array.value(),
                                   op.flags);
      }
      break;
    }
    case Kind::kSetMipmappedArray: {
      what = "cuTexRefSetMipmappedArray";
      CUSNAP_NEED(cuTexRefSetMipmappedArray);
      auto m = mipmapped_.find(op.mipmapped);
      if (m == mipmapped_.end()) return unknown_handle(a, record, "mipmapped array", op.mipmapped);
      r = api_.cuTexRefSetMipmappedArray(ref, m->second, op.flags);
      break;
    }
    case Kind::kSetAddress: {
      what = "cuTexRefSetAddress";
      CUSNAP_NEED(cuTexRefSetAddress);
      auto d = device_address(a, op.address, op.bytes);
      if (!d) return d.error();
      size_t offset = 0;
      r = api_.cuTexRefSetAddress(&offset, ref, d.value(), op.bytes);
      // The application indexes texels with the offset its driver returned: a replay binding at
      // another offset would make the same kernel read other texels.
      if (r == CUDA_SUCCESS && offset != op.byte_offset) {
        return Error(ErrorKind::kUnsupported,
                     "cuTexRefSetAddress bound the texture at byte offset " +
                         std::to_string(offset) + ", the capture at " +
                         std::to_string(op.byte_offset) +
                         ": kernels using the captured offset would read other texels")
            .at_call(a.seq)
            .in_record(record)
            .with_address(op.address);
      }
      break;
    }
    case Kind::kSetAddress2d: {
      what = "cuTexRefSetAddress2D";
      CUSNAP_NEED(cuTexRefSetAddress2D);
      auto d = device_address(a, op.address, op.pitch * op.height);
      if (!d) return d.error();
      CUDA_ARRAY_DESCRIPTOR desc{};
      desc.Width = op.width;
      desc.Height = op.height;
      desc.Format = static_cast<CUarray_format>(op.format);
      desc.NumChannels = op.channels;
      r = api_.cuTexRefSetAddress2D(ref, &desc, d.value(), op.pitch);
      break;
    }
    case Kind::kSetFormat:
      what = "cuTexRefSetFormat";
      CUSNAP_NEED(cuTexRefSetFormat);
      r = api_.cuTexRefSetFormat(ref, static_cast<CUarray_format>(op.format),
                                 static_cast<int>(op.channels));
      break;
    case Kind::kSetAddressMode:
      what = "cuTexRefSetAddressMode";
      CUSNAP_NEED(cuTexRefSetAddressMode);
      r = api_.cuTexRefSetAddressMode(ref, op.dim, static_cast<CUaddress_mode>(op.mode));
      break;
    case Kind::kSetFilterMode:
      what = "cuTexRefSetFilterMode";
      CUSNAP_NEED(cuTexRefSetFilterMode);
      r = api_.cuTexRefSetFilterMode(ref, static_cast<CUfilter_mode>(op.mode));
      break;
    case Kind::kSetMipmapFilterMode:
      what = "cuTexRefSetMipmapFilterMode";
      CUSNAP_NEED(cuTexRefSetMipmapFilterMode);
      r = api_.cuTexRefSetMipmapFilterMode(ref, static_cast<CUfilter_mode>(op.mode));
      break;
    case Kind::kSetMipmapLevelBias:
      what = "cuTexRefSetMipmapLevelBias";
      CUSNAP_NEED(cuTexRefSetMipmapLevelBias);
      r = api_.cuTexRefSetMipmapLevelBias(ref, op.bias);
      break;
    case Kind::kSetMipmapLevelClamp:
      what = "cuTexRefSetMipmapLevelClamp";
      CUSNAP_NEED(cuTexRefSetMipmapLevelClamp);
      r = api_.cuTexRefSetMipmapLevelClamp(ref, op.min_clamp, op.max_clamp);
      break;
    case Kind::kSetMaxAnisotropy:
      what = "cuTexRefSetMaxAnisotropy";
      CUSNAP_NEED(cuTexRefSetMaxAnisotropy);
      r = api_.cuTexRefSetMaxAnisotropy(ref, op.max_anisotropy);
      break;
    case Kind::kSetBorderColor: {
      what = "cuTexRefSetBorderColor";
      CUSNAP_NEED(cuTexRefSetBorderColor);
      float border[4] = {op.border_color[0], op.border_color[1], op.border_color[2],
                         op.border_color[3]};
      r = api_.cuTexRefSetBorderColor(ref, border);
      break;
    }
    case Kind::kSetFlags:
      what = "cuTexRefSetFlags";
      CUSNAP_NEED(cuTexRefSetFlags);
      r = api_.cuTexRefSetFlags(ref, op.flags);
      break;
    case Kind::kParamSetTexRef: {
      what = "cuParamSetTexRef";
      CUSNAP_NEED(cuParamSetTexRef);
      auto f = functions_.find(op.function);
      if (f == functions_.end()) return unknown_handle(a, record, "function", op.function);
      r = api_.cuParamSetTexRef(f->second, op.tex_unit, ref);
      break;
    }
    case Kind::kGetTexRef:
    case Kind::kGetSurfRef:
    case Kind::kCreate:
      break;  // handled above
  }
  if (r != CUDA_SUCCESS) return fail(a, what, r).with_handle(op.ref);
  return std::nullopt;
}

MaybeError Executor::do_mem_pool(const Action& a, const MemPoolOp& op) {
  using Kind = MemPoolOp::Kind;
  const char* record = "memPool";
  if (op.kind == Kind::kCreate) {
    CUSNAP_NEED(cuMemPoolCreate);
    CUmemPoolProps props{};
    props.allocType = static_cast<CUmemAllocationType>(op.allocation_type);
    props.handleTypes = static_cast<CUmemAllocationHandleType>(op.handle_types);
    props.location.type = static_cast<CUmemLocationType>(op.location_type);
    // The replay runs on one device: a pool of the captured device lives on it.
    props.location.id = op.location_type == CU_MEM_LOCATION_TYPE_DEVICE ? device_ : op.location_id;
    props.maxSize = op.max_size;
    props.usage = static_cast<unsigned short>(op.usage);
    CUmemoryPool live = nullptr;
    if (CUresult r = api_.cuMemPoolCreate(&live, &props); r != CUDA_SUCCESS)
      return fail(a, "cuMemPoolCreate", r).with_handle(op.pool);
    pools_[op.pool] = LivePool{live, true};
    return std::nullopt;
  }
  if (op.kind == Kind::kDeviceGetMemPool || op.kind == Kind::kDeviceGetDefaultMemPool) {
    const bool current = op.kind == Kind::kDeviceGetMemPool;
    const char* what = current ? "cuDeviceGetMemPool" : "cuDeviceGetDefaultMemPool";
    if (current) {
      CUSNAP_NEED(cuDeviceGetMemPool);
    } else {
      CUSNAP_NEED(cuDeviceGetDefaultMemPool);
    }
    CUmemoryPool live = nullptr;
    CUresult r = current ? api_.cuDeviceGetMemPool(&live, device_)
                         : api_.cuDeviceGetDefaultMemPool(&live, device_);
    if (r != CUDA_SUCCESS) return fail(a, what, r);
    auto it = pools_.find(op.pool);
    if (it != pools_.end() && it->second.live != live) {
      // The application was handed a pool it knew; the replay's device answers another one.
      return Error(ErrorKind::kUnsupported,
                   std::string(what) + " returned the capture's pool " + hex(op.pool) +
                       " but the replay driver another one than that pool's replay")
          .at_call(a.seq)
          .in_record(record)
          .with_handle(op.pool);
    }
    if (it == pools_.end()) pools_[op.pool] = LivePool{live, false};
    return std::nullopt;
  }
  auto it = pools_.find(op.pool);
  if (it == pools_.end()) return unknown_handle(a, record, "memory pool", op.pool);
  CUmemoryPool pool = it->second.live;
  CUresult r = CUDA_SUCCESS;
  const char* what = "memory pool call";
  switch (op.kind) {
    case Kind::kDestroy:
      what = "cuMemPoolDestroy";
      CUSNAP_NEED(cuMemPoolDestroy);
      if (!it->second.created) break;  // a device's pool: the application cannot destroy it
      r = api_.cuMemPoolDestroy(pool);
      pools_.erase(it);
      break;
    case Kind::kSetAttribute:
    case Kind::kGetAttribute: {
      const bool set = op.kind == Kind::kSetAttribute;
      what = set ? "cuMemPoolSetAttribute" : "cuMemPoolGetAttribute";
      if (set) {
        CUSNAP_NEED(cuMemPoolSetAttribute);
      } else {
        CUSNAP_NEED(cuMemPoolGetAttribute);
      }
      int as_int = static_cast<int>(static_cast<int64_t>(op.value));
      cuuint64_t as_u64 = op.value;
      void* value = int_pool_attribute(op.attribute) ? static_cast<void*>(&as_int)
                                                     : static_cast<void*>(&as_u64);
      auto attr = static_cast<CUmemPool_attribute>(op.attribute);
      // A get is replayed for the pool and attribute it names (the driver must know both); the
      // value it returns is the replay driver's (usage counters differ between drivers).
      r = set ? api_.cuMemPoolSetAttribute(pool, attr, value)
              : api_.cuMemPoolGetAttribute(pool, attr, value);
      break;
    }
    case Kind::kTrimTo:
      what = "cuMemPoolTrimTo";
      CUSNAP_NEED(cuMemPoolTrimTo);
      r = api_.cuMemPoolTrimTo(pool, op.min_bytes_to_keep);
      break;
    case Kind::kSetAccess: {
      what = "cuMemPoolSetAccess";
      CUSNAP_NEED(cuMemPoolSetAccess);
      std::vector<CUmemAccessDesc> map(op.access.size());
      for (size_t i = 0; i < op.access.size(); ++i) {
        map[i].location.type = static_cast<CUmemLocationType>(op.access[i].location_type);
        map[i].location.id = op.access[i].location_type == CU_MEM_LOCATION_TYPE_DEVICE
                                 ? device_
                                 : op.access[i].location_id;
        map[i].flags = static_cast<CUmemAccess_flags>(op.access[i].flags);
      }
      r = api_.cuMemPoolSetAccess(pool, map.data(), map.size());
      break;
    }
    case Kind::kDeviceSetMemPool:
      what = "cuDeviceSetMemPool";
      CUSNAP_NEED(cuDeviceSetMemPool);
      r = api_.cuDeviceSetMemPool(device_, pool);
      break;
    case Kind::kCreate:
    case Kind::kDeviceGetMemPool:
    case Kind::kDeviceGetDefaultMemPool:
      break;  // handled above
  }
#undef CUSNAP_NEED
  if (r != CUDA_SUCCESS) return fail(a, what, r).with_handle(op.pool);
  return std::nullopt;
}

void Executor::release_tex_refs_and_pools() {
  for (auto& [captured, ref] : tex_refs_) {
    if (ref.created && api_.cuTexRefDestroy != nullptr)
      api_.cuTexRefDestroy(reinterpret_cast<CUtexref>(ref.live));
  }
  tex_refs_.clear();
  if (api_.cuMemPoolDestroy != nullptr) {
    // A pool set as the device's current one stops being it when destroyed (the default pool
    // takes over).
    for (auto& [captured, pool] : pools_) {
      if (pool.created) api_.cuMemPoolDestroy(pool.live);
    }
  }
  pools_.clear();
}

}  // namespace cusnap::replayer
