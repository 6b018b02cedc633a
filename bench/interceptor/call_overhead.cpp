// call_overhead: nanoseconds per driver call for calls whose own work is tiny, so that what is
// measured is the path to the driver: cuCtxGetCurrent (a query: the shim records it, generically,
// when capturing), cuPointerGetAttribute (a query) and cuMemsetD8Async of 4 bytes (a modelled
// call with a typed record). Prints one line per call: "<name> <calls> <ns per call>".
//
//   call_overhead [CALLS]      (default 200000)
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "call_overhead: %s failed (%d)\n", what, static_cast<int>(result));
    std::exit(1);
  }
}

template <class Call>
void time_calls(const char* name, long calls, Call&& call) {
  for (long i = 0; i < calls / 10; ++i) call();  // warm up
  auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < calls; ++i) call();
  double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s %ld %.1f\n", name, calls, ns / static_cast<double>(calls));
}

}  // namespace

int main(int argc, char** argv) {
  long calls = argc > 1 ? std::atol(argv[1]) : 200000;
  if (calls <= 0) {
    std::fprintf(stderr, "usage: call_overhead [CALLS]\n");
    return 2;
  }
  check(cuInit(0), "cuInit");
  CUdevice device;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  CUdeviceptr buffer;
  check(cuMemAlloc(&buffer, 4096), "cuMemAlloc");
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  time_calls("cuCtxGetCurrent", calls, [] {
    CUcontext current;
    check(cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  });
  time_calls("cuPointerGetAttribute", calls, [buffer] {
    unsigned type;
    check(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, buffer),
          "cuPointerGetAttribute");
  });
  // Asynchronous memsets queue work: synchronise every 1000 so the queue stays short.
  long memsets = calls / 10;
  long done = 0;
  time_calls("cuMemsetD8Async", memsets, [&] {
    check(cuMemsetD8Async(buffer, 0x5a, 4, stream), "cuMemsetD8Async");
    if (++done % 1000 == 0) check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  });
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  check(cuStreamDestroy(stream), "cuStreamDestroy");
  check(cuMemFree(buffer), "cuMemFree");
  check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  return 0;
}
