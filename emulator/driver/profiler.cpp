// The profiler control API (cudaProfiler.h). The emulator has no profiler to switch: start and
// stop succeed with a current context (and are counted in CUSNAP_EMU_STATS), so programs that
// bracket a region for Nsight run unchanged.
#include "driver/api.h"
#include "driver/context.h"
#include "driver/stats.h"

using namespace cusnap::emu::driver;

CUSNAP_EXPORT CUresult CUDAAPI cuProfilerStart(void) {
  return guarded("cuProfilerStart", [&] {
    Context* ctx;
    if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
    note_profiler(true);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuProfilerStop(void) {
  return guarded("cuProfilerStop", [&] {
    Context* ctx;
    if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
    note_profiler(false);
    return CUDA_SUCCESS;
  });
}

// Deprecated; the driver documents CUDA_ERROR_NOT_SUPPORTED as its only result, and so it is here.
CUSNAP_EXPORT CUresult CUDAAPI cuProfilerInitialize(const char*, const char*, CUoutput_mode) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
