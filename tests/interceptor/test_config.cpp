// Output naming: %p/%h/%q{VAR}/%% expansion, and the per-process names children and forks get.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "cusnap/capture/config.h"

using namespace cusnap::capture;

TEST_CASE("output patterns expand like Nsight Systems names") {
  ::setenv("CUSNAP_TEST_TAG", "run7", 1);
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  CHECK(expand_output_pattern("a_%p.cusnap", 42) == "a_42.cusnap");
  CHECK(expand_output_pattern("%h-%q{CUSNAP_TEST_TAG}-100%%", 1) == std::string(host) + "-run7-100%");
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
