// The application for interceptor.snapshot.host_memory: kernels writing host memory the device
// reaches (issue #10).
//   snapshot_host_app IMAGE
// Loads IMAGE (samples/many_launches' fatbin, kernel `step`), makes mapped pinned memory
// (cuMemHostAlloc DEVICEMAP, 64 KiB + 4196 bytes: two chunks), registered memory
// (cuMemHostRegister DEVICEMAP, 8 KiB), pinned memory (cuMemAllocHost, never written by a kernel)
// and a device buffer, then launches `step` on the first 64 words of: the mapped memory, the
// registered memory, the device buffer after cuMemHostUnregister, and the device buffer again
// after cuMemFreeHost of the mapped memory. After the first two launches it prints the content id
// (XXH3-128, as a capture names blobs) of the first 64 KiB of the mapped memory and of the
// registered memory as the host sees them: "mapped <id>", "registered <id>".
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <span>
#include <vector>

#include "cusnap/format/blob_id.h"
#include "sample_common.h"  // samples/common: CU_CHECK, load_kernel_file

namespace {

void fill(uint8_t* bytes, size_t size, uint32_t seed) {
  uint32_t x = seed;
  for (size_t i = 0; i < size; ++i) {
    x = x * 1664525u + 1013904223u;
    bytes[i] = static_cast<uint8_t>(x >> 24);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: snapshot_host_app IMAGE\n");
    return 2;
  }
  const auto loaded = cusnap::samples::load_kernel_file(argv[1], "step");
  const CUdevice device = loaded.device;
  const CUmodule module = loaded.module;
  const CUfunction step = loaded.function;

  const size_t mapped_bytes = 65536 + 4196;
  void* mapped = nullptr;
  CU_CHECK(cuMemHostAlloc(&mapped, mapped_bytes, CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr mapped_device = 0;
  CU_CHECK(cuMemHostGetDevicePointer(&mapped_device, mapped, 0));
  const size_t registered_bytes = 8192;
  void* registered = std::aligned_alloc(4096, registered_bytes);
  if (registered == nullptr) return 1;
  CU_CHECK(cuMemHostRegister(registered, registered_bytes, CU_MEMHOSTREGISTER_DEVICEMAP));
  CUdeviceptr registered_device = 0;
  CU_CHECK(cuMemHostGetDevicePointer(&registered_device, registered, 0));
  void* pinned = nullptr;
  CU_CHECK(cuMemAllocHost(&pinned, 4096));
  CUdeviceptr buffer = 0;
  CU_CHECK(cuMemAlloc(&buffer, 4096));
  fill(static_cast<uint8_t*>(mapped), mapped_bytes, 1);
  fill(static_cast<uint8_t*>(registered), registered_bytes, 2);
  fill(static_cast<uint8_t*>(pinned), 4096, 3);
  CU_CHECK(cuMemcpyHtoD(buffer, pinned, 4096));

  int n = 64;
  auto launch = [&](CUdeviceptr target, unsigned k) {
    void* params[] = {&target, &n, &k};
    CUresult r = cuLaunchKernel(step, 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr);
    return r == CUDA_SUCCESS ? cuCtxSynchronize() : r;
  };
  CU_CHECK(launch(mapped_device, 0));
  std::printf(
      "mapped %s\n",
      cusnap::format::hash_blob({static_cast<const uint8_t*>(mapped), 65536}).to_hex().c_str());
  CU_CHECK(launch(registered_device, 1));
  std::printf("registered %s\n",
              cusnap::format::hash_blob({static_cast<const uint8_t*>(registered), registered_bytes})
                  .to_hex()
                  .c_str());
  CU_CHECK(cuMemHostUnregister(registered));
  CU_CHECK(launch(buffer, 2));
  CU_CHECK(cuMemFreeHost(mapped));
  CU_CHECK(launch(buffer, 3));
  CU_CHECK(cuMemFreeHost(pinned));
  CU_CHECK(cuMemFree(buffer));
  std::free(registered);
  CU_CHECK(cuModuleUnload(module));
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
