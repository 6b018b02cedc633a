// One call into a statically linked library whose kernels are SASS only (sass_lib.cu).
#include <vector>

#include "rt_check.h"
#include "sass_lib.h"

int main() {
  constexpr int kCount = 1000;
  std::vector<int> host(kCount);
  for (int i = 0; i < kCount; ++i) host[i] = (i * 37) % 101 - 50;
  int *in = nullptr, *out = nullptr;
  RT_CHECK(cudaMalloc(&in, kCount * sizeof(int)));
  RT_CHECK(cudaMalloc(&out, kCount * sizeof(int)));
  RT_CHECK(cudaMemcpy(in, host.data(), kCount * sizeof(int), cudaMemcpyHostToDevice));
  RT_CHECK(sass_lib_prefix_sum(in, out, kCount, 0));
  std::vector<int> result(kCount);
  RT_CHECK(cudaMemcpy(result.data(), out, kCount * sizeof(int), cudaMemcpyDeviceToHost));
  long mismatches = 0;
  int sum = 0;
  for (int i = 0; i < kCount; ++i) {
    sum += host[i];
    if (result[i] != sum) rt_report_mismatch(mismatches, "prefix sum", i, result[i], sum);
  }
  std::printf("rt_sasslib: prefix sum of %d elements, last %d\n", kCount, result[kCount - 1]);
  RT_CHECK(cudaFree(in));
  RT_CHECK(cudaFree(out));
  return rt_finish("rt_sasslib", mismatches);
}
