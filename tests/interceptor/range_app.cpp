// The application for interceptor.range.*: work before, inside and after capture ranges, with
// the range's inputs made before it starts (a module whose image buffer is freed right after the
// load, allocations filled and changed by launches, a stream and an event), so that a range
// capture replays only if its start restates that state and memory.
//   range_app IMAGE MODE
// IMAGE: samples/many_launches' fatbin (kernel `step`). MODE picks the trigger the range uses:
//   profiler  cuProfilerStart .. cuProfilerStop once, work after it
//   repeat    three cuProfilerStart .. cuProfilerStop ranges with work between them
//   never     no range ever starts
//   nostop    cuProfilerStart, never stopped (the process exits inside the range)
//   nvtx      NVTX ranges: an unmatched pop, "warmup" (default domain), "work" in domain
//             cusnap.range with a nested "work" inside, then more work
//   signal    raise(SIGUSR1) before and after the range's work
//   handler   as signal, with a SIGUSR1 handler of the application's own, which must run each
//             time (checked: exit code 3 otherwise)
// Prints one checksum of the results (the same with and without a capture).
#include <cuda.h>
#include <cudaProfiler.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "sample_common.h"  // samples/common: CU_CHECK, load_kernel_file

namespace {

constexpr int kN = 4096;  // words per buffer: 16 KiB

volatile sig_atomic_t g_handled = 0;
void on_usr1(int) { g_handled = g_handled + 1; }

struct App {
  CUfunction step = nullptr;
  CUstream stream = nullptr;
  CUevent event = nullptr;
  CUdeviceptr a = 0, b = 0;
  uint64_t checksum = 0;
  unsigned launches = 0;

  void launch(CUdeviceptr buffer) {
    int n = kN;
    unsigned k = launches++;
    void* params[] = {&buffer, &n, &k};
    CU_CHECK(cuLaunchKernel(step, kN / 128, 1, 1, 128, 1, 1, 0, stream, params, nullptr));
  }
  void read(CUdeviceptr buffer) {
    std::vector<unsigned> host(kN);
    CU_CHECK(cuMemcpyDtoHAsync(host.data(), buffer, kN * 4, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    for (unsigned v : host) checksum = checksum * 1099511628211ull + v;
  }
  // The interesting work: reads what was made before, changes it, copies it back.
  void work() {
    launch(a);
    launch(b);
    CU_CHECK(cuEventRecord(event, stream));
    CU_CHECK(cuEventSynchronize(event));
    read(a);
    read(b);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: range_app IMAGE profiler|repeat|never|nostop|nvtx|signal|handler\n");
    return 2;
  }
  const std::string mode = argv[2];
  if (mode == "handler") {
    struct sigaction action {};
    action.sa_handler = on_usr1;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, nullptr);
  }
  App app;
  {
    // The image buffer is freed when this returns: the range's start needs the shim's copy.
    const auto loaded = cusnap::samples::load_kernel_file(argv[1], "step");
    app.step = loaded.function;
  }
  CU_CHECK(cuStreamCreate(&app.stream, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuEventCreate(&app.event, CU_EVENT_DEFAULT));
  std::vector<unsigned> init(kN);
  for (int i = 0; i < kN; ++i) init[i] = static_cast<unsigned>(i * 7 + 1);
  CU_CHECK(cuMemAlloc(&app.a, kN * 4));
  CU_CHECK(cuMemAlloc(&app.b, kN * 4));
  CU_CHECK(cuMemcpyHtoD(app.a, init.data(), kN * 4));
  CU_CHECK(cuMemcpyHtoD(app.b, init.data(), kN * 4));
  // Freed before any range: its creation record must not reach a range's file.
  CUdeviceptr gone = 0;
  CU_CHECK(cuMemAlloc(&gone, 1 << 20));
  CU_CHECK(cuMemFree(gone));
  app.launch(app.a);  // before the range: the range starts from these results
  app.launch(app.a);
  app.read(app.a);

  if (mode == "profiler" || mode == "nostop") {
    CU_CHECK(cuProfilerStart());
    app.work();
    if (mode == "profiler") CU_CHECK(cuProfilerStop());
  } else if (mode == "repeat") {
    for (int r = 0; r < 3; ++r) {
      CUdeviceptr scratch = 0;  // made and freed between ranges
      CU_CHECK(cuMemAlloc(&scratch, kN * 4));
      CU_CHECK(cuMemcpyHtoD(scratch, init.data(), kN * 4));
      app.launch(scratch);
      CU_CHECK(cuMemcpyDtoD(app.b, scratch, kN * 4));
      CU_CHECK(cuCtxSynchronize());
      CU_CHECK(cuMemFree(scratch));
      CU_CHECK(cuProfilerStart());
      app.work();
      CU_CHECK(cuProfilerStop());
    }
  } else if (mode == "nvtx") {
    nvtxRangePop();  // mismatched: no push before it
    nvtxRangePushA("warmup");
    app.launch(app.b);
    nvtxRangePop();
    nvtxDomainHandle_t domain = nvtxDomainCreateA("cusnap.range");
    nvtxRangePushA("work");  // the right message in the wrong (default) domain
    app.launch(app.b);
    nvtxRangePop();
    nvtxEventAttributes_t work{};
    work.version = NVTX_VERSION;
    work.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    work.messageType = NVTX_MESSAGE_TYPE_ASCII;
    work.message.ascii = "work";
    nvtxDomainRangePushEx(domain, &work);
    app.work();
    nvtxDomainRangePushEx(domain, &work);  // nested: the range ends at the outer pop
    app.work();
    nvtxDomainRangePop(domain);
    app.read(app.a);
    nvtxDomainRangePop(domain);
  } else if (mode == "signal" || mode == "handler") {
    raise(SIGUSR1);  // starts the range at the next driver call
    app.work();
    raise(SIGUSR1);  // stops it at the next driver call
  } else if (mode != "never") {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }

  // After the range: work that must not be in it.
  CUdeviceptr c = 0;
  CU_CHECK(cuMemAlloc(&c, kN * 4));
  CU_CHECK(cuMemcpyHtoD(c, init.data(), kN * 4));
  app.launch(c);
  app.launch(app.a);
  app.read(c);
  app.read(app.a);
  CU_CHECK(cuMemFree(c));
  std::printf("range_app %s: checksum %016llx, %u launches\n", mode.c_str(),
              static_cast<unsigned long long>(app.checksum), app.launches);
  if (mode == "handler" && g_handled != 2) {
    std::fprintf(stderr, "range_app: the application's SIGUSR1 handler ran %d times, not 2\n",
                 static_cast<int>(g_handled));
    return 3;
  }
  return 0;
}
