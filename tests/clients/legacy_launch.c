// A C client of the driver API that launches through the legacy execution control older
// bindings use: cuFuncSetBlockShape, cuFuncSetSharedSize, cuParamSet*, cuLaunch, cuLaunchGrid,
// cuLaunchGridAsync. Loads the PTX named by argv[1] and checks every result on the host; prints
// "OK:" and exits 0 when all match, prints each "FAIL:" and exits 1 otherwise.
#define CUDA_ENABLE_DEPRECATED 1  // the legacy launch API is deprecated, and used on purpose
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                 \
  do {                                                              \
    CUresult check_result = (call);                                 \
    if (check_result != CUDA_SUCCESS) {                             \
      const char* check_name = NULL;                                \
      cuGetErrorName(check_result, &check_name);                    \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
              check_name ? check_name : "?");                       \
      exit(1);                                                      \
    }                                                               \
  } while (0)

enum { kSaxpyN = 5000, kBlock = 128, kReverseBlocks = 7 };

static int failures = 0;

static void fail(const char* what, int index, double got, double expected) {
  printf("FAIL: %s at %d: %g != %g\n", what, index, got, expected);
  ++failures;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s KERNELS.ptx\n", argv[0]);
    return 2;
  }
  CUdevice device;
  CUcontext context;
  CUmodule module;
  CUfunction saxpy, reverse_blocks;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  CHECK(cuModuleLoad(&module, argv[1]));
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  CHECK(cuModuleGetFunction(&reverse_blocks, module, "reverse_blocks"));

  // saxpy(float a, const float* x, float* y, int n): parameters at their natural alignment.
  static float x[kSaxpyN], y[kSaxpyN], result[kSaxpyN];
  for (int i = 0; i < kSaxpyN; ++i) {
    x[i] = (float)i * 0.25f - 100.0f;
    y[i] = (float)(i % 17) - 8.0f;
  }
  CUdeviceptr d_x, d_y;
  CHECK(cuMemAlloc(&d_x, sizeof x));
  CHECK(cuMemAlloc(&d_y, sizeof y));
  CHECK(cuMemcpyHtoD(d_x, x, sizeof x));
  CHECK(cuMemcpyHtoD(d_y, y, sizeof y));
  const float a = 1.5f;
  CHECK(cuFuncSetBlockShape(saxpy, kBlock, 1, 1));
  CHECK(cuParamSetf(saxpy, 0, a));
  CHECK(cuParamSetv(saxpy, 8, &d_x, sizeof d_x));
  CHECK(cuParamSetv(saxpy, 16, &d_y, sizeof d_y));
  CHECK(cuParamSeti(saxpy, 24, kSaxpyN));
  CHECK(cuParamSetSize(saxpy, 28));
  CHECK(cuLaunchGrid(saxpy, (kSaxpyN + kBlock - 1) / kBlock, 1));
  // The state persists: a second launch on a stream applies saxpy again to the updated y.
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuCtxSynchronize());
  CHECK(cuLaunchGridAsync(saxpy, (kSaxpyN + kBlock - 1) / kBlock, 1, stream));
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH(result, d_y, sizeof result));
  for (int i = 0; i < kSaxpyN; ++i) {
    float expected = a * x[i] + (a * x[i] + y[i]);
    if (result[i] != expected) {
      fail("saxpy twice", i, result[i], expected);
      break;
    }
  }

  // reverse_blocks(int* data): dynamic shared memory set with cuFuncSetSharedSize; cuLaunch is
  // a 1x1 grid, cuLaunchGrid the rest.
  static int data[kReverseBlocks * kBlock], reversed[kReverseBlocks * kBlock];
  for (int i = 0; i < kReverseBlocks * kBlock; ++i) data[i] = i * 7 + 3;
  CUdeviceptr d_data;
  CHECK(cuMemAlloc(&d_data, sizeof data));
  CHECK(cuMemcpyHtoD(d_data, data, sizeof data));
  CHECK(cuFuncSetBlockShape(reverse_blocks, kBlock, 1, 1));
  CHECK(cuFuncSetSharedSize(reverse_blocks, kBlock * sizeof(int)));
  CHECK(cuParamSetv(reverse_blocks, 0, &d_data, sizeof d_data));
  CHECK(cuParamSetSize(reverse_blocks, sizeof d_data));
  CHECK(cuLaunch(reverse_blocks));  // block 0 only
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(reversed, d_data, sizeof reversed));
  for (int i = 0; i < kReverseBlocks * kBlock; ++i) {
    int expected = i < kBlock ? data[kBlock - 1 - i] : data[i];
    if (reversed[i] != expected) {
      fail("cuLaunch reverse", i, reversed[i], expected);
      break;
    }
  }
  CHECK(cuLaunchGrid(reverse_blocks, kReverseBlocks, 1));  // block 0 back, the others reversed
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(reversed, d_data, sizeof reversed));
  for (int i = 0; i < kReverseBlocks * kBlock; ++i) {
    int base = i / kBlock * kBlock;
    int expected = i < kBlock ? data[i] : data[base + kBlock - 1 - (i - base)];
    if (reversed[i] != expected) {
      fail("cuLaunchGrid reverse", i, reversed[i], expected);
      break;
    }
  }

  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(d_x));
  CHECK(cuMemFree(d_y));
  CHECK(cuMemFree(d_data));
  CHECK(cuModuleUnload(module));
  CHECK(cuCtxDestroy(context));
  if (failures) return 1;
  printf("OK: legacy launches of saxpy (%d floats) and reverse_blocks (%d blocks)\n", kSaxpyN,
         kReverseBlocks);
  return 0;
}
