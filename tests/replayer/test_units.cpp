// Pieces of the replayer that need no capture: image inspection, driver resolution, statistics,
// address translation arithmetic.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "replayer/driver.h"
#include "replayer/memory.h"
#include "replayer/target.h"
#include "replayer/timing.h"

using namespace cusnap::replayer;

namespace {

// A fatbin container as nvcc writes it (cuda-facts.md): header, then entries of 64-byte headers.
std::vector<uint8_t> fake_fatbin(const std::vector<std::pair<uint16_t, uint32_t>>& entries) {
  std::vector<uint8_t> out(16, 0);
  uint32_t magic = 0xBA55ED50;
  uint16_t version = 1, header = 16;
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &version, 2);
  std::memcpy(out.data() + 6, &header, 2);
  for (auto [kind, sm] : entries) {
    std::vector<uint8_t> e(64 + 16, 0);
    uint32_t entry_header = 64;
    uint64_t payload = 16;
    std::memcpy(e.data(), &kind, 2);
    std::memcpy(e.data() + 4, &entry_header, 4);
    std::memcpy(e.data() + 8, &payload, 8);
    std::memcpy(e.data() + 28, &sm, 4);
    out.insert(out.end(), e.begin(), e.end());
  }
  uint64_t size = out.size() - 16;
  std::memcpy(out.data() + 8, &size, 8);
  return out;
}

}  // namespace

TEST_CASE("fatbin and PTX images name the architectures they can run on", "[units][target]") {
  auto both = image_architectures(fake_fatbin({{1, 75}, {2, 90}}));
  REQUIRE(both.known);
  CHECK(both.ptx == std::vector<int>{75});
  CHECK(both.sass == std::vector<int>{90});
  CHECK(image_runs_on(both, 90));
  CHECK(image_runs_on(both, 86));  // PTX 7.5 JIT-compiles for 8.6
  CHECK_FALSE(image_runs_on(both, 70));
  CHECK(describe_architectures(both) == "sm_90, compute_75");

  auto sass_only = image_architectures(fake_fatbin({{2, 90}}));
  CHECK(image_runs_on(sass_only, 90));
  CHECK_FALSE(image_runs_on(sass_only, 89));
  CHECK_FALSE(image_runs_on(sass_only, 100));

  std::string ptx = "//\n.version 9.0\n.target sm_80\n.address_size 64\n";
  auto text = image_architectures({reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size()});
  CHECK(text.ptx == std::vector<int>{80});
  CHECK(image_runs_on(text, 90));
  CHECK_FALSE(image_runs_on(text, 75));

  // Damaged headers: never out of bounds, never a false refusal.
  auto truncated = fake_fatbin({{1, 75}});
  truncated.resize(40);
  CHECK(image_runs_on(image_architectures(truncated), 50));
  std::vector<uint8_t> junk(3, 0xBA);
  CHECK_FALSE(image_architectures(junk).known);

  // Containers back to back (a whole .nv_fatbin section): every one is read.
  auto first = fake_fatbin({{2, 90}});
  auto second = fake_fatbin({{1, 75}});
  first.insert(first.end(), second.begin(), second.end());
  auto section = image_architectures(first);
  REQUIRE(section.known);
  CHECK(section.sass == std::vector<int>{90});
  CHECK(section.ptx == std::vector<int>{75});

  // A damaged entry after a good one: the image is unknown (the driver decides), not judged by
  // the sm_90 cubin before the damage, which would refuse a device the PTX runs on.
  auto damaged = fake_fatbin({{2, 90}, {1, 75}});
  uint32_t huge_header = 0xFFFF;
  std::memcpy(damaged.data() + 16 + 80 + 4, &huge_header, 4);
  auto partial = image_architectures(damaged);
  CHECK_FALSE(partial.known);
  CHECK(image_runs_on(partial, 86));
}

TEST_CASE("the driver is chosen and opened only by absolute path", "[units][driver]") {
  auto missing = resolve_driver("/nonexistent/libcuda.so.1");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().kind() == ErrorKind::kInvalidArgument);

  ::setenv("CUSNAP_EMULATOR_PATH", CUSNAP_TEST_EMULATOR, 1);
  auto emulator = resolve_driver("emulator");
  ::unsetenv("CUSNAP_EMULATOR_PATH");
  REQUIRE(emulator);
  CHECK(emulator->path == CUSNAP_TEST_EMULATOR);

  CHECK_FALSE(Driver::open("libcuda.so.1"));  // a soname would search LD_LIBRARY_PATH
  auto not_a_driver = Driver::open("/lib/x86_64-linux-gnu/libz.so.1");
  REQUIRE_FALSE(not_a_driver);
  CHECK(not_a_driver.error().to_string().find("cuGetProcAddress_v2") != std::string::npos);

  auto driver = Driver::open(CUSNAP_TEST_EMULATOR);
  REQUIRE(driver);
  CHECK(driver.value()->version() >= 12000);
  CHECK(driver.value()->has_vmm());
  CHECK(driver.value()->error_name(CUDA_ERROR_INVALID_VALUE) == "CUDA_ERROR_INVALID_VALUE");
}

TEST_CASE("replay resolves --driver with the search capture and the interceptor use",
          "[units][driver]") {
  // CUSNAP_REAL_DRIVER, the override the interceptor has always obeyed, is auto's answer here too
  // (cusnap/common/driver_search.h), so capture and replay agree on one machine.
  ::setenv("CUSNAP_REAL_DRIVER", CUSNAP_TEST_EMULATOR, 1);
  auto chosen = resolve_driver("auto");
  ::unsetenv("CUSNAP_REAL_DRIVER");
  REQUIRE(chosen);
  CHECK(chosen->path == CUSNAP_TEST_EMULATOR);
  CHECK(chosen->reason == "auto: CUSNAP_REAL_DRIVER");
  ::setenv("CUSNAP_REAL_DRIVER", "/nonexistent/libcuda.so.1", 1);
  auto missing = resolve_driver("auto");
  ::unsetenv("CUSNAP_REAL_DRIVER");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().kind() == ErrorKind::kTarget);
  CHECK(missing.error().to_string().find("CUSNAP_REAL_DRIVER=/nonexistent/libcuda.so.1: missing") !=
        std::string::npos);
#ifdef CUSNAP_TEST_INTERCEPTOR
  // The interceptor is never a replay target (it would look for a driver of its own).
  auto shim = resolve_driver(CUSNAP_TEST_INTERCEPTOR);
  REQUIRE_FALSE(shim);
  CHECK(shim.error().kind() == ErrorKind::kInvalidArgument);
  CHECK(shim.error().to_string().find("the cusnap interceptor, not a driver") != std::string::npos);
#endif
}

TEST_CASE("time statistics", "[units][timing]") {
  TimeStats s = summarize_times({4.0, 1.0, 3.0, 2.0});
  CHECK(s.samples == 4);
  CHECK(s.min_ms == 1.0);
  CHECK(s.max_ms == 4.0);
  CHECK(s.median_ms == 2.5);
  CHECK(s.mean_ms == 2.5);
  CHECK(s.stddev_ms == Approx(1.118034).epsilon(1e-6));
  CHECK(summarize_times({}).samples == 0);

  // Nsight Compute's rules (common/kernel_filter.h): the function name exactly, or regex:.
  auto selector = LaunchSelector::create("regex:^gemm", 1, 2);
  REQUIRE(selector);
  CHECK_FALSE(selector->select("_Z4gemmPf"));  // skipped
  CHECK_FALSE(selector->select("_Z3foov"));    // does not match
  CHECK(selector->select("_Z4gemmPf"));
  CHECK(selector->select("_Z4gemmPf"));
  CHECK_FALSE(selector->select("_Z4gemmPf"));  // count reached
  auto exact = LaunchSelector::create("gemm", 0, 0);
  CHECK(exact->select("_Z4gemmPf"));  // the function name of "gemm(float*)"
  CHECK_FALSE(exact->select("_Z6gemm_tPf"));
  auto no_params = LaunchSelector::create("regex:float", 0, 0);
  CHECK_FALSE(no_params->select("_Z4gemmPf"));  // parameters are not part of the function name
  // --kernel-name-base: the demangled name has them, the mangled name is the symbol.
  auto demangled =
      LaunchSelector::create("regex:float", 0, 0, cusnap::common::KernelNameBase::kDemangled);
  CHECK(demangled->select("_Z4gemmPf"));
  auto mangled =
      LaunchSelector::create("_Z4gemmPf", 0, 0, cusnap::common::KernelNameBase::kMangled);
  CHECK(mangled->select("_Z4gemmPf"));
  CHECK_FALSE(LaunchSelector::create("gemm", 0, 0, cusnap::common::KernelNameBase::kMangled)
                  ->select("_Z4gemmPf"));
}

TEST_CASE("time statistics keep the samples and their noise", "[units][timing]") {
  TimeStats s = summarize_times({4.0, 1.0, 3.0, 2.0});
  CHECK(s.values_ms == std::vector<double>{4.0, 1.0, 3.0, 2.0});  // in the order taken
  // Relative standard error: sample stddev sqrt(5/3) / sqrt(4) / mean 2.5.
  CHECK(s.noise == Approx(std::sqrt(5.0 / 3.0) / 2 / 2.5));
  CHECK(relative_standard_error({2.0}) == 0);
  CHECK(relative_standard_error({0.0, 0.0}) == 0);
}

TEST_CASE("adaptive sampling stops at the noise target, the minimums and the cap",
          "[units][timing]") {
  SamplingPolicy p;
  p.adaptive = true;
  p.min_samples = 4;
  p.max_noise = 0.01;
  p.min_time_seconds = 0;
  p.max_time_seconds = 5;
  std::vector<double> steady{1.0, 1.0, 1.0};
  CHECK(sampling_state(p, steady, 0.1) == SamplingState::kMore);  // below --min-samples
  steady.push_back(1.0);
  CHECK(sampling_state(p, steady, 0.1) == SamplingState::kDone);
  std::vector<double> noisy{1.0, 2.0, 1.0, 2.0};  // RSE about 14 %
  CHECK(sampling_state(p, noisy, 0.1) == SamplingState::kMore);
  CHECK(sampling_state(p, noisy, 5.0) == SamplingState::kCapped);  // --max-time passed
  p.min_time_seconds = 0.01;  // 10 ms of samples: four 1 ms samples are not enough
  CHECK(sampling_state(p, steady, 0.1) == SamplingState::kMore);
  std::vector<double> long_enough(10, 1.0);
  CHECK(sampling_state(p, long_enough, 0.1) == SamplingState::kDone);
  std::vector<double> many(kMaxSamples, 1.0);
  many[0] = 100;  // never quiet enough; the sample cap ends it
  p.max_noise = 0;
  CHECK(sampling_state(p, many, 0.1) == SamplingState::kCapped);
}

TEST_CASE("captured ranges are widened to the granularity and merged", "[units][memory]") {
  std::vector<MemoryRange> ranges = {{0x200000 + 16, 100}, {0x3ff000, 0x2000}, {0x1000000, 1}};
  auto widened = DeviceMemory::widen(ranges, 0x200000);
  REQUIRE(widened.size() == 2);
  CHECK(widened[0].base == 0x200000);
  CHECK(widened[0].size == 0x400000);  // the second range crosses into the next granule
  CHECK(widened[1].base == 0x1000000);
  CHECK(widened[1].size == 0x200000);
  CHECK(DeviceMemory::bytes_needed(ranges, 0x200000) == 0x600000);
}
