// Copies and memsets. Bytes entering device memory from the host are stored as content-addressed
// blobs (Memcpy.payload; the same bytes are stored once per file). What the application receives
// from the device gets an XXH3-64 checksum (Memcpy.hostChecksum): after the call for synchronous
// copies, in stream order for asynchronous ones (stream_order.h), where the result arrives as a
// DeferredResult record about the copy (docs/capture.md).
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "graphs.h"
#include "hooks.h"
#include "host_region.h"
#include "session.h"
#include "stream_order.h"

namespace cusnap::icpt {
namespace {

using Kind = schema::Memcpy::Kind;

void set_blob(schema::BlobId::Builder out, const format::BlobId& id) {
  out.setHigh(id.high);
  out.setLow(id.low);
}

// Host memory is whatever the driver does not know as device memory (pageable memory is unknown
// to it; pinned memory reports CU_MEMORYTYPE_HOST).
bool is_device_pointer(uint64_t address) {
  auto get = CUSNAP_REAL(cuPointerGetAttribute);
  if (get == nullptr) return false;
  unsigned int type = 0;
  if (get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, static_cast<CUdeviceptr>(address)) !=
      CUDA_SUCCESS)
    return false;
  return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY;
}

bool is_pinned_host(const void* pointer) {
  auto get = CUSNAP_REAL(cuPointerGetAttribute);
  unsigned int type = 0;
  return get != nullptr &&
         get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(pointer)) ==
             CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_HOST;
}

format::BlobId store(Session* session, const HostRegion& region) {
  if (session == nullptr || region.base == nullptr) return {};
  if (region.contiguous()) return session->put_blob({region.base, region.bytes()});
  std::vector<uint8_t> bytes = region.gather();
  return session->put_blob(bytes);
}

struct Copy {
  Kind kind = Kind::UNIFIED;
  uint64_t dst = 0, src = 0, size = 0;
  bool async = false;
  CUstream stream = nullptr;
  const HostRegion* from_host = nullptr;  // bytes entering device memory
  const HostRegion* to_host = nullptr;    // bytes the application receives
};

// The copy record to fill: a memcpy record, or, for an asynchronous copy the driver captured into
// a graph, the memcpy of a graphNode record (*captured is then set).
schema::Memcpy::Builder begin_memcpy(CallScope& call, bool async, CUstream stream,
                                     CapturedNode* captured) {
  if (async && call.result() == CUDA_SUCCESS && capture_possible() &&
      captured_node(stream, call.per_thread_stream(), captured)) {
    auto node =
        init_node_record(call, schema::GraphNode::Kind::MEMCPY, captured->graph, captured->node);
    set_captured(node, *captured);
    return node.initMemcpy();
  }
  return call.record().initMemcpy();
}

// Writes the record; for async copies schedules the stream-ordered checksum / payload re-read.
// A captured copy (captured->node != 0) does not run now: its payload is the bytes at call time,
// and what it delivers to the host is checksummed at each launch of the graph (graphs.h).
void record_copy(CallScope& call, const Copy& copy, schema::Memcpy::Builder* prepared = nullptr,
                 const CapturedNode* captured = nullptr) {
  Session* session = Session::current();
  bool ok = call.result() == CUDA_SUCCESS;
  CapturedNode own;
  if (prepared == nullptr) {
    auto begun = begin_memcpy(call, copy.async, copy.stream, &own);
    if (own.node != 0) captured = &own;
    return record_copy(call, copy, &begun, captured);
  }
  auto record = *prepared;
  record.setKind(copy.kind);
  record.setDst(copy.dst);
  record.setSrc(copy.src);
  record.setSize(copy.size);
  record.setAsync(copy.async);
  record.setStream(handle_value(copy.stream));
  if (record.getDimensions() == 0) record.setDimensions(1);
  format::BlobId payload;
  if (ok && copy.from_host != nullptr) {
    payload = store(session, *copy.from_host);
    set_blob(record.initPayload(), payload);
  }
  bool checksum_now = ok && copy.to_host != nullptr && !copy.async && session != nullptr &&
                      session->config().dtoh_checksums;
  if (checksum_now) {
    record.setHostChecksum(checksum(*copy.to_host));
    record.setHasHostChecksum(true);
  }
  if (captured != nullptr && captured->node != 0) {
    if (copy.to_host != nullptr) note_dtoh_node(captured->graph, captured->node, *copy.to_host);
    call.commit();
    return;
  }
  uint64_t seq = call.commit();
  if (!ok || !copy.async || session == nullptr || seq == UINT64_MAX) return;

  bool per_thread = call.per_thread_stream();
  if (copy.to_host != nullptr && session->config().dtoh_checksums) {
    HostRegion region = *copy.to_host;
    bool queued = run_in_stream_order(copy.stream, per_thread, [session, region, seq] {
      DeferredResult result;
      result.call_seq = seq;
      result.has_host_checksum = true;
      result.host_checksum = checksum(region);
      session->deferred_result(result);
    });
    if (!queued) {
      DeferredResult result;
      result.call_seq = seq;
      result.missing =
          stream_is_capturing(copy.stream, per_thread)
              ? "no device-to-host checksum: the stream is being captured into a graph"
              : "no device-to-host checksum: the driver refused the stream-ordered host function";
      session->deferred_result(result);
    }
  }
  if (copy.from_host != nullptr && is_pinned_host(copy.from_host->base)) {
    // The copy reads pinned memory when it executes: check the bytes in stream order and store
    // them if the application changed them after the call.
    HostRegion region = *copy.from_host;
    (void)run_in_stream_order(copy.stream, per_thread, [session, region, seq, payload] {
      format::BlobId executed = region.contiguous()
                                    ? format::hash_blob({region.base, region.bytes()})
                                    : format::hash_blob(region.gather());
      if (executed == payload) return;
      DeferredResult result;
      result.call_seq = seq;
      result.payload = store(session, region);
      if (result.payload.is_null()) {
        result.missing = "the pinned source changed before the copy ran and could not be stored";
      }
      session->deferred_result(result);
    });
  }
}

HostRegion linear(const void* pointer, size_t bytes) {
  HostRegion region;
  region.base = static_cast<const uint8_t*>(pointer);
  region.width = bytes;
  region.pitch = bytes;
  return region;
}

// cuMemcpy / cuMemcpyAsync: the direction comes from the pointers.
void record_unified(CallScope& call, CUdeviceptr dst, CUdeviceptr src, size_t bytes, bool async,
                    CUstream stream) {
  bool dst_device = is_device_pointer(dst), src_device = is_device_pointer(src);
  HostRegion in = linear(reinterpret_cast<const void*>(src), bytes);
  HostRegion out = linear(reinterpret_cast<const void*>(dst), bytes);
  Copy copy{Kind::UNIFIED, dst, src, bytes, async, stream, nullptr, nullptr};
  if (!src_device && dst_device) copy.from_host = &in;
  if (!dst_device) copy.to_host = &out;
  record_copy(call, copy);
}

// Which side of a 2-D/3-D copy is host memory the application owns.
bool host_side(CUmemorytype type, const void* host, CUdeviceptr device) {
  if (type == CU_MEMORYTYPE_HOST) return true;
  if (type == CU_MEMORYTYPE_UNIFIED)
    return !is_device_pointer(device != 0 ? device : reinterpret_cast<CUdeviceptr>(host));
  return false;
}

Kind kind_for(bool src_host, bool dst_host, bool array) {
  if (array) return Kind::ARRAY_INVOLVED;
  if (src_host && dst_host) return Kind::HOST_TO_HOST;
  if (src_host) return Kind::HOST_TO_DEVICE;
  if (dst_host) return Kind::DEVICE_TO_HOST;
  return Kind::DEVICE_TO_DEVICE;
}

// Fills the geometry of a 2-D/3-D copy into `record` and says what the copy is; `in` and `out`
// receive the host regions it reads / writes (pointed to by the result).
Copy describe_3d(const CUDA_MEMCPY3D* p, uint8_t dims, bool async, CUstream stream,
                 schema::Memcpy::Builder record, HostRegion& in, HostRegion& out) {
  bool src_host = host_side(p->srcMemoryType, p->srcHost, p->srcDevice);
  bool dst_host = host_side(p->dstMemoryType, p->dstHost, p->dstDevice);
  bool array = p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY;
  size_t depth = dims == 3 ? p->Depth : 1;
  size_t src_height = dims == 3 ? p->srcHeight : p->Height;
  size_t dst_height = dims == 3 ? p->dstHeight : p->Height;
  const void* src_host_ptr = p->srcMemoryType == CU_MEMORYTYPE_HOST
                                 ? p->srcHost
                                 : reinterpret_cast<const void*>(p->srcDevice);
  void* dst_host_ptr =
      p->dstMemoryType == CU_MEMORYTYPE_HOST ? p->dstHost : reinterpret_cast<void*>(p->dstDevice);
  in.base = static_cast<const uint8_t*>(src_host_ptr) +
            (p->srcZ * src_height + p->srcY) * p->srcPitch + p->srcXInBytes;
  in.width = p->WidthInBytes;
  in.rows = p->Height;
  in.pitch = p->srcPitch;
  in.slices = depth;
  in.slice_pitch = p->srcPitch * src_height;
  out.base = static_cast<const uint8_t*>(dst_host_ptr) +
             (p->dstZ * dst_height + p->dstY) * p->dstPitch + p->dstXInBytes;
  out.width = p->WidthInBytes;
  out.rows = p->Height;
  out.pitch = p->dstPitch;
  out.slices = depth;
  out.slice_pitch = p->dstPitch * dst_height;

  record.setDimensions(dims);
  auto g = record.initGeometry();
  g.setSrcXInBytes(p->srcXInBytes);
  g.setSrcY(p->srcY);
  g.setSrcZ(p->srcZ);
  g.setSrcPitch(p->srcPitch);
  g.setSrcHeight(src_height);
  g.setDstXInBytes(p->dstXInBytes);
  g.setDstY(p->dstY);
  g.setDstZ(p->dstZ);
  g.setDstPitch(p->dstPitch);
  g.setDstHeight(dst_height);
  g.setWidthInBytes(p->WidthInBytes);
  g.setHeight(p->Height);
  g.setDepth(depth);
  g.setSrcMemoryType(static_cast<int32_t>(p->srcMemoryType));
  g.setDstMemoryType(static_cast<int32_t>(p->dstMemoryType));
  g.setSrcArray(handle_value(p->srcArray));
  g.setDstArray(handle_value(p->dstArray));
  Copy copy{kind_for(src_host, dst_host, array),
            src_host ? 0 : p->dstDevice,
            0,
            p->WidthInBytes * p->Height * depth,
            async,
            stream,
            nullptr,
            nullptr};
  copy.dst = dst_host ? reinterpret_cast<uint64_t>(dst_host_ptr) : p->dstDevice;
  copy.src = src_host ? reinterpret_cast<uint64_t>(src_host_ptr) : p->srcDevice;
  // An array side is no address (its handle and offsets are in the geometry).
  if (p->dstMemoryType == CU_MEMORYTYPE_ARRAY) copy.dst = 0;
  if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY) copy.src = 0;
  // Bytes entering the device (an array included) are stored, bytes leaving it checksummed,
  // whatever the device side is.
  if (src_host && !dst_host) copy.from_host = &in;
  if (dst_host && !src_host) copy.to_host = &out;
  return copy;
}

void record_3d(CallScope& call, const CUDA_MEMCPY3D* p, bool async, CUstream stream, uint8_t dims) {
  if (p == nullptr) {
    call.record().initMemcpy().setDimensions(dims);
    call.commit();
    return;
  }
  CapturedNode captured;
  auto record = begin_memcpy(call, async, stream, &captured);
  HostRegion in, out;
  Copy copy = describe_3d(p, dims, async, stream, record, in, out);
  record_copy(call, copy, &record, &captured);
}

CUDA_MEMCPY3D widen(const CUDA_MEMCPY2D* p) {
  CUDA_MEMCPY3D q{};
  q.srcXInBytes = p->srcXInBytes;
  q.srcY = p->srcY;
  q.srcMemoryType = p->srcMemoryType;
  q.srcHost = p->srcHost;
  q.srcDevice = p->srcDevice;
  q.srcArray = p->srcArray;
  q.srcPitch = p->srcPitch;
  q.dstXInBytes = p->dstXInBytes;
  q.dstY = p->dstY;
  q.dstMemoryType = p->dstMemoryType;
  q.dstHost = p->dstHost;
  q.dstDevice = p->dstDevice;
  q.dstArray = p->dstArray;
  q.dstPitch = p->dstPitch;
  q.WidthInBytes = p->WidthInBytes;
  q.Height = p->Height;
  q.Depth = 1;
  return q;
}

// cuMemcpy3DPeer: a 3-D copy between contexts, recorded as a 3-D copy with both contexts.
void record_3d_peer(CallScope& call, const CUDA_MEMCPY3D_PEER* p, bool async, CUstream stream) {
  if (p == nullptr) return record_3d(call, nullptr, async, stream, 3);
  CUDA_MEMCPY3D q{};
  q.srcXInBytes = p->srcXInBytes;
  q.srcY = p->srcY;
  q.srcZ = p->srcZ;
  q.srcLOD = p->srcLOD;
  q.srcMemoryType = p->srcMemoryType;
  q.srcHost = p->srcHost;
  q.srcDevice = p->srcDevice;
  q.srcArray = p->srcArray;
  q.srcPitch = p->srcPitch;
  q.srcHeight = p->srcHeight;
  q.dstXInBytes = p->dstXInBytes;
  q.dstY = p->dstY;
  q.dstZ = p->dstZ;
  q.dstLOD = p->dstLOD;
  q.dstMemoryType = p->dstMemoryType;
  q.dstHost = p->dstHost;
  q.dstDevice = p->dstDevice;
  q.dstArray = p->dstArray;
  q.dstPitch = p->dstPitch;
  q.dstHeight = p->dstHeight;
  q.WidthInBytes = p->WidthInBytes;
  q.Height = p->Height;
  q.Depth = p->Depth;
  CapturedNode captured;
  auto record = begin_memcpy(call, async, stream, &captured);
  record.setSrcContext(handle_value(p->srcContext));
  record.setDstContext(handle_value(p->dstContext));
  HostRegion in, out;
  Copy copy = describe_3d(&q, 3, async, stream, record, in, out);
  record_copy(call, copy, &record, &captured);
}

void record_2d(CallScope& call, const CUDA_MEMCPY2D* p, bool async, CUstream stream) {
  if (p == nullptr) return record_3d(call, nullptr, async, stream, 2);
  CUDA_MEMCPY3D q = widen(p);
  record_3d(call, &q, async, stream, 2);
}

using ArrayApi = schema::CopyGeometry::ArrayApi;

// The 1-D array copies (cuMemcpyHtoA, AtoH, DtoA, AtoD, AtoA and the asynchronous HtoA / AtoH):
// an array side is its handle and byte offset, the other side a host or device pointer (or, for
// AtoA, the source array). Recorded as a 1-D arrayInvolved copy whose geometry names the sides.
struct ArrayCopy1d {
  ArrayApi api = ArrayApi::NONE;
  CUarray dst_array = nullptr, src_array = nullptr;
  size_t dst_offset = 0, src_offset = 0;
  uint64_t dst = 0, src = 0;  // the pointer side (host or device)
  size_t bytes = 0;
};

void record_array_1d(CallScope& call, const ArrayCopy1d& a, bool async, CUstream stream) {
  CapturedNode captured;
  auto record = begin_memcpy(call, async, stream, &captured);
  record.setDimensions(1);
  auto g = record.initGeometry();
  g.setArrayApi(a.api);
  g.setWidthInBytes(a.bytes);
  g.setHeight(1);
  g.setDepth(1);
  g.setSrcArray(handle_value(a.src_array));
  g.setDstArray(handle_value(a.dst_array));
  g.setSrcXInBytes(a.src_array != nullptr ? a.src_offset : 0);
  g.setDstXInBytes(a.dst_array != nullptr ? a.dst_offset : 0);
  auto type = [](bool array, bool host) {
    return static_cast<int32_t>(array  ? CU_MEMORYTYPE_ARRAY
                                : host ? CU_MEMORYTYPE_HOST
                                       : CU_MEMORYTYPE_DEVICE);
  };
  bool src_host = a.api == ArrayApi::HOST_TO_ARRAY, dst_host = a.api == ArrayApi::ARRAY_TO_HOST;
  g.setSrcMemoryType(type(a.src_array != nullptr, src_host));
  g.setDstMemoryType(type(a.dst_array != nullptr, dst_host));
  HostRegion in = linear(reinterpret_cast<const void*>(a.src), a.bytes);
  HostRegion out = linear(reinterpret_cast<const void*>(a.dst), a.bytes);
  Copy copy{Kind::ARRAY_INVOLVED, a.dst, a.src, a.bytes, async, stream, nullptr, nullptr};
  if (src_host) copy.from_host = &in;
  if (dst_host) copy.to_host = &out;
  record_copy(call, copy, &record, &captured);
}

void record_memset(CallScope& call, CUdeviceptr address, unsigned value, uint8_t element,
                   size_t width, size_t height, size_t pitch, bool async, CUstream stream) {
  CapturedNode captured;
  schema::Memset::Builder memset = nullptr;
  if (async && call.result() == CUDA_SUCCESS && capture_possible() &&
      captured_node(stream, call.per_thread_stream(), &captured)) {
    auto node =
        init_node_record(call, schema::GraphNode::Kind::MEMSET, captured.graph, captured.node);
    set_captured(node, captured);
    memset = node.initMemset();
  } else {
    memset = call.record().initMemset();
  }
  memset.setAddress(address);
  memset.setValue(value);
  memset.setElementSize(element);
  memset.setWidth(width);
  memset.setHeight(height);
  memset.setPitch(pitch);
  memset.setAsync(async);
  memset.setStream(handle_value(stream));
  call.commit();
}

}  // namespace

void fill_memcpy_node(const CUDA_MEMCPY3D* p, schema::Memcpy::Builder record, uint64_t graph,
                      uint64_t node) {
  HostRegion in, out;
  Copy copy = describe_3d(p, 3, false, nullptr, record, in, out);
  // One row (the usual 1-D copy node): the driver ignores the pitches, which applications leave
  // 0; the record gives the row's width so that the geometry is valid as any copy's.
  auto g = record.getGeometry();
  if (p->Height <= 1 && p->Depth <= 1) {
    if (p->srcY == 0 && p->srcZ == 0 && g.getSrcPitch() < p->WidthInBytes)
      g.setSrcPitch(p->srcXInBytes + p->WidthInBytes);
    if (p->dstY == 0 && p->dstZ == 0 && g.getDstPitch() < p->WidthInBytes)
      g.setDstPitch(p->dstXInBytes + p->WidthInBytes);
  }
  record.setKind(copy.kind);
  record.setDst(copy.dst);
  record.setSrc(copy.src);
  record.setSize(copy.size);
  // The bytes a host-to-device node reads when the graph runs: those of the moment it was added.
  if (copy.from_host != nullptr) set_blob(record.initPayload(), store(Session::current(), in));
  if (copy.to_host != nullptr && node != 0) note_dtoh_node(graph, node, out);
}

namespace hooks {

CUSNAP_POST_HOOK(cuMemcpyHtoD_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  HostRegion in = linear(srcHost, ByteCount);
  record_copy(call, {Kind::HOST_TO_DEVICE, dstDevice, handle_value(srcHost), ByteCount, false,
                     nullptr, &in, nullptr});
}

CUSNAP_POST_HOOK(cuMemcpyHtoDAsync_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
 CUstream hStream) {
  HostRegion in = linear(srcHost, ByteCount);
  record_copy(call, {Kind::HOST_TO_DEVICE, dstDevice, handle_value(srcHost), ByteCount, true,
                     hStream, &in, nullptr});
}

CUSNAP_POST_HOOK(cuMemcpyDtoH_v2)
(CallScope& call, CUresult, void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  HostRegion out = linear(dstHost, ByteCount);
  record_copy(call, {Kind::DEVICE_TO_HOST, handle_value(dstHost), srcDevice, ByteCount, false,
                     nullptr, nullptr, &out});
}

CUSNAP_POST_HOOK(cuMemcpyDtoHAsync_v2)
(CallScope& call, CUresult, void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
 CUstream hStream) {
  HostRegion out = linear(dstHost, ByteCount);
  record_copy(call, {Kind::DEVICE_TO_HOST, handle_value(dstHost), srcDevice, ByteCount, true,
                     hStream, nullptr, &out});
}

CUSNAP_POST_HOOK(cuMemcpyDtoD_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  record_copy(call, {Kind::DEVICE_TO_DEVICE, dstDevice, srcDevice, ByteCount, false, nullptr,
                     nullptr, nullptr});
}

CUSNAP_POST_HOOK(cuMemcpyDtoDAsync_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
 CUstream hStream) {
  record_copy(call, {Kind::DEVICE_TO_DEVICE, dstDevice, srcDevice, ByteCount, true, hStream,
                     nullptr, nullptr});
}

CUSNAP_POST_HOOK(cuMemcpy)
(CallScope& call, CUresult, CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  record_unified(call, dst, src, ByteCount, false, nullptr);
}

CUSNAP_POST_HOOK(cuMemcpyAsync)
(CallScope& call, CUresult, CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  record_unified(call, dst, src, ByteCount, true, hStream);
}

CUSNAP_POST_HOOK(cuMemcpyPeer)
(CallScope& call, CUresult, CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
 CUcontext srcContext, size_t ByteCount) {
  auto record = call.record().initMemcpy();
  record.setSrcContext(handle_value(srcContext));
  record.setDstContext(handle_value(dstContext));
  record_copy(call, {Kind::PEER, dstDevice, srcDevice, ByteCount, false, nullptr, nullptr, nullptr},
              &record);
}

CUSNAP_POST_HOOK(cuMemcpyPeerAsync)
(CallScope& call, CUresult, CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
 CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  auto record = call.record().initMemcpy();
  record.setSrcContext(handle_value(srcContext));
  record.setDstContext(handle_value(dstContext));
  record_copy(call, {Kind::PEER, dstDevice, srcDevice, ByteCount, true, hStream, nullptr, nullptr},
              &record);
}

CUSNAP_POST_HOOK(cuMemcpy2D_v2)(CallScope& call, CUresult, const CUDA_MEMCPY2D* pCopy) {
  record_2d(call, pCopy, false, nullptr);
}

CUSNAP_POST_HOOK(cuMemcpy2DUnaligned_v2)(CallScope& call, CUresult, const CUDA_MEMCPY2D* pCopy) {
  record_2d(call, pCopy, false, nullptr);
}

CUSNAP_POST_HOOK(cuMemcpy2DAsync_v2)
(CallScope& call, CUresult, const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  record_2d(call, pCopy, true, hStream);
}

CUSNAP_POST_HOOK(cuMemcpy3D_v2)(CallScope& call, CUresult, const CUDA_MEMCPY3D* pCopy) {
  record_3d(call, pCopy, false, nullptr, 3);
}

CUSNAP_POST_HOOK(cuMemcpy3DAsync_v2)
(CallScope& call, CUresult, const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  record_3d(call, pCopy, true, hStream, 3);
}

CUSNAP_POST_HOOK(cuMemcpyHtoA_v2)
(CallScope& call, CUresult, CUarray dstArray, size_t dstOffset, const void* srcHost,
 size_t ByteCount) {
  ArrayCopy1d a{ArrayApi::HOST_TO_ARRAY, dstArray, nullptr, dstOffset, 0, 0,
                handle_value(srcHost),   ByteCount};
  record_array_1d(call, a, false, nullptr);
}

CUSNAP_POST_HOOK(cuMemcpyHtoAAsync_v2)
(CallScope& call, CUresult, CUarray dstArray, size_t dstOffset, const void* srcHost,
 size_t ByteCount, CUstream hStream) {
  ArrayCopy1d a{ArrayApi::HOST_TO_ARRAY, dstArray, nullptr, dstOffset, 0, 0,
                handle_value(srcHost),   ByteCount};
  record_array_1d(call, a, true, hStream);
}

CUSNAP_POST_HOOK(cuMemcpyAtoH_v2)
(CallScope& call, CUresult, void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  ArrayCopy1d a{ArrayApi::ARRAY_TO_HOST, nullptr, srcArray, 0, srcOffset,
                handle_value(dstHost),   0,       ByteCount};
  record_array_1d(call, a, false, nullptr);
}

CUSNAP_POST_HOOK(cuMemcpyAtoHAsync_v2)
(CallScope& call, CUresult, void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
 CUstream hStream) {
  ArrayCopy1d a{ArrayApi::ARRAY_TO_HOST, nullptr, srcArray, 0, srcOffset,
                handle_value(dstHost),   0,       ByteCount};
  record_array_1d(call, a, true, hStream);
}

CUSNAP_POST_HOOK(cuMemcpyDtoA_v2)
(CallScope& call, CUresult, CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
 size_t ByteCount) {
  ArrayCopy1d a{
      ArrayApi::DEVICE_TO_ARRAY, dstArray, nullptr, dstOffset, 0, 0, srcDevice, ByteCount};
  record_array_1d(call, a, false, nullptr);
}

CUSNAP_POST_HOOK(cuMemcpyAtoD_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
 size_t ByteCount) {
  ArrayCopy1d a{
      ArrayApi::ARRAY_TO_DEVICE, nullptr, srcArray, 0, srcOffset, dstDevice, 0, ByteCount};
  record_array_1d(call, a, false, nullptr);
}

CUSNAP_POST_HOOK(cuMemcpyAtoA_v2)
(CallScope& call, CUresult, CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
 size_t ByteCount) {
  ArrayCopy1d a{
      ArrayApi::ARRAY_TO_ARRAY, dstArray, srcArray, dstOffset, srcOffset, 0, 0, ByteCount};
  record_array_1d(call, a, false, nullptr);
}

CUSNAP_POST_HOOK(cuMemcpy3DPeer)(CallScope& call, CUresult, const CUDA_MEMCPY3D_PEER* pCopy) {
  record_3d_peer(call, pCopy, false, nullptr);
}

CUSNAP_POST_HOOK(cuMemcpy3DPeerAsync)
(CallScope& call, CUresult, const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) {
  record_3d_peer(call, pCopy, true, hStream);
}

CUSNAP_POST_HOOK(cuMemsetD8_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  record_memset(call, dstDevice, uc, 1, N, 1, 0, false, nullptr);
}
CUSNAP_POST_HOOK(cuMemsetD16_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, unsigned short us, size_t N) {
  record_memset(call, dstDevice, us, 2, N, 1, 0, false, nullptr);
}
CUSNAP_POST_HOOK(cuMemsetD32_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  record_memset(call, dstDevice, ui, 4, N, 1, 0, false, nullptr);
}
CUSNAP_POST_HOOK(cuMemsetD8Async)
(CallScope& call, CUresult, CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  record_memset(call, dstDevice, uc, 1, N, 1, 0, true, hStream);
}
CUSNAP_POST_HOOK(cuMemsetD16Async)
(CallScope& call, CUresult, CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  record_memset(call, dstDevice, us, 2, N, 1, 0, true, hStream);
}
CUSNAP_POST_HOOK(cuMemsetD32Async)
(CallScope& call, CUresult, CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  record_memset(call, dstDevice, ui, 4, N, 1, 0, true, hStream);
}
CUSNAP_POST_HOOK(cuMemsetD2D8_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
 size_t Height) {
  record_memset(call, dstDevice, uc, 1, Width, Height, dstPitch, false, nullptr);
}
CUSNAP_POST_HOOK(cuMemsetD2D16_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
 size_t Height) {
  record_memset(call, dstDevice, us, 2, Width, Height, dstPitch, false, nullptr);
}
CUSNAP_POST_HOOK(cuMemsetD2D32_v2)
(CallScope& call, CUresult, CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
 size_t Height) {
  record_memset(call, dstDevice, ui, 4, Width, Height, dstPitch, false, nullptr);
}
CUSNAP_POST_HOOK(cuMemsetD2D8Async)
(CallScope& call, CUresult, CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
 size_t Height, CUstream hStream) {
  record_memset(call, dstDevice, uc, 1, Width, Height, dstPitch, true, hStream);
}
CUSNAP_POST_HOOK(cuMemsetD2D16Async)
(CallScope& call, CUresult, CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
 size_t Height, CUstream hStream) {
  record_memset(call, dstDevice, us, 2, Width, Height, dstPitch, true, hStream);
}
CUSNAP_POST_HOOK(cuMemsetD2D32Async)
(CallScope& call, CUresult, CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
 size_t Height, CUstream hStream) {
  record_memset(call, dstDevice, ui, 4, Width, Height, dstPitch, true, hStream);
}

}  // namespace hooks
}  // namespace cusnap::icpt
