// The PTX-signature fallback for parameter layouts, against layouts worked out by hand from the
// PTX ABI (natural alignment, `.align` before the type for by-value aggregates).
#include <catch2/catch.hpp>

#include "ptx_signature.h"

using namespace cusnap::icpt;

namespace {

const char* const kPtx = R"(
.version 9.0
.target sm_75
.address_size 64

.visible .entry _Z4tinyv()
{
  ret;
}
.visible .entry mixed(
	.param .u8 mixed_param_0,
	.param .u64 .ptr .global .align 16 mixed_param_1,
	.param .f32 mixed_param_2,
	.param .align 8 .b8 mixed_param_3[24],
	.param .u16 mixed_param_4,
	.param .align 4 .b8 mixed_param_5[6],
	.param .f64 mixed_param_6
)
{
  ret;
}
.visible .entry noparens
{
  ret;
}
)";

}  // namespace

TEST_CASE("parameter layout from a PTX .entry signature") {
  auto layout = ptx_entry_layout(kPtx, "mixed");
  REQUIRE(layout);
  REQUIRE(layout->size() == 7);
  const uint32_t offsets[] = {0, 8, 16, 24, 48, 52, 64};
  const uint32_t sizes[] = {1, 8, 4, 24, 2, 6, 8};
  for (size_t i = 0; i < 7; ++i) {
    INFO("parameter " << i);
    CHECK((*layout)[i].offset == offsets[i]);
    CHECK((*layout)[i].size == sizes[i]);
  }
  auto none = ptx_entry_layout(kPtx, "_Z4tinyv");
  REQUIRE(none);
  CHECK(none->empty());
  auto bare = ptx_entry_layout(kPtx, "noparens");
  REQUIRE(bare);
  CHECK(bare->empty());
  CHECK_FALSE(ptx_entry_layout(kPtx, "missing"));
  CHECK_FALSE(ptx_entry_layout(kPtx, "mixe"));  // a prefix of an entry name is not that entry
}
