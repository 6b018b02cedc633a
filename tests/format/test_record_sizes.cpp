// format/record_sizes.h: the packed extent of a CUDA array, the rule the extract and the replay
// tap read arrays by, against sizes worked out here from cuda.h's CUarray_format list.
#include <capnp/message.h>

#include <catch2/catch.hpp>

#include "cusnap/format/record_sizes.h"

using namespace cusnap::format;

namespace {

Result<ArrayExtent> extent(int32_t format, uint32_t channels, uint64_t width, uint64_t height,
                           uint64_t depth) {
  capnp::MallocMessageBuilder b;
  auto a = b.initRoot<schema::ArrayCall>();
  a.setOp(schema::ArrayCall::Op::CREATE3D);
  a.setFormat(format);
  a.setChannels(channels);
  a.setWidth(width);
  a.setHeight(height);
  a.setDepth(depth);
  return array_extent(a.asReader());
}

}  // namespace

TEST_CASE("array_extent: element sizes of the classic formats, channels and absent dimensions") {
  struct Case {
    int32_t format;
    uint64_t element;
  };
  // CU_AD_FORMAT_{UNSIGNED,SIGNED}_INT{8,16,32}, HALF, FLOAT.
  for (Case c : {Case{0x01, 1}, Case{0x08, 1}, Case{0x02, 2}, Case{0x09, 2}, Case{0x10, 2},
                 Case{0x03, 4}, Case{0x0a, 4}, Case{0x20, 4}}) {
    for (uint32_t channels : {1u, 2u, 4u}) {
      auto e = extent(c.format, channels, 48, 25, 0);
      REQUIRE(e);
      CHECK(e->width_bytes == 48 * c.element * channels);
      CHECK(e->height == 25);
      CHECK(e->depth == 1);  // 0: a 2-D array, one slice
      CHECK(e->bytes == 48 * 25 * c.element * channels);
    }
  }
  auto one_d = extent(0x20, 1, 100, 0, 0);
  REQUIRE(one_d);
  CHECK(one_d->bytes == 400);
  auto three_d = extent(0x02, 2, 8, 4, 3);
  REQUIRE(three_d);
  CHECK(three_d->bytes == 8 * 4 * 3 * 4);
}

TEST_CASE("array_extent: unknown formats, bad channel counts and forged sizes are errors") {
  auto nv12 = extent(0xb0, 1, 64, 64, 0);  // planar: no single element size
  REQUIRE_FALSE(nv12);
  CHECK(nv12.status().message().find("array format 176") != std::string::npos);
  CHECK_FALSE(extent(0x20, 0, 4, 4, 0));
  CHECK_FALSE(extent(0x20, 5, 4, 4, 0));
  CHECK_FALSE(extent(0x20, 4, uint64_t{1} << 40, uint64_t{1} << 20, 0));  // past 2^44 bytes
  CHECK_FALSE(extent(0x01, 1, ~uint64_t{0}, 1, 1));
  CHECK_FALSE(extent(0x01, 1, 1 << 20, 1 << 20, 1 << 20));
}
