// The application for interceptor.snapshot.fake_*: loads the shim (CUSNAP_TEST_SHIM, its real
// driver being snapshot_fake_driver.cpp through CUSNAP_REAL_DRIVER), allocates two buffers, and
// launches: 0 on the capturing stream 0xcafe, then 1 and 2 on an ordinary stream. Prints the first
// byte of each buffer after every launch: the launches' results, which snapshots must not change.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <vector>

int main() {
  void* shim = ::dlopen(CUSNAP_TEST_SHIM, RTLD_NOW | RTLD_LOCAL);
  if (shim == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", ::dlerror());
    return 2;
  }
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(::dlsym(shim, "cuInit"));
  auto alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(::dlsym(shim, "cuMemAlloc_v2"));
  auto htod = reinterpret_cast<CUresult (*)(CUdeviceptr, const void*, size_t)>(
      ::dlsym(shim, "cuMemcpyHtoD_v2"));
  auto dtoh =
      reinterpret_cast<CUresult (*)(void*, CUdeviceptr, size_t)>(::dlsym(shim, "cuMemcpyDtoH_v2"));
  auto stream_create =
      reinterpret_cast<CUresult (*)(CUstream*, unsigned)>(::dlsym(shim, "cuStreamCreate"));
  auto launch =
      reinterpret_cast<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void**, void**)>(
          ::dlsym(shim, "cuLaunchKernel"));
  if (init(0) != CUDA_SUCCESS) return 3;
  CUdeviceptr a = 0, b = 0;
  std::vector<unsigned char> data(100000, 7);
  if (alloc(&a, 70000) != CUDA_SUCCESS || alloc(&b, 100000) != CUDA_SUCCESS) return 4;
  if (htod(b, data.data(), data.size()) != CUDA_SUCCESS) return 5;
  CUstream stream = nullptr;
  if (stream_create(&stream, 0) != CUDA_SUCCESS) return 6;
  CUstream streams[] = {reinterpret_cast<CUstream>(0xcafe), stream, stream};
  CUfunction function = reinterpret_cast<CUfunction>(0x1000);
  for (CUstream s : streams) {
    CUresult result = launch(function, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr);
    unsigned char first_a = 0, first_b = 0;
    dtoh(&first_a, a, 1);
    dtoh(&first_b, b, 1);
    std::printf("launch result %d: a[0]=%u b[0]=%u\n", result, first_a, first_b);
  }
  return 0;
}
