// CUDA arrays, texture and surface objects replayed on the emulator (docs/replay.md, "Arrays,
// textures and surfaces"): array copies of every kind verified by their checksums, and object
// handles in kernel parameters mapped to the replay driver's values.
#include <catch2/catch.hpp>
#include <numeric>

#include "cusnap/format/blob_id.h"
#include "test_support.h"

using namespace cusnap::replayer;
using namespace cusnap::replayer::test;
namespace schema = cusnap::format::schema;

namespace {

using Api = schema::CopyGeometry::ArrayApi;
using ArrayCopy = cusnap::test::CaptureBuilder::ArrayCopy;
constexpr int32_t kHost = 1, kDevice = 2, kArray = 3;  // CUmemorytype
constexpr int32_t kSignedInt32 = 0x0a;                 // CU_AD_FORMAT_SIGNED_INT32
constexpr uint32_t kSurfaceLdst = 0x02;                // CUDA_ARRAY3D_SURFACE_LDST
constexpr int kTexels = 256;
constexpr int kRows = 8, kColumns = 16;  // the 2-D array
// Captured handles no emulator hands out (it numbers objects from 1 and arrays are pointers),
// so a replay that did not map them would pass values its driver does not know.
constexpr uint64_t kTexture = 0x7e570000000001ull, kSurface = 0x5e4f0000000002ull;
constexpr uint64_t kIn = 0xa1, kOut = 0xa2, kGrid = 0xa3;

uint64_t sum_of(const std::vector<int>& v) { return cusnap::format::checksum64(as_bytes(v)); }

std::vector<uint8_t> bytes_of(const std::vector<int>& v) {
  auto s = as_bytes(v);
  return {s.begin(), s.end()};
}

struct ArrayCapture {
  std::string path;
  uint64_t launch_seq = 0;
  std::vector<uint64_t> checked;  // the copies with a checksum, in order
};

// in[i] = 3i - 100 enters array kIn (HtoA); the kernel writes out[i] = 2 in[i] + 1 into kOut
// through a surface, reading kIn through a texture; then every kind of array copy moves the
// result around, and each destination that reaches the host carries the host's checksum.
ArrayCapture write_array_capture(const std::string& path) {
  ArrayCapture c;
  c.path = path;
  CaptureBuilder w(path);
  w.module_load_ptx(0xA000, test_ptx());
  w.function_get(0xA000, 0xF009, "through_texture",
                 std::vector<cusnap::test::Slot>{{0, 8}, {8, 8}, {16, 4}});
  const uint64_t d = kBase, d2 = kBase + 0x10000;
  w.alloc(d, kTexels * 4);
  w.alloc(d2, kRows * 128);
  w.array_create(kIn, kSignedInt32, 1, kTexels);
  w.array_create(kOut, kSignedInt32, 1, kTexels, 0, kSurfaceLdst);
  w.array_create(kGrid, kSignedInt32, 1, kColumns, kRows);
  std::vector<int> in(kTexels), out(kTexels);
  for (int i = 0; i < kTexels; ++i) in[i] = 3 * i - 100;
  for (int i = 0; i < kTexels; ++i) out[i] = 2 * in[i] + 1;

  ArrayCopy up;  // cuMemcpyHtoA
  up.api = Api::HOST_TO_ARRAY;
  up.src_type = kHost;
  up.dst_type = kArray;
  up.dst_array = kIn;
  up.width = kTexels * 4;
  up.payload = bytes_of(in);
  w.array_copy(up);
  w.tex_object_create(kTexture, kIn);
  w.surf_object_create(kSurface, kOut);
  Params p;
  p.add(&kTexture, 8).add(&kSurface, 8).i32(kTexels);
  c.launch_seq = w.launch(0xF009, "through_texture", kTexels / 64, 64, p);

  ArrayCopy down;  // cuMemcpyAtoH of the surface's array: the kernel's result
  down.api = Api::ARRAY_TO_HOST;
  down.src_type = kArray;
  down.dst_type = kHost;
  down.src_array = kOut;
  down.width = kTexels * 4;
  down.checksum = sum_of(out);
  c.checked.push_back(w.array_copy(down));

  // cuMemcpyAtoA: the upper half of out into the lower half of in; cuMemcpyAtoH of in.
  ArrayCopy a2a;
  a2a.api = Api::ARRAY_TO_ARRAY;
  a2a.src_type = kArray;
  a2a.dst_type = kArray;
  a2a.src_array = kOut;
  a2a.dst_array = kIn;
  a2a.src_x = kTexels / 2 * 4;
  a2a.width = kTexels / 2 * 4;
  w.array_copy(a2a);
  std::vector<int> in_after = in;
  std::copy(out.begin() + kTexels / 2, out.end(), in_after.begin());
  ArrayCopy in_down = down;
  in_down.src_array = kIn;
  in_down.checksum = sum_of(in_after);
  c.checked.push_back(w.array_copy(in_down));

  // cuMemcpyAtoD of in (offset 16 bytes), then cuMemcpyDtoA back into out at offset 0.
  ArrayCopy a2d;
  a2d.api = Api::ARRAY_TO_DEVICE;
  a2d.src_type = kArray;
  a2d.dst_type = kDevice;
  a2d.src_array = kIn;
  a2d.src_x = 16;
  a2d.dst = d;
  a2d.width = (kTexels - 4) * 4;
  w.array_copy(a2d);
  std::vector<int> device(kTexels, 0);
  std::copy(in_after.begin() + 4, in_after.end(), device.begin());
  c.checked.push_back(w.dtoh(d, kTexels * 4, sum_of(device)));
  ArrayCopy d2a;
  d2a.api = Api::DEVICE_TO_ARRAY;
  d2a.src_type = kDevice;
  d2a.dst_type = kArray;
  d2a.src = d;
  d2a.dst_array = kOut;
  d2a.width = 8 * 4;
  w.array_copy(d2a);
  std::vector<int> out_after = out;
  std::copy(device.begin(), device.begin() + 8, out_after.begin());
  ArrayCopy out_down = down;
  out_down.checksum = sum_of(out_after);
  c.checked.push_back(w.array_copy(out_down));

  // 2-D: host rows into the 16 x 8 array (cuMemcpy2D), a 4 x 3 window of it out to pitched
  // device memory, and the whole array back to the host.
  std::vector<int> grid(kRows * kColumns);
  std::iota(grid.begin(), grid.end(), 1000);
  ArrayCopy up2;
  up2.src_type = kHost;
  up2.dst_type = kArray;
  up2.dst_array = kGrid;
  up2.width = kColumns * 4;
  up2.height = kRows;
  up2.payload = bytes_of(grid);
  w.array_copy(up2);
  ArrayCopy window;
  window.src_type = kArray;
  window.dst_type = kDevice;
  window.src_array = kGrid;
  window.src_x = 5 * 4;
  window.src_y = 2;
  window.dst = d2;
  window.width = 4 * 4;
  window.height = 3;
  window.pitch = 128;
  w.array_copy(window);
  std::vector<int> pitched(kRows * 32, 0);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) pitched[y * 32 + x] = grid[(y + 2) * kColumns + 5 + x];
  c.checked.push_back(w.dtoh(d2, kRows * 128, sum_of(pitched)));
  ArrayCopy down2;
  down2.src_type = kArray;
  down2.dst_type = kHost;
  down2.src_array = kGrid;
  down2.width = kColumns * 4;
  down2.height = kRows;
  down2.checksum = sum_of(grid);
  c.checked.push_back(w.array_copy(down2));
  w.close();
  return c;
}

}  // namespace

TEST_CASE("array copies of every kind replay and verify against the host reference",
          "[replay][arrays]") {
  auto capture = write_array_capture(temp_path("arrays.cusnap"));
  for (int run = 0; run < 2; ++run) {
    auto result = replay_capture(capture.path, emulator_options());
    if (!result) FAIL(result.error().to_string());
    const ReplayResult& r = result.value();
    CHECK(r.verification.mismatched == 0);
    CHECK(r.verification.matched == capture.checked.size());
    std::vector<uint64_t> matched;
    for (const CopyCheck& check : r.copies) {
      if (check.state == VerifyState::kMatched) matched.push_back(check.seq);
    }
    CHECK(matched == capture.checked);
    CHECK(r.plan.skipped.count("memcpy (array)") == 0);
    CHECK(r.matched());
  }
}

TEST_CASE("texture and surface object handles in kernel parameters are mapped to the replay's",
          "[replay][arrays]") {
  // The captured values (kTexture, kSurface) are not what the emulator returns at replay: the
  // launch only reads and writes the right arrays if both parameters were rewritten.
  auto capture = write_array_capture(temp_path("objects.cusnap"));
  auto result = replay_capture(capture.path, emulator_options());
  if (!result) FAIL(result.error().to_string());
  const ReplayResult& r = result.value();
  REQUIRE(r.launches.size() == 1);
  CHECK(r.launches[0].seq == capture.launch_seq);
  REQUIRE(!r.copies.empty());
  CHECK(r.copies[0].seq == capture.checked[0]);
  CHECK(r.copies[0].state == VerifyState::kMatched);
}
