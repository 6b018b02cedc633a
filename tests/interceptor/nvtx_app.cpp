// The application for interceptor.nvtx: NVTX ranges and marks around driver-API launches, with
// every kind of event the interceptor records. NVTX is used before CUDA is touched (a mark, a
// domain and a registered string), so the capture must see an application whose first NVTX call
// precedes its first driver call.
//   nvtx_app IMAGE
// IMAGE: samples/many_launches' fatbin (kernel `step`). Prints a checksum of the result only, so
// that its stdout is the same with and without a tool attached (NVTX's return values differ).
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "sample_common.h"  // samples/common: CU_CHECK, load_kernel_file

namespace {

nvtxEventAttributes_t attributes(uint32_t color, uint32_t category) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = color;
  a.category = category;
  return a;
}

void launch(CUfunction step, CUdeviceptr buffer, unsigned k) {
  int n = 64;
  void* params[] = {&buffer, &n, &k};
  CU_CHECK(cuLaunchKernel(step, 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: nvtx_app IMAGE\n");
    return 2;
  }
  nvtxMarkA("before cuda");
  nvtxDomainHandle_t domain = nvtxDomainCreateA("cusnap.test");
  nvtxStringHandle_t phase2 = nvtxDomainRegisterStringA(domain, "phase 2 (registered)");

  const auto loaded = cusnap::samples::load_kernel_file(argv[1], "step");
  std::vector<uint32_t> host(64, 1);
  CUdeviceptr buffer;
  CU_CHECK(cuMemAlloc(&buffer, host.size() * 4));
  CU_CHECK(cuMemcpyHtoD(buffer, host.data(), host.size() * 4));

  nvtxEventAttributes_t one = attributes(0xff00ff00u, 7);
  one.messageType = NVTX_MESSAGE_TYPE_ASCII;
  one.message.ascii = "phase 1";
  nvtxRangePushEx(&one);
  launch(loaded.function, buffer, 0);
  nvtxRangePushA("phase 1 inner");
  launch(loaded.function, buffer, 1);
  nvtxRangePop();
  nvtxRangePop();

  nvtxEventAttributes_t two = attributes(0xffff0000u, 0);
  two.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  two.message.registered = phase2;
  nvtxDomainRangePushEx(domain, &two);
  launch(loaded.function, buffer, 2);
  nvtxDomainRangePop(domain);

  nvtxRangeId_t async = nvtxRangeStartA("phase 3 (start/end)");
  nvtxRangePushW(L"phase 3 wide \u00e9");
  launch(loaded.function, buffer, 3);
  nvtxRangePop();
  nvtxRangeEnd(async);

  nvtxEventAttributes_t done = attributes(0xff0000ffu, 3);
  done.messageType = NVTX_MESSAGE_TYPE_ASCII;
  done.message.ascii = "done";
  nvtxDomainMarkEx(domain, &done);

  CU_CHECK(cuMemcpyDtoH(host.data(), buffer, host.size() * 4));
  uint64_t sum = 0;
  for (uint32_t word : host) sum = sum * 1099511628211ull + word;
  std::printf("checksum %016llx\n", static_cast<unsigned long long>(sum));
  CU_CHECK(cuMemFree(buffer));
  CU_CHECK(cuModuleUnload(loaded.module));
  CU_CHECK(cuDevicePrimaryCtxRelease(loaded.device));
  return 0;
}
