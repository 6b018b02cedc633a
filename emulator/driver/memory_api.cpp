// Allocation entry points: device, pitched, pinned, registered, managed and stream-ordered
// memory, memory info and pointer attributes. (VMM: vmm.cpp; copies and sets: copy.cpp.)
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/graph.h"
#include "driver/memory.h"
#include "driver/mempool.h"
#include "driver/state.h"
#include "driver/stats.h"

namespace cusnap::emu::driver {

unsigned long long next_buffer_id() {
  static std::atomic<unsigned long long> next{1};
  return next++;
}

namespace {

uint64_t page_round(uint64_t size) {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

// Allocates fresh zero-filled memory and enters it in the table. A stream-ordered allocation
// names its pool, which is charged instead of the device directly (mempool.h).
CUresult allocate(Context* ctx, uint64_t size, AllocationKind kind, unsigned flags,
                  CUdeviceptr* out, MemPool* pool = nullptr, bool device_heap = false) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  bool device_memory = kind == AllocationKind::kDevice || kind == AllocationKind::kManaged;
  // The redzone is mapped with the allocation (so nothing else can be placed there) but is not
  // part of it, and is not charged against the emulated device memory. Mappings are page
  // aligned, which keeps cuMemAlloc's 256-byte alignment guarantee.
  if (size > UINT64_MAX - redzone_bytes() - 4096) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t charged = device_memory ? page_round(size) : 0;
  uint64_t mapped = page_round(size + redzone_bytes());
  if (pool != nullptr) {
    if (!pool_reserve(pool, charged)) return CUDA_ERROR_OUT_OF_MEMORY;
  } else if (device_memory && !allocations().charge(charged)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* p = map_anonymous(mapped);
  if (p == nullptr) {
    if (pool != nullptr) {
      pool_release(pool, charged);
    } else if (device_memory) {
      allocations().refund(charged);
    }
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.base = reinterpret_cast<uint64_t>(p);
  a.size = size;
  a.mapped_size = mapped;
  a.charged = charged;
  a.kind = kind;
  a.flags = flags;
  a.context = ctx->handle();
  a.buffer_id = next_buffer_id();
  a.counts_as_device_memory = device_memory;
  a.pool = pool;
  a.device_heap = device_heap;
  allocations().insert(a);
  note_allocation(kind, size);
  *out = a.base;
  return CUDA_SUCCESS;
}

CUresult release(uint64_t base, bool (*kind_ok)(AllocationKind), bool device_heap = false) {
  auto a = allocations().find(base);
  if (!a || a->base != base || !kind_ok(a->kind) || a->device_heap != device_heap)
    return CUDA_ERROR_INVALID_VALUE;
  allocations().erase(base);
  note_free(a->kind, a->size);
  if (a->mapped_size != 0) unmap_anonymous(reinterpret_cast<void*>(a->base), a->mapped_size);
  if (a->pool != nullptr) {
    pool_release(a->pool, a->charged);  // the pool keeps the bytes reserved (mempool.h)
  } else if (a->counts_as_device_memory) {
    allocations().refund(a->charged);
  }
  return CUDA_SUCCESS;
}

bool is_device_kind(AllocationKind k) {
  return k == AllocationKind::kDevice || k == AllocationKind::kManaged;
}
bool is_pinned_kind(AllocationKind k) { return k == AllocationKind::kHostPinned; }

// Real cuMemFree waits for the device; freeing under a running kernel would be a use-after-free.
void drain_current_context() {
  if (Context* ctx = current_context()) ctx->synchronize();
}

}  // namespace

CUresult free_device_allocation(uint64_t base) { return release(base, is_device_kind); }

CUresult allocate_device_heap(Context* ctx, uint64_t size, CUdeviceptr* out) {
  return allocate(ctx, size, AllocationKind::kDevice, 0, out, nullptr, true);
}

CUresult release_device_heap(uint64_t base) { return release(base, is_device_kind, true); }

}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;

CUSNAP_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return guarded("cuMemAlloc", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r = capture_check_unsafe_call("cuMemAlloc"); r != CUDA_SUCCESS) return r;
    if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return allocate(ctx, bytesize, AllocationKind::kDevice, 0, dptr);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch,
                                                  size_t WidthInBytes, size_t Height,
                                                  unsigned int ElementSizeBytes) {
  return guarded("cuMemAllocPitch", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r = capture_check_unsafe_call("cuMemAllocPitch"); r != CUDA_SUCCESS) return r;
    if (dptr == nullptr || pPitch == nullptr || WidthInBytes == 0 || Height == 0)
      return CUDA_ERROR_INVALID_VALUE;
    if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
      return CUDA_ERROR_INVALID_VALUE;
    constexpr size_t kPitchAlignment = 512;  // CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT
    size_t pitch = (WidthInBytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
    if (Height > SIZE_MAX / pitch) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = allocate(ctx, pitch * Height, AllocationKind::kDevice, 0, dptr);
    if (r == CUDA_SUCCESS) *pPitch = pitch;
    return r;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
  return guarded("cuMemFree", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r = capture_check_unsafe_call("cuMemFree"); r != CUDA_SUCCESS) return r;
    if (dptr == 0) return CUDA_SUCCESS;
    drain_current_context();
    bool graph_allocation = false;
    CUresult r = graph_memory_free(dptr, ctx, nullptr, &graph_allocation);
    if (graph_allocation) return r;
    return free_device_allocation(dptr);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t* free, size_t* total) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *total = device_config().total_memory;
  *free = *total - allocations().device_bytes_in_use();
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize,
                                                       CUdeviceptr dptr) {
  return guarded("cuMemGetAddressRange", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    auto a = allocations().find(dptr);
    if (!a || a->kind == AllocationKind::kHostRegistered) return CUDA_ERROR_NOT_FOUND;
    if (pbase != nullptr) *pbase = a->base;
    if (psize != nullptr) *psize = a->size;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return guarded("cuMemHostAlloc", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r = capture_check_unsafe_call("cuMemHostAlloc"); r != CUDA_SUCCESS) return r;
    constexpr unsigned kValid =
        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if (pp == nullptr || (Flags & ~kValid) != 0) return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p = 0;
    CUresult r = allocate(ctx, bytesize, AllocationKind::kHostPinned, Flags, &p);
    if (r == CUDA_SUCCESS) *pp = reinterpret_cast<void*>(p);
    return r;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return cuMemHostAlloc(pp, bytesize, 0);
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemFreeHost(void* p) {
  return guarded("cuMemFreeHost", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r = capture_check_unsafe_call("cuMemFreeHost"); r != CUDA_SUCCESS) return r;
    drain_current_context();
    return release(reinterpret_cast<uint64_t>(p), is_pinned_kind);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p,
                                                            unsigned int Flags) {
  return guarded("cuMemHostGetDevicePointer", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (pdptr == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    auto a = allocations().find(reinterpret_cast<uint64_t>(p));
    if (!a ||
        (a->kind != AllocationKind::kHostPinned && a->kind != AllocationKind::kHostRegistered)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    *pdptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing: the same address
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  return guarded("cuMemHostGetFlags", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    auto a = allocations().find(reinterpret_cast<uint64_t>(p));
    if (pFlags == nullptr || !a || a->kind != AllocationKind::kHostPinned)
      return CUDA_ERROR_INVALID_VALUE;
    *pFlags = a->flags;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  return guarded("cuMemHostRegister", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    constexpr unsigned kValid = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (p == nullptr || bytesize == 0 || (Flags & ~kValid) != 0) return CUDA_ERROR_INVALID_VALUE;
    uint64_t base = reinterpret_cast<uint64_t>(p);
    if (allocations().find(base) || allocations().find(base + bytesize - 1)) {
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    Allocation a;
    a.base = base;
    a.size = bytesize;
    a.kind = AllocationKind::kHostRegistered;
    a.flags = Flags;
    a.context = ctx->handle();
    a.buffer_id = next_buffer_id();
    a.device_writable = (Flags & CU_MEMHOSTREGISTER_READ_ONLY) == 0;
    a.counts_as_device_memory = false;
    allocations().insert(a);
    note_allocation(a.kind, a.size);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemHostUnregister(void* p) {
  return guarded("cuMemHostUnregister", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    auto a = allocations().find(reinterpret_cast<uint64_t>(p));
    if (!a || a->kind != AllocationKind::kHostRegistered ||
        a->base != reinterpret_cast<uint64_t>(p)) {
      return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    }
    drain_current_context();
    allocations().erase(a->base);
    note_free(a->kind, a->size);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize,
                                                 unsigned int flags) {
  return guarded("cuMemAllocManaged", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r = capture_check_unsafe_call("cuMemAllocManaged"); r != CUDA_SUCCESS) return r;
    if (dptr == nullptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return allocate(ctx, bytesize, AllocationKind::kManaged, flags, dptr);
  });
}

// Stream-ordered allocation from a pool (cuMemAllocAsync: the device's current pool): the memory
// exists from the call on (allocating early is always safe, so work on any stream may use it
// once the allocation is ordered before it); the free happens in stream order.
static CUresult mem_alloc_async(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool hPool,
                                bool from_pool, CUstream hStream, bool per_thread) {
  Context* ctx;
  Stream* stream;
  if (CUresult r = stream_argument(hStream, per_thread, &ctx, &stream); r != CUDA_SUCCESS) return r;
  MemPool* pool = from_pool ? pool_from_handle(hPool) : current_pool();
  if (dptr == nullptr || pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Under capture: a memory allocation node, allocated at each launch of the graph (graph.h).
  bool captured = false;
  CUresult made = CUDA_SUCCESS;
  CUresult r = capture_node(
      stream, false,
      [&] {
        CUmemPoolProps props = pool_properties(pool);
        std::unique_ptr<GraphNode> node;
        made = graph_alloc_spec(props, nullptr, 0, bytesize, dptr, &node);
        return node;  // null when refused: the capture then refuses the node
      },
      &captured);
  if (made != CUDA_SUCCESS) return made;
  if (r != CUDA_SUCCESS || captured) return r;
  return allocate(ctx, bytesize, AllocationKind::kDevice, 0, dptr, pool);
}

static CUresult mem_free_async(CUdeviceptr dptr, CUstream hStream, bool per_thread) {
  Context* ctx;
  Stream* stream;
  if (CUresult r = stream_argument(hStream, per_thread, &ctx, &stream); r != CUDA_SUCCESS) return r;
  if (is_graph_allocation(dptr)) {
    // Under capture a free node; otherwise freed in stream order.
    std::unique_ptr<GraphNode> node;
    if (CUresult r = graph_free_spec(dptr, &node); r != CUDA_SUCCESS) return r;
    bool captured = false;
    CUresult r = capture_node(
        stream, false, [&] { return std::move(node); }, &captured);
    if (r != CUDA_SUCCESS || captured) return r;
    bool handled = false;
    return graph_memory_free(dptr, ctx, stream, &handled);
  }
  auto a = allocations().find(dptr);
  if (!a || a->base != dptr || a->kind != AllocationKind::kDevice) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = capture_refuse(
          stream, "a stream-ordered free of memory not allocated by a graph, during capture",
          CUDA_ERROR_NOT_SUPPORTED);
      r != CUDA_SUCCESS) {
    return r;
  }
  ctx->submit(stream, [dptr] {
    free_device_allocation(dptr);
    return uint64_t{0};
  });
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize,
                                               CUstream hStream) {
  return guarded("cuMemAllocAsync", [&] {
    return mem_alloc_async(dptr, bytesize, nullptr, false, hStream, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                    CUstream hStream) {
  return guarded("cuMemAllocAsync_ptsz", [&] {
    return mem_alloc_async(dptr, bytesize, nullptr, false, hStream, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize,
                                                       CUmemoryPool pool, CUstream hStream) {
  return guarded("cuMemAllocFromPoolAsync", [&] {
    return mem_alloc_async(dptr, bytesize, pool, true, hStream, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                            CUmemoryPool pool, CUstream hStream) {
  return guarded("cuMemAllocFromPoolAsync_ptsz", [&] {
    return mem_alloc_async(dptr, bytesize, pool, true, hStream, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return guarded("cuMemFreeAsync", [&] { return mem_free_async(dptr, hStream, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return guarded("cuMemFreeAsync_ptsz",
                 [&] { return mem_free_async(dptr, hStream, kPerThreadDefault); });
}

namespace {

template <class T>
void put(void* data, T value) {
  std::memcpy(data, &value, sizeof value);
}

// Writes one attribute of the allocation containing `ptr` (or of no allocation) into `data`.
// Booleans are written as one byte: the documented type is bool.
CUresult pointer_attribute(CUpointer_attribute attribute, CUdeviceptr ptr,
                           const std::optional<Allocation>& a, void* data) {
  bool host_side =
      a && (a->kind == AllocationKind::kHostPinned || a->kind == AllocationKind::kHostRegistered);
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      put(data, a ? a->context : CUcontext{});
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      put(data, static_cast<unsigned>(!a          ? 0
                                      : host_side ? CU_MEMORYTYPE_HOST
                                                  : CU_MEMORYTYPE_DEVICE));
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      put(data, a ? ptr : CUdeviceptr{});
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      put(data, a && (host_side || is_managed(*a)) ? reinterpret_cast<void*>(ptr) : nullptr);
      return a && (host_side || is_managed(*a)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      put(data, static_cast<bool>(a.has_value()));
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      put(data, a ? a->buffer_id : 0ULL);
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      put(data, static_cast<bool>(a && is_managed(*a)));
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      put(data, a ? 0 : -1);
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      put(data, false);
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      put(data, a ? a->base : CUdeviceptr{});
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      put(data, static_cast<size_t>(a ? a->size : 0));
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      put(data, static_cast<bool>(a.has_value()));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      put(data, 0ULL);
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      put(data,
          static_cast<unsigned>(!a                   ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE
                                : a->device_writable ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
                                                     : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ));
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      put(data, a && a->pool != nullptr ? pool_handle(a->pool) : CUmemoryPool{});
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      put(data, a ? a->buffer_id : 0ULL);
      return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                                     CUdeviceptr ptr) {
  return guarded("cuPointerGetAttribute", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return pointer_attribute(attribute, ptr, allocations().find(ptr), data);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                                      CUpointer_attribute* attributes, void** data,
                                                      CUdeviceptr ptr) {
  return guarded("cuPointerGetAttributes", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto a = allocations().find(ptr);
    // Unlike the single query, an unknown pointer is not an error here: every value reads as
    // "not a CUDA allocation".
    for (unsigned i = 0; i < numAttributes; ++i) {
      if (data[i] == nullptr) continue;
      CUresult r = pointer_attribute(attributes[i], ptr, a, data[i]);
      if (r != CUDA_SUCCESS && a) return r;
    }
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuPointerSetAttribute(const void* value,
                                                     CUpointer_attribute attribute,
                                                     CUdeviceptr ptr) {
  return guarded("cuPointerSetAttribute", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS || value == nullptr)
      return CUDA_ERROR_INVALID_VALUE;
    return allocations().find(ptr) ? CUDA_SUCCESS
                                   : CUDA_ERROR_INVALID_VALUE;  // always synchronous here
  });
}
