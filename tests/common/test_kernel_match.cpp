// The one launch filter of replay and extraction (cusnap/common/kernel_match.h).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cusnap/common/kernel_match.h"

using cusnap::common::LaunchFilter;

namespace {

std::vector<int> selected(LaunchFilter filter, const std::vector<std::string>& launches) {
  std::vector<int> out;
  for (size_t i = 0; i < launches.size(); ++i)
    if (filter.select(launches[i])) out.push_back(static_cast<int>(i));
  return out;
}

LaunchFilter make(const std::string& regex, uint64_t skip = 0, uint64_t count = 0) {
  std::string error;
  auto f = LaunchFilter::create(regex, skip, count, &error);
  INFO(error);
  REQUIRE(f.has_value());
  return *f;
}

}  // namespace

TEST_CASE("launch filter: the regex is searched in the mangled and the demangled name") {
  const std::vector<std::string> launches{"_Z6vecAddPKfS0_Pfi", "gemm_nt", "_Z4gemmPfi", "other"};
  CHECK(selected(make(""), launches) == std::vector<int>{0, 1, 2, 3});
  CHECK(selected(make("gemm"), launches) == std::vector<int>{1, 2});
  CHECK(selected(make("regex:^gemm\\("), launches) == std::vector<int>{2});  // demangled only
  CHECK(selected(make("vecAdd\\(float const\\*"), launches) == std::vector<int>{0});
  CHECK(selected(make("^_Z6"), launches) == std::vector<int>{0});  // mangled only
}

TEST_CASE("launch filter: skip passes over matching launches and count stops after M") {
  const std::vector<std::string> launches{"k", "x", "k", "k", "x", "k"};
  CHECK(selected(make("k", 1), launches) == std::vector<int>{2, 3, 5});
  CHECK(selected(make("k", 1, 2), launches) == std::vector<int>{2, 3});
  CHECK(selected(make("k", 0, 1), launches) == std::vector<int>{0});
  CHECK(selected(make("k", 9), launches).empty());
  CHECK(make("k").matches("k"));
  CHECK_FALSE(make("k").matches("x"));
}

TEST_CASE("launch filter: an invalid regex is refused with the pattern named") {
  std::string error;
  CHECK_FALSE(LaunchFilter::create("regex:(", 0, 0, &error).has_value());
  CHECK(error.find("--kernel-name 'regex:('") != std::string::npos);
}
