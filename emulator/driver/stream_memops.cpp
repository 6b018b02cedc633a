// Stream memory operations: cuStreamWaitValue32/64, cuStreamWriteValue32/64, cuStreamBatchMemOp
// (every version; the _v2 entry points are the current ABI, the v1 names have the same
// semantics and parameter layout).
//
// Each operation is one operation of the stream, run on its worker thread: a wait polls the
// memory word until its condition holds, so the stream's later work does not start before
// another stream, a kernel or a host thread has written the value, as on a GPU. Device memory is
// host memory here, so there are no remote writes to flush and no caches a barrier must order:
// the flush flag and operation and the memory barrier are accepted and need no work beyond the
// sequentially consistent accesses used for the value. On a capturing stream they become batch
// memory operation nodes (graph.cpp), which run the same operations.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/graph.h"
#include "driver/memory.h"
#include "driver/state.h"

using namespace cusnap::emu::driver;

namespace {

constexpr unsigned kWaitTypeMask = 0xf;  // GEQ, EQ, AND, NOR
constexpr unsigned kMaxBatch = 256;      // "Must be less than 256"

// One checked operation of a batch, ready to run on the stream's worker.
struct MemOp {
  CUstreamBatchMemOpType type;
  uint64_t address;
  uint64_t value;
  unsigned flags;
};

bool is_wait(CUstreamBatchMemOpType t) {
  return t == CU_STREAM_MEM_OP_WAIT_VALUE_32 || t == CU_STREAM_MEM_OP_WAIT_VALUE_64;
}
unsigned width_of(CUstreamBatchMemOpType t) {
  return t == CU_STREAM_MEM_OP_WAIT_VALUE_64 || t == CU_STREAM_MEM_OP_WRITE_VALUE_64 ? 8 : 4;
}

// The address must be device-accessible memory that is not managed (documented: "None of the
// operations accepts pointers to managed memory buffers"), aligned to the value's size.
CUresult check_address(uint64_t address, unsigned width, bool write) {
  if (address == 0 || address % width != 0) return CUDA_ERROR_INVALID_VALUE;
  std::optional<Allocation> a = allocations().find(address);
  if (!a || is_managed(*a) || !allocations().accessible(address, width, write))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult check_op(const MemOp& op) {
  switch (op.type) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
      if ((op.flags & ~(kWaitTypeMask | CU_STREAM_WAIT_VALUE_FLUSH)) != 0 ||
          (op.flags & kWaitTypeMask) > CU_STREAM_WAIT_VALUE_NOR) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      return check_address(op.address, width_of(op.type), false);
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
      if ((op.flags & ~static_cast<unsigned>(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
      return check_address(op.address, width_of(op.type), true);
    case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
      return op.flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;  // "Must be 0"
    case CU_STREAM_MEM_OP_BARRIER:
      return op.flags == CU_STREAM_MEMORY_BARRIER_TYPE_SYS ||
                     op.flags == CU_STREAM_MEMORY_BARRIER_TYPE_GPU
                 ? CUDA_SUCCESS
                 : CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

uint64_t load(uint64_t address, unsigned width) {
  if (width == 4) return std::atomic_ref(*reinterpret_cast<uint32_t*>(address)).load();
  return std::atomic_ref(*reinterpret_cast<uint64_t*>(address)).load();
}

// The documented conditions; GEQ is cyclic: (int32_t)(*addr - value) >= 0 (int64_t for 64 bits).
bool satisfied(uint64_t current, uint64_t value, unsigned flags, unsigned width) {
  const uint64_t mask = width == 4 ? 0xffffffffull : ~0ull;
  current &= mask;
  value &= mask;
  switch (flags & kWaitTypeMask) {
    case CU_STREAM_WAIT_VALUE_GEQ:
      return width == 4 ? static_cast<int32_t>(static_cast<uint32_t>(current - value)) >= 0
                        : static_cast<int64_t>(current - value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
      return current == value;
    case CU_STREAM_WAIT_VALUE_AND:
      return (current & value) != 0;
    default:  // CU_STREAM_WAIT_VALUE_NOR
      return (~(current | value) & mask) != 0;
  }
}

// Runs on the stream's worker. A wait whose memory is freed while it polls can never be
// satisfied: it ends with an illegal address, the sticky error a GPU's faulting wait leaves.
void run_op(Context* ctx, const MemOp& op) {
  const unsigned width = width_of(op.type);
  if (op.type == CU_STREAM_MEM_OP_WRITE_VALUE_32 || op.type == CU_STREAM_MEM_OP_WRITE_VALUE_64) {
    if (!allocations().accessible(op.address, width, true)) {
      log(LogLevel::kError, "cuStreamWriteValue: 0x%llx is no longer device memory",
          static_cast<unsigned long long>(op.address));
      ctx->set_sticky_error(CUDA_ERROR_ILLEGAL_ADDRESS);
      return;
    }
    if (width == 4) {
      std::atomic_ref(*reinterpret_cast<uint32_t*>(op.address))
          .store(static_cast<uint32_t>(op.value));
    } else {
      std::atomic_ref(*reinterpret_cast<uint64_t*>(op.address)).store(op.value);
    }
    return;
  }
  if (!is_wait(op.type)) {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // flush / barrier
    return;
  }
  // Polls with a growing pause (at most 1 ms): the writer is another thread, never this one.
  auto pause = std::chrono::microseconds(0);
  for (;;) {
    if (!allocations().accessible(op.address, width, false)) {
      log(LogLevel::kError, "cuStreamWaitValue: 0x%llx was freed while a stream waited on it",
          static_cast<unsigned long long>(op.address));
      ctx->set_sticky_error(CUDA_ERROR_ILLEGAL_ADDRESS);
      return;
    }
    if (satisfied(load(op.address, width), op.value, op.flags, width)) return;
    if (pause.count() == 0) {
      std::this_thread::yield();
      pause = std::chrono::microseconds(10);
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
}

// The operations of a parameter array, checked; the array is kept as the graph node's copy.
CUresult to_mem_ops(const CUstreamBatchMemOpParams* params, size_t count, std::vector<MemOp>* out) {
  out->clear();
  out->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& p = params[i];
    MemOp op{p.operation, 0, 0, 0};
    switch (p.operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        op.address = p.waitValue.address;
        op.value =
            p.operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? p.waitValue.value : p.waitValue.value64;
        op.flags = p.waitValue.flags;
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        op.address = p.writeValue.address;
        op.value = p.operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? p.writeValue.value
                                                                  : p.writeValue.value64;
        op.flags = p.writeValue.flags;
        break;
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        op.flags = p.flushRemoteWrites.flags;
        break;
      case CU_STREAM_MEM_OP_BARRIER:
        op.flags = p.memoryBarrier.flags;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (CUresult r = check_op(op); r != CUDA_SUCCESS) return r;
    out->push_back(op);
  }
  return CUDA_SUCCESS;
}

Stream::Work ops_work(Context* ctx, std::vector<MemOp> ops) {
  return [ctx, ops = std::move(ops)] {
    for (const MemOp& op : ops) run_op(ctx, op);
    return uint64_t{0};
  };
}

CUresult submit_ops(CUstream h, std::vector<CUstreamBatchMemOpParams> params, bool per_thread) {
  Context* ctx;
  Stream* s;
  if (CUresult r = stream_argument(h, per_thread, &ctx, &s); r != CUDA_SUCCESS) return r;
  std::vector<MemOp> ops;
  if (CUresult r = to_mem_ops(params.data(), params.size(), &ops); r != CUDA_SUCCESS) return r;
  // On a capturing stream: a batch memory operation node.
  bool captured = false;
  auto make = [&] {
    auto node = std::make_unique<GraphNode>();
    node->type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
    node->mem_ops = params;
    node->mem_ops_ctx = ctx->handle();
    return node;
  };
  if (CUresult r = capture_node(s, false, make, &captured); r != CUDA_SUCCESS || captured) return r;
  ctx->submit(s, ops_work(ctx, std::move(ops)));
  return CUDA_SUCCESS;
}

CUresult single(CUstream h, CUstreamBatchMemOpType type, CUdeviceptr addr, uint64_t value,
                unsigned flags, bool per_thread) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  CUstreamBatchMemOpParams p;
  std::memset(&p, 0, sizeof p);
  p.operation = type;
  if (type == CU_STREAM_MEM_OP_WAIT_VALUE_32 || type == CU_STREAM_MEM_OP_WAIT_VALUE_64) {
    p.waitValue.address = addr;
    p.waitValue.value64 = type == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? uint32_t(value) : value;
    p.waitValue.flags = flags;
  } else {
    p.writeValue.address = addr;
    p.writeValue.value64 = type == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? uint32_t(value) : value;
    p.writeValue.flags = flags;
  }
  return submit_ops(h, {p}, per_thread);
}

CUresult batch(CUstream h, unsigned count, const CUstreamBatchMemOpParams* params, unsigned flags,
               bool per_thread) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (flags != 0 || count >= kMaxBatch || (count > 0 && params == nullptr))
    return CUDA_ERROR_INVALID_VALUE;
  return submit_ops(h, std::vector<CUstreamBatchMemOpParams>(params, params + count), per_thread);
}

}  // namespace

namespace cusnap::emu::driver {

CUresult check_mem_op_node(const std::vector<CUstreamBatchMemOpParams>& params, unsigned flags) {
  if (params.empty() || params.size() >= kMaxBatch || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::vector<MemOp> ops;
  return to_mem_ops(params.data(), params.size(), &ops);
}

CUresult mem_op_node_work(Context* ctx, const std::vector<CUstreamBatchMemOpParams>& params,
                          Stream::Work* out) {
  std::vector<MemOp> ops;
  if (CUresult r = to_mem_ops(params.data(), params.size(), &ops); r != CUDA_SUCCESS) return r;
  *out = ops_work(ctx, std::move(ops));
  return CUDA_SUCCESS;
}

}  // namespace cusnap::emu::driver

CUSNAP_EXPORT CUresult CUDAAPI cuStreamWaitValue32(CUstream stream, CUdeviceptr addr,
                                                   cuuint32_t value, unsigned int flags) {
  return guarded("cuStreamWaitValue32", [&] {
    return single(stream, CU_STREAM_MEM_OP_WAIT_VALUE_32, addr, value, flags, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWaitValue32_ptsz(CUstream stream, CUdeviceptr addr,
                                                        cuuint32_t value, unsigned int flags) {
  return guarded("cuStreamWaitValue32_ptsz", [&] {
    return single(stream, CU_STREAM_MEM_OP_WAIT_VALUE_32, addr, value, flags, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr,
                                                      cuuint32_t value, unsigned int flags) {
  return guarded("cuStreamWaitValue32_v2", [&] {
    return single(stream, CU_STREAM_MEM_OP_WAIT_VALUE_32, addr, value, flags, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWaitValue32_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                                           cuuint32_t value, unsigned int flags) {
  return guarded("cuStreamWaitValue32_v2_ptsz", [&] {
    return single(stream, CU_STREAM_MEM_OP_WAIT_VALUE_32, addr, value, flags, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWaitValue64(CUstream stream, CUdeviceptr addr,
                                                   cuuint64_t value, unsigned int flags) {
  return guarded("cuStreamWaitValue64", [&] {
    return single(stream, CU_STREAM_MEM_OP_WAIT_VALUE_64, addr, value, flags, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWaitValue64_ptsz(CUstream stream, CUdeviceptr addr,
                                                        cuuint64_t value, unsigned int flags) {
  return guarded("cuStreamWaitValue64_ptsz", [&] {
    return single(stream, CU_STREAM_MEM_OP_WAIT_VALUE_64, addr, value, flags, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWaitValue64_v2(CUstream stream, CUdeviceptr addr,
                                                      cuuint64_t value, unsigned int flags) {
  return guarded("cuStreamWaitValue64_v2", [&] {
    return single(stream, CU_STREAM_MEM_OP_WAIT_VALUE_64, addr, value, flags, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWaitValue64_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                                           cuuint64_t value, unsigned int flags) {
  return guarded("cuStreamWaitValue64_v2_ptsz", [&] {
    return single(stream, CU_STREAM_MEM_OP_WAIT_VALUE_64, addr, value, flags, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWriteValue32(CUstream stream, CUdeviceptr addr,
                                                    cuuint32_t value, unsigned int flags) {
  return guarded("cuStreamWriteValue32", [&] {
    return single(stream, CU_STREAM_MEM_OP_WRITE_VALUE_32, addr, value, flags, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWriteValue32_ptsz(CUstream stream, CUdeviceptr addr,
                                                         cuuint32_t value, unsigned int flags) {
  return guarded("cuStreamWriteValue32_ptsz", [&] {
    return single(stream, CU_STREAM_MEM_OP_WRITE_VALUE_32, addr, value, flags, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr,
                                                       cuuint32_t value, unsigned int flags) {
  return guarded("cuStreamWriteValue32_v2", [&] {
    return single(stream, CU_STREAM_MEM_OP_WRITE_VALUE_32, addr, value, flags, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                                            cuuint32_t value, unsigned int flags) {
  return guarded("cuStreamWriteValue32_v2_ptsz", [&] {
    return single(stream, CU_STREAM_MEM_OP_WRITE_VALUE_32, addr, value, flags, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWriteValue64(CUstream stream, CUdeviceptr addr,
                                                    cuuint64_t value, unsigned int flags) {
  return guarded("cuStreamWriteValue64", [&] {
    return single(stream, CU_STREAM_MEM_OP_WRITE_VALUE_64, addr, value, flags, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWriteValue64_ptsz(CUstream stream, CUdeviceptr addr,
                                                         cuuint64_t value, unsigned int flags) {
  return guarded("cuStreamWriteValue64_ptsz", [&] {
    return single(stream, CU_STREAM_MEM_OP_WRITE_VALUE_64, addr, value, flags, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWriteValue64_v2(CUstream stream, CUdeviceptr addr,
                                                       cuuint64_t value, unsigned int flags) {
  return guarded("cuStreamWriteValue64_v2", [&] {
    return single(stream, CU_STREAM_MEM_OP_WRITE_VALUE_64, addr, value, flags, kLegacyDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamWriteValue64_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                                            cuuint64_t value, unsigned int flags) {
  return guarded("cuStreamWriteValue64_v2_ptsz", [&] {
    return single(stream, CU_STREAM_MEM_OP_WRITE_VALUE_64, addr, value, flags, kPerThreadDefault);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamBatchMemOp(CUstream stream, unsigned int count,
                                                  CUstreamBatchMemOpParams* paramArray,
                                                  unsigned int flags) {
  return guarded("cuStreamBatchMemOp",
                 [&] { return batch(stream, count, paramArray, flags, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamBatchMemOp_ptsz(CUstream stream, unsigned int count,
                                                       CUstreamBatchMemOpParams* paramArray,
                                                       unsigned int flags) {
  return guarded("cuStreamBatchMemOp_ptsz",
                 [&] { return batch(stream, count, paramArray, flags, kPerThreadDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamBatchMemOp_v2(CUstream stream, unsigned int count,
                                                     CUstreamBatchMemOpParams* paramArray,
                                                     unsigned int flags) {
  return guarded("cuStreamBatchMemOp_v2",
                 [&] { return batch(stream, count, paramArray, flags, kLegacyDefault); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuStreamBatchMemOp_v2_ptsz(CUstream stream, unsigned int count,
                                                          CUstreamBatchMemOpParams* paramArray,
                                                          unsigned int flags) {
  return guarded("cuStreamBatchMemOp_v2_ptsz",
                 [&] { return batch(stream, count, paramArray, flags, kPerThreadDefault); });
}
