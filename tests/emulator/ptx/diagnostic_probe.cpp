// A tiny driver-API program run by stderr_diagnostics.cmake: it makes the emulator fail in one
// way (argument "oob": an out-of-bounds store; "unsupported": a module with vadd) and exits 0
// when the driver returned the expected error. It prints nothing itself, so everything on its
// stderr is the emulator's own diagnostics.
#include <cuda.h>

#include <cstring>

#include "diagnostics_ptx.h"

namespace {

int oob() {
  CUmodule module = nullptr;
  if (cuModuleLoadData(&module, cusnap_test::kStorePtx) != CUDA_SUCCESS) return 2;
  CUfunction f = nullptr;
  if (cuModuleGetFunction(&f, module, "store_tid") != CUDA_SUCCESS) return 3;
  CUdeviceptr out = 0;
  if (cuMemAlloc(&out, 32 * sizeof(unsigned)) != CUDA_SUCCESS) return 4;
  void* params[] = {&out};
  CUresult r =
      cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr);  // 64 threads, 32 slots
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  return r == CUDA_ERROR_ILLEGAL_ADDRESS ? 0 : 5;
}

int unsupported() {
  CUmodule module = nullptr;
  return cuModuleLoadData(&module, cusnap_test::kRefusedPtx) == CUDA_ERROR_NOT_SUPPORTED ? 0 : 6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 64;
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  CUcontext ctx = nullptr;
  if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
    return 1;
  if (std::strcmp(argv[1], "oob") == 0) return oob();
  if (std::strcmp(argv[1], "unsupported") == 0) return unsupported();
  return 64;
}
