// The program bench/snapshot/run.sh captures: LAUNCHES launches of many_launches' `step` kernel
// over the first TOUCHED 4-byte words of a MIB-MiB buffer of pseudo-random (incompressible)
// bytes, each followed by cuCtxSynchronize, timed as a whole.
//   cusnap_bench_snapshot IMAGE MIB LAUNCHES TOUCHED     (TOUCHED 0: every word)
// Prints "ns_per_launch N" and a checksum of the buffer (so that a run that went wrong shows).
#include <cuda.h>

#include <chrono>
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
  if (argc != 5) {
    std::fprintf(stderr, "usage: cusnap_bench_snapshot IMAGE MIB LAUNCHES TOUCHED\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (image.empty()) return 2;
  size_t bytes = std::strtoull(argv[2], nullptr, 10) << 20;
  unsigned launches = static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10));
  size_t touched = std::strtoull(argv[4], nullptr, 10);
  if (touched == 0 || touched > bytes / 4) touched = bytes / 4;
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
  int n = static_cast<int>(touched);
  unsigned threads = 256;
  auto blocks = static_cast<unsigned>((touched + threads - 1) / threads);
  auto start = std::chrono::steady_clock::now();
  for (unsigned k = 0; k < launches; ++k) {
    void* params[] = {&buffer, &n, &k};
    CHECK(cuLaunchKernel(step, blocks, 1, 1, threads, 1, 1, 0, nullptr, params, nullptr));
    CHECK(cuCtxSynchronize());
  }
  auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  CHECK(cuMemcpyDtoH(host.data(), buffer, bytes));
  uint64_t sum = 0;
  for (uint32_t word : host) sum = sum * 1099511628211ull + word;
  std::printf("ns_per_launch %lld\nchecksum %016llx\n", static_cast<long long>(ns / launches),
              static_cast<unsigned long long>(sum));
  CHECK(cuMemFree(buffer));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
