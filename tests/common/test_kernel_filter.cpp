// The one kernel filter and launch selection of capture, replay and extraction
// (cusnap/common/kernel_filter.h: Nsight Compute's --kernel-name / --kernel-name-base rules).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cusnap/common/kernel_filter.h"

using cusnap::common::KernelFilter;
using cusnap::common::KernelNameBase;
using cusnap::common::LaunchSelection;

namespace {

KernelFilter make(const std::string& text, KernelNameBase base = KernelNameBase::kFunction) {
  std::string error;
  auto f = KernelFilter::create(text, base, &error);
  INFO(error);
  REQUIRE(f.has_value());
  return std::move(*f);
}

std::vector<int> selected(const std::string& text, uint64_t skip, uint64_t count,
                          const std::vector<std::string>& launches) {
  LaunchSelection s(make(text), skip, count);
  std::vector<int> out;
  for (size_t i = 0; i < launches.size(); ++i)
    if (s.select(launches[i])) out.push_back(static_cast<int>(i));
  return out;
}

}  // namespace

TEST_CASE("kernel filter: a plain name matches the function name exactly, regex: searches it") {
  const std::vector<std::string> launches{"_Z6vecAddPKfS0_Pfi", "gemm_nt", "_Z4gemmPfi", "other"};
  CHECK(selected("", 0, 0, launches) == std::vector<int>{0, 1, 2, 3});
  CHECK(selected("gemm", 0, 0, launches) == std::vector<int>{2});  // exact, not gemm_nt
  CHECK(selected("regex:gemm", 0, 0, launches) == std::vector<int>{1, 2});
  CHECK(selected("regex:^vec", 0, 0, launches) == std::vector<int>{0});
  CHECK(selected("vecAdd", 0, 0, launches) == std::vector<int>{0});  // demangled, no parameters
}

TEST_CASE("kernel filter: the name base decides which spelling is matched") {
  CHECK(make("_Z4gemmPfi", KernelNameBase::kMangled).matches("_Z4gemmPfi"));
  CHECK_FALSE(make("_Z4gemmPfi").matches("_Z4gemmPfi"));
  CHECK(make("gemm(float*, int)", KernelNameBase::kDemangled).matches("_Z4gemmPfi"));
  CHECK(make("regex:float\\*", KernelNameBase::kDemangled).matches("_Z4gemmPfi"));
  CHECK_FALSE(make("regex:float\\*").matches("_Z4gemmPfi"));
}

TEST_CASE("launch selection: skip passes over matching launches and count stops after M") {
  const std::vector<std::string> launches{"k", "x", "k", "k", "x", "k"};
  CHECK(selected("k", 1, 0, launches) == std::vector<int>{2, 3, 5});
  CHECK(selected("k", 1, 2, launches) == std::vector<int>{2, 3});
  CHECK(selected("k", 0, 1, launches) == std::vector<int>{0});
  CHECK(selected("k", 9, 0, launches).empty());
}

TEST_CASE("kernel filter: an invalid regex is refused with the pattern named") {
  std::string error;
  CHECK_FALSE(KernelFilter::create("regex:(", KernelNameBase::kFunction, &error).has_value());
  CHECK(error.find("regex:(") != std::string::npos);
}
