// The application for interceptor.snapshot.size: many launches over mostly unchanged memory.
//   snapshot_size_app IMAGE LAUNCHES MIB
// Loads IMAGE (samples/many_launches' fatbin, kernel `step`), fills a MIB-MiB buffer with
// pseudo-random (incompressible) bytes, then launches `step` LAUNCHES times on its first 64
// words only, and prints a checksum of the whole buffer.
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#define CHECK(call)                                                         \
  do {                                                                      \
    CUresult r_ = (call);                                                   \
    if (r_ != CUDA_SUCCESS) {                                               \
      std::fprintf(stderr, "%s failed: %d\n", #call, static_cast<int>(r_)); \
      return 1;                                                             \
    }                                                                       \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: snapshot_size_app IMAGE LAUNCHES MIB\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (image.empty()) return 2;
  unsigned launches = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10));
  size_t bytes = std::strtoull(argv[3], nullptr, 10) << 20;
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  CUmodule module;
  CHECK(cuModuleLoadData(&module, image.data()));
  CUfunction step;
  CHECK(cuModuleGetFunction(&step, module, "step"));
  std::vector<uint32_t> host(bytes / 4);
  uint64_t x = 88172645463325252ull;
  for (auto& word : host) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    word = static_cast<uint32_t>(x);
  }
  CUdeviceptr buffer;
  CHECK(cuMemAlloc(&buffer, bytes));
  CHECK(cuMemcpyHtoD(buffer, host.data(), bytes));
  int n = 64;
  for (unsigned k = 0; k < launches; ++k) {
    void* params[] = {&buffer, &n, &k};
    CHECK(cuLaunchKernel(step, 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr));
  }
  CHECK(cuMemcpyDtoH(host.data(), buffer, bytes));
  uint64_t sum = 0;
  for (uint32_t word : host) sum = sum * 1099511628211ull + word;
  std::printf("checksum %016llx\n", static_cast<unsigned long long>(sum));
  CHECK(cuMemFree(buffer));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
