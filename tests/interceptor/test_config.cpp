// Output naming: %p/%h/%q{VAR}/%% expansion, and the per-process names children and forks get.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "cusnap/capture/config.h"
#include "cusnap/common/kernel_filter.h"

using namespace cusnap::capture;

TEST_CASE("output patterns expand like Nsight Systems names") {
  ::setenv("CUSNAP_TEST_TAG", "run7", 1);
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  CHECK(expand_output_pattern("a_%p.cusnap", 42) == "a_42.cusnap");
  CHECK(expand_output_pattern("%h-%q{CUSNAP_TEST_TAG}-100%%", 1) ==
        std::string(host) + "-run7-100%");
  CHECK(expand_output_pattern("%q{CUSNAP_TEST_UNSET_VARIABLE}x", 1) == "x");
  CHECK(expand_output_pattern("odd%", 1) == "odd%");
  CHECK(expand_output_pattern("%z", 1) == "%z");
}

TEST_CASE("processes other than the root write their own file") {
  CaptureConfig config;
  config.output_pattern = "dir.v2/out.cusnap";
  config.root_pid = 100;
  CHECK(process_output_name(config, 100) == "dir.v2/out.cusnap");
  CHECK(process_output_name(config, 123) == "dir.v2/out.123.cusnap");
  config.output_pattern = "dir.v2/out";
  CHECK(process_output_name(config, 123) == "dir.v2/out.123");
  config.output_pattern = "cap_%p.cusnap";
  CHECK(process_output_name(config, 123) == "cap_123.cusnap");
  config.root_pid = 0;  // no root known: the pattern as given
  config.output_pattern = "plain.cusnap";
  CHECK(process_output_name(config, 123) == "plain.cusnap");
}

TEST_CASE("snapshot settings come from the environment, invalid values fall back") {
  ::setenv("CUSNAP_SNAPSHOT_KERNELS", "regex:^scale", 1);
  ::setenv("CUSNAP_LAUNCH_SKIP", "3", 1);
  ::setenv("CUSNAP_LAUNCH_COUNT", "2", 1);
  ::setenv("CUSNAP_SNAPSHOT_OUTPUTS", "1", 1);
  ::setenv("CUSNAP_SNAPSHOT_CHUNK", "8192", 1);
  CaptureConfig config = CaptureConfig::from_env();
  CHECK(config.snapshots());
  CHECK(config.snapshot_kernels == "regex:^scale");
  CHECK(config.snapshot_kernel_base == "function");
  CHECK(config.launch_skip == 3);
  CHECK(config.launch_count == 2);
  CHECK(config.snapshot_outputs);
  CHECK(config.snapshot_chunk_bytes == 8192);
  ::setenv("CUSNAP_SNAPSHOT_CHUNK", "100", 1);  // below the minimum
  CHECK(CaptureConfig::from_env().snapshot_chunk_bytes ==
        CaptureConfig::kDefaultSnapshotChunkBytes);
  ::unsetenv("CUSNAP_SNAPSHOT_KERNELS");
  ::unsetenv("CUSNAP_LAUNCH_SKIP");
  ::unsetenv("CUSNAP_LAUNCH_COUNT");
  ::unsetenv("CUSNAP_SNAPSHOT_OUTPUTS");
  ::unsetenv("CUSNAP_SNAPSHOT_CHUNK");
  CaptureConfig off = CaptureConfig::from_env();
  CHECK_FALSE(off.snapshots());
  CHECK(off.snapshot_chunk_bytes == 65536);
  CHECK_FALSE(off.snapshot_outputs);
}

TEST_CASE("kernel filters follow Nsight Compute: exact names, regex: searched, name bases") {
  using namespace cusnap::common;
  const std::string mangled = "_Z5scaleIfEvPT_i";  // void scale<float>(float*, int)
  CHECK(kernel_name_in_base(mangled, KernelNameBase::kMangled) == mangled);
  CHECK(kernel_name_in_base(mangled, KernelNameBase::kDemangled) ==
        "void scale<float>(float*, int)");
  CHECK(kernel_name_in_base(mangled, KernelNameBase::kFunction) == "scale<float>");
  CHECK(kernel_name_in_base("vector_add", KernelNameBase::kFunction) == "vector_add");
  std::string error;
  auto exact = KernelFilter::create("scale<float>", KernelNameBase::kFunction, &error);
  REQUIRE(exact);
  CHECK(exact->matches(mangled));
  CHECK_FALSE(exact->matches("_Z5scaleIdEvPT_i"));
  auto substring = KernelFilter::create("scale", KernelNameBase::kFunction, &error);
  REQUIRE(substring);
  CHECK_FALSE(substring->matches(mangled));  // plain text is an exact match, not a substring
  auto regex = KernelFilter::create("regex:^sca", KernelNameBase::kFunction, &error);
  REQUIRE(regex);
  CHECK(regex->matches(mangled));
  CHECK_FALSE(regex->matches("rescale"));
  auto mangled_regex = KernelFilter::create("regex:^_Z5", KernelNameBase::kMangled, &error);
  REQUIRE(mangled_regex);
  CHECK(mangled_regex->matches(mangled));
  CHECK_FALSE(KernelFilter::create("regex:(", KernelNameBase::kFunction, &error));
  CHECK_FALSE(error.empty());
  CHECK(parse_kernel_name_base("demangled") == KernelNameBase::kDemangled);
  CHECK_FALSE(parse_kernel_name_base("Function"));
}

TEST_CASE("launch selection counts matching launches: skip, then count") {
  using namespace cusnap::common;
  auto filter = KernelFilter::create("a", KernelNameBase::kFunction, nullptr);
  REQUIRE(filter);
  LaunchSelection selection(std::move(*filter), 1, 2);
  std::vector<bool> got;
  for (const char* name : {"a", "b", "a", "a", "b", "a"}) got.push_back(selection.select(name));
  CHECK(got == std::vector<bool>{false, false, true, true, false, false});
  CHECK(selection.exhausted());
}

TEST_CASE("capture range settings: triggers, end modes, the nvtx spec, range file names") {
  CaptureConfig config;
  RangeSettings ranges;
  std::string error;
  REQUIRE(parse_range_settings(config, ranges, error));
  CHECK(!ranges.active());

  config.capture_range = "cudaProfilerApi";
  REQUIRE(parse_range_settings(config, ranges, error));
  CHECK(ranges.trigger == RangeSettings::Trigger::kProfilerApi);
  CHECK(!ranges.repeat);
  CHECK(ranges.max_ranges == 1);
  CHECK(std::string(range_trigger_name(ranges.trigger)) == "cudaProfilerApi");

  config.capture_range_end = "repeat:3";
  REQUIRE(parse_range_settings(config, ranges, error));
  CHECK(ranges.repeat);
  CHECK(ranges.max_ranges == 3);
  config.capture_range_end = "repeat";
  REQUIRE(parse_range_settings(config, ranges, error));
  CHECK(ranges.max_ranges == 0);
  for (const char* bad : {"repeat:0", "repeat:", "repeat:x", "again"}) {
    config.capture_range_end = bad;
    CHECK(!parse_range_settings(config, ranges, error));
    CHECK(error.find(bad) != std::string::npos);
  }
  config.capture_range_end = "stop";

  config.capture_range = "nvtx";
  CHECK(!parse_range_settings(config, ranges, error));  // no message
  config.nvtx_capture = "train step@my.domain";
  REQUIRE(parse_range_settings(config, ranges, error));
  CHECK(ranges.nvtx_message == "train step");
  CHECK(ranges.nvtx_domain == "my.domain");
  config.nvtx_capture = "a@b@c";  // the last @ separates the domain
  REQUIRE(parse_range_settings(config, ranges, error));
  CHECK(ranges.nvtx_message == "a@b");
  CHECK(ranges.nvtx_domain == "c");
  config.nvtx_capture = "plain";
  REQUIRE(parse_range_settings(config, ranges, error));
  CHECK(ranges.nvtx_domain.empty());

  config.capture_range = "signal";
  CHECK(!parse_range_settings(config, ranges, error));  // --nvtx-capture without nvtx
  config.nvtx_capture.clear();
  REQUIRE(parse_range_settings(config, ranges, error));
  config.capture_range = "sometimes";
  CHECK(!parse_range_settings(config, ranges, error));

  ::setenv("CUSNAP_CAPTURE_RANGE", "signal", 1);
  ::setenv("CUSNAP_CAPTURE_RANGE_END", "repeat:2", 1);
  ::setenv("CUSNAP_NVTX_CAPTURE", "", 1);
  CaptureConfig from_env = CaptureConfig::from_env();
  CHECK(from_env.capture_range == "signal");
  CHECK(from_env.capture_range_end == "repeat:2");
  CHECK(from_env.nvtx_capture.empty());
  ::unsetenv("CUSNAP_CAPTURE_RANGE");
  ::unsetenv("CUSNAP_CAPTURE_RANGE_END");
  ::unsetenv("CUSNAP_NVTX_CAPTURE");

  CaptureConfig named;
  named.output_pattern = "out/r_%n.cusnap";
  RangeSettings repeat;
  repeat.trigger = RangeSettings::Trigger::kProfilerApi;
  repeat.repeat = true;
  CHECK(range_output_name(named, repeat, 7, 2) == "out/r_2.cusnap");
  named.output_pattern = "out.d/run.cusnap";
  CHECK(range_output_name(named, repeat, 7, 12) == "out.d/run.12.cusnap");
  named.output_pattern = "run";
  CHECK(range_output_name(named, repeat, 7, 1) == "run.1");
  RangeSettings stop = repeat;
  stop.repeat = false;
  named.output_pattern = "run.cusnap";
  CHECK(range_output_name(named, stop, 7, 1) == "run.cusnap");
  named.root_pid = 5;  // another process of the application: its pid, then the range
  CHECK(range_output_name(named, repeat, 7, 3) == "run.7.3.cusnap");
}
