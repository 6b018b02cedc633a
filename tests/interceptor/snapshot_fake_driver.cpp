// A fake "real driver" for the snapshot skip and failure paths (interceptor.snapshot.fake_*),
// which the emulator cannot exercise: it refuses stream capture (docs/emulator.md), so no stream is
// ever capturing there, and its copies do not fail. Device memory is host memory here; the stream
// handle 0xcafe reports itself as capturing; cuLaunchKernel adds 1 to the first byte of every
// allocation (so before and after snapshots differ); with FAKE_DRIVER_FAIL_COPY=1 every
// device-to-host copy fails. Only what the shim and snapshot_fake_app.cpp call is defined; the shim
// treats every other symbol as missing.
#include <cuda.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

#define FAKE extern "C" __attribute__((visibility("default")))

namespace {
std::map<CUdeviceptr, size_t> g_allocations;
const CUstream kCapturingStream = reinterpret_cast<CUstream>(0xcafe);
int g_context_target = 0;
}  // namespace

FAKE CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
FAKE CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}
FAKE CUresult cuCtxGetCurrent(CUcontext* context) {
  *context = reinterpret_cast<CUcontext>(&g_context_target);
  return CUDA_SUCCESS;
}
FAKE CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t size) {
  void* p = std::calloc(1, size);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  g_allocations[*dptr] = size;
  return CUDA_SUCCESS;
}
FAKE CUresult cuMemFree_v2(CUdeviceptr dptr) {
  g_allocations.erase(dptr);
  std::free(reinterpret_cast<void*>(dptr));
  return CUDA_SUCCESS;
}
FAKE CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t size) {
  std::memcpy(reinterpret_cast<void*>(dst), src, size);
  return CUDA_SUCCESS;
}
FAKE CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t size) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), size);
  return CUDA_SUCCESS;
}
FAKE CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t size, CUstream) {
  const char* fail = std::getenv("FAKE_DRIVER_FAIL_COPY");
  if (fail != nullptr && std::strcmp(fail, "1") == 0) return CUDA_ERROR_ILLEGAL_ADDRESS;
  std::memcpy(dst, reinterpret_cast<const void*>(src), size);
  return CUDA_SUCCESS;
}
FAKE CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  static int streams[16];
  static int next = 0;
  *stream = reinterpret_cast<CUstream>(&streams[next++ % 16]);
  return CUDA_SUCCESS;
}
FAKE CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
FAKE CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  *status =
      stream == kCapturingStream ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
FAKE CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  static thread_local CUstreamCaptureMode current = CU_STREAM_CAPTURE_MODE_GLOBAL;
  CUstreamCaptureMode old = current;
  current = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}
FAKE CUresult cuFuncGetName(const char** name, CUfunction) {
  *name = "fake_kernel";
  return CUDA_SUCCESS;
}
FAKE CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream stream, void**, void**) {
  if (stream == kCapturingStream) return CUDA_SUCCESS;  // captured into a graph: does not run now
  for (auto& [address, size] : g_allocations) {
    if (size > 0) ++*reinterpret_cast<unsigned char*>(address);
  }
  return CUDA_SUCCESS;
}
