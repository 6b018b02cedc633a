// Every entry point that takes a handle survives stale, destroyed and garbage handles and answers
// with the driver's error code: streams, events, contexts, modules, functions/kernels, libraries,
// VMM allocation handles and device pointers.
#include <cudaTypedefs.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_helpers.h"
#include "test_kernels.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

// `bad_store(p)`: *p = 1 (a launch with p = 16 poisons the context with ILLEGAL_ADDRESS);
// `nop(p)`: does nothing; `g`: a module variable.
const char* kHandlesPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .global .align 4 .u32 g;
.visible .entry bad_store(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
.visible .entry nop(.param .u64 p)
{
  ret;
}
)";

template <class Pfn>
Pfn proc(const char* name, int version) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  REQUIRE(cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                           &status) == CUDA_SUCCESS);
  REQUIRE(fn != nullptr);
  return reinterpret_cast<Pfn>(fn);
}

// Leaves the stack below the caller full of non-zero garbage, so that an entry point reading an
// uninitialised local handle pointer dereferences garbage (how the cuStreamSynchronize crash
// showed up) instead of happening to find a null or a still-valid pointer there.
__attribute__((noinline)) void scribble_stack() {
  volatile unsigned char junk[16384];
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = static_cast<unsigned char>(0x41 + (i & 7));
}

// A heap block that was freed: a typical stale pointer an application may hold.
void* freed_heap_pointer() {
  auto* p = new char[512];
  std::memset(p, 0x5a, 512);
  volatile uintptr_t address = reinterpret_cast<uintptr_t>(p);  // kept as a number, never used
  delete[] p;
  return reinterpret_cast<void*>(address);
}

struct Garbage {
  const char* what;
  void* value;
};

std::vector<Garbage> garbage_values() {
  return {{"0x1234", reinterpret_cast<void*>(uintptr_t{0x1234})},
          {"freed heap pointer", freed_heap_pointer()},
          {"all ones", reinterpret_cast<void*>(~uintptr_t{0} - 7)}};
}

}  // namespace

TEST_CASE("cuStreamSynchronize after a sticky launch error returns the error, never crashes",
          "[handles]") {
  primary_context();
  CUcontext ctx = nullptr;
  REQUIRE_CU(cuCtxCreate(&ctx, nullptr, 0, 0));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kHandlesPtx));
  CUfunction bad = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&bad, module, "bad_store"));
  CUstream user = nullptr;
  REQUIRE_CU(cuStreamCreate(&user, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p = 16;
  void* params[] = {&p};
  REQUIRE_CU(cuLaunchKernel(bad, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
  CHECK(cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS);

  auto sync_ptsz = proc<PFN_cuStreamSynchronize_v7000_ptsz>("cuStreamSynchronize", 7000);
  auto priority_ptsz = proc<PFN_cuStreamGetPriority_v7000_ptsz>("cuStreamGetPriority", 7000);
  for (int i = 0; i < 4; ++i) {
    scribble_stack();
    CHECK(cuStreamSynchronize(nullptr) == CUDA_ERROR_ILLEGAL_ADDRESS);
    scribble_stack();
    CHECK(cuStreamSynchronize(CU_STREAM_LEGACY) == CUDA_ERROR_ILLEGAL_ADDRESS);
    scribble_stack();
    CHECK(cuStreamSynchronize(CU_STREAM_PER_THREAD) == CUDA_ERROR_ILLEGAL_ADDRESS);
    scribble_stack();
    CHECK(sync_ptsz(nullptr) == CUDA_ERROR_ILLEGAL_ADDRESS);
    scribble_stack();
    CHECK(cuStreamSynchronize(user) == CUDA_ERROR_ILLEGAL_ADDRESS);
    // Queries on the streams of a poisoned context still answer.
    int priority = 1;
    scribble_stack();
    CHECK(cuStreamGetPriority(nullptr, &priority) == CUDA_SUCCESS);
    CHECK(priority == 0);
    scribble_stack();
    CHECK(priority_ptsz(nullptr, &priority) == CUDA_SUCCESS);
    unsigned flags = 0;
    scribble_stack();
    CHECK(cuStreamGetFlags(user, &flags) == CUDA_SUCCESS);
    CHECK(flags == CU_STREAM_NON_BLOCKING);
    scribble_stack();
    CHECK(cuStreamQuery(nullptr) == CUDA_ERROR_ILLEGAL_ADDRESS);
  }
  CHECK(cuStreamDestroy(user) == CUDA_SUCCESS);
  REQUIRE_CU(cuCtxDestroy(ctx));
}

TEST_CASE("entry points answer destroyed and garbage handles with the driver's error codes",
          "[handles]") {
  CUcontext primary = primary_context();
  CUcontext ctx = nullptr;
  REQUIRE_CU(cuCtxCreate(&ctx, nullptr, 0, 0));

  // Live objects to compare with, then one of each kind destroyed.
  CUstream live_stream = nullptr, dead_stream = nullptr;
  REQUIRE_CU(cuStreamCreate(&live_stream, 0));
  REQUIRE_CU(cuStreamCreate(&dead_stream, 0));
  CUevent live_event = nullptr, dead_event = nullptr;
  REQUIRE_CU(cuEventCreate(&live_event, 0));
  REQUIRE_CU(cuEventCreate(&dead_event, 0));
  REQUIRE_CU(cuEventRecord(live_event, live_stream));
  CUmodule live_module = nullptr, dead_module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&live_module, kHandlesPtx));
  REQUIRE_CU(cuModuleLoadData(&dead_module, kHandlesPtx));
  CUfunction live_fn = nullptr, dead_fn = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&live_fn, live_module, "nop"));
  REQUIRE_CU(cuModuleGetFunction(&dead_fn, dead_module, "nop"));
  CUlibrary dead_library = nullptr;
  REQUIRE_CU(
      cuLibraryLoadData(&dead_library, kHandlesPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel dead_kernel = nullptr;
  REQUIRE_CU(cuLibraryGetKernel(&dead_kernel, dead_library, "nop"));
  CUcontext dead_ctx = nullptr;
  REQUIRE_CU(cuCtxCreate(&dead_ctx, nullptr, 0, 0));
  CUstream dead_ctx_stream = nullptr;  // dies with its context
  REQUIRE_CU(cuStreamCreate(&dead_ctx_stream, 0));
  REQUIRE_CU(cuCtxDestroy(dead_ctx));  // pops it: `ctx` is current again
  CUdeviceptr dead_ptr = 0, live_ptr = 0;
  REQUIRE_CU(cuMemAlloc(&dead_ptr, 4096));
  REQUIRE_CU(cuMemAlloc(&live_ptr, 4096));
  void* dead_host = nullptr;
  REQUIRE_CU(cuMemAllocHost(&dead_host, 4096));

  REQUIRE_CU(cuStreamDestroy(dead_stream));
  REQUIRE_CU(cuEventDestroy(dead_event));
  REQUIRE_CU(cuModuleUnload(dead_module));
  REQUIRE_CU(cuLibraryUnload(dead_library));
  REQUIRE_CU(cuMemFree(dead_ptr));
  REQUIRE_CU(cuMemFreeHost(dead_host));
  CUcontext current = nullptr;
  REQUIRE_CU(cuCtxGetCurrent(&current));
  REQUIRE(current == ctx);

  struct Bad {
    std::string what;
    void* value;
  };
  std::vector<Bad> streams = {{"destroyed stream", dead_stream},
                              {"stream of a destroyed context", dead_ctx_stream},
                              {"an event used as a stream", live_event}};
  std::vector<Bad> events = {{"destroyed event", dead_event},
                             {"a stream used as an event", live_stream}};
  std::vector<Bad> contexts = {{"destroyed context", dead_ctx},
                               {"a stream used as a context", live_stream}};
  std::vector<Bad> modules = {{"unloaded module", dead_module},
                              {"a function used as a module", live_fn}};
  std::vector<Bad> functions = {{"function of an unloaded module", dead_fn},
                                {"kernel of an unloaded library", dead_kernel},
                                {"a module used as a function", live_module}};
  std::vector<Bad> libraries = {{"unloaded library", dead_library},
                                {"a module used as a library", live_module}};
  std::vector<Bad> pointers = {{"freed device pointer", reinterpret_cast<void*>(dead_ptr)},
                               {"freed pinned pointer", dead_host}};
  for (const Garbage& g : garbage_values()) {
    for (auto* list : {&streams, &events, &contexts, &modules, &functions, &libraries, &pointers}) {
      list->push_back({g.what, g.value});
    }
  }

  auto stream_ptsz = proc<PFN_cuStreamSynchronize_v7000_ptsz>("cuStreamSynchronize", 7000);
  auto query_ptsz = proc<PFN_cuStreamQuery_v7000_ptsz>("cuStreamQuery", 7000);
  auto dtoh_async_ptsz = proc<PFN_cuMemcpyDtoHAsync_v7000_ptsz>("cuMemcpyDtoHAsync", 7000);
  auto launch_ptsz = proc<PFN_cuLaunchKernel_v7000_ptsz>("cuLaunchKernel", 7000);
  auto record_ptsz = proc<PFN_cuEventRecord_v7000_ptsz>("cuEventRecord", 7000);
  auto memset_async_ptsz = proc<PFN_cuMemsetD32Async_v7000_ptsz>("cuMemsetD32Async", 7000);

  std::vector<uint8_t> host(4096, 1);
  CUdeviceptr arg = live_ptr;
  void* params[] = {&arg};
  CUDA_MEMCPY2D copy2d{};
  copy2d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy2d.srcDevice = live_ptr;
  copy2d.dstMemoryType = CU_MEMORYTYPE_HOST;
  copy2d.dstHost = host.data();
  copy2d.WidthInBytes = 64;
  copy2d.Height = 2;
  copy2d.srcPitch = copy2d.dstPitch = 64;
  CUDA_MEMCPY3D copy3d{};
  copy3d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy3d.srcDevice = live_ptr;
  copy3d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy3d.dstDevice = live_ptr + 2048;
  copy3d.WidthInBytes = 64;
  copy3d.Height = 2;
  copy3d.Depth = 2;
  copy3d.srcPitch = copy3d.dstPitch = 64;

  // Each probe: entry point name, the call with the bad handle, the expected code.
  struct Probe {
    const char* name;
    std::function<CUresult(void*)> call;
    CUresult expected;
  };
  auto as_stream = [](void* h) { return static_cast<CUstream>(h); };
  const std::vector<Probe> stream_probes = {
      {"cuStreamSynchronize", [&](void* h) { return cuStreamSynchronize(as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamSynchronize_ptsz", [&](void* h) { return stream_ptsz(as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamQuery", [&](void* h) { return cuStreamQuery(as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamQuery_ptsz", [&](void* h) { return query_ptsz(as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamDestroy", [&](void* h) { return cuStreamDestroy(as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamWaitEvent", [&](void* h) { return cuStreamWaitEvent(as_stream(h), live_event, 0); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamGetPriority",
       [&](void* h) {
         int v;
         return cuStreamGetPriority(as_stream(h), &v);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamGetFlags",
       [&](void* h) {
         unsigned v;
         return cuStreamGetFlags(as_stream(h), &v);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamGetId",
       [&](void* h) {
         unsigned long long v;
         return cuStreamGetId(as_stream(h), &v);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamGetCtx",
       [&](void* h) {
         CUcontext v;
         return cuStreamGetCtx(as_stream(h), &v);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamGetDevice",
       [&](void* h) {
         CUdevice v;
         return cuStreamGetDevice(as_stream(h), &v);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamIsCapturing",
       [&](void* h) {
         CUstreamCaptureStatus v;
         return cuStreamIsCapturing(as_stream(h), &v);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLaunchHostFunc",
       [&](void* h) {
         return cuLaunchHostFunc(
             as_stream(h), [](void*) {}, nullptr);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamAddCallback",
       [&](void* h) {
         return cuStreamAddCallback(
             as_stream(h), [](CUstream, CUresult, void*) {}, nullptr, 0);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuEventRecord", [&](void* h) { return cuEventRecord(live_event, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuEventRecord_ptsz", [&](void* h) { return record_ptsz(live_event, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuEventRecordWithFlags",
       [&](void* h) { return cuEventRecordWithFlags(live_event, as_stream(h), 0); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemcpyHtoDAsync",
       [&](void* h) { return cuMemcpyHtoDAsync(live_ptr, host.data(), 64, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemcpyDtoHAsync",
       [&](void* h) { return cuMemcpyDtoHAsync(host.data(), live_ptr, 64, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemcpyDtoHAsync_ptsz",
       [&](void* h) { return dtoh_async_ptsz(host.data(), live_ptr, 64, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemcpyDtoDAsync",
       [&](void* h) { return cuMemcpyDtoDAsync(live_ptr, live_ptr + 64, 64, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemcpyAsync",
       [&](void* h) { return cuMemcpyAsync(live_ptr, live_ptr + 64, 64, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemcpyPeerAsync",
       [&](void* h) {
         return cuMemcpyPeerAsync(live_ptr, ctx, live_ptr + 64, ctx, 64, as_stream(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemcpy2DAsync", [&](void* h) { return cuMemcpy2DAsync(&copy2d, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemcpy3DAsync", [&](void* h) { return cuMemcpy3DAsync(&copy3d, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemsetD8Async", [&](void* h) { return cuMemsetD8Async(live_ptr, 0, 64, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemsetD32Async_ptsz",
       [&](void* h) { return memset_async_ptsz(live_ptr, 0, 16, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemsetD2D16Async",
       [&](void* h) { return cuMemsetD2D16Async(live_ptr, 64, 0, 8, 2, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemAllocAsync",
       [&](void* h) {
         CUdeviceptr d;
         return cuMemAllocAsync(&d, 64, as_stream(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuMemFreeAsync", [&](void* h) { return cuMemFreeAsync(live_ptr, as_stream(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLaunchKernel",
       [&](void* h) {
         return cuLaunchKernel(live_fn, 1, 1, 1, 1, 1, 1, 0, as_stream(h), params, nullptr);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLaunchKernel_ptsz",
       [&](void* h) {
         return launch_ptsz(live_fn, 1, 1, 1, 1, 1, 1, 0, as_stream(h), params, nullptr);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLaunchCooperativeKernel",
       [&](void* h) {
         return cuLaunchCooperativeKernel(live_fn, 1, 1, 1, 1, 1, 1, 0, as_stream(h), params);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLaunchKernelEx",
       [&](void* h) {
         CUlaunchConfig config{};
         config.gridDimX = config.gridDimY = config.gridDimZ = 1;
         config.blockDimX = config.blockDimY = config.blockDimZ = 1;
         config.hStream = as_stream(h);
         return cuLaunchKernelEx(&config, live_fn, params, nullptr);
       },
       CUDA_ERROR_INVALID_HANDLE},
  };
  auto as_event = [](void* h) { return static_cast<CUevent>(h); };
  const std::vector<Probe> event_probes = {
      {"cuEventDestroy", [&](void* h) { return cuEventDestroy(as_event(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuEventRecord", [&](void* h) { return cuEventRecord(as_event(h), live_stream); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuEventRecordWithFlags",
       [&](void* h) { return cuEventRecordWithFlags(as_event(h), nullptr, 0); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuEventQuery", [&](void* h) { return cuEventQuery(as_event(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuEventSynchronize", [&](void* h) { return cuEventSynchronize(as_event(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuEventElapsedTime (start)",
       [&](void* h) {
         float ms;
         return cuEventElapsedTime(&ms, as_event(h), live_event);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuEventElapsedTime (end)",
       [&](void* h) {
         float ms;
         return cuEventElapsedTime(&ms, live_event, as_event(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuStreamWaitEvent", [&](void* h) { return cuStreamWaitEvent(live_stream, as_event(h), 0); },
       CUDA_ERROR_INVALID_HANDLE},
  };
  auto as_ctx = [](void* h) { return static_cast<CUcontext>(h); };
  const std::vector<Probe> context_probes = {
      {"cuCtxDestroy", [&](void* h) { return cuCtxDestroy(as_ctx(h)); },
       CUDA_ERROR_INVALID_CONTEXT},
      {"cuCtxPushCurrent", [&](void* h) { return cuCtxPushCurrent(as_ctx(h)); },
       CUDA_ERROR_INVALID_CONTEXT},
      {"cuCtxSetCurrent", [&](void* h) { return cuCtxSetCurrent(as_ctx(h)); },
       CUDA_ERROR_INVALID_CONTEXT},
      {"cuCtxGetId",
       [&](void* h) {
         unsigned long long v;
         return cuCtxGetId(as_ctx(h), &v);
       },
       CUDA_ERROR_INVALID_CONTEXT},
      {"cuCtxGetApiVersion",
       [&](void* h) {
         unsigned v;
         return cuCtxGetApiVersion(as_ctx(h), &v);
       },
       CUDA_ERROR_INVALID_CONTEXT},
      {"cuMemcpyPeer (dst)",
       [&](void* h) { return cuMemcpyPeer(live_ptr, as_ctx(h), live_ptr + 64, ctx, 64); },
       CUDA_ERROR_INVALID_CONTEXT},
      {"cuMemcpyPeer (src)",
       [&](void* h) { return cuMemcpyPeer(live_ptr, ctx, live_ptr + 64, as_ctx(h), 64); },
       CUDA_ERROR_INVALID_CONTEXT},
      {"cuMemcpy3DPeer",
       [&](void* h) {
         CUDA_MEMCPY3D_PEER peer{};
         peer.srcMemoryType = peer.dstMemoryType = CU_MEMORYTYPE_DEVICE;
         peer.srcDevice = live_ptr;
         peer.dstDevice = live_ptr + 64;
         peer.WidthInBytes = 64;
         peer.Height = peer.Depth = 1;
         peer.srcContext = ctx;
         peer.dstContext = as_ctx(h);
         return cuMemcpy3DPeer(&peer);
       },
       CUDA_ERROR_INVALID_CONTEXT},
  };
  auto as_module = [](void* h) { return static_cast<CUmodule>(h); };
  const std::vector<Probe> module_probes = {
      {"cuModuleGetFunction",
       [&](void* h) {
         CUfunction f;
         return cuModuleGetFunction(&f, as_module(h), "nop");
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuModuleGetGlobal",
       [&](void* h) {
         CUdeviceptr d;
         size_t n;
         return cuModuleGetGlobal(&d, &n, as_module(h), "g");
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuModuleGetFunctionCount",
       [&](void* h) {
         unsigned n;
         return cuModuleGetFunctionCount(&n, as_module(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuModuleEnumerateFunctions",
       [&](void* h) {
         CUfunction f[2];
         return cuModuleEnumerateFunctions(f, 2, as_module(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuModuleUnload", [&](void* h) { return cuModuleUnload(as_module(h)); },
       CUDA_ERROR_INVALID_HANDLE},
  };
  auto as_fn = [](void* h) { return static_cast<CUfunction>(h); };
  auto as_kernel = [](void* h) { return static_cast<CUkernel>(h); };
  const std::vector<Probe> function_probes = {
      {"cuFuncGetAttribute",
       [&](void* h) {
         int v;
         return cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, as_fn(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuFuncSetAttribute",
       [&](void* h) {
         return cuFuncSetAttribute(as_fn(h), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuFuncGetName",
       [&](void* h) {
         const char* n;
         return cuFuncGetName(&n, as_fn(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuFuncGetParamInfo",
       [&](void* h) {
         size_t o, s;
         return cuFuncGetParamInfo(as_fn(h), 0, &o, &s);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuFuncGetModule",
       [&](void* h) {
         CUmodule m;
         return cuFuncGetModule(&m, as_fn(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuFuncIsLoaded",
       [&](void* h) {
         CUfunctionLoadingState st;
         return cuFuncIsLoaded(&st, as_fn(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuFuncLoad", [&](void* h) { return cuFuncLoad(as_fn(h)); }, CUDA_ERROR_INVALID_HANDLE},
      {"cuFuncSetCacheConfig",
       [&](void* h) { return cuFuncSetCacheConfig(as_fn(h), CU_FUNC_CACHE_PREFER_NONE); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLaunchKernel",
       [&](void* h) {
         return cuLaunchKernel(as_fn(h), 1, 1, 1, 1, 1, 1, 0, live_stream, params, nullptr);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLaunchCooperativeKernel",
       [&](void* h) {
         return cuLaunchCooperativeKernel(as_fn(h), 1, 1, 1, 1, 1, 1, 0, nullptr, params);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLaunchKernelEx",
       [&](void* h) {
         CUlaunchConfig config{};
         config.gridDimX = config.gridDimY = config.gridDimZ = 1;
         config.blockDimX = config.blockDimY = config.blockDimZ = 1;
         return cuLaunchKernelEx(&config, as_fn(h), params, nullptr);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuKernelGetAttribute",
       [&](void* h) {
         int v;
         return cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, as_kernel(h), 0);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuKernelSetAttribute",
       [&](void* h) {
         return cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0,
                                     as_kernel(h), 0);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuKernelGetName",
       [&](void* h) {
         const char* n;
         return cuKernelGetName(&n, as_kernel(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuKernelGetParamInfo",
       [&](void* h) {
         size_t o, s;
         return cuKernelGetParamInfo(as_kernel(h), 0, &o, &s);
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuKernelGetFunction",
       [&](void* h) {
         CUfunction f;
         return cuKernelGetFunction(&f, as_kernel(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuKernelGetLibrary",
       [&](void* h) {
         CUlibrary l;
         return cuKernelGetLibrary(&l, as_kernel(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuKernelSetCacheConfig",
       [&](void* h) { return cuKernelSetCacheConfig(as_kernel(h), CU_FUNC_CACHE_PREFER_NONE, 0); },
       CUDA_ERROR_INVALID_HANDLE},
  };
  auto as_library = [](void* h) { return static_cast<CUlibrary>(h); };
  const std::vector<Probe> library_probes = {
      {"cuLibraryUnload", [&](void* h) { return cuLibraryUnload(as_library(h)); },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLibraryGetKernel",
       [&](void* h) {
         CUkernel k;
         return cuLibraryGetKernel(&k, as_library(h), "nop");
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLibraryGetModule",
       [&](void* h) {
         CUmodule m;
         return cuLibraryGetModule(&m, as_library(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLibraryGetGlobal",
       [&](void* h) {
         CUdeviceptr d;
         size_t n;
         return cuLibraryGetGlobal(&d, &n, as_library(h), "g");
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLibraryGetKernelCount",
       [&](void* h) {
         unsigned n;
         return cuLibraryGetKernelCount(&n, as_library(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
      {"cuLibraryEnumerateKernels",
       [&](void* h) {
         CUkernel k[2];
         return cuLibraryEnumerateKernels(k, 2, as_library(h));
       },
       CUDA_ERROR_INVALID_HANDLE},
  };
  auto as_ptr = [](void* h) { return reinterpret_cast<CUdeviceptr>(h); };
  const std::vector<Probe> pointer_probes = {
      {"cuMemFree", [&](void* h) { return cuMemFree(as_ptr(h)); }, CUDA_ERROR_INVALID_VALUE},
      {"cuMemFreeHost", [&](void* h) { return cuMemFreeHost(h); }, CUDA_ERROR_INVALID_VALUE},
      {"cuMemFreeAsync", [&](void* h) { return cuMemFreeAsync(as_ptr(h), live_stream); },
       CUDA_ERROR_INVALID_VALUE},
      {"cuMemcpyHtoD", [&](void* h) { return cuMemcpyHtoD(as_ptr(h), host.data(), 64); },
       CUDA_ERROR_INVALID_VALUE},
      {"cuMemcpyDtoH", [&](void* h) { return cuMemcpyDtoH(host.data(), as_ptr(h), 64); },
       CUDA_ERROR_INVALID_VALUE},
      {"cuMemcpyDtoD", [&](void* h) { return cuMemcpyDtoD(live_ptr, as_ptr(h), 64); },
       CUDA_ERROR_INVALID_VALUE},
      {"cuMemcpyDtoHAsync",
       [&](void* h) { return cuMemcpyDtoHAsync(host.data(), as_ptr(h), 64, live_stream); },
       CUDA_ERROR_INVALID_VALUE},
      {"cuMemsetD8", [&](void* h) { return cuMemsetD8(as_ptr(h), 0, 64); },
       CUDA_ERROR_INVALID_VALUE},
      {"cuMemsetD32Async", [&](void* h) { return cuMemsetD32Async(as_ptr(h), 0, 16, live_stream); },
       CUDA_ERROR_INVALID_VALUE},
      {"cuMemGetAddressRange",
       [&](void* h) {
         CUdeviceptr b;
         size_t n;
         return cuMemGetAddressRange(&b, &n, as_ptr(h));
       },
       CUDA_ERROR_NOT_FOUND},
      {"cuPointerGetAttribute",
       [&](void* h) {
         unsigned type = 0;
         return cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, as_ptr(h));
       },
       CUDA_ERROR_INVALID_VALUE},
      {"cuMemHostGetDevicePointer",
       [&](void* h) {
         CUdeviceptr d;
         return cuMemHostGetDevicePointer(&d, h, 0);
       },
       CUDA_ERROR_INVALID_VALUE},
      {"cuMemHostUnregister", [&](void* h) { return cuMemHostUnregister(h); },
       CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED},
      {"cuMemRelease (as an allocation handle)",
       [&](void* h) { return cuMemRelease(reinterpret_cast<CUmemGenericAllocationHandle>(h)); },
       CUDA_ERROR_INVALID_VALUE},
  };

  auto walk = [](const char* kind, const std::vector<Probe>& probes, const std::vector<Bad>& bad) {
    for (const Bad& b : bad) {
      for (const Probe& p : probes) {
        INFO(kind << " argument of " << p.name << ": " << b.what);
        CHECK(p.call(b.value) == p.expected);
      }
    }
  };
  walk("stream", stream_probes, streams);
  walk("event", event_probes, events);
  walk("context", context_probes, contexts);
  walk("module", module_probes, modules);
  walk("function", function_probes, functions);
  walk("library", library_probes, libraries);
  walk("pointer", pointer_probes, pointers);

  // The live objects still work, and nothing above disturbed the current context.
  REQUIRE_CU(cuCtxGetCurrent(&current));
  CHECK(current == ctx);
  REQUIRE_CU(cuLaunchKernel(live_fn, 1, 1, 1, 1, 1, 1, 0, live_stream, params, nullptr));
  REQUIRE_CU(cuStreamSynchronize(live_stream));
  REQUIRE_CU(cuEventSynchronize(live_event));
  REQUIRE_CU(cuEventDestroy(live_event));
  REQUIRE_CU(cuStreamDestroy(live_stream));
  REQUIRE_CU(cuModuleUnload(live_module));
  REQUIRE_CU(cuMemFree(live_ptr));
  REQUIRE_CU(cuCtxDestroy(ctx));
  REQUIRE_CU(cuCtxGetCurrent(&current));
  CHECK(current == primary);
}

TEST_CASE("a destroyed handle is not reused by the next object, so it stays invalid", "[handles]") {
  primary_context();
  for (int round = 0; round < 3; ++round) {
    CUstream dead = nullptr;
    REQUIRE_CU(cuStreamCreate(&dead, 0));
    REQUIRE_CU(cuStreamDestroy(dead));
    CUevent dead_event = nullptr;
    REQUIRE_CU(cuEventCreate(&dead_event, 0));
    REQUIRE_CU(cuEventDestroy(dead_event));
    // Allocators hand a just-freed block of the same size to the next allocation: without the
    // quarantine these would be the destroyed objects' addresses, and the stale handles would
    // silently name the new objects.
    std::vector<CUstream> streams(4);
    std::vector<CUevent> events(4);
    for (auto& s : streams) REQUIRE_CU(cuStreamCreate(&s, 0));
    for (auto& e : events) REQUIRE_CU(cuEventCreate(&e, 0));
    for (CUstream s : streams) CHECK(s != dead);
    for (CUevent e : events) CHECK(e != dead_event);
    CHECK(cuStreamSynchronize(dead) == CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuStreamDestroy(dead) == CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuEventQuery(dead_event) == CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuEventDestroy(dead_event) == CUDA_ERROR_INVALID_HANDLE);
    for (CUstream s : streams) REQUIRE_CU(cuStreamDestroy(s));
    for (CUevent e : events) REQUIRE_CU(cuEventDestroy(e));
  }
}

TEST_CASE("unloading a module waits for its kernels queued in other contexts",
          "[handles][module]") {
  primary_context();
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, cusnap::emu_test::kBusyPtx));
  CUfunction busy = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&busy, module, "busy"));
  CUdeviceptr out = 0;
  REQUIRE_CU(cuMemAlloc(&out, 32 * 4));
  CUcontext other = nullptr;
  REQUIRE_CU(cuCtxCreate(&other, nullptr, 0, 0));
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  unsigned n = 2000000;
  void* params[] = {&out, &n};
  // Queued behind a host function so that it certainly has not finished when the unload starts.
  REQUIRE_CU(cuLaunchHostFunc(
      s, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }, nullptr));
  REQUIRE_CU(cuLaunchKernel(busy, 1, 1, 1, 32, 1, 1, 0, s, params, nullptr));
  REQUIRE_CU(
      cuCtxPopCurrent(nullptr));       // the primary context, which has nothing queued, is current
  REQUIRE_CU(cuModuleUnload(module));  // must not free the program under the running kernel
  CHECK(cuStreamQuery(s) == CUDA_SUCCESS);
  std::vector<uint32_t> got(32);
  REQUIRE_CU(cuMemcpyDtoH(got.data(), out, 32 * 4));
  for (uint32_t t = 0; t < 32; ++t) {
    uint32_t x = t;
    for (uint32_t i = 0; i < n; ++i) x = (x + i) * 3;
    CHECK(got[t] == x);
  }
  REQUIRE_CU(cuCtxDestroy(other));
  REQUIRE_CU(cuMemFree(out));
}

TEST_CASE("a context destroyed while current to another thread answers CONTEXT_IS_DESTROYED there",
          "[handles][context]") {
  primary_context();
  CUcontext ctx = nullptr;
  REQUIRE_CU(cuCtxCreate(&ctx, nullptr, 0, 0));
  REQUIRE_CU(cuCtxPopCurrent(nullptr));

  std::mutex mutex;
  std::condition_variable changed;
  int stage = 0;
  auto wait_stage = [&](int s) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return stage >= s; });
  };
  auto set_stage = [&](int s) {
    {
      std::lock_guard lock(mutex);
      stage = s;
    }
    changed.notify_all();
  };
  std::vector<std::pair<const char*, CUresult>> results;
  CUcontext seen = nullptr;
  std::thread other([&] {
    cuCtxSetCurrent(ctx);
    set_stage(1);
    wait_stage(2);  // the main thread destroyed ctx
    CUdeviceptr d = 0;
    results.push_back({"cuMemAlloc", cuMemAlloc(&d, 64)});
    results.push_back({"cuCtxSynchronize", cuCtxSynchronize()});
    results.push_back({"cuStreamSynchronize(NULL)", cuStreamSynchronize(nullptr)});
    CUstream s = nullptr;
    results.push_back({"cuStreamCreate", cuStreamCreate(&s, 0)});
    CUevent e = nullptr;
    results.push_back({"cuEventCreate", cuEventCreate(&e, 0)});
    CUmodule m = nullptr;
    results.push_back({"cuModuleLoadData", cuModuleLoadData(&m, kHandlesPtx)});
    unsigned long long id = 0;
    results.push_back({"cuCtxGetId(NULL)", cuCtxGetId(nullptr, &id)});
    CUdevice dev = -1;
    results.push_back({"cuCtxGetDevice", cuCtxGetDevice(&dev)});
    results.push_back({"cuMemcpyHtoDAsync(NULL stream)", cuMemcpyHtoDAsync(0, &id, 8, nullptr)});
    cuCtxGetCurrent(&seen);
    CUcontext popped = nullptr;
    results.push_back({"cuCtxPopCurrent", cuCtxPopCurrent(&popped)});
    results.push_back({"cuCtxSynchronize after the pop", cuCtxSynchronize()});
  });
  wait_stage(1);
  REQUIRE_CU(cuCtxDestroy(ctx));
  set_stage(2);
  other.join();
  CHECK(seen == ctx);  // it stays current there, as documented
  REQUIRE(results.size() == 11);
  for (size_t i = 0; i < 9; ++i) {
    INFO(results[i].first);
    CHECK(results[i].second == CUDA_ERROR_CONTEXT_IS_DESTROYED);
  }
  CHECK(results[9].second == CUDA_SUCCESS);
  CHECK(results[10].second == CUDA_ERROR_INVALID_CONTEXT);  // no context current any more
}

#endif
