// Allocations of every kind (device, pitched, stream-ordered, managed, pinned, host-mapped,
// registered host memory, VMM create/reserve/map/access) with address, size and flags, and the
// matching frees (with the size the allocation had, from a small table kept here).
#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "graphs.h"
#include "hooks.h"
#include "session.h"
#include "snapshot.h"

namespace cusnap::icpt {
namespace {

using AllocKind = schema::MemAlloc::Kind;
using FreeKind = schema::MemFree::Kind;

// Sizes of live allocations, so that a free record can say how much it released.
class SizeTable {
 public:
  void put(uint64_t address, uint64_t size) {
    std::lock_guard lock(mutex_);
    sizes_[address] = size;
  }
  uint64_t take(uint64_t address) {
    std::lock_guard lock(mutex_);
    auto it = sizes_.find(address);
    if (it == sizes_.end()) return 0;
    uint64_t size = it->second;
    sizes_.erase(it);
    return size;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<uint64_t, uint64_t> sizes_;
};

SizeTable& sizes() {
  static SizeTable* table = new SizeTable();
  return *table;
}

schema::MemAlloc::Builder begin_alloc(CallScope& call, AllocKind kind, uint64_t address,
                                      uint64_t size) {
  auto alloc = call.record().initMemAlloc();
  alloc.setKind(kind);
  alloc.setSize(size);
  if (call.result() == CUDA_SUCCESS) {
    alloc.setAddress(address);
    if (address != 0 && kind != AllocKind::VMM_MAP && kind != AllocKind::VMM_SET_ACCESS)
      sizes().put(address, size);
  }
  return alloc;
}

// Commits an allocation of device-reachable memory, then (snapshots on) adds it to the snapshot
// table: after its record, so that no snapshot covers a range whose memAlloc comes later.
// The device address kernels reach host memory at (cuMemHostGetDevicePointer), 0 when the driver
// gives none (memory not mapped). A replay recreates the memory there or rewrites pointers to it.
uint64_t host_device_pointer(uint64_t host) {
  CUdeviceptr device = 0;
  if (auto f = CUSNAP_REAL(cuMemHostGetDevicePointer_v2);
      host != 0 && f && f(&device, reinterpret_cast<void*>(host), 0) == CUDA_SUCCESS) {
    return device;
  }
  return 0;
}

void commit_device_alloc(CallScope& call, uint64_t address, uint64_t size) {
  call.commit();
  if (call.result() == CUDA_SUCCESS && snapshots_enabled())
    track_range(address, size, RangeKind::kAllocation);
}

// Host memory the device can reach (snapshots on): its device address from the real driver;
// memory it gives none for is not reachable by a kernel and is not covered.
void track_host_memory(CallScope& call, uint64_t host, uint64_t size) {
  if (call.result() != CUDA_SUCCESS || host == 0 || !snapshots_enabled()) return;
  CUdeviceptr device = 0;
  if (auto f = CUSNAP_REAL(cuMemHostGetDevicePointer_v2);
      f && f(&device, reinterpret_cast<void*>(host), 0) == CUDA_SUCCESS) {
    track_host_range(device, host, size);
  }
}

void record_free(CallScope& call, FreeKind kind, uint64_t address, uint64_t size = 0,
                 CUstream stream = nullptr, uint64_t handle = 0) {
  uint64_t known = address != 0 ? sizes().take(address) : 0;
  auto free = call.record().initMemFree();
  free.setKind(kind);
  free.setAddress(address);
  free.setSize(size != 0 ? size : known);
  free.setStream(handle_value(stream));
  free.setHandle(handle);
  call.commit();
}

template <typename T>
uint64_t out_value(CUresult result, T* pointer) {
  return result == CUDA_SUCCESS && pointer != nullptr ? static_cast<uint64_t>(*pointer) : 0;
}

// A stream-ordered allocation or free on a capturing stream is no allocation now: the driver made
// it a memory node of the capture's graph, allocated and freed by each launch. Recorded as that
// node (graphNode, captured), not as memAlloc/memFree; such memory is not in the snapshot table.
bool record_captured_memory_node(CallScope& call, CUstream stream, schema::GraphNode::Kind kind,
                                 uint64_t address, uint64_t size) {
  CapturedNode captured;
  if (call.result() != CUDA_SUCCESS || !capture_possible() ||
      !captured_node(stream, call.per_thread_stream(), &captured)) {
    return false;
  }
  auto node = init_node_record(call, kind, captured.graph, captured.node);
  set_captured(node, captured);
  node.setAddress(address);
  node.setSize(size);
  call.commit();
  return true;
}
uint64_t out_pointer(CUresult result, void** pointer) {
  return result == CUDA_SUCCESS && pointer != nullptr ? handle_value(*pointer) : 0;
}

}  // namespace

namespace hooks {

CUSNAP_POST_HOOK(cuMemAlloc_v2)
(CallScope& call, CUresult result, CUdeviceptr* dptr, size_t bytesize) {
  begin_alloc(call, AllocKind::DEVICE, out_value(result, dptr), bytesize);
  commit_device_alloc(call, out_value(result, dptr), bytesize);
}

CUSNAP_POST_HOOK(cuMemAllocPitch_v2)
(CallScope& call, CUresult result, CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
 size_t Height, unsigned int ElementSizeBytes) {
  uint64_t pitch = out_value(result, pPitch);
  auto alloc = begin_alloc(call, AllocKind::PITCH, out_value(result, dptr), pitch * Height);
  alloc.setPitch(pitch);
  alloc.setWidthBytes(WidthInBytes);
  alloc.setHeight(Height);
  alloc.setElementSize(ElementSizeBytes);
  commit_device_alloc(call, out_value(result, dptr), pitch * Height);
}

CUSNAP_POST_HOOK(cuMemAllocAsync)
(CallScope& call, CUresult result, CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  if (record_captured_memory_node(call, hStream, schema::GraphNode::Kind::MEM_ALLOC,
                                  out_value(result, dptr), bytesize)) {
    return;
  }
  begin_alloc(call, AllocKind::ASYNC, out_value(result, dptr), bytesize)
      .setStream(handle_value(hStream));
  commit_device_alloc(call, out_value(result, dptr), bytesize);
}

CUSNAP_POST_HOOK(cuMemAllocFromPoolAsync)
(CallScope& call, CUresult result, CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
 CUstream hStream) {
  if (record_captured_memory_node(call, hStream, schema::GraphNode::Kind::MEM_ALLOC,
                                  out_value(result, dptr), bytesize)) {
    return;
  }
  auto alloc = begin_alloc(call, AllocKind::FROM_POOL, out_value(result, dptr), bytesize);
  alloc.setPool(handle_value(pool));
  alloc.setStream(handle_value(hStream));
  commit_device_alloc(call, out_value(result, dptr), bytesize);
}

CUSNAP_POST_HOOK(cuMemAllocManaged)
(CallScope& call, CUresult result, CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  begin_alloc(call, AllocKind::MANAGED, out_value(result, dptr), bytesize).setFlags(flags);
  commit_device_alloc(call, out_value(result, dptr), bytesize);
}

CUSNAP_POST_HOOK(cuMemAllocHost_v2)(CallScope& call, CUresult result, void** pp, size_t bytesize) {
  uint64_t host = out_pointer(result, pp);
  auto alloc = begin_alloc(call, AllocKind::HOST, host, bytesize);
  alloc.setHostPointer(host);
  alloc.setDevicePointer(host_device_pointer(host));
  call.commit();
  track_host_memory(call, out_pointer(result, pp), bytesize);
}

CUSNAP_POST_HOOK(cuMemHostAlloc)
(CallScope& call, CUresult result, void** pp, size_t bytesize, unsigned int Flags) {
  uint64_t host = out_pointer(result, pp);
  auto alloc = begin_alloc(call, AllocKind::HOST_ALLOC, host, bytesize);
  alloc.setFlags(Flags);
  alloc.setHostPointer(host);
  // Kernels reach pinned memory through its device address: always with DEVICEMAP, and with
  // unified addressing for the other flags too (the driver answers when it is mapped).
  uint64_t device = host_device_pointer(host);
  alloc.setDevicePointer(device);
  if (device != 0 && (Flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0) alloc.setAddress(device);
  call.commit();
  track_host_memory(call, host, bytesize);
}

CUSNAP_POST_HOOK(cuMemHostRegister_v2)
(CallScope& call, CUresult result, void* p, size_t bytesize, unsigned int Flags) {
  auto alloc = begin_alloc(call, AllocKind::HOST_REGISTER, handle_value(p), bytesize);
  alloc.setFlags(Flags);
  alloc.setHostPointer(handle_value(p));
  if (result == CUDA_SUCCESS) alloc.setDevicePointer(host_device_pointer(handle_value(p)));
  call.commit();
  track_host_memory(call, handle_value(p), bytesize);
}

CUSNAP_POST_HOOK(cuMemCreate)
(CallScope& call, CUresult result, CUmemGenericAllocationHandle* handle, size_t size,
 const CUmemAllocationProp* prop, unsigned long long flags) {
  auto alloc = call.record().initMemAlloc();
  alloc.setKind(AllocKind::VMM_CREATE);
  alloc.setSize(size);
  alloc.setFlags(flags);
  alloc.setHandle(out_value(result, handle));
  if (prop != nullptr) {
    alloc.setAllocationType(static_cast<int32_t>(prop->type));
    alloc.setHandleTypes(static_cast<uint64_t>(prop->requestedHandleTypes));
    alloc.setLocationType(static_cast<int32_t>(prop->location.type));
    alloc.setLocationId(prop->location.id);
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuMemAddressReserve)
(CallScope& call, CUresult result, CUdeviceptr* ptr, size_t size, size_t alignment,
 CUdeviceptr addr, unsigned long long flags) {
  auto alloc = begin_alloc(call, AllocKind::VMM_RESERVE, out_value(result, ptr), size);
  alloc.setAlignment(alignment);
  alloc.setHostPointer(
      addr);  // the requested address hint (a replay asks for the captured address)
  alloc.setFlags(flags);
  call.commit();
}

CUSNAP_POST_HOOK(cuMemMap)
(CallScope& call, CUresult, CUdeviceptr ptr, size_t size, size_t offset,
 CUmemGenericAllocationHandle handle, unsigned long long flags) {
  auto alloc = call.record().initMemAlloc();
  alloc.setKind(AllocKind::VMM_MAP);
  alloc.setAddress(ptr);
  alloc.setSize(size);
  alloc.setOffset(offset);
  alloc.setHandle(handle);
  alloc.setFlags(flags);
  call.commit();
}

CUSNAP_POST_HOOK(cuMemSetAccess)
(CallScope& call, CUresult, CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
 size_t count) {
  auto alloc = call.record().initMemAlloc();
  alloc.setKind(AllocKind::VMM_SET_ACCESS);
  alloc.setAddress(ptr);
  alloc.setSize(size);
  // Every descriptor in order; the scalar fields repeat the first one for schema-1 readers.
  constexpr size_t kMaxDescriptors = 1u << 16;  // far beyond any device count; bounds a bad `count`
  if (desc != nullptr && count > 0) {
    alloc.setLocationType(static_cast<int32_t>(desc[0].location.type));
    alloc.setLocationId(desc[0].location.id);
    alloc.setAccessFlags(static_cast<uint64_t>(desc[0].flags));
    auto list =
        alloc.initAccessDescriptors(static_cast<unsigned>(std::min(count, kMaxDescriptors)));
    for (unsigned i = 0; i < list.size(); ++i) {
      list[i].setLocationType(static_cast<int32_t>(desc[i].location.type));
      list[i].setLocationId(desc[i].location.id);
      list[i].setFlags(static_cast<uint64_t>(desc[i].flags));
    }
  }
  call.commit();
  // Mapped and now accessible: a kernel can reach it (added after its record, as above).
  if (call.result() == CUDA_SUCCESS && snapshots_enabled()) track_range(ptr, size, RangeKind::kVmm);
}

// Snapshots (snapshot.h): a range leaves the table before the real free, which runs while the
// table's lock is held, so that no snapshot reads memory being released.
CUSNAP_PRE_HOOK(cuMemFree_v2)(CallScope&, CUdeviceptr dptr) {
  if (snapshots_enabled()) release_begin(Release::kRange, dptr);
}

CUSNAP_PRE_HOOK(cuMemFreeAsync)(CallScope&, CUdeviceptr dptr, CUstream) {
  if (snapshots_enabled()) release_begin(Release::kRange, dptr);
}

CUSNAP_PRE_HOOK(cuMemUnmap)(CallScope&, CUdeviceptr ptr, size_t size) {
  if (snapshots_enabled()) release_begin(Release::kWithin, ptr, size);
}

CUSNAP_PRE_HOOK(cuMemAddressFree)(CallScope&, CUdeviceptr ptr, size_t size) {
  if (snapshots_enabled()) release_begin(Release::kWithin, ptr, size);
}

CUSNAP_POST_HOOK(cuMemFree_v2)(CallScope& call, CUresult, CUdeviceptr dptr) {
  if (snapshots_enabled()) release_end();
  record_free(call, FreeKind::DEVICE, dptr);
}

CUSNAP_POST_HOOK(cuMemFreeAsync)(CallScope& call, CUresult, CUdeviceptr dptr, CUstream hStream) {
  if (snapshots_enabled()) release_end();
  if (record_captured_memory_node(call, hStream, schema::GraphNode::Kind::MEM_FREE, dptr, 0))
    return;
  record_free(call, FreeKind::ASYNC, dptr, 0, hStream);
}

CUSNAP_PRE_HOOK(cuMemFreeHost)(CallScope&, void* p) {
  if (snapshots_enabled()) release_begin(Release::kHost, handle_value(p));
}

CUSNAP_PRE_HOOK(cuMemHostUnregister)(CallScope&, void* p) {
  if (snapshots_enabled()) release_begin(Release::kHost, handle_value(p));
}

CUSNAP_POST_HOOK(cuMemFreeHost)(CallScope& call, CUresult, void* p) {
  if (snapshots_enabled()) release_end();
  record_free(call, FreeKind::HOST, handle_value(p));
}

CUSNAP_POST_HOOK(cuMemHostUnregister)(CallScope& call, CUresult, void* p) {
  if (snapshots_enabled()) release_end();
  record_free(call, FreeKind::HOST_UNREGISTER, handle_value(p));
}

CUSNAP_POST_HOOK(cuMemUnmap)(CallScope& call, CUresult, CUdeviceptr ptr, size_t size) {
  if (snapshots_enabled()) release_end();
  auto free = call.record().initMemFree();
  free.setKind(FreeKind::VMM_UNMAP);
  free.setAddress(ptr);
  free.setSize(size);
  call.commit();
}

CUSNAP_POST_HOOK(cuMemRelease)(CallScope& call, CUresult, CUmemGenericAllocationHandle handle) {
  record_free(call, FreeKind::VMM_RELEASE, 0, 0, nullptr, handle);
}

CUSNAP_POST_HOOK(cuMemAddressFree)(CallScope& call, CUresult, CUdeviceptr ptr, size_t size) {
  if (snapshots_enabled()) release_end();
  record_free(call, FreeKind::VMM_ADDRESS_FREE, ptr, size);
}

}  // namespace hooks
}  // namespace cusnap::icpt
