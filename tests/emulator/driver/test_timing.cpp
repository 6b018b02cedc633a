// Emulated time inside kernels: nanosleep, %globaltimer and %clock64 advance one warp clock, and
// event timing covers it, so a kernel that sleeps 10 ms measures at least 10 ms, every time.
#include <cstdint>
#include <string>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

struct Timed {
  float ms = 0;                         // cuEventElapsedTime around the launch
  std::vector<unsigned long long> out;  // what the kernel stored per thread
};

Timed run_timed(const char* kernel, unsigned threads, std::vector<void*> extra_params) {
  std::string ptx = read_file(kernel_path("surface.ptx"));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, kernel));
  CUdeviceptr out = 0;
  REQUIRE_CU(cuMemAlloc(&out, threads * sizeof(unsigned long long)));
  std::vector<void*> params{&out};
  params.insert(params.end(), extra_params.begin(), extra_params.end());
  CUstream stream = nullptr;
  REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUevent start = nullptr, end = nullptr;
  REQUIRE_CU(cuEventCreate(&start, 0));
  REQUIRE_CU(cuEventCreate(&end, 0));
  REQUIRE_CU(cuEventRecord(start, stream));
  REQUIRE_CU(cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, 0, stream, params.data(), nullptr));
  REQUIRE_CU(cuEventRecord(end, stream));
  REQUIRE_CU(cuEventSynchronize(end));
  Timed t;
  REQUIRE_CU(cuEventElapsedTime(&t.ms, start, end));
  t.out.resize(threads);
  REQUIRE_CU(cuMemcpyDtoH(t.out.data(), out, threads * sizeof(unsigned long long)));
  REQUIRE_CU(cuEventDestroy(start));
  REQUIRE_CU(cuEventDestroy(end));
  REQUIRE_CU(cuStreamDestroy(stream));
  REQUIRE_CU(cuMemFree(out));
  REQUIRE_CU(cuModuleUnload(module));
  return t;
}

}  // namespace

TEST_CASE("timing: a kernel that nanosleeps 10 ms measures at least 10 ms, and %globaltimer agrees",
          "[timing]") {
  primary_context();
  int rounds = 10;
  unsigned ns = 1000000;
  const Timed t = run_timed("sleepy", 64, {&rounds, &ns});
  INFO("elapsed " << t.ms << " ms");
  CHECK(t.ms >= 10.0f);
  CHECK(t.ms < 11.0f);  // the sleep, not the few instructions around it
  for (unsigned i = 0; i < 64; ++i) {
    INFO("thread " << i);
    CHECK(t.out[i] >= 10000000ull);                            // the kernel saw 10 ms pass
    CHECK(static_cast<double>(t.out[i]) <= t.ms * 1e6 + 1.0);  // within what the events saw
  }
  // Deterministic: the same kernel takes the same emulated time.
  const Timed again = run_timed("sleepy", 64, {&rounds, &ns});
  CHECK(again.ms == t.ms);
  CHECK(again.out == t.out);
  // One nanosleep lasts at most 1 ms (the PTX ISA's bound): 4 x 5 ms sleeps 4 ms.
  rounds = 4;
  ns = 5000000;
  const Timed capped = run_timed("sleepy", 32, {&rounds, &ns});
  CHECK(capped.ms >= 4.0f);
  CHECK(capped.ms < 5.0f);
}

TEST_CASE("timing: spinning on %globaltimer or %clock64 advances the emulated time", "[timing]") {
  primary_context();
  unsigned long long ns = 10000000;
  const Timed spin = run_timed("spin_globaltimer", 32, {&ns});
  INFO("globaltimer spin: " << spin.ms << " ms");
  CHECK(spin.out[0] >= ns);
  CHECK(spin.ms >= 10.0f);
  CHECK(spin.ms < 11.0f);

  int clock_khz = 0;
  REQUIRE_CU(cuDeviceGetAttribute(&clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0));
  long long cycles = 20000000;  // 10.1 ms at 1.98 GHz
  const Timed clock = run_timed("spin_clock", 32, {&cycles});
  INFO("clock64 spin: " << clock.ms << " ms at " << clock_khz << " kHz");
  CHECK(clock.out[0] >= static_cast<unsigned long long>(cycles));
  // cycles / CLOCK_RATE is the time the events measure.
  CHECK(clock.ms >= static_cast<float>(cycles) / static_cast<float>(clock_khz));
  CHECK(clock.ms < static_cast<float>(cycles) / static_cast<float>(clock_khz) * 1.1f);
}

#endif  // CUSNAP_TEST_HAVE_PTX_ENGINE
