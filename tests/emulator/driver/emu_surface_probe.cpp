// A driver-API program for what needs a process of its own (ctest emulator.driver.surface.*):
//   arguments   the argument checks of the common entry points in three phases: before cuInit
//               (CUDA_ERROR_NOT_INITIALIZED), initialised without a current context
//               (CUDA_ERROR_INVALID_CONTEXT), and with one but NULL outputs / names
//               (CUDA_ERROR_INVALID_VALUE)
//   memory      prints "total <bytes>" (cuDeviceTotalMem) and "host <bytes>" (MemTotal of
//               /proc/meminfo); with a total of 64 MiB, checks that allocations beyond it fail with
//               CUDA_ERROR_OUT_OF_MEMORY and that freeing makes room again
//   profiler    cuProfilerStart twice and cuProfilerStop once (surface_probe.cmake reads the
//               counts back from CUSNAP_EMU_STATS); cuProfilerInitialize is NOT_SUPPORTED
// Exit status 0 when every check held; each failing check is printed on stderr.
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>
#include <cudaProfiler.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Check {
  const char* call;
  std::function<CUresult()> run;
};

int failures = 0;

void expect(const char* phase, const std::vector<Check>& checks, CUresult expected) {
  for (const Check& c : checks) {
    CUresult got = c.run();
    if (got != expected) {
      std::fprintf(stderr, "probe: %s: %s returned %d, expected %d\n", phase, c.call,
                   static_cast<int>(got), static_cast<int>(expected));
      ++failures;
    }
  }
}

#define CALL(expr)                \
  Check {                         \
#expr, [&] { return (expr); } \
  }

const char* kPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .global .u32 value;
.visible .entry k(.param .u64 p)
{
  ret;
}
)";

int arguments() {
  CUdevice dev = 0;
  int count = 0, value = 0;
  char name[64];
  size_t bytes = 0, free_bytes = 0, total = 0;
  unsigned flags = 0;
  CUcontext ctx = nullptr;
  CUdeviceptr dptr = 0;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  CUstream stream = nullptr;
  CUevent event = nullptr;
  CUmemoryPool pool = nullptr;
  CUlibrary library = nullptr;
  void* host = nullptr;
  char buffer[16] = {};

  // Phase 1: before cuInit.
  expect("before cuInit",
         {CALL(cuDeviceGet(&dev, 0)),
          CALL(cuDeviceGetCount(&count)),
          CALL(cuDeviceGetName(name, 64, 0)),
          CALL(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0)),
          CALL(cuDeviceTotalMem(&bytes, 0)),
          CALL(cuDevicePrimaryCtxRetain(&ctx, 0)),
          CALL(cuDevicePrimaryCtxGetState(0, &flags, &value)),
          CALL(cuCtxCreate(&ctx, nullptr, 0, 0)),
          CALL(cuCtxGetCurrent(&ctx)),
          CALL(cuCtxSetCurrent(nullptr)),
          CALL(cuCtxPopCurrent(&ctx)),
          CALL(cuCtxSynchronize()),
          CALL(cuCtxGetDevice(&dev)),
          CALL(cuCtxAttach(&ctx, 0)),
          CALL(cuMemAlloc(&dptr, 16)),
          CALL(cuMemFree(dptr)),
          CALL(cuMemGetInfo(&free_bytes, &total)),
          CALL(cuMemAllocHost(&host, 16)),
          CALL(cuMemcpyHtoD(dptr, buffer, 4)),
          CALL(cuMemsetD8(dptr, 0, 4)),
          CALL(cuModuleLoadData(&module, kPtx)),
          CALL(cuModuleGetFunction(&function, module, "k")),
          CALL(cuLibraryLoadData(&library, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0)),
          CALL(cuStreamCreate(&stream, 0)),
          CALL(cuStreamSynchronize(nullptr)),
          CALL(cuEventCreate(&event, 0)),
          CALL(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, function)),
          CALL(cuOccupancyMaxActiveBlocksPerMultiprocessor(&value, function, 32, 0)),
          CALL(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr)),
          CALL(cuParamSetSize(function, 8)),
          CALL(cuLaunchGrid(function, 1, 1)),
          CALL(cuDeviceGetDefaultMemPool(&pool, 0)),
          CALL(cuMemAllocAsync(&dptr, 16, nullptr)),
          CALL(cuPointerGetAttribute(&value, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr)),
          CALL(cuProfilerStart()),
          CALL(cuProfilerStop())},
         CUDA_ERROR_NOT_INITIALIZED);
  // What works before cuInit, as on the driver.
  int version = 0;
  const char* text = nullptr;
  expect(
      "before cuInit (allowed)",
      {CALL(cuDriverGetVersion(&version)), CALL(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &text)),
       CALL(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &text))},
      CUDA_SUCCESS);

  if (cuInit(0) != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: cuInit failed\n");
    return 1;
  }
  // Phase 2: no current context.
  expect("without a context",
         {CALL(cuCtxSynchronize()), CALL(cuCtxGetDevice(&dev)), CALL(cuCtxGetFlags(&flags)),
          CALL(cuCtxGetLimit(&bytes, CU_LIMIT_STACK_SIZE)), CALL(cuCtxAttach(&ctx, 0)),
          CALL(cuCtxPopCurrent(&ctx)), CALL(cuMemAlloc(&dptr, 16)),
          CALL(cuMemGetInfo(&free_bytes, &total)), CALL(cuMemAllocHost(&host, 16)),
          CALL(cuMemAllocManaged(&dptr, 16, CU_MEM_ATTACH_GLOBAL)),
          CALL(cuModuleLoadData(&module, kPtx)), CALL(cuStreamCreate(&stream, 0)),
          CALL(cuEventCreate(&event, 0)), CALL(cuStreamSynchronize(nullptr)),
          CALL(cuMemAllocAsync(&dptr, 16, nullptr)), CALL(cuMemcpyHtoD(dptr, buffer, 4)),
          CALL(cuMemsetD8(dptr, 0, 4))},
         CUDA_ERROR_INVALID_CONTEXT);

  // Phase 3: a current context, NULL outputs and names.
  if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
      cuModuleLoadData(&module, kPtx) != CUDA_SUCCESS ||
      cuModuleGetFunction(&function, module, "k") != CUDA_SUCCESS ||
      cuLibraryLoadData(&library, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0) != CUDA_SUCCESS ||
      cuStreamCreate(&stream, 0) != CUDA_SUCCESS || cuEventCreate(&event, 0) != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: setup failed\n");
    return 1;
  }
  CUkernel kernel = nullptr;
  expect("NULL outputs and names",
         {CALL(cuDriverGetVersion(nullptr)),
          CALL(cuDeviceGet(nullptr, 0)),
          CALL(cuDeviceGetCount(nullptr)),
          CALL(cuDeviceGetName(nullptr, 64, 0)),
          CALL(cuDeviceGetAttribute(nullptr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0)),
          CALL(cuDeviceTotalMem(nullptr, 0)),
          CALL(cuDevicePrimaryCtxRetain(nullptr, 0)),
          CALL(cuCtxCreate(nullptr, nullptr, 0, 0)),
          CALL(cuCtxGetCurrent(nullptr)),
          CALL(cuCtxGetDevice(nullptr)),
          CALL(cuCtxGetFlags(nullptr)),
          CALL(cuCtxGetApiVersion(ctx, nullptr)),
          CALL(cuCtxGetId(ctx, nullptr)),
          CALL(cuCtxGetLimit(nullptr, CU_LIMIT_STACK_SIZE)),
          CALL(cuCtxAttach(nullptr, 0)),
          CALL(cuMemAlloc(nullptr, 16)),
          CALL(cuMemGetInfo(nullptr, &total)),
          CALL(cuMemGetInfo(&free_bytes, nullptr)),
          CALL(cuMemAllocHost(nullptr, 16)),
          CALL(cuMemAllocManaged(nullptr, 16, CU_MEM_ATTACH_GLOBAL)),
          CALL(cuMemAllocAsync(nullptr, 16, nullptr)),
          CALL(cuModuleLoadData(nullptr, kPtx)),
          CALL(cuModuleLoadData(&module, nullptr)),
          CALL(cuModuleGetFunction(nullptr, module, "k")),
          CALL(cuModuleGetFunction(&function, module, nullptr)),
          CALL(cuModuleGetGlobal(&dptr, &bytes, module, nullptr)),
          CALL(cuModuleGetFunctionCount(nullptr, module)),
          CALL(cuLibraryGetKernel(nullptr, library, "k")),
          CALL(cuLibraryGetKernel(&kernel, library, nullptr)),
          CALL(cuLibraryGetGlobal(&dptr, &bytes, library, nullptr)),
          CALL(cuLibraryGetModule(nullptr, library)),
          CALL(cuLibraryLoadData(nullptr, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0)),
          CALL(cuFuncGetAttribute(nullptr, CU_FUNC_ATTRIBUTE_NUM_REGS, function)),
          CALL(cuFuncGetName(nullptr, function)),
          CALL(cuStreamCreate(nullptr, 0)),
          CALL(cuStreamGetPriority(stream, nullptr)),
          CALL(cuStreamGetFlags(stream, nullptr)),
          CALL(cuStreamGetCtx(stream, nullptr)),
          CALL(cuEventCreate(nullptr, 0)),
          CALL(cuEventElapsedTime(nullptr, event, event)),
          CALL(cuGetErrorString(CUDA_SUCCESS, nullptr)),
          CALL(cuGetErrorName(CUDA_SUCCESS, nullptr)),
          CALL(cuPointerGetAttribute(nullptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, 0)),
          CALL(cuOccupancyMaxActiveBlocksPerMultiprocessor(nullptr, function, 32, 0)),
          CALL(cuDeviceGetDefaultMemPool(nullptr, 0)),
          CALL(cuDeviceGetMemPool(nullptr, 0)),
          CALL(cuMemPoolCreate(nullptr, nullptr)),
          CALL(cuGetProcAddress(nullptr, &host, 12000, 0, nullptr)),
          CALL(cuGetProcAddress("cuInit", nullptr, 12000, 0, nullptr))},
         CUDA_ERROR_INVALID_VALUE);
  return failures == 0 ? 0 : 1;
}

int memory() {
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    return 1;
  }
  size_t total = 0, free_bytes = 0, reported = 0;
  if (cuDeviceTotalMem(&total, 0) != CUDA_SUCCESS ||
      cuMemGetInfo(&free_bytes, &reported) != CUDA_SUCCESS)
    return 1;
  if (reported != total) {
    std::fprintf(stderr, "probe: cuMemGetInfo total %zu != cuDeviceTotalMem %zu\n", reported,
                 total);
    return 1;
  }
  unsigned long long host_kib = 0;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::sscanf(line, "MemTotal: %llu kB", &host_kib) == 1) break;
    }
    std::fclose(f);
  }
  std::printf("total %zu\nhost %llu\n", total, host_kib * 1024);
  if (total != (size_t{64} << 20)) return 0;
  CUdeviceptr a = 0, b = 0, c = 0;
  expect("64 MiB device", {CALL(cuMemAlloc(&a, size_t{48} << 20))}, CUDA_SUCCESS);
  expect(
      "64 MiB device",
      {CALL(cuMemAlloc(&b, size_t{32} << 20)), CALL(cuMemAllocAsync(&b, size_t{32} << 20, nullptr)),
       CALL(cuMemAllocManaged(&b, size_t{32} << 20, CU_MEM_ATTACH_GLOBAL))},
      CUDA_ERROR_OUT_OF_MEMORY);
  if (cuMemGetInfo(&free_bytes, &reported) != CUDA_SUCCESS || free_bytes != (size_t{16} << 20)) {
    std::fprintf(stderr, "probe: %zu bytes free after 48 MiB of 64, expected 16 MiB\n", free_bytes);
    ++failures;
  }
  expect("64 MiB device",
         {CALL(cuMemAlloc(&c, size_t{16} << 20)), CALL(cuMemFree(a)),
          CALL(cuMemAlloc(&b, size_t{32} << 20))},
         CUDA_SUCCESS);
  return failures == 0 ? 0 : 1;
}

int profiler() {
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  expect("profiler without a context", {CALL(cuProfilerStart()), CALL(cuProfilerStop())},
         CUDA_ERROR_INVALID_CONTEXT);
  if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
    return 1;
  expect("profiler", {CALL(cuProfilerStart()), CALL(cuProfilerStart()), CALL(cuProfilerStop())},
         CUDA_SUCCESS);
  expect("profiler", {CALL(cuProfilerInitialize("config", "output", CU_OUT_CSV))},
         CUDA_ERROR_NOT_SUPPORTED);
  return failures == 0 ? 0 : 1;
}

// Two calls captured into a graph (a memset, a host-to-device copy), the graph launched twice:
// CUSNAP_EMU_STATS counts the two calls, not the four operations the launches run.
int capture_stats() {
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    return 1;
  }
  CUdeviceptr d = 0;
  CUstream s = nullptr;
  CUgraph g = nullptr;
  CUgraphExec exec = nullptr;
  static char host[4096];
  expect("capture stats",
         {CALL(cuMemAlloc(&d, sizeof host)), CALL(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)),
          CALL(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)),
          CALL(cuMemsetD8Async(d, 1, sizeof host, s)),
          CALL(cuMemcpyHtoDAsync(d, host, sizeof host, s)), CALL(cuStreamEndCapture(s, &g)),
          CALL(cuGraphInstantiate(&exec, g, 0)), CALL(cuGraphLaunch(exec, s)),
          CALL(cuGraphLaunch(exec, s)), CALL(cuStreamSynchronize(s))},
         CUDA_SUCCESS);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 2 ? argv[1] : "";
  if (mode == "arguments") return arguments();
  if (mode == "profiler") return profiler();
  if (mode == "memory") return memory();
  if (mode == "capture") return capture_stats();
  std::fprintf(stderr, "usage: emu_surface_probe arguments|memory|profiler|capture\n");
  return 2;
}
