// CUDA arrays, mipmapped arrays, texture and surface objects (docs/replay.md, "Arrays, textures
// and surfaces"): recreated from their captured descriptors, their captured handles mapped to the
// live ones in copies, resource descriptors and kernel parameters.
#include <cstdio>
#include <cstring>
#include <string>

#include "cusnap/common/hex.h"
#include "cusnap/format/launch_params.h"
#include "replayer/execute.h"

namespace cusnap::replayer {
namespace {

using common::hex;

Error unsupported(const Action& a, const char* record, const std::string& what) {
  Error e(ErrorKind::kUnsupported, what);
  e.at_call(a.seq).in_record(record);
  return e;
}

CUDA_ARRAY3D_DESCRIPTOR descriptor_of(const ArrayOp& op) {
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = op.width;
  d.Height = op.height;
  d.Depth = op.depth;
  d.Format = static_cast<CUarray_format>(op.format);
  d.NumChannels = op.channels;
  d.Flags = op.flags;
  return d;
}

}  // namespace

Expected<CUarray> Executor::array_for(const Action& a, uint64_t captured) {
  auto it = arrays_.find(captured);
  if (it != arrays_.end()) return it->second;
  return Error(ErrorKind::kCapture,
               "CUDA array " + hex(captured) + " was not created by any earlier record")
      .at_call(a.seq)
      .in_record(operation_name(a.op))
      .with_handle(captured);
}

MaybeError Executor::do_array(const Action& a, const ArrayOp& op) {
  if (api_.cuArray3DCreate == nullptr || api_.cuArrayDestroy == nullptr) {
    return unsupported(a, "array", "the driver has no CUDA arrays (cuArray3DCreate)");
  }
  CUresult r = CUDA_SUCCESS;
  switch (op.kind) {
    case ArrayOp::Kind::kCreate:
    case ArrayOp::Kind::kCreate3d: {
      CUarray live = nullptr;
      CUDA_ARRAY3D_DESCRIPTOR d = descriptor_of(op);
      if (op.kind == ArrayOp::Kind::kCreate && api_.cuArrayCreate != nullptr) {
        CUDA_ARRAY_DESCRIPTOR d2{};
        d2.Width = d.Width;
        d2.Height = d.Height;
        d2.Format = d.Format;
        d2.NumChannels = d.NumChannels;
        r = api_.cuArrayCreate(&live, &d2);
      } else {
        r = api_.cuArray3DCreate(&live, &d);
      }
      if (r != CUDA_SUCCESS) return fail(a, "creating the CUDA array", r).with_handle(op.array);
      arrays_[op.array] = live;
      level_owner_.erase(op.array);
      return std::nullopt;
    }
    case ArrayOp::Kind::kDestroy: {
      auto it = arrays_.find(op.array);
      if (it == arrays_.end() || level_owner_.count(op.array) != 0) return std::nullopt;
      r = api_.cuArrayDestroy(it->second);
      arrays_.erase(it);
      if (r != CUDA_SUCCESS) return fail(a, "cuArrayDestroy", r).with_handle(op.array);
      return std::nullopt;
    }
    case ArrayOp::Kind::kMipmappedCreate: {
      if (api_.cuMipmappedArrayCreate == nullptr)
        return unsupported(a, "array", "the driver has no mipmapped arrays");
      CUmipmappedArray live = nullptr;
      CUDA_ARRAY3D_DESCRIPTOR d = descriptor_of(op);
      r = api_.cuMipmappedArrayCreate(&live, &d, op.levels);
      if (r != CUDA_SUCCESS) return fail(a, "cuMipmappedArrayCreate", r).with_handle(op.mipmapped);
      mipmapped_[op.mipmapped] = live;
      return std::nullopt;
    }
    case ArrayOp::Kind::kMipmappedGetLevel: {
      auto it = mipmapped_.find(op.mipmapped);
      if (it == mipmapped_.end()) {
        return Error(ErrorKind::kCapture, "mipmapped array " + hex(op.mipmapped) +
                                              " was not created by any earlier record")
            .at_call(a.seq)
            .in_record("array")
            .with_handle(op.mipmapped);
      }
      CUarray level = nullptr;
      r = api_.cuMipmappedArrayGetLevel(&level, it->second, op.level);
      if (r != CUDA_SUCCESS) return fail(a, "cuMipmappedArrayGetLevel", r);
      arrays_[op.array] = level;
      level_owner_[op.array] = op.mipmapped;
      return std::nullopt;
    }
    case ArrayOp::Kind::kMipmappedDestroy: {
      auto it = mipmapped_.find(op.mipmapped);
      if (it == mipmapped_.end()) return std::nullopt;
      r = api_.cuMipmappedArrayDestroy(it->second);
      mipmapped_.erase(it);
      for (auto level = level_owner_.begin(); level != level_owner_.end();) {
        if (level->second == op.mipmapped) {
          arrays_.erase(level->first);
          level = level_owner_.erase(level);
        } else {
          ++level;
        }
      }
      if (r != CUDA_SUCCESS) return fail(a, "cuMipmappedArrayDestroy", r);
      return std::nullopt;
    }
  }
  return std::nullopt;
}

MaybeError Executor::do_tex_object(const Action& a, const TexObjectOp& op) {
  const bool surface =
      op.kind == TexObjectOp::Kind::kSurfaceCreate || op.kind == TexObjectOp::Kind::kSurfaceDestroy;
  if (op.kind == TexObjectOp::Kind::kTextureDestroy ||
      op.kind == TexObjectOp::Kind::kSurfaceDestroy) {
    auto it = objects_.find(op.object);
    if (it == objects_.end()) return std::nullopt;
    CUresult r = surface ? api_.cuSurfObjectDestroy(it->second.live)
                         : api_.cuTexObjectDestroy(it->second.live);
    objects_.erase(it);
    if (r != CUDA_SUCCESS)
      return fail(a, surface ? "cuSurfObjectDestroy" : "cuTexObjectDestroy", r);
    return std::nullopt;
  }
  if ((surface && api_.cuSurfObjectCreate == nullptr) ||
      (!surface && api_.cuTexObjectCreate == nullptr)) {
    return unsupported(a, "texObject", "the driver has no texture/surface objects");
  }
  // The resource on the live arrays / memory.
  CUDA_RESOURCE_DESC res{};
  res.resType = static_cast<CUresourcetype>(op.resource.type);
  res.flags = op.resource.flags;
  switch (res.resType) {
    case CU_RESOURCE_TYPE_ARRAY: {
      auto live = array_for(a, op.resource.array);
      if (!live) return live.error();
      res.res.array.hArray = live.value();
      break;
    }
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
      auto it = mipmapped_.find(op.resource.mipmapped);
      if (it == mipmapped_.end()) {
        return Error(ErrorKind::kCapture, "mipmapped array " + hex(op.resource.mipmapped) +
                                              " was not created by any earlier record")
            .at_call(a.seq)
            .in_record("texObject");
      }
      res.res.mipmap.hMipmappedArray = it->second;
      break;
    }
    case CU_RESOURCE_TYPE_LINEAR: {
      auto d = device_address(a, op.resource.device_pointer, op.resource.size_in_bytes);
      if (!d) return d.error();
      res.res.linear.devPtr = d.value();
      res.res.linear.format = static_cast<CUarray_format>(op.resource.format);
      res.res.linear.numChannels = op.resource.channels;
      res.res.linear.sizeInBytes = op.resource.size_in_bytes;
      break;
    }
    case CU_RESOURCE_TYPE_PITCH2D: {
      uint64_t rows = op.resource.height;
      if (rows != 0 && op.resource.pitch_in_bytes > kMaxRangeBytes / rows)
        return Error(ErrorKind::kCapture, "pitch2D resource out of limits").at_call(a.seq);
      auto d = device_address(a, op.resource.device_pointer, op.resource.pitch_in_bytes * rows);
      if (!d) return d.error();
      res.res.pitch2D.devPtr = d.value();
      res.res.pitch2D.format = static_cast<CUarray_format>(op.resource.format);
      res.res.pitch2D.numChannels = op.resource.channels;
      res.res.pitch2D.width = op.resource.width;
      res.res.pitch2D.height = op.resource.height;
      res.res.pitch2D.pitchInBytes = op.resource.pitch_in_bytes;
      break;
    }
    default:
      return unsupported(a, "texObject",
                         "resource type " + std::to_string(op.resource.type) + " is not replayed");
  }
  CUresult r = CUDA_SUCCESS;
  uint64_t live = 0;
  if (surface) {
    CUsurfObject s = 0;
    r = api_.cuSurfObjectCreate(&s, &res);
    live = s;
  } else {
    CUDA_TEXTURE_DESC tex{};
    for (unsigned i = 0; i < 3; ++i)
      tex.addressMode[i] = static_cast<CUaddress_mode>(op.texture.address_mode[i]);
    tex.filterMode = static_cast<CUfilter_mode>(op.texture.filter_mode);
    tex.flags = op.texture.flags;
    tex.maxAnisotropy = op.texture.max_anisotropy;
    tex.mipmapFilterMode = static_cast<CUfilter_mode>(op.texture.mipmap_filter_mode);
    tex.mipmapLevelBias = op.texture.mipmap_level_bias;
    tex.minMipmapLevelClamp = op.texture.min_mipmap_level_clamp;
    tex.maxMipmapLevelClamp = op.texture.max_mipmap_level_clamp;
    for (unsigned i = 0; i < 4; ++i) tex.borderColor[i] = op.texture.border_color[i];
    CUDA_RESOURCE_VIEW_DESC view{};
    if (op.has_view) {
      view.format = static_cast<CUresourceViewFormat>(op.view.format);
      view.width = op.view.width;
      view.height = op.view.height;
      view.depth = op.view.depth;
      view.firstMipmapLevel = op.view.first_mipmap_level;
      view.lastMipmapLevel = op.view.last_mipmap_level;
      view.firstLayer = op.view.first_layer;
      view.lastLayer = op.view.last_layer;
    }
    CUtexObject t = 0;
    r = api_.cuTexObjectCreate(&t, &res, &tex, op.has_view ? &view : nullptr);
    live = t;
  }
  if (r != CUDA_SUCCESS) {
    return fail(a, surface ? "cuSurfObjectCreate" : "cuTexObjectCreate", r).with_handle(op.object);
  }
  objects_[op.object] = LiveObject{live, surface};
  return std::nullopt;
}

MaybeError Executor::array_copy(const Action& a, const CopyOp& op, void* host, CUstream stream) {
  CUarray src_array = nullptr, dst_array = nullptr;
  if (op.src_array != 0) {
    auto s = array_for(a, op.src_array);
    if (!s) return s.error();
    src_array = s.value();
  }
  if (op.dst_array != 0) {
    auto d = array_for(a, op.dst_array);
    if (!d) return d.error();
    dst_array = d.value();
  }
  CUresult r = CUDA_SUCCESS;
  const char* what = "array copy";
  auto missing = [&](const char* entry) -> MaybeError {
    return unsupported(a, "memcpy", std::string("the driver has no ") + entry);
  };
  if (op.array_api != ArrayCopyApi::kNone) {
    // A 1-D array copy: the same entry point as captured (its offset semantics are the driver's).
    const size_t dst_x = op.dst_offset[0], src_x = op.src_offset[0];
    switch (op.array_api) {
      case ArrayCopyApi::kHtoA:
        what = "cuMemcpyHtoA";
        if (api_.cuMemcpyHtoA == nullptr || api_.cuMemcpyHtoAAsync == nullptr) return missing(what);
        r = op.async ? api_.cuMemcpyHtoAAsync(dst_array, dst_x, host, op.size, stream)
                     : api_.cuMemcpyHtoA(dst_array, dst_x, host, op.size);
        break;
      case ArrayCopyApi::kAtoH:
        what = "cuMemcpyAtoH";
        if (api_.cuMemcpyAtoH == nullptr || api_.cuMemcpyAtoHAsync == nullptr) return missing(what);
        r = op.async ? api_.cuMemcpyAtoHAsync(host, src_array, src_x, op.size, stream)
                     : api_.cuMemcpyAtoH(host, src_array, src_x, op.size);
        break;
      case ArrayCopyApi::kDtoA:
        what = "cuMemcpyDtoA";
        if (api_.cuMemcpyDtoA == nullptr) return missing(what);
        r = api_.cuMemcpyDtoA(dst_array, dst_x, op.src, op.size);
        break;
      case ArrayCopyApi::kAtoD:
        what = "cuMemcpyAtoD";
        if (api_.cuMemcpyAtoD == nullptr) return missing(what);
        r = api_.cuMemcpyAtoD(op.dst, src_array, src_x, op.size);
        break;
      case ArrayCopyApi::kAtoA:
        what = "cuMemcpyAtoA";
        if (api_.cuMemcpyAtoA == nullptr) return missing(what);
        r = api_.cuMemcpyAtoA(dst_array, dst_x, src_array, src_x, op.size);
        break;
      case ArrayCopyApi::kNone:
        return missing(what);
    }
  } else {
    what = op.async ? "cuMemcpy3DAsync" : "cuMemcpy3D";
    if (api_.cuMemcpy3D != nullptr && api_.cuMemcpy3DAsync != nullptr) {
      // 2-D and 3-D copies alike: an array side keeps its offsets, a linear device side has
      // them folded into its address (plan.cpp), the host side is the packed rectangle.
      CUDA_MEMCPY3D c{};
      c.WidthInBytes = op.width;
      c.Height = op.height;
      c.Depth = op.depth;
      if (src_array != nullptr) {
        c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        c.srcArray = src_array;
        c.srcXInBytes = op.src_offset[0];
        c.srcY = op.src_offset[1];
        c.srcZ = op.src_offset[2];
      } else if (op.direction == CopyDirection::kHostToDevice) {
        c.srcMemoryType = CU_MEMORYTYPE_HOST;
        c.srcHost = host;
        c.srcPitch = op.width;
        c.srcHeight = op.height;
      } else {
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = op.src;
        c.srcPitch = op.src_pitch;
        c.srcHeight = op.src_height;
      }
      if (dst_array != nullptr) {
        c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        c.dstArray = dst_array;
        c.dstXInBytes = op.dst_offset[0];
        c.dstY = op.dst_offset[1];
        c.dstZ = op.dst_offset[2];
      } else if (op.direction == CopyDirection::kDeviceToHost) {
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = host;
        c.dstPitch = op.width;
        c.dstHeight = op.height;
      } else {
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = op.dst;
        c.dstPitch = op.dst_pitch;
        c.dstHeight = op.dst_height;
      }
      r = op.async ? api_.cuMemcpy3DAsync(&c, stream) : api_.cuMemcpy3D(&c);
    } else {
      return unsupported(a, "memcpy", "the driver has no 3D copies");
    }
  }
  if (r != CUDA_SUCCESS) return fail(a, what, r);
  return std::nullopt;
}

unsigned Executor::map_object_handles(std::vector<uint8_t>& params,
                                      const std::vector<ParamSlot>& layout, bool via_extra) {
  if (objects_.empty()) return 0;
  if (via_extra) {
    // An opaque `extra` buffer has no layout saying which words are 8-byte parameters: mapping
    // every word that equals a handle would corrupt integers, so none is mapped.
    if (!warned_extra_objects_) {
      warned_extra_objects_ = true;
      warn(
          "a kernel launched through an `extra` parameter buffer while texture or surface "
          "objects exist: object handles inside it are not mapped to the replay's");
    }
    return 0;
  }
  unsigned mapped = 0;
  format::for_each_word_slot(params.size(), layout, true, [&](size_t offset) {
    uint64_t value;
    std::memcpy(&value, params.data() + offset, 8);
    auto it = objects_.find(value);
    if (it == objects_.end() || it->second.live == value) return;
    std::memcpy(params.data() + offset, &it->second.live, 8);
    ++mapped;
  });
  return mapped;
}

void Executor::release_arrays() {
  for (auto& [captured, o] : objects_) {
    if (o.surface && api_.cuSurfObjectDestroy) api_.cuSurfObjectDestroy(o.live);
    if (!o.surface && api_.cuTexObjectDestroy) api_.cuTexObjectDestroy(o.live);
  }
  objects_.clear();
  for (auto& [captured, live] : arrays_) {
    if (level_owner_.count(captured) == 0 && api_.cuArrayDestroy) api_.cuArrayDestroy(live);
  }
  arrays_.clear();
  level_owner_.clear();
  for (auto& [captured, live] : mipmapped_) {
    if (api_.cuMipmappedArrayDestroy) api_.cuMipmappedArrayDestroy(live);
  }
  mipmapped_.clear();
}

}  // namespace cusnap::replayer
