// An ordinary driver-API application that happens to carry its own "Cap'n Proto" and "zstd"
// (libcusnap_icpt_hostile.so, linked ahead of libcuda.so.1; see hostile_lib.cpp). It
// loads the fatbin named on its command line (samples/vector_add's image), adds two vectors on
// the device and checks every element against the host's sum. Under `cusnap capture` it must
// behave exactly as without: same stdout, exit code 0.
//   hostile_app <vector_add fatbin>
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int cusnap_hostile_marker();

namespace {

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "hostile_app: %s failed (%d)\n", what, static_cast<int>(result));
    std::exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hostile_app <vector_add fatbin>\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (image.empty()) {
    std::fprintf(stderr, "hostile_app: cannot read %s\n", argv[1]);
    return 2;
  }
  std::printf("hostile_app: own libraries marker %d\n", cusnap_hostile_marker());

  constexpr int kCount = 5000;
  std::vector<float> a(kCount), b(kCount), c(kCount, -1.0f);
  for (int i = 0; i < kCount; ++i) {
    a[i] = static_cast<float>(i % 97) * 0.5f;
    b[i] = static_cast<float>(i % 13) - 6.0f;
  }

  check(cuInit(0), "cuInit");
  CUdevice device;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  CUmodule module;
  check(cuModuleLoadData(&module, image.data()), "cuModuleLoadData");
  CUfunction kernel;
  check(cuModuleGetFunction(&kernel, module, "vector_add"), "cuModuleGetFunction");

  const size_t bytes = kCount * sizeof(float);
  CUdeviceptr d_a, d_b, d_c;
  check(cuMemAlloc(&d_a, bytes), "cuMemAlloc");
  check(cuMemAlloc(&d_b, bytes), "cuMemAlloc");
  check(cuMemAlloc(&d_c, bytes), "cuMemAlloc");
  check(cuMemcpyHtoD(d_a, a.data(), bytes), "cuMemcpyHtoD");
  check(cuMemcpyHtoD(d_b, b.data(), bytes), "cuMemcpyHtoD");
  int count = kCount;
  void* params[] = {&d_a, &d_b, &d_c, &count};
  constexpr unsigned kBlock = 128;
  check(cuLaunchKernel(kernel, (kCount + kBlock - 1) / kBlock, 1, 1, kBlock, 1, 1, 0, nullptr,
                       params, nullptr),
        "cuLaunchKernel");
  check(cuMemcpyDtoH(c.data(), d_c, bytes), "cuMemcpyDtoH");

  int mismatches = 0;
  double sum = 0.0;
  for (int i = 0; i < kCount; ++i) {
    if (c[i] != a[i] + b[i]) ++mismatches;
    sum += c[i];
  }
  check(cuMemFree(d_a), "cuMemFree");
  check(cuMemFree(d_b), "cuMemFree");
  check(cuMemFree(d_c), "cuMemFree");
  check(cuModuleUnload(module), "cuModuleUnload");
  check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  std::printf("hostile_app: vector_add n=%d sum %.1f mismatches %d\n", kCount, sum, mismatches);
  return mismatches == 0 ? 0 : 1;
}
