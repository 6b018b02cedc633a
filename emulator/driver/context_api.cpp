// Context entry points: primary context, created contexts, the current-context stack, limits.
#include "driver/api.h"
#include "driver/context.h"
#include "driver/graph.h"
#include "driver/state.h"

using namespace cusnap::emu::driver;

namespace {

std::mutex g_primary_mutex;
unsigned g_primary_refcount = 0;
unsigned g_primary_flags = 0;

constexpr unsigned kValidContextFlags = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST |
                                        CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_COREDUMP_ENABLE |
                                        CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS;

CUresult create_context(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (pctx == nullptr || (flags & ~kValidContextFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* ctx = new Context(flags, false);
  ctx->usage_count = 1;
  push_context(ctx);
  *pctx = ctx->handle();
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  return guarded("cuDevicePrimaryCtxRetain", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(g_primary_mutex);
    Context* ctx = primary_context(true);
    if (g_primary_refcount++ == 0) ctx->set_flags(g_primary_flags);
    *pctx = ctx->handle();
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return guarded("cuDevicePrimaryCtxRelease", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(g_primary_mutex);
    if (g_primary_refcount == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--g_primary_refcount == 0) {
      // The real driver tears the context down here; the emulator keeps the object (its handle
      // may still sit in some thread's stack) but drains its work and forgets its errors.
      Context* ctx = primary_context(false);
      ctx->synchronize();
      ctx->reset_errors();
    }
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return guarded("cuDevicePrimaryCtxReset", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(g_primary_mutex);
    if (Context* ctx = primary_context(false)) {
      ctx->synchronize();
      ctx->reset_errors();
    }
    g_primary_refcount = 0;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  return guarded("cuDevicePrimaryCtxSetFlags", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    if ((flags & ~kValidContextFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(g_primary_mutex);
    g_primary_flags = flags;
    if (Context* ctx = primary_context(false)) ctx->set_flags(flags);
    return CUDA_SUCCESS;
  });
}

// The pre-CUDA 11.0 ABIs. Release and Reset behave as the _v2 versions; the old SetFlags refused
// to change the flags of an active primary context (CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE), which the
// _v2 version allows.
CUSNAP_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  return guarded("cuDevicePrimaryCtxRelease", [&] { return cuDevicePrimaryCtxRelease_v2(dev); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) {
  return guarded("cuDevicePrimaryCtxReset", [&] { return cuDevicePrimaryCtxReset_v2(dev); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return guarded("cuDevicePrimaryCtxSetFlags", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    {
      std::lock_guard lock(g_primary_mutex);
      if (g_primary_refcount > 0) return CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
    }
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags,
                                                          int* active) {
  return guarded("cuDevicePrimaryCtxGetState", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(g_primary_mutex);
    *flags = g_primary_flags;
    *active = g_primary_refcount > 0 ? 1 : 0;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return guarded("cuCtxCreate", [&] { return create_context(pctx, flags, dev); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray,
                                              int numParams, unsigned int flags, CUdevice dev) {
  return guarded("cuCtxCreate_v3", [&] {
    if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    if (numParams > 0) return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    return create_context(pctx, flags, dev);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams,
                                              unsigned int flags, CUdevice dev) {
  return guarded("cuCtxCreate_v4", [&] {
    if (ctxCreateParams != nullptr &&
        (ctxCreateParams->numExecAffinityParams > 0 || ctxCreateParams->cigParams != nullptr)) {
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    return create_context(pctx, flags, dev);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  return guarded("cuCtxDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Context* context = context_from_handle(ctx);
    if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    // The primary context, and a green context's (cuGreenCtxDestroy destroys that one).
    if (context->primary() || green_context_handle(context) != nullptr)
      return CUDA_ERROR_INVALID_CONTEXT;
    if (current_context() == context) pop_context();
    // Other threads that have it current get CONTEXT_IS_DESTROYED from then on (require_context).
    destroy_handle(context, HandleKind::kContext);
    return CUDA_SUCCESS;
  });
}

// The pre-CUDA 3.2 / 4.0 ABIs. cuCtxCreate is cuCtxCreate_v2. The old cuCtxDestroy and
// cuCtxPopCurrent required a usage count of 1 (the attach/detach count: a context attached
// again with cuCtxAttach could not be destroyed or popped), CUDA_ERROR_INVALID_CONTEXT otherwise;
// cuCtxPushCurrent is cuCtxPushCurrent_v2 (the old "must be floating" rule is not checked).
CUSNAP_EXPORT CUresult CUDAAPI cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return guarded("cuCtxCreate", [&] { return create_context(pctx, flags, dev); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) {
  return guarded("cuCtxDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Context* context = context_from_handle(ctx);
    if (context == nullptr || context->usage_count.load() != 1) return CUDA_ERROR_INVALID_CONTEXT;
    return cuCtxDestroy_v2(ctx);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  return guarded("cuCtxPushCurrent", [&] { return cuCtxPushCurrent_v2(ctx); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) {
  return guarded("cuCtxPopCurrent", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Context* top = current_context();
    if (top == nullptr || top->usage_count.load() != 1) return CUDA_ERROR_INVALID_CONTEXT;
    return cuCtxPopCurrent_v2(pctx);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxAttach(CUcontext* pctx, unsigned int flags) {
  return guarded("cuCtxAttach", [&] {
    Context* ctx;
    if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
    if (pctx == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    ctx->usage_count.fetch_add(1);
    *pctx = ctx->handle();
    return CUDA_SUCCESS;
  });
}

// Decrements the usage count; a created context whose count reaches 0 is destroyed as by
// cuCtxDestroy. The primary context only counts: its lifetime is retain/release.
CUSNAP_EXPORT CUresult CUDAAPI cuCtxDetach(CUcontext ctx) {
  return guarded("cuCtxDetach", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Context* context = context_from_handle(ctx);
    // Documented: the context must be current to the calling thread.
    if (context == nullptr || current_context() != context) return CUDA_ERROR_INVALID_CONTEXT;
    unsigned count = context->usage_count.load();
    do {
      if (count == 0) return CUDA_ERROR_INVALID_CONTEXT;  // more detaches than attaches
    } while (!context->usage_count.compare_exchange_weak(count, count - 1));
    if (count == 1 && !context->primary()) {
      pop_context();
      destroy_handle(context, HandleKind::kContext);
    }
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
  return guarded("cuCtxPushCurrent", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Context* context = context_from_handle(ctx);
    if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    push_context(context);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* pctx) {
  return guarded("cuCtxPopCurrent", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Context* top = pop_context();
    if (top == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (pctx != nullptr) *pctx = reinterpret_cast<CUcontext>(top);  // top may be destroyed
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  return guarded("cuCtxSetCurrent", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Context* context = nullptr;
    if (ctx != nullptr && (context = context_from_handle(ctx)) == nullptr)
      return CUDA_ERROR_INVALID_CONTEXT;
    set_current_context(context);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // A context destroyed while current to this thread stays current (as documented for
  // cuCtxDestroy); the handle is only handed back.
  *pctx = reinterpret_cast<CUcontext>(current_context_handle());
  return CUDA_SUCCESS;
}

// Peer access: every context is on the one device, which cannot be its own peer
// (cuDeviceCanAccessPeer answers 0), so after the documented context checks enabling is
// CUDA_ERROR_PEER_ACCESS_UNSUPPORTED and disabling finds it never enabled.
CUSNAP_EXPORT CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  Context* ctx;
  if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
  Context* peer = context_from_handle(peerContext);
  if (peer == nullptr || peer == ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext) {
  Context* ctx;
  if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
  if (context_from_handle(peerContext) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  Context* ctx;
  if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetFlags(unsigned int* flags) {
  Context* ctx;
  if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = ctx->flags();
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxSetFlags(unsigned int flags) {
  Context* ctx;
  if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
  if ((flags & ~kValidContextFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  ctx->set_flags(flags);
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long* ctxId) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Context* context = nullptr;
  if (ctx == nullptr) {
    if (CUresult r = require_context_any(&context); r != CUDA_SUCCESS) return r;
  } else if ((context = context_from_handle(ctx)) == nullptr) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (ctxId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctxId = context->id();
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Context* context = nullptr;
  if (ctx == nullptr) {
    if (CUresult r = require_context_any(&context); r != CUDA_SUCCESS) return r;
  } else if ((context = context_from_handle(ctx)) == nullptr) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = 3020;  // the context API version every CUDA >= 3.2 context reports
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
  return guarded("cuCtxSynchronize", [&] {
    Context* ctx;
    if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r = capture_check_unsafe_call("cuCtxSynchronize"); r != CUDA_SUCCESS) return r;
    return ctx->synchronize();
  });
}

namespace {

// The context a `CUcontext` argument names: NULL is the current one.
CUresult context_argument(CUcontext handle, Context** out) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (handle == nullptr) return require_context_any(out);
  *out = context_from_handle(handle);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext hCtx) {
  return guarded("cuCtxSynchronize_v2", [&] {
    Context* ctx;
    if (CUresult r = context_argument(hCtx, &ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r = capture_check_unsafe_call("cuCtxSynchronize"); r != CUDA_SUCCESS) return r;
    // "If the specified context is the primary context, green contexts that have been created
    // will also be synchronized."
    if (ctx->primary()) {
      for (Context* g : green_contexts_of_primary()) g->synchronize();
    }
    return ctx->synchronize();
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice* device, CUcontext hCtx) {
  return guarded("cuCtxGetDevice_v2", [&] {
    Context* ctx;
    if (CUresult r = context_argument(hCtx, &ctx); r != CUDA_SUCCESS) return r;
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent) {
  return guarded("cuCtxRecordEvent", [&] {
    Context* ctx;
    if (CUresult r = context_argument(hCtx, &ctx); r != CUDA_SUCCESS) return r;
    auto* event = handle_cast<Event>(hEvent, HandleKind::kEvent);
    // "hEvent and hCtx must be from the same CUDA context"; for a green context, "from the same
    // primary context" (the primary one or any green one).
    auto of_primary = [](const Context* c) {
      return c != nullptr && (c->primary() || green_context_handle(c) != nullptr);
    };
    const bool green = green_context_handle(ctx) != nullptr;
    if (event == nullptr ||
        (event->context != ctx && !(green && of_primary(ctx) && of_primary(event->context)))) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
    std::vector<Context*> covered = {ctx};
    if (ctx->primary()) {
      for (Context* g : green_contexts_of_primary()) covered.push_back(g);
    }
    for (Context* c : covered) {
      if (CUresult r = capture_refuse_context(c, nullptr, "cuCtxRecordEvent"); r != CUDA_SUCCESS)
        return r;
    }
    // The primary context's record covers its green contexts' work too.
    std::vector<Dependency> greens;
    for (size_t i = 1; i < covered.size(); ++i) greens.push_back(covered[i]->record_all());
    Dependency point = ctx->record_all(std::move(greens));
    capture_forget_event(event);  // recorded outside any capture now
    std::lock_guard lock(event->mutex);
    event->recorded = true;
    event->point = std::move(point);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent) {
  return guarded("cuCtxWaitEvent", [&] {
    Context* ctx;
    if (CUresult r = context_argument(hCtx, &ctx); r != CUDA_SUCCESS) return r;
    auto* event = handle_cast<Event>(hEvent, HandleKind::kEvent);
    if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;  // may be of another context
    std::vector<Context*> covered = {ctx};
    if (ctx->primary()) {
      for (Context* g : green_contexts_of_primary()) covered.push_back(g);
    }
    for (Context* c : covered) {
      if (CUresult r = capture_refuse_context(c, event, "cuCtxWaitEvent"); r != CUDA_SUCCESS)
        return r;
    }
    Dependency point;
    {
      std::lock_guard lock(event->mutex);
      if (!event->recorded) return CUDA_SUCCESS;  // as cuStreamWaitEvent: nothing to wait for
      point = event->point;
    }
    // The primary context's green contexts wait too.
    for (Context* c : covered) c->wait_for_all(point);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (pvalue == nullptr || static_cast<unsigned>(limit) > CU_LIMIT_PERSISTING_L2_CACHE_SIZE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pvalue = ctx->limit(limit);
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (limit == CU_LIMIT_STACK_SIZE && value > 1024 * 1024) return CUDA_ERROR_INVALID_VALUE;
  if (limit == CU_LIMIT_PERSISTING_L2_CACHE_SIZE && value != 0) return CUDA_ERROR_INVALID_VALUE;
  // The heap is sized at the first device-side malloc (CUDA: "before launching any kernel that
  // uses malloc() or free()"; after that the call fails with INVALID_VALUE).
  if (limit == CU_LIMIT_MALLOC_HEAP_SIZE && ctx->device_heap()->in_use())
    return CUDA_ERROR_INVALID_VALUE;
  return ctx->set_limit(limit, value) ? CUDA_SUCCESS : CUDA_ERROR_UNSUPPORTED_LIMIT;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache* pconfig) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (pconfig == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pconfig = ctx->cache_config;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (static_cast<unsigned>(config) > CU_FUNC_CACHE_PREFER_EQUAL) return CUDA_ERROR_INVALID_VALUE;
  ctx->cache_config = config;  // a hint without effect on the emulator
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetSharedMemConfig(CUsharedconfig* pConfig) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (pConfig == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pConfig = ctx->shared_config;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxSetSharedMemConfig(CUsharedconfig config) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (static_cast<unsigned>(config) > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
    return CUDA_ERROR_INVALID_VALUE;
  ctx->shared_config = config;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetStreamPriorityRange(int* leastPriority,
                                                           int* greatestPriority) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (leastPriority != nullptr) *leastPriority = 0;
  if (greatestPriority != nullptr) *greatestPriority = -5;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxResetPersistingL2Cache(void) {
  Context* ctx;
  return require_context(&ctx);
}
