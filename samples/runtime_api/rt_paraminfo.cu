// cuKernelGetParamInfo / cuFuncGetParamInfo for a kernel the runtime launched: the CUkernel from
// cudaGetKernel and the CUfunction from cudaGetFuncBySymbol, the driver entry points from
// cudaGetDriverEntryPointByVersion (so under cusnap they are the shim's, reached the way the
// runtime reaches the driver). Each parameter's (offset, size) must be the C ABI's.
#include <cuda.h>

#include <cstddef>

#include "rt_check.h"

namespace {

__global__ void many_params(int a, double* p, char c, float4 v, short s) {
  if (threadIdx.x == 0 && blockIdx.x == 0) p[0] = a + c + v.x + v.y + v.z + v.w + s;
}

struct Expected {
  size_t offset;
  size_t size;
};
// int @0, double* @8, char @16, float4 @32 (16-byte aligned), short @48.
constexpr Expected kExpected[] = {{0, 4}, {8, 8}, {16, 1}, {32, 16}, {48, 2}};
constexpr int kParams = 5;

using KernelParamInfo = CUresult(CUDAAPI*)(CUkernel, size_t, size_t*, size_t*);
using FuncParamInfo = CUresult(CUDAAPI*)(CUfunction, size_t, size_t*, size_t*);

void* entry_point(const char* name) {
  void* pfn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  RT_CHECK(cudaGetDriverEntryPointByVersion(name, &pfn, 12040, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || pfn == nullptr) {
    std::fprintf(stderr, "rt_paraminfo: the driver has no %s (status %d)\n", name, static_cast<int>(status));
    std::exit(2);
  }
  return pfn;
}

template <typename Query, typename Handle>
long check(const char* what, Query query, Handle handle) {
  long mismatches = 0;
  for (int i = 0; i < kParams; ++i) {
    size_t offset = 0, size = 0;
    CUresult result = query(handle, i, &offset, &size);
    std::printf("rt_paraminfo: %s param %d: result %d offset %zu size %zu\n", what, i,
                static_cast<int>(result), offset, size);
    if (result != CUDA_SUCCESS) {
      rt_report_mismatch(mismatches, what, i, result, 0);
    } else if (offset != kExpected[i].offset || size != kExpected[i].size) {
      rt_report_mismatch(mismatches, what, i, offset * 1000.0 + size,
                         kExpected[i].offset * 1000.0 + kExpected[i].size);
    }
  }
  // One past the last parameter must be refused.
  size_t offset = 0, size = 0;
  CUresult past = query(handle, kParams, &offset, &size);
  std::printf("rt_paraminfo: %s param %d (past the end): result %d\n", what, kParams, static_cast<int>(past));
  if (past == CUDA_SUCCESS) rt_report_mismatch(mismatches, what, kParams, 0, 1);
  return mismatches;
}

}  // namespace

int main() {
  double* device = nullptr;
  RT_CHECK(cudaMalloc(&device, sizeof(double)));
  many_params<<<1, 32>>>(3, device, 4, make_float4(1, 2, 3, 4), 5);
  RT_CHECK_LAUNCH();
  RT_CHECK(cudaDeviceSynchronize());
  double host = 0;
  RT_CHECK(cudaMemcpy(&host, device, sizeof host, cudaMemcpyDeviceToHost));

  cudaKernel_t kernel = nullptr;
  RT_CHECK(cudaGetKernel(&kernel, many_params));
  cudaFunction_t function = nullptr;
  RT_CHECK(cudaGetFuncBySymbol(&function, reinterpret_cast<const void*>(many_params)));
  auto kernel_info = reinterpret_cast<KernelParamInfo>(entry_point("cuKernelGetParamInfo"));
  auto func_info = reinterpret_cast<FuncParamInfo>(entry_point("cuFuncGetParamInfo"));

  long mismatches = 0;
  if (host != 22.0) rt_report_mismatch(mismatches, "kernel result", 0, host, 22.0);
  mismatches += check("cuKernelGetParamInfo", kernel_info, reinterpret_cast<CUkernel>(kernel));
  mismatches += check("cuFuncGetParamInfo", func_info, reinterpret_cast<CUfunction>(function));
  RT_CHECK(cudaFree(device));
  return rt_finish("rt_paraminfo", mismatches);
}
