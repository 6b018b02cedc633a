// Stream-ordered allocation: cudaMallocAsync/cudaFreeAsync from the device's default pool (with
// a release threshold, so memory is reused across iterations) and from an explicitly created
// pool (cudaMemPoolCreate + cudaMallocFromPoolAsync).
#include <cstdint>
#include <vector>

#include "rt_check.h"

namespace {

constexpr int kCount = 1 << 15;
constexpr int kIterations = 16;

__global__ void fill(int* data, int n, int seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = i * 31 + seed;
}

__global__ void add(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

}  // namespace

int main() {
  int device = 0;
  RT_CHECK(cudaGetDevice(&device));
  int pools_supported = 0;
  RT_CHECK(cudaDeviceGetAttribute(&pools_supported, cudaDevAttrMemoryPoolsSupported, device));
  if (!pools_supported) {
    std::fprintf(stderr, "rt_pool: the device does not support memory pools\n");
    return 2;
  }
  cudaMemPool_t default_pool;
  RT_CHECK(cudaDeviceGetDefaultMemPool(&default_pool, device));
  uint64_t threshold = UINT64_MAX;
  RT_CHECK(cudaMemPoolSetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold, &threshold));

  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t own_pool;
  RT_CHECK(cudaMemPoolCreate(&own_pool, &props));

  cudaStream_t stream;
  RT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  size_t bytes = kCount * sizeof(int);
  std::vector<int> host(static_cast<size_t>(kCount) * kIterations);
  int blocks = (kCount + 255) / 256;
  for (int it = 0; it < kIterations; ++it) {
    int *a = nullptr, *b = nullptr, *out = nullptr;
    RT_CHECK(cudaMallocAsync(&a, bytes, stream));
    RT_CHECK(cudaMallocAsync(&b, bytes, stream));
    RT_CHECK(cudaMallocFromPoolAsync(&out, bytes, own_pool, stream));
    fill<<<blocks, 256, 0, stream>>>(a, kCount, it);
    fill<<<blocks, 256, 0, stream>>>(b, kCount, 1000 * it);
    RT_CHECK_LAUNCH();
    add<<<blocks, 256, 0, stream>>>(a, b, out, kCount);
    RT_CHECK_LAUNCH();
    RT_CHECK(cudaMemcpyAsync(host.data() + static_cast<size_t>(it) * kCount, out, bytes,
                             cudaMemcpyDeviceToHost, stream));
    RT_CHECK(cudaFreeAsync(a, stream));
    RT_CHECK(cudaFreeAsync(b, stream));
    RT_CHECK(cudaFreeAsync(out, stream));
  }
  RT_CHECK(cudaStreamSynchronize(stream));
  size_t reserved = 0;
  RT_CHECK(cudaMemPoolGetAttribute(default_pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  std::printf("rt_pool: %d iterations, default pool holds %zu bytes\n", kIterations, reserved);

  long mismatches = 0;
  for (int it = 0; it < kIterations; ++it) {
    for (int i = 0; i < kCount; ++i) {
      int expected = (i * 31 + it) + (i * 31 + 1000 * it);
      int got = host[static_cast<size_t>(it) * kCount + i];
      if (got != expected) rt_report_mismatch(mismatches, "sum", i, got, expected);
    }
  }
  RT_CHECK(cudaStreamDestroy(stream));
  RT_CHECK(cudaMemPoolDestroy(own_pool));
  return rt_finish("rt_pool", mismatches);
}
