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

#include "sample_common.h"  // samples/common: CU_CHECK, load_kernel_file

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: cusnap_bench_snapshot IMAGE MIB LAUNCHES TOUCHED\n");
    return 2;
  }
  size_t bytes = std::strtoull(argv[2], nullptr, 10) << 20;
  unsigned launches = static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10));
  size_t touched = std::strtoull(argv[4], nullptr, 10);
  if (touched == 0 || touched > bytes / 4) touched = bytes / 4;
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
  int n = static_cast<int>(touched);
  unsigned threads = 256;
  auto blocks = static_cast<unsigned>((touched + threads - 1) / threads);
  auto start = std::chrono::steady_clock::now();
  for (unsigned k = 0; k < launches; ++k) {
    void* params[] = {&buffer, &n, &k};
    CU_CHECK(cuLaunchKernel(step, blocks, 1, 1, threads, 1, 1, 0, nullptr, params, nullptr));
    CU_CHECK(cuCtxSynchronize());
  }
  auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  CU_CHECK(cuMemcpyDtoH(host.data(), buffer, bytes));
  uint64_t sum = 0;
  for (uint32_t word : host) sum = sum * 1099511628211ull + word;
  std::printf("ns_per_launch %lld\nchecksum %016llx\n", static_cast<long long>(ns / launches),
              static_cast<unsigned long long>(sum));
  CU_CHECK(cuMemFree(buffer));
  CU_CHECK(cuModuleUnload(module));
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
