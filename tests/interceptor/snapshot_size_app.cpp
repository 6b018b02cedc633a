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

#include "sample_common.h"  // samples/common: CU_CHECK, load_kernel_file

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: snapshot_size_app IMAGE LAUNCHES MIB\n");
    return 2;
  }
  unsigned launches = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10));
  size_t bytes = std::strtoull(argv[3], nullptr, 10) << 20;
  const auto loaded = cusnap::samples::load_kernel_file(argv[1], "step");
  const CUdevice device = loaded.device;
  const CUmodule module = loaded.module;
  const CUfunction step = loaded.function;
  std::vector<uint32_t> host(bytes / 4);
  uint64_t x = 88172645463325252ull;
  for (auto& word : host) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    word = static_cast<uint32_t>(x);
  }
  CUdeviceptr buffer;
  CU_CHECK(cuMemAlloc(&buffer, bytes));
  CU_CHECK(cuMemcpyHtoD(buffer, host.data(), bytes));
  int n = 64;
  for (unsigned k = 0; k < launches; ++k) {
    void* params[] = {&buffer, &n, &k};
    CU_CHECK(cuLaunchKernel(step, 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr));
  }
  CU_CHECK(cuMemcpyDtoH(host.data(), buffer, bytes));
  uint64_t sum = 0;
  for (uint32_t word : host) sum = sum * 1099511628211ull + word;
  std::printf("checksum %016llx\n", static_cast<unsigned long long>(sum));
  CU_CHECK(cuMemFree(buffer));
  CU_CHECK(cuModuleUnload(module));
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
