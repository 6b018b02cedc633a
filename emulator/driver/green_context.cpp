// Device resources, SM partitions and green contexts; execution affinity.
//
// The emulated device has one resource, its SMs (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT of
// them, with no cluster hierarchy: partitions of any size from 1 SM, aligned to 1). A split
// hands out partitions as counts; a descriptor holds the SMs of the resources it was made from;
// a green context is a context of its own over such a partition (it retains the primary context
// for its lifetime, as documented). Its converted CUcontext (cuCtxFromGreenCtx) is that context:
// its streams, events and cuCtxRecordEvent / cuCtxWaitEvent cover its own work only, while the
// primary context's record, wait and synchronisation include its green contexts. The partition
// changes no result: blocks run on the emulator's threads whatever the SM count (limits derived
// from the SM count, such as the largest cooperative grid, stay the whole device's).
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/device.h"
#include "driver/graph.h"
#include "driver/state.h"

using namespace cusnap::emu::driver;

namespace {

// What the emulator keeps in a CUdevResource's private bytes: where it came from, so that
// cuDevResourceGenerateDesc can require resources of one split.
struct ResourceTag {
  uint32_t magic;
  uint32_t device;
  uint64_t split;  // 0: the device's (or a context's) whole resource
};
constexpr uint32_t kTagMagic = 0x63536d52;  // "cSmR"
static_assert(sizeof(ResourceTag) <= sizeof(CUdevResource{}._internal_padding));

std::atomic<uint64_t> g_next_split{1};
std::atomic<unsigned long long> g_next_green_id{1};

struct ResourceDesc {
  unsigned sm_count = 0;
};

struct GreenContext {
  Context* context = nullptr;  // the converted context; owned
  unsigned sm_count = 0;
  unsigned long long id = 0;
};

std::mutex g_green_mutex;
std::vector<GreenContext*> g_greens;  // live ones, guarded by g_green_mutex

unsigned device_sm_count() {
  int n = 0;
  device_attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &n);
  return static_cast<unsigned>(n);
}

void make_resource(CUdevResource* out, unsigned sm_count, uint64_t split) {
  std::memset(out, 0, sizeof *out);
  out->type = CU_DEV_RESOURCE_TYPE_SM;
  out->sm.smCount = sm_count;
  out->sm.minSmPartitionSize = 1;
  out->sm.smCoscheduledAlignment = 1;
  const ResourceTag tag{kTagMagic, 0, split};
  std::memcpy(out->_internal_padding, &tag, sizeof tag);
}

bool tag_of(const CUdevResource& r, ResourceTag* out) {
  std::memcpy(out, r._internal_padding, sizeof *out);
  return out->magic == kTagMagic;
}

GreenContext* green_from(CUgreenCtx h) {
  return handle_cast<GreenContext>(h, HandleKind::kGreenContext);
}

// The green context a context was converted from, or null.
GreenContext* green_of(const Context* ctx) {
  std::lock_guard lock(g_green_mutex);
  for (GreenContext* g : g_greens) {
    if (g->context == ctx) return g;
  }
  return nullptr;
}

CUresult answer_resource(unsigned sm_count, CUdevResource* out, CUdevResourceType type) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  make_resource(out, sm_count, 0);
  return CUDA_SUCCESS;
}

}  // namespace

namespace cusnap::emu::driver {

std::vector<Context*> green_contexts_of_primary() {
  std::lock_guard lock(g_green_mutex);
  std::vector<Context*> out;
  for (GreenContext* g : g_greens) out.push_back(g->context);
  return out;
}

CUgreenCtx green_context_handle(const Context* ctx) {
  return reinterpret_cast<CUgreenCtx>(green_of(ctx));
}

}  // namespace cusnap::emu::driver

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetDevResource(CUdevice device, CUdevResource* resource,
                                                      CUdevResourceType type) {
  return guarded("cuDeviceGetDevResource", [&] {
    if (CUresult r = check_device(device); r != CUDA_SUCCESS) return r;
    return answer_resource(device_sm_count(), resource, type);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetDevResource(CUcontext hCtx, CUdevResource* resource,
                                                   CUdevResourceType type) {
  return guarded("cuCtxGetDevResource", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Context* ctx = context_from_handle(hCtx);
    if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    GreenContext* g = green_of(ctx);
    return answer_resource(g != nullptr ? g->sm_count : device_sm_count(), resource, type);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource* resource,
                                                        CUdevResourceType type) {
  return guarded("cuGreenCtxGetDevResource", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    GreenContext* g = green_from(hCtx);
    if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    return answer_resource(g->sm_count, resource, type);
  });
}

// Groups of max(minCount, 1) SMs, as many as fit (at most *nbGroups when result is given); the
// SMs left over go to `remaining`.
CUSNAP_EXPORT CUresult CUDAAPI cuDevSmResourceSplitByCount(
    CUdevResource* result, unsigned int* nbGroups, const CUdevResource* input,
    CUdevResource* remaining, unsigned int useFlags, unsigned int minCount) {
  return guarded("cuDevSmResourceSplitByCount", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (nbGroups == nullptr || input == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (input->type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    constexpr unsigned kKnownFlags = CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING |
                                     CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE;
    ResourceTag tag;
    if (!tag_of(*input, &tag) || (useFlags & ~kKnownFlags) != 0 || minCount > input->sm.smCount)
      return CUDA_ERROR_INVALID_VALUE;
    // "The output results cannot be split again without first creating a descriptor and a green
    // context with that descriptor."
    if (tag.split != 0) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    const unsigned size = std::max(minCount, 1u);
    unsigned groups = input->sm.smCount / size;
    if (result != nullptr) groups = std::min(groups, *nbGroups);
    const uint64_t split = g_next_split++;
    for (unsigned i = 0; result != nullptr && i < groups; ++i)
      make_resource(&result[i], size, split);
    if (remaining != nullptr) make_resource(remaining, input->sm.smCount - groups * size, split);
    *nbGroups = groups;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDevResourceGenerateDesc(CUdevResourceDesc* phDesc,
                                                         CUdevResource* resources,
                                                         unsigned int nbResources) {
  return guarded("cuDevResourceGenerateDesc", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (phDesc == nullptr || resources == nullptr || nbResources == 0)
      return CUDA_ERROR_INVALID_VALUE;
    unsigned total = 0;
    ResourceTag first{};
    for (unsigned i = 0; i < nbResources; ++i) {
      if (resources[i].type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
      ResourceTag tag;
      if (!tag_of(resources[i], &tag)) return CUDA_ERROR_INVALID_VALUE;
      if (i == 0) first = tag;
      // Several SM resources must come from one split ("the same split API instance").
      if (nbResources > 1 && (tag.split == 0 || tag.split != first.split))
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
      total += resources[i].sm.smCount;
    }
    if (total == 0) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    auto* desc = new ResourceDesc{total};
    register_handle(desc, HandleKind::kResourceDesc);
    *phDesc = reinterpret_cast<CUdevResourceDesc>(desc);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGreenCtxCreate(CUgreenCtx* phCtx, CUdevResourceDesc desc,
                                                CUdevice dev, unsigned int flags) {
  return guarded("cuGreenCtxCreate", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    auto* d = handle_cast<ResourceDesc>(desc, HandleKind::kResourceDesc);
    // CU_GREEN_CTX_DEFAULT_STREAM is required (and the only flag).
    if (phCtx == nullptr || d == nullptr || flags != CU_GREEN_CTX_DEFAULT_STREAM)
      return CUDA_ERROR_INVALID_VALUE;
    CUcontext primary = nullptr;
    if (CUresult r = cuDevicePrimaryCtxRetain(&primary, dev); r != CUDA_SUCCESS) return r;
    auto* g = new GreenContext;
    g->context = new Context(context_from_handle(primary)->flags(), false);
    g->sm_count = d->sm_count;
    g->id = g_next_green_id++;
    register_handle(g, HandleKind::kGreenContext);
    {
      std::lock_guard lock(g_green_mutex);
      g_greens.push_back(g);
    }
    *phCtx = reinterpret_cast<CUgreenCtx>(g);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGreenCtxDestroy(CUgreenCtx hCtx) {
  return guarded("cuGreenCtxDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    GreenContext* g = green_from(hCtx);
    if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    {
      std::lock_guard lock(g_green_mutex);
      std::erase(g_greens, g);
    }
    // Its streams go with it (the driver leaves them answering CONTEXT_IS_DESTROYED; here they
    // answer INVALID_HANDLE, as streams of any destroyed context do).
    destroy_handle(g->context, HandleKind::kContext);
    destroy_handle(g, HandleKind::kGreenContext);
    return cuDevicePrimaryCtxRelease_v2(0);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxFromGreenCtx(CUcontext* pContext, CUgreenCtx hCtx) {
  return guarded("cuCtxFromGreenCtx", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    GreenContext* g = green_from(hCtx);
    if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (pContext == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pContext = g->context->handle();
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGreenCtxRecordEvent(CUgreenCtx hCtx, CUevent hEvent) {
  return guarded("cuGreenCtxRecordEvent", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    GreenContext* g = green_from(hCtx);
    if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    return cuCtxRecordEvent(g->context->handle(), hEvent);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGreenCtxWaitEvent(CUgreenCtx hCtx, CUevent hEvent) {
  return guarded("cuGreenCtxWaitEvent", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    GreenContext* g = green_from(hCtx);
    if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    return cuCtxWaitEvent(g->context->handle(), hEvent);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGreenCtxStreamCreate(CUstream* phStream, CUgreenCtx greenCtx,
                                                      unsigned int flags, int priority) {
  return guarded("cuGreenCtxStreamCreate", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    GreenContext* g = green_from(greenCtx);
    if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    // "CU_STREAM_NON_BLOCKING must be specified."
    if (phStream == nullptr || flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = g->context->sticky_error(); r != CUDA_SUCCESS) return r;
    *phStream =
        reinterpret_cast<CUstream>(g->context->create_stream(flags, std::clamp(priority, -5, 0)));
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGreenCtxGetId(CUgreenCtx greenCtx,
                                               unsigned long long* greenCtxId) {
  return guarded("cuGreenCtxGetId", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    GreenContext* g = nullptr;
    if (greenCtx == nullptr) {
      // NULL: the green context the current context was converted from.
      Context* ctx = current_context();
      if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
      g = green_of(ctx);
    } else {
      g = green_from(greenCtx);
    }
    if (g == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (greenCtxId == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *greenCtxId = g->id;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuStreamGetGreenCtx(CUstream hStream, CUgreenCtx* phCtx) {
  return guarded("cuStreamGetGreenCtx", [&] {
    Context* ctx;
    Stream* s;
    CUresult r = stream_argument(hStream, kLegacyDefault, &ctx, &s);
    if (s == nullptr) return r;
    if (phCtx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *phCtx = reinterpret_cast<CUgreenCtx>(green_of(s->context()));
    return CUDA_SUCCESS;
  });
}

// Execution affinity (contexts limited to some SMs, cuCtxCreate_v3/v4) is not supported, as
// cuCtxCreate_v3 answers: the support query says 0 and the context query refuses.
CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetExecAffinitySupport(int* pi, CUexecAffinityType type,
                                                              CUdevice dev) {
  return guarded("cuDeviceGetExecAffinitySupport", [&] {
    if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
    if (pi == nullptr || type != CU_EXEC_AFFINITY_TYPE_SM_COUNT) return CUDA_ERROR_INVALID_VALUE;
    *pi = 0;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuCtxGetExecAffinity(CUexecAffinityParam* pExecAffinity,
                                                    CUexecAffinityType type) {
  return guarded("cuCtxGetExecAffinity", [&] {
    Context* ctx;
    if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
    if (pExecAffinity == nullptr || type != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
      return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
  });
}
