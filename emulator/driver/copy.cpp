// Every 1D, 2D and 3D cuMemcpy* and cuMemset* entry point (sync and async, legacy and
// per-thread default stream), the batched copies, and the copies into, out of and between CUDA
// arrays (array.h: an array side is its packed texel grid, bounded by the array's extent).
//
// Synchronous calls queue their work on the default stream and wait for it, so they are
// ordered with kernels exactly as on a GPU. Asynchronous copies follow the driver API's "API
// synchronization behavior": one from pageable host memory reads its source at call time (the
// real driver stages such copies too), so the caller may reuse the buffer as soon as the call
// returns; one into pageable host memory, and any host-to-host copy, returns only once the copy
// has completed in stream order; everything else (device memory, pinned, registered and managed
// host memory on both sides) is truly asynchronous.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "driver/api.h"
#include "driver/array.h"
#include "driver/context.h"
#include "driver/graph.h"
#include "driver/memory.h"
#include "driver/state.h"
#include "driver/stats.h"

using namespace cusnap::emu::driver;

namespace {

// Modelled transfer rates (bytes per ns = GB/s) for event timing.
constexpr uint64_t kHostLinkBytesPerNs = 25;
constexpr uint64_t kDeviceBytesPerNs = 1000;

struct Side {
  uint8_t* origin = nullptr;  // first byte of the region
  size_t pitch = 0;           // bytes between rows
  size_t rows = 0;            // rows between slices
  bool device = false;        // checked against the allocation table
  bool staged_ok = false;     // pinned/registered host memory (no staging needed)
  // A CUDA array side: bounded by the array's extent instead of the allocation table; the
  // offsets are kept for graph memcpy nodes.
  CudaArray* array = nullptr;
  size_t x = 0, y = 0, z = 0;
};

struct Region {
  Side src, dst;
  size_t width = 0, height = 1, depth = 1;
  std::shared_ptr<std::vector<uint8_t>> staging;  // keeps staged host data alive

  size_t span(const Side& s) const {
    if (width == 0 || height == 0 || depth == 0) return 0;
    return (depth - 1) * s.pitch * s.rows + (height - 1) * s.pitch + width;
  }
  uint64_t bytes() const { return uint64_t{width} * height * depth; }
  uint64_t modelled_ns() const {
    bool link = !src.device || !dst.device;
    return bytes() / (link ? kHostLinkBytesPerNs : kDeviceBytesPerNs) + 1;
  }
  void run() const {
    for (size_t z = 0; z < depth; ++z) {
      for (size_t y = 0; y < height; ++y) {
        std::memmove(dst.origin + z * dst.pitch * dst.rows + y * dst.pitch,
                     src.origin + z * src.pitch * src.rows + y * src.pitch, width);
      }
    }
  }
};

bool host_memory_known(const void* p) {
  auto a = allocations().find(reinterpret_cast<uint64_t>(p));
  return a && (a->kind == AllocationKind::kHostPinned ||
               a->kind == AllocationKind::kHostRegistered || is_managed(*a));
}

Side host_side(const void* p) {
  return Side{static_cast<uint8_t*>(const_cast<void*>(p)), 0, 0, false, host_memory_known(p)};
}
Side device_side(CUdeviceptr p) { return Side{reinterpret_cast<uint8_t*>(p), 0, 0, true, true}; }
// cuMemcpy / UNIFIED: what the pointer is, as cuPointerGetAttribute would say: pinned and
// registered memory is host memory (that needs no staging), other memory the table knows is
// device memory, anything else is pageable host memory.
Side unified_side(uint64_t p) {
  auto a = allocations().find(p);
  const bool host =
      a && (a->kind == AllocationKind::kHostPinned || a->kind == AllocationKind::kHostRegistered);
  return Side{reinterpret_cast<uint8_t*>(p), 0, 0, a.has_value() && !host, a.has_value()};
}

// `node`: the region of a graph node, which may run after a graph allocation's allocation step
// that has not run yet (graph.h: in_graph_allocation); other work needs an allocation now.
CUresult validate(Region& r, bool node = false) {
  for (Side* s : {&r.src, &r.dst}) {
    if (s->pitch == 0) s->pitch = r.width;
    if (s->rows == 0) s->rows = r.height;
    if ((r.height > 1 || r.depth > 1) && s->pitch < r.width) return CUDA_ERROR_INVALID_VALUE;
    if (r.depth > 1 && s->rows < r.height) return CUDA_ERROR_INVALID_VALUE;
    if (s->origin == nullptr && r.bytes() != 0) return CUDA_ERROR_INVALID_VALUE;
    if (s->array != nullptr) {
      const CudaArray& a = *s->array;
      const size_t rows = std::max<size_t>(a.desc.Height, 1);
      const size_t slices = std::max<size_t>(a.desc.Depth, 1);
      if (s->x % a.texel_bytes != 0 || r.width % a.texel_bytes != 0)
        return CUDA_ERROR_INVALID_VALUE;
      if (s->x + r.width > a.row_pitch || s->y + r.height > rows || s->z + r.depth > slices)
        return CUDA_ERROR_INVALID_VALUE;
      continue;
    }
    const auto origin = reinterpret_cast<uint64_t>(s->origin);
    if (s->device && r.bytes() != 0 && !allocations().contains(origin, r.span(*s)) &&
        !in_graph_allocation(origin, r.span(*s), !node)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

// Copies a pageable host source now, for asynchronous copies.
void stage_source(Region& r) {
  if (r.src.device || r.src.staged_ok || r.bytes() == 0) return;
  r.staging = std::make_shared<std::vector<uint8_t>>(r.bytes());
  Side packed{r.staging->data(), r.width, r.height, false, true};
  Region to_staging = r;
  to_staging.dst = packed;
  to_staging.run();
  r.src = packed;
}

// For CUSNAP_EMU_STATS: device memory is what the allocation table knows, except host memory
// the driver merely pinned or registered (a copy from it still crosses the host link).
bool in_device_memory(const uint8_t* p) {
  auto a = allocations().find(reinterpret_cast<uint64_t>(p));
  return a && a->kind != AllocationKind::kHostPinned && a->kind != AllocationKind::kHostRegistered;
}

CopyDirection direction_of(const Region& r) {
  bool src = r.src.array != nullptr || in_device_memory(r.src.origin);
  bool dst = r.dst.array != nullptr || in_device_memory(r.dst.origin);
  if (src) return dst ? CopyDirection::kDeviceToDevice : CopyDirection::kDeviceToHost;
  return dst ? CopyDirection::kHostToDevice : CopyDirection::kHostToHost;
}

// A validated region as the parameters of a graph memcpy node (stream capture): host sides are
// read or written when the node runs, as graph copies do.
NodeSpec memcpy_node_of(const Region& r) {
  auto node = std::make_unique<GraphNode>();
  node->type = CU_GRAPH_NODE_TYPE_MEMCPY;
  CUDA_MEMCPY3D& p = node->copy;
  p.srcMemoryType = r.src.device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  p.srcDevice = reinterpret_cast<CUdeviceptr>(r.src.origin);
  p.srcHost = r.src.origin;
  p.srcPitch = r.src.pitch;
  p.srcHeight = r.src.rows;
  p.dstMemoryType = r.dst.device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  p.dstDevice = reinterpret_cast<CUdeviceptr>(r.dst.origin);
  p.dstHost = r.dst.origin;
  p.dstPitch = r.dst.pitch;
  p.dstHeight = r.dst.rows;
  p.WidthInBytes = r.width;
  p.Height = r.height;
  p.Depth = r.depth;
  if (r.src.array != nullptr) {
    p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    p.srcArray = reinterpret_cast<CUarray>(r.src.array);
    p.srcXInBytes = r.src.x;
    p.srcY = r.src.y;
    p.srcZ = r.src.z;
    p.srcPitch = p.srcHeight = 0;
  }
  if (r.dst.array != nullptr) {
    p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    p.dstArray = reinterpret_cast<CUarray>(r.dst.array);
    p.dstXInBytes = r.dst.x;
    p.dstY = r.dst.y;
    p.dstZ = r.dst.z;
    p.dstPitch = p.dstHeight = 0;
  }
  return node;
}

CUresult submit_region(Region r, CUstream hStream, bool per_thread, bool async) {
  Context* ctx;
  Stream* stream;
  if (CUresult e = stream_argument(hStream, per_thread, &ctx, &stream); e != CUDA_SUCCESS) return e;
  if (CUresult e = validate(r, capture_active(stream)); e != CUDA_SUCCESS) return e;
  if (r.bytes() == 0) return CUDA_SUCCESS;
  bool counted = stats_enabled();
  CopyDirection direction = counted ? direction_of(r) : CopyDirection::kHostToHost;
  bool captured = false;
  if (CUresult e = capture_node(
          stream, !async, [&] { return memcpy_node_of(r); }, &captured);
      e != CUDA_SUCCESS || captured) {
    if (counted && e == CUDA_SUCCESS) note_copy(direction, r.bytes());  // an accepted call
    return e;
  }
  // Decided before staging replaces a pageable source with the staging buffer.
  const bool host_to_host = !r.src.device && !r.dst.device;
  const bool into_pageable = !r.dst.device && !r.dst.staged_ok;
  if (async) stage_source(r);
  auto work = [r, ctx] {
    if (ctx->sticky_error() != CUDA_SUCCESS) return uint64_t{0};
    r.run();
    return r.modelled_ns();
  };
  CUresult result = CUDA_SUCCESS;
  if (async && !host_to_host && !into_pageable) {
    ctx->submit(stream, work);
  } else {
    // Synchronous calls, and the asynchronous ones that return only after the copy: a failed
    // earlier launch skipped the copy, so its error is what the caller gets.
    result = ctx->submit_and_wait(stream, work);
  }
  if (counted && result == CUDA_SUCCESS) note_copy(direction, r.bytes());
  return result;
}

Region linear(Side dst, Side src, size_t bytes) {
  Region r;
  r.src = src;
  r.dst = dst;
  r.width = bytes;
  return r;
}

// An array side at byte offset x of row y of slice z.
CUresult array_side(CUarray handle, size_t x, size_t y, size_t z, Side* out) {
  CudaArray* a = find_array(handle);
  if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *out = Side{a->data, a->row_pitch, std::max<size_t>(a->desc.Height, 1), true, true};
  out->array = a;
  out->x = x;
  out->y = y;
  out->z = z;
  out->origin += x + y * out->pitch + z * out->pitch * out->rows;
  return CUDA_SUCCESS;
}

// A 1D array copy's side: `offset` bytes into a 1D array (the entry points cuMemcpy*A* name
// "1D CUDA arrays"; the emulator refuses other arrays rather than guess a layout).
CUresult array_1d_side(CUarray handle, size_t offset, Side* out) {
  CudaArray* a = find_array(handle);
  if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (a->desc.Height != 0 || a->desc.Depth != 0) return CUDA_ERROR_INVALID_VALUE;
  return array_side(handle, offset, 0, 0, out);
}

// A CUDA_MEMCPY2D/3D/3D_PEER side.
template <class Host>
CUresult make_side(CUmemorytype type, Host host, CUdeviceptr device, CUarray array, size_t x,
                   size_t y, size_t z, size_t pitch, size_t rows, Side* out) {
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      *out = host_side(host);
      break;
    case CU_MEMORYTYPE_DEVICE:
      *out = device_side(device);
      break;
    case CU_MEMORYTYPE_UNIFIED:
      *out = unified_side(device);
      break;
    case CU_MEMORYTYPE_ARRAY:
      return array_side(array, x, y, z, out);
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  out->pitch = pitch;
  out->rows = rows;
  // Apply the offset after choosing pitch and rows; the pitch of a 1-row copy may be 0.
  out->origin += x + y * pitch + z * pitch * rows;
  return CUDA_SUCCESS;
}

CUresult region_2d(const CUDA_MEMCPY2D* p, Region* r) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  r->width = p->WidthInBytes;
  r->height = p->Height;
  r->depth = 1;
  if (CUresult e = make_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
                             p->srcXInBytes, p->srcY, 0, p->srcPitch, p->Height, &r->src);
      e != CUDA_SUCCESS) {
    return e;
  }
  return make_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes, p->dstY,
                   0, p->dstPitch, p->Height, &r->dst);
}

template <class Params>
CUresult region_3d(const Params* p, Region* r) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (p->srcLOD != 0 || p->dstLOD != 0) return CUDA_ERROR_INVALID_VALUE;
  r->width = p->WidthInBytes;
  r->height = p->Height;
  r->depth = p->Depth;
  size_t src_rows = p->srcHeight != 0 ? p->srcHeight : p->Height;
  size_t dst_rows = p->dstHeight != 0 ? p->dstHeight : p->Height;
  if (CUresult e = make_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
                             p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch, src_rows, &r->src);
      e != CUDA_SUCCESS) {
    return e;
  }
  return make_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes, p->dstY,
                   p->dstZ, p->dstPitch, dst_rows, &r->dst);
}

CUresult copy_2d(const CUDA_MEMCPY2D* p, CUstream s, bool per_thread, bool async) {
  Region r;
  if (CUresult e = region_2d(p, &r); e != CUDA_SUCCESS) return e;
  return submit_region(r, s, per_thread, async);
}

CUresult copy_3d(const CUDA_MEMCPY3D* p, CUstream s, bool per_thread, bool async) {
  if (p != nullptr && (p->reserved0 != nullptr || p->reserved1 != nullptr))
    return CUDA_ERROR_INVALID_VALUE;
  Region r;
  if (CUresult e = region_3d(p, &r); e != CUDA_SUCCESS) return e;
  return submit_region(r, s, per_thread, async);
}

// Peer copies name both contexts; with one device they must merely be live contexts.
CUresult check_peer_contexts(CUcontext dst, CUcontext src) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  const bool ok = context_from_handle(dst) != nullptr && context_from_handle(src) != nullptr;
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                   size_t bytes, CUstream s, bool per_thread, bool async) {
  if (CUresult e = check_peer_contexts(dst_ctx, src_ctx); e != CUDA_SUCCESS) return e;
  return submit_region(linear(device_side(dst), device_side(src), bytes), s, per_thread, async);
}

CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER* p, CUstream s, bool per_thread, bool async) {
  if (p != nullptr) {
    if (CUresult e = check_peer_contexts(p->dstContext, p->srcContext); e != CUDA_SUCCESS) return e;
  }
  Region r;
  if (CUresult e = region_3d(p, &r); e != CUDA_SUCCESS) return e;
  return submit_region(r, s, per_thread, async);
}

// cuMemsetD* and cuMemsetD2D*: `element` bytes of `value` repeated `width` times per row.
CUresult check_memset(CUdeviceptr dst, size_t pitch, size_t element, size_t width, size_t height,
                      bool node = false) {
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  size_t row_bytes = width * element;
  if (height > 1 && pitch < row_bytes) return CUDA_ERROR_INVALID_VALUE;
  if (dst % element != 0 || (height > 1 && pitch % element != 0)) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t span = (height - 1) * pitch + row_bytes;
  if (!allocations().contains(dst, span) && !in_graph_allocation(dst, span, !node))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

Stream::Work memset_work(Context* ctx, CUdeviceptr dst, size_t pitch, uint32_t value,
                         size_t element, size_t width, size_t height) {
  return [=] {
    if (ctx->sticky_error() != CUDA_SUCCESS) return uint64_t{0};
    for (size_t y = 0; y < height; ++y) {
      uint8_t* row = reinterpret_cast<uint8_t*>(dst + y * pitch);
      if (element == 1) {
        std::memset(row, static_cast<int>(value & 0xff), width);
      } else if (element == 2) {
        uint16_t v = static_cast<uint16_t>(value);
        for (size_t i = 0; i < width; ++i) std::memcpy(row + 2 * i, &v, 2);
      } else {
        for (size_t i = 0; i < width; ++i) std::memcpy(row + 4 * i, &value, 4);
      }
    }
    return uint64_t{width * element * height / kDeviceBytesPerNs + 1};
  };
}

CUresult memset_2d(CUdeviceptr dst, size_t pitch, uint32_t value, size_t element, size_t width,
                   size_t height, CUstream hStream, bool per_thread, bool async) {
  Context* ctx;
  Stream* stream;
  if (CUresult e = stream_argument(hStream, per_thread, &ctx, &stream); e != CUDA_SUCCESS) return e;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  if (CUresult e = check_memset(dst, pitch, element, width, height, capture_active(stream));
      e != CUDA_SUCCESS) {
    return e;
  }
  bool captured = false;
  auto make = [&] {
    auto node = std::make_unique<GraphNode>();
    node->type = CU_GRAPH_NODE_TYPE_MEMSET;
    node->memset.dst = dst;
    node->memset.pitch = height > 1 ? pitch : 0;
    node->memset.value = value;
    node->memset.elementSize = static_cast<unsigned>(element);
    node->memset.width = width;
    node->memset.height = height;
    return node;
  };
  if (CUresult e = capture_node(stream, !async, make, &captured); e != CUDA_SUCCESS || captured) {
    if (e == CUDA_SUCCESS) note_memset(uint64_t{width * element} * height);  // an accepted call
    return e;
  }
  auto work = memset_work(ctx, dst, pitch, value, element, width, height);
  CUresult result = CUDA_SUCCESS;
  if (async) {
    ctx->submit(stream, work);
  } else {
    result = ctx->submit_and_wait(stream, work);
  }
  if (result == CUDA_SUCCESS) note_memset(uint64_t{width * element} * height);
  return result;
}

constexpr bool kSync = false;
constexpr bool kAsync = true;

CUresult memcpy_node_region(const CUDA_MEMCPY3D& p, Region* r) {
  if (p.reserved0 != nullptr || p.reserved1 != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult e = region_3d(&p, r); e != CUDA_SUCCESS) return e;
  return validate(*r, true);
}

CUresult check_memset_params(const CUDA_MEMSET_NODE_PARAMS& p) {
  if (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4)
    return CUDA_ERROR_INVALID_VALUE;
  if (p.width == 0 || p.height == 0) return CUDA_ERROR_INVALID_VALUE;
  return check_memset(p.dst, p.pitch, p.elementSize, p.width, p.height, true);
}

}  // namespace

namespace cusnap::emu::driver {

CUresult check_memcpy_node(const CUDA_MEMCPY3D& p) {
  Region r;
  return memcpy_node_region(p, &r);
}

CUresult memcpy_node_work(Context* ctx, const CUDA_MEMCPY3D& p, Stream::Work* out) {
  Region r;
  if (CUresult e = memcpy_node_region(p, &r); e != CUDA_SUCCESS) return e;
  *out = [r, ctx] {
    if (ctx->sticky_error() != CUDA_SUCCESS) return uint64_t{0};
    r.run();
    return r.modelled_ns();
  };
  return CUDA_SUCCESS;
}

CUresult check_memset_node(const CUDA_MEMSET_NODE_PARAMS& p) { return check_memset_params(p); }

CUresult memset_node_work(Context* ctx, const CUDA_MEMSET_NODE_PARAMS& p, Stream::Work* out) {
  if (CUresult e = check_memset_params(p); e != CUDA_SUCCESS) return e;
  *out = memset_work(ctx, p.dst, p.pitch, p.value, p.elementSize, p.width, p.height);
  return CUDA_SUCCESS;
}

}  // namespace cusnap::emu::driver

// ---- 1D copies ---------------------------------------------------------------------------------

#define CUSNAP_COPY(name, body) return guarded(name, [&] { return body; })

CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  CUSNAP_COPY("cuMemcpy", submit_region(linear(unified_side(dst), unified_side(src), ByteCount),
                                        nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  CUSNAP_COPY("cuMemcpy_ptds",
              submit_region(linear(unified_side(dst), unified_side(src), ByteCount), nullptr,
                            kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                             CUstream hStream) {
  CUSNAP_COPY("cuMemcpyAsync",
              submit_region(linear(unified_side(dst), unified_side(src), ByteCount), hStream,
                            kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src,
                                                  size_t ByteCount, CUstream hStream) {
  CUSNAP_COPY("cuMemcpyAsync_ptsz",
              submit_region(linear(unified_side(dst), unified_side(src), ByteCount), hStream,
                            kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
                                            CUdeviceptr srcDevice, CUcontext srcContext,
                                            size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyPeer", copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount,
                                        nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                                 CUdeviceptr srcDevice, CUcontext srcContext,
                                                 size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyPeer_ptds", copy_peer(dstDevice, dstContext, srcDevice, srcContext,
                                             ByteCount, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                                 CUdeviceptr srcDevice, CUcontext srcContext,
                                                 size_t ByteCount, CUstream hStream) {
  CUSNAP_COPY("cuMemcpyPeerAsync", copy_peer(dstDevice, dstContext, srcDevice, srcContext,
                                             ByteCount, hStream, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                                      CUdeviceptr srcDevice, CUcontext srcContext,
                                                      size_t ByteCount, CUstream hStream) {
  CUSNAP_COPY("cuMemcpyPeerAsync_ptsz", copy_peer(dstDevice, dstContext, srcDevice, srcContext,
                                                  ByteCount, hStream, kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost,
                                               size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyHtoD",
              submit_region(linear(device_side(dstDevice), host_side(srcHost), ByteCount), nullptr,
                            kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost,
                                                    size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyHtoD_ptds",
              submit_region(linear(device_side(dstDevice), host_side(srcHost), ByteCount), nullptr,
                            kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice,
                                               size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyDtoH",
              submit_region(linear(host_side(dstHost), device_side(srcDevice), ByteCount), nullptr,
                            kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice,
                                                    size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyDtoH_ptds",
              submit_region(linear(host_side(dstHost), device_side(srcDevice), ByteCount), nullptr,
                            kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                               size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyDtoD",
              submit_region(linear(device_side(dstDevice), device_side(srcDevice), ByteCount),
                            nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                                    size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyDtoD_ptds",
              submit_region(linear(device_side(dstDevice), device_side(srcDevice), ByteCount),
                            nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost,
                                                    size_t ByteCount, CUstream hStream) {
  CUSNAP_COPY("cuMemcpyHtoDAsync",
              submit_region(linear(device_side(dstDevice), host_side(srcHost), ByteCount), hStream,
                            kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost,
                                                         size_t ByteCount, CUstream hStream) {
  CUSNAP_COPY("cuMemcpyHtoDAsync_ptsz",
              submit_region(linear(device_side(dstDevice), host_side(srcHost), ByteCount), hStream,
                            kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice,
                                                    size_t ByteCount, CUstream hStream) {
  CUSNAP_COPY("cuMemcpyDtoHAsync",
              submit_region(linear(host_side(dstHost), device_side(srcDevice), ByteCount), hStream,
                            kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice,
                                                         size_t ByteCount, CUstream hStream) {
  CUSNAP_COPY("cuMemcpyDtoHAsync_ptsz",
              submit_region(linear(host_side(dstHost), device_side(srcDevice), ByteCount), hStream,
                            kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                                    size_t ByteCount, CUstream hStream) {
  CUSNAP_COPY("cuMemcpyDtoDAsync",
              submit_region(linear(device_side(dstDevice), device_side(srcDevice), ByteCount),
                            hStream, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice,
                                                         CUdeviceptr srcDevice, size_t ByteCount,
                                                         CUstream hStream) {
  CUSNAP_COPY("cuMemcpyDtoDAsync_ptsz",
              submit_region(linear(device_side(dstDevice), device_side(srcDevice), ByteCount),
                            hStream, kPerThreadDefault, kAsync));
}

// ---- 1D array copies ---------------------------------------------------------------------------

namespace {

enum class ArrayCopy : uint8_t { kHtoA, kAtoH, kDtoA, kAtoD, kAtoA };

// One of the cuMemcpy*A* entry points: `array`/`offset` is the array side (the destination for
// HtoA/DtoA/AtoA), `other` the host or device pointer or, for AtoA, the source array.
CUresult copy_array_1d(ArrayCopy kind, CUarray array, size_t offset, const void* host,
                       CUdeviceptr device, CUarray src_array, size_t src_offset, size_t bytes,
                       CUstream stream, bool per_thread, bool async) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Side a;
  if (CUresult e = array_1d_side(array, offset, &a); e != CUDA_SUCCESS) return e;
  switch (kind) {
    case ArrayCopy::kHtoA:
      return submit_region(linear(a, host_side(host), bytes), stream, per_thread, async);
    case ArrayCopy::kAtoH:
      return submit_region(linear(host_side(host), a, bytes), stream, per_thread, async);
    case ArrayCopy::kDtoA:
      return submit_region(linear(a, device_side(device), bytes), stream, per_thread, async);
    case ArrayCopy::kAtoD:
      return submit_region(linear(device_side(device), a, bytes), stream, per_thread, async);
    case ArrayCopy::kAtoA: {
      Side src;
      if (CUresult e = array_1d_side(src_array, src_offset, &src); e != CUDA_SUCCESS) return e;
      return submit_region(linear(a, src, bytes), stream, per_thread, async);
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset,
                                               const void* srcHost, size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyHtoA", copy_array_1d(ArrayCopy::kHtoA, dstArray, dstOffset, srcHost, 0,
                                            nullptr, 0, ByteCount, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset,
                                                    const void* srcHost, size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyHtoA_ptds",
              copy_array_1d(ArrayCopy::kHtoA, dstArray, dstOffset, srcHost, 0, nullptr, 0,
                            ByteCount, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset,
                                                    const void* srcHost, size_t ByteCount,
                                                    CUstream hStream) {
  CUSNAP_COPY("cuMemcpyHtoAAsync",
              copy_array_1d(ArrayCopy::kHtoA, dstArray, dstOffset, srcHost, 0, nullptr, 0,
                            ByteCount, hStream, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset,
                                                         const void* srcHost, size_t ByteCount,
                                                         CUstream hStream) {
  CUSNAP_COPY("cuMemcpyHtoAAsync_ptsz",
              copy_array_1d(ArrayCopy::kHtoA, dstArray, dstOffset, srcHost, 0, nullptr, 0,
                            ByteCount, hStream, kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyAtoH_v2(void* dstHost, CUarray srcArray, size_t srcOffset,
                                               size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyAtoH", copy_array_1d(ArrayCopy::kAtoH, srcArray, srcOffset, dstHost, 0,
                                            nullptr, 0, ByteCount, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyAtoH_v2_ptds(void* dstHost, CUarray srcArray,
                                                    size_t srcOffset, size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyAtoH_ptds",
              copy_array_1d(ArrayCopy::kAtoH, srcArray, srcOffset, dstHost, 0, nullptr, 0,
                            ByteCount, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyAtoHAsync_v2(void* dstHost, CUarray srcArray,
                                                    size_t srcOffset, size_t ByteCount,
                                                    CUstream hStream) {
  CUSNAP_COPY("cuMemcpyAtoHAsync",
              copy_array_1d(ArrayCopy::kAtoH, srcArray, srcOffset, dstHost, 0, nullptr, 0,
                            ByteCount, hStream, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyAtoHAsync_v2_ptsz(void* dstHost, CUarray srcArray,
                                                         size_t srcOffset, size_t ByteCount,
                                                         CUstream hStream) {
  CUSNAP_COPY("cuMemcpyAtoHAsync_ptsz",
              copy_array_1d(ArrayCopy::kAtoH, srcArray, srcOffset, dstHost, 0, nullptr, 0,
                            ByteCount, hStream, kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset,
                                               CUdeviceptr srcDevice, size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyDtoA",
              copy_array_1d(ArrayCopy::kDtoA, dstArray, dstOffset, nullptr, srcDevice, nullptr, 0,
                            ByteCount, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset,
                                                    CUdeviceptr srcDevice, size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyDtoA_ptds",
              copy_array_1d(ArrayCopy::kDtoA, dstArray, dstOffset, nullptr, srcDevice, nullptr, 0,
                            ByteCount, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray,
                                               size_t srcOffset, size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyAtoD",
              copy_array_1d(ArrayCopy::kAtoD, srcArray, srcOffset, nullptr, dstDevice, nullptr, 0,
                            ByteCount, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray,
                                                    size_t srcOffset, size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyAtoD_ptds",
              copy_array_1d(ArrayCopy::kAtoD, srcArray, srcOffset, nullptr, dstDevice, nullptr, 0,
                            ByteCount, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray,
                                               size_t srcOffset, size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyAtoA",
              copy_array_1d(ArrayCopy::kAtoA, dstArray, dstOffset, nullptr, 0, srcArray, srcOffset,
                            ByteCount, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset,
                                                    CUarray srcArray, size_t srcOffset,
                                                    size_t ByteCount) {
  CUSNAP_COPY("cuMemcpyAtoA_ptds",
              copy_array_1d(ArrayCopy::kAtoA, dstArray, dstOffset, nullptr, 0, srcArray, srcOffset,
                            ByteCount, nullptr, kPerThreadDefault, kSync));
}

// ---- 2D and 3D copies --------------------------------------------------------------------------

CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D* pCopy) {
  CUSNAP_COPY("cuMemcpy2D", copy_2d(pCopy, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  CUSNAP_COPY("cuMemcpy2D_ptds", copy_2d(pCopy, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* pCopy) {
  CUSNAP_COPY("cuMemcpy2DUnaligned", copy_2d(pCopy, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  CUSNAP_COPY("cuMemcpy2DUnaligned_ptds", copy_2d(pCopy, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  CUSNAP_COPY("cuMemcpy2DAsync", copy_2d(pCopy, hStream, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy,
                                                       CUstream hStream) {
  CUSNAP_COPY("cuMemcpy2DAsync_ptsz", copy_2d(pCopy, hStream, kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D* pCopy) {
  CUSNAP_COPY("cuMemcpy3D", copy_3d(pCopy, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy) {
  CUSNAP_COPY("cuMemcpy3D_ptds", copy_3d(pCopy, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  CUSNAP_COPY("cuMemcpy3DAsync", copy_3d(pCopy, hStream, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy,
                                                       CUstream hStream) {
  CUSNAP_COPY("cuMemcpy3DAsync_ptsz", copy_3d(pCopy, hStream, kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* pCopy) {
  CUSNAP_COPY("cuMemcpy3DPeer", copy_3d_peer(pCopy, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* pCopy) {
  CUSNAP_COPY("cuMemcpy3DPeer_ptds", copy_3d_peer(pCopy, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* pCopy,
                                                   CUstream hStream) {
  CUSNAP_COPY("cuMemcpy3DPeerAsync", copy_3d_peer(pCopy, hStream, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER* pCopy,
                                                        CUstream hStream) {
  CUSNAP_COPY("cuMemcpy3DPeerAsync_ptsz", copy_3d_peer(pCopy, hStream, kPerThreadDefault, kAsync));
}

// ---- memsets -----------------------------------------------------------------------------------

CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr d, unsigned char uc, size_t N) {
  CUSNAP_COPY("cuMemsetD8", memset_2d(d, N, uc, 1, N, 1, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char uc, size_t N) {
  CUSNAP_COPY("cuMemsetD8_ptds", memset_2d(d, N, uc, 1, N, 1, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr d, unsigned short us, size_t N) {
  CUSNAP_COPY("cuMemsetD16", memset_2d(d, 2 * N, us, 2, N, 1, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short us, size_t N) {
  CUSNAP_COPY("cuMemsetD16_ptds",
              memset_2d(d, 2 * N, us, 2, N, 1, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr d, unsigned int ui, size_t N) {
  CUSNAP_COPY("cuMemsetD32", memset_2d(d, 4 * N, ui, 4, N, 1, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int ui, size_t N) {
  CUSNAP_COPY("cuMemsetD32_ptds",
              memset_2d(d, 4 * N, ui, 4, N, 1, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr d, unsigned char uc, size_t N,
                                               CUstream s) {
  CUSNAP_COPY("cuMemsetD8Async", memset_2d(d, N, uc, 1, N, 1, s, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char uc, size_t N,
                                                    CUstream s) {
  CUSNAP_COPY("cuMemsetD8Async_ptsz", memset_2d(d, N, uc, 1, N, 1, s, kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr d, unsigned short us, size_t N,
                                                CUstream s) {
  CUSNAP_COPY("cuMemsetD16Async", memset_2d(d, 2 * N, us, 2, N, 1, s, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short us, size_t N,
                                                     CUstream s) {
  CUSNAP_COPY("cuMemsetD16Async_ptsz",
              memset_2d(d, 2 * N, us, 2, N, 1, s, kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr d, unsigned int ui, size_t N,
                                                CUstream s) {
  CUSNAP_COPY("cuMemsetD32Async", memset_2d(d, 4 * N, ui, 4, N, 1, s, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int ui, size_t N,
                                                     CUstream s) {
  CUSNAP_COPY("cuMemsetD32Async_ptsz",
              memset_2d(d, 4 * N, ui, 4, N, 1, s, kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char uc,
                                               size_t w, size_t h) {
  CUSNAP_COPY("cuMemsetD2D8", memset_2d(d, pitch, uc, 1, w, h, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t pitch, unsigned char uc,
                                                    size_t w, size_t h) {
  CUSNAP_COPY("cuMemsetD2D8_ptds",
              memset_2d(d, pitch, uc, 1, w, h, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch, unsigned short us,
                                                size_t w, size_t h) {
  CUSNAP_COPY("cuMemsetD2D16", memset_2d(d, pitch, us, 2, w, h, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D16_v2_ptds(CUdeviceptr d, size_t pitch, unsigned short us,
                                                     size_t w, size_t h) {
  CUSNAP_COPY("cuMemsetD2D16_ptds",
              memset_2d(d, pitch, us, 2, w, h, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned int ui,
                                                size_t w, size_t h) {
  CUSNAP_COPY("cuMemsetD2D32", memset_2d(d, pitch, ui, 4, w, h, nullptr, kLegacyDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D32_v2_ptds(CUdeviceptr d, size_t pitch, unsigned int ui,
                                                     size_t w, size_t h) {
  CUSNAP_COPY("cuMemsetD2D32_ptds",
              memset_2d(d, pitch, ui, 4, w, h, nullptr, kPerThreadDefault, kSync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char uc,
                                                 size_t w, size_t h, CUstream s) {
  CUSNAP_COPY("cuMemsetD2D8Async", memset_2d(d, pitch, uc, 1, w, h, s, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D8Async_ptsz(CUdeviceptr d, size_t pitch, unsigned char uc,
                                                      size_t w, size_t h, CUstream s) {
  CUSNAP_COPY("cuMemsetD2D8Async_ptsz",
              memset_2d(d, pitch, uc, 1, w, h, s, kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short us,
                                                  size_t w, size_t h, CUstream s) {
  CUSNAP_COPY("cuMemsetD2D16Async", memset_2d(d, pitch, us, 2, w, h, s, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D16Async_ptsz(CUdeviceptr d, size_t pitch,
                                                       unsigned short us, size_t w, size_t h,
                                                       CUstream s) {
  CUSNAP_COPY("cuMemsetD2D16Async_ptsz",
              memset_2d(d, pitch, us, 2, w, h, s, kPerThreadDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int ui,
                                                  size_t w, size_t h, CUstream s) {
  CUSNAP_COPY("cuMemsetD2D32Async", memset_2d(d, pitch, ui, 4, w, h, s, kLegacyDefault, kAsync));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemsetD2D32Async_ptsz(CUdeviceptr d, size_t pitch, unsigned int ui,
                                                       size_t w, size_t h, CUstream s) {
  CUSNAP_COPY("cuMemsetD2D32Async_ptsz",
              memset_2d(d, pitch, ui, 4, w, h, s, kPerThreadDefault, kAsync));
}

// ---- batched copies ----------------------------------------------------------------------------
//
// cuMemcpyBatchAsync and cuMemcpy3DBatchAsync (each with the failIdx ABI and the _v2 one without
// it): every copy is a Region as above, checked before anything is queued (failIdx names the
// first bad one, SIZE_MAX for an error of the call itself), then the whole batch runs as one
// operation of the stream. The source access orders: STREAM and ANY read the source in stream
// order (ANY allows any time; stream order is one); DURING_API_CALL reads it before the call
// returns, as documented for ephemeral sources. Copies within a batch have no order, so running
// them in array order is one valid schedule. CUDA arrays are not emulated: array operands are
// refused with CUDA_ERROR_NOT_SUPPORTED.

namespace {

constexpr size_t kNoFailIndex = SIZE_MAX;

struct BatchCopy {
  Region region;
  bool during_call = false;  // CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL
};

CUresult check_access(CUmemcpySrcAccessOrder order, unsigned flags) {
  if (order != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM &&
      order != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL &&
      order != CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
    return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~static_cast<unsigned>(CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// Reads the source now into a packed buffer the queued copy reads instead.
void snapshot_source(Region& r) {
  r.staging = std::make_shared<std::vector<uint8_t>>(r.bytes());
  Side packed{r.staging->data(), r.width, r.height, false, true};
  Region to_staging = r;
  to_staging.dst = packed;
  to_staging.run();
  r.src = packed;
}

CUresult submit_batch(std::vector<BatchCopy> copies, CUstream hStream, bool per_thread,
                      size_t* fail_idx, const char* call) {
  Context* ctx;
  Stream* stream;
  if (CUresult e = stream_argument(hStream, per_thread, &ctx, &stream); e != CUDA_SUCCESS) return e;
  // "Must not be legacy NULL stream."
  if (stream->kind() == StreamKind::kLegacy) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < copies.size(); ++i) {
    if (CUresult e = validate(copies[i].region); e != CUDA_SUCCESS) {
      if (fail_idx != nullptr) *fail_idx = i;
      return e;
    }
  }
  // A batch node would need one memcpy node per copy and sources read at capture time for
  // DURING_API_CALL; neither is emulated.
  if (CUresult e = capture_refuse(stream, call, CUDA_ERROR_NOT_SUPPORTED); e != CUDA_SUCCESS)
    return e;
  // Decided before staging replaces pageable sources with staging buffers.
  std::vector<std::pair<CopyDirection, uint64_t>> notes;
  if (stats_enabled()) {
    for (const BatchCopy& c : copies) {
      if (c.region.bytes() != 0) notes.emplace_back(direction_of(c.region), c.region.bytes());
    }
  }
  bool wait = false;
  std::vector<Region> regions;
  regions.reserve(copies.size());
  for (BatchCopy& c : copies) {
    Region& r = c.region;
    if (r.bytes() == 0) continue;
    // As for every async copy: into pageable memory, or host to host, returns once done.
    wait = wait || (!r.src.device && !r.dst.device) || (!r.dst.device && !r.dst.staged_ok);
    if (c.during_call) {
      snapshot_source(r);
    } else {
      stage_source(r);
    }
    regions.push_back(std::move(r));
  }
  if (regions.empty()) return CUDA_SUCCESS;
  auto work = [regions = std::move(regions), ctx] {
    if (ctx->sticky_error() != CUDA_SUCCESS) return uint64_t{0};
    uint64_t ns = 0;
    for (const Region& r : regions) {
      r.run();
      ns += r.modelled_ns();
    }
    return ns;
  };
  CUresult result = CUDA_SUCCESS;
  if (wait) {
    result = ctx->submit_and_wait(stream, work);
  } else {
    ctx->submit(stream, work);
  }
  if (result == CUDA_SUCCESS) {
    for (const auto& [direction, bytes] : notes) note_copy(direction, bytes);
  }
  return result;
}

CUresult memcpy_batch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                      CUmemcpyAttributes* attrs, size_t* attr_idxs, size_t num_attrs,
                      size_t* fail_idx, CUstream hStream, bool per_thread, const char* call) {
  if (fail_idx != nullptr) *fail_idx = kNoFailIndex;
  if (CUresult e = check_initialized(); e != CUDA_SUCCESS) return e;
  // The attribute list as documented: the first index 0, increasing, each below count, at most
  // count of them; every copy then has one.
  if (dsts == nullptr || srcs == nullptr || sizes == nullptr || count == 0 || attrs == nullptr ||
      attr_idxs == nullptr || num_attrs == 0 || num_attrs > count || attr_idxs[0] != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<BatchCopy> copies(count);
  for (size_t k = 0; k < num_attrs; ++k) {
    if ((k > 0 && attr_idxs[k] <= attr_idxs[k - 1]) || attr_idxs[k] >= count)
      return CUDA_ERROR_INVALID_VALUE;
    const size_t end = k + 1 < num_attrs ? attr_idxs[k + 1] : count;
    for (size_t i = attr_idxs[k]; i < end; ++i) {
      if (CUresult e = check_access(attrs[k].srcAccessOrder, attrs[k].flags); e != CUDA_SUCCESS) {
        if (fail_idx != nullptr) *fail_idx = i;
        return e;
      }
      copies[i].region = linear(unified_side(dsts[i]), unified_side(srcs[i]), sizes[i]);
      copies[i].during_call = attrs[k].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    }
  }
  return submit_batch(std::move(copies), hStream, per_thread, fail_idx, call);
}

CUresult batch_operand(const CUmemcpy3DOperand& op, const CUextent3D& extent, Side* out) {
  if (op.type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
    log(LogLevel::kError, "cuMemcpy3DBatchAsync: CUDA array operands are not emulated");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (op.type != CU_MEMCPY_OPERAND_TYPE_POINTER) return CUDA_ERROR_INVALID_VALUE;
  // rowLength and layerHeight: 0 (tightly packed) or at least the extent, in elements of 1 byte.
  if ((op.op.ptr.rowLength != 0 && op.op.ptr.rowLength < extent.width) ||
      (op.op.ptr.layerHeight != 0 && op.op.ptr.layerHeight < extent.height)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = unified_side(op.op.ptr.ptr);
  out->pitch = op.op.ptr.rowLength;
  out->rows = op.op.ptr.layerHeight;
  return CUDA_SUCCESS;
}

CUresult memcpy_3d_batch(size_t num_ops, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail_idx,
                         unsigned long long flags, CUstream hStream, bool per_thread,
                         const char* call) {
  if (fail_idx != nullptr) *fail_idx = kNoFailIndex;
  if (CUresult e = check_initialized(); e != CUDA_SUCCESS) return e;
  if (num_ops == 0 || ops == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::vector<BatchCopy> copies(num_ops);
  for (size_t i = 0; i < num_ops; ++i) {
    const CUDA_MEMCPY3D_BATCH_OP& op = ops[i];
    Region& r = copies[i].region;
    CUresult e = check_access(op.srcAccessOrder, op.flags);
    // "The width, height and depth components must not be 0."
    if (e == CUDA_SUCCESS &&
        (op.extent.width == 0 || op.extent.height == 0 || op.extent.depth == 0))
      e = CUDA_ERROR_INVALID_VALUE;
    if (e == CUDA_SUCCESS) e = batch_operand(op.src, op.extent, &r.src);
    if (e == CUDA_SUCCESS) e = batch_operand(op.dst, op.extent, &r.dst);
    if (e != CUDA_SUCCESS) {
      if (fail_idx != nullptr) *fail_idx = i;
      return e;
    }
    r.width = op.extent.width;
    r.height = op.extent.height;
    r.depth = op.extent.depth;
    copies[i].during_call = op.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  }
  return submit_batch(std::move(copies), hStream, per_thread, fail_idx, call);
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                                  size_t* sizes, size_t count,
                                                  CUmemcpyAttributes* attrs, size_t* attrIdxs,
                                                  size_t numAttrs, size_t* failIdx,
                                                  CUstream hStream) {
  CUSNAP_COPY("cuMemcpyBatchAsync",
              memcpy_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, hStream,
                           kLegacyDefault, "cuMemcpyBatchAsync"));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                                       size_t* sizes, size_t count,
                                                       CUmemcpyAttributes* attrs, size_t* attrIdxs,
                                                       size_t numAttrs, size_t* failIdx,
                                                       CUstream hStream) {
  CUSNAP_COPY("cuMemcpyBatchAsync_ptsz",
              memcpy_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, hStream,
                           kPerThreadDefault, "cuMemcpyBatchAsync"));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                                     size_t* sizes, size_t count,
                                                     CUmemcpyAttributes* attrs, size_t* attrIdxs,
                                                     size_t numAttrs, CUstream hStream) {
  CUSNAP_COPY("cuMemcpyBatchAsync_v2",
              memcpy_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, nullptr, hStream,
                           kLegacyDefault, "cuMemcpyBatchAsync"));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                                          size_t* sizes, size_t count,
                                                          CUmemcpyAttributes* attrs,
                                                          size_t* attrIdxs, size_t numAttrs,
                                                          CUstream hStream) {
  CUSNAP_COPY("cuMemcpyBatchAsync_v2_ptsz",
              memcpy_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, nullptr, hStream,
                           kPerThreadDefault, "cuMemcpyBatchAsync"));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                                    size_t* failIdx, unsigned long long flags,
                                                    CUstream hStream) {
  CUSNAP_COPY("cuMemcpy3DBatchAsync", memcpy_3d_batch(numOps, opList, failIdx, flags, hStream,
                                                      kLegacyDefault, "cuMemcpy3DBatchAsync"));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3DBatchAsync_ptsz(size_t numOps,
                                                         CUDA_MEMCPY3D_BATCH_OP* opList,
                                                         size_t* failIdx, unsigned long long flags,
                                                         CUstream hStream) {
  CUSNAP_COPY("cuMemcpy3DBatchAsync_ptsz",
              memcpy_3d_batch(numOps, opList, failIdx, flags, hStream, kPerThreadDefault,
                              "cuMemcpy3DBatchAsync"));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3DBatchAsync_v2(size_t numOps,
                                                       CUDA_MEMCPY3D_BATCH_OP* opList,
                                                       unsigned long long flags, CUstream hStream) {
  CUSNAP_COPY("cuMemcpy3DBatchAsync_v2", memcpy_3d_batch(numOps, opList, nullptr, flags, hStream,
                                                         kLegacyDefault, "cuMemcpy3DBatchAsync"));
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps,
                                                            CUDA_MEMCPY3D_BATCH_OP* opList,
                                                            unsigned long long flags,
                                                            CUstream hStream) {
  CUSNAP_COPY("cuMemcpy3DBatchAsync_v2_ptsz",
              memcpy_3d_batch(numOps, opList, nullptr, flags, hStream, kPerThreadDefault,
                              "cuMemcpy3DBatchAsync"));
}
