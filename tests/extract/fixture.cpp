// A capture of one program run with snapshots (chunk size 256 bytes): two modules (B is never
// launched), three allocations live at the launches (d never reached) and one freed before
// them, then
//   saxpy_int(a, c, 3, 1000)   snapshots before and after (contents, as --snapshot-outputs)
//   add_offset(c, 1000)        reads the module variable g_offset = 7; snapshots cover it
//   saxpy_int                  not selected at capture: no snapshot
//   saxpy_int                  its snapshot was skipped (stream capture)
#include "fixture.h"

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "cusnap/format/blob_id.h"

namespace cusnap::extract::test {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

cusnap::test::HeaderOptions snapshot_header(uint64_t chunk_bytes) {
  cusnap::test::SnapshotHeader snapshot;
  snapshot.chunk_bytes = chunk_bytes;
  snapshot.kernel_regex = std::string(1, '.');  // (GCC 12 -O3 warns on = "." here: -Wrestrict)
  cusnap::test::HeaderOptions header;
  header.snapshot = std::move(snapshot);
  header.host_name = "builder-host";
  header.pid = 4242;
  header.creation_time_ns = 1700000000123456789LL;
  return header;
}

Fixture write_fixture(const std::string& path, const std::string& ptx, uint64_t a_address) {
  Fixture f;
  f.a.resize(kN);
  f.c0.resize(kN);
  for (int i = 0; i < kN; ++i) {
    f.a[i] = i * 5 - 1234;
    f.c0[i] = 100000 - i * 3;
  }
  f.c1 = f.c0;
  for (int i = 0; i < kN; ++i) f.c1[i] = kScale * f.a[i] + f.c0[i];
  f.c2 = f.c1;
  for (int& v : f.c2) v += kOffset;
  std::vector<int> offset{kOffset};

  CaptureBuilder b(path, snapshot_header());
  f.module_a = b.module_load_ptx(kModuleA, ptx);
  f.module_b = b.module_load_ptx(kModuleB, ptx + "\n// a second module, never launched\n");
  Params saxpy;
  saxpy.ptr(a_address).ptr(kC).i32(kScale).i32(kN);
  Params add;
  add.ptr(kC).i32(kN);
  f.fn_saxpy = b.function_get(kModuleA, kSaxpy, "saxpy_int", saxpy.layout());
  f.fn_add = b.function_get(kModuleA, kAddOffset, "add_offset", add.layout());
  f.global = b.global_get(kModuleA, "g_offset", kGlobal, 4);
  f.alloc_a = b.alloc(a_address, kN * 4);
  f.alloc_c = b.alloc(kC, kN * 4);
  f.alloc_d = b.alloc(kD, 4096);
  f.alloc_e = b.alloc(kE, 512);
  b.free(kE);

  const uint32_t grid = (kN + 127) / 128;
  f.saxpy =
      b.launch(kSaxpy, "saxpy_int", grid, 128, saxpy, /*stream=*/0, /*ordinal=*/0, f.fn_saxpy);
  b.snapshot(f.saxpy, 0, kBeforeLaunch, b.tile({{a_address, to_bytes(f.a)}, {kC, to_bytes(f.c0)}}));
  b.snapshot(f.saxpy, 0, kAfterLaunch, b.tile({{a_address, to_bytes(f.a)}, {kC, to_bytes(f.c1)}}));
  f.add = b.launch(kAddOffset, "add_offset", grid, 128, add, /*stream=*/0, /*ordinal=*/0, f.fn_add);
  b.snapshot(f.add, 1, kBeforeLaunch, b.tile({{kC, to_bytes(f.c1)}, {kGlobal, to_bytes(offset)}}));
  b.snapshot(f.add, 1, kAfterLaunch, b.tile({{kC, to_bytes(f.c2)}, {kGlobal, to_bytes(offset)}}));
  f.unsnapped =
      b.launch(kSaxpy, "saxpy_int", grid, 128, saxpy, /*stream=*/0, /*ordinal=*/0, f.fn_saxpy);
  f.skipped =
      b.launch(kSaxpy, "saxpy_int", grid, 128, saxpy, /*stream=*/0, /*ordinal=*/0, f.fn_saxpy);
  b.snapshot(f.skipped, 3, kBeforeLaunch, {}, "stream 0x5 was being captured into a graph");
  b.close();
  return f;
}

uint64_t write_strided_fixture(const std::string& path, const std::string& ptx) {
  CaptureBuilder b(path, snapshot_header());
  b.module_load_ptx(kModuleA, ptx);
  constexpr uint64_t kFunction = 0xF003;
  Params p;
  p.ptr(kStridedX).i32(kStride).i32(kStridedCount);
  uint64_t fn = b.function_get(kModuleA, kFunction, "strided_store", p.layout());
  b.alloc(kStridedX, kStridedWords * 4);
  b.alloc(kStridedY, kStridedYBytes);
  std::vector<int> x0(kStridedWords), y(kStridedYBytes / 4, 5);
  for (int i = 0; i < kStridedWords; ++i) x0[i] = -i;
  std::vector<int> x1 = x0;
  for (int i = 0; i < kStridedCount; ++i) x1[i * kStride] = i;
  uint64_t launch = b.launch(kFunction, "strided_store", 1, 64, p, /*stream=*/0, /*ordinal=*/0, fn);
  b.snapshot(launch, 0, kBeforeLaunch,
             b.tile({{kStridedX, to_bytes(x0)}, {kStridedY, to_bytes(y)}}));
  b.snapshot(launch, 0, kAfterLaunch,
             b.tile({{kStridedX, to_bytes(x1)}, {kStridedY, to_bytes(y)}}));
  b.close();
  return launch;
}

Replayable write_replayable_fixture(const std::string& path, const std::string& ptx, bool snapshots,
                                    bool wrong_checksum, uint64_t a_address) {
  Replayable f;
  f.a.resize(kN);
  f.c0.resize(kN);
  f.d.resize(1024);
  for (int i = 0; i < kN; ++i) {
    f.a[i] = i * 7 - 999;
    f.c0[i] = 5000 - i;
  }
  for (int i = 0; i < 1024; ++i) f.d[i] = i ^ 0x55;
  f.c1 = f.c0;
  for (int i = 0; i < kN; ++i) f.c1[i] = kScale * f.a[i] + f.c0[i];
  f.c2 = f.c1;
  for (int& v : f.c2) v += kOffset;
  std::vector<int> offset{kOffset};

  CaptureBuilder b(path, snapshot_header());
  b.module_load_ptx(kModuleA, ptx);
  Params saxpy;
  saxpy.ptr(a_address).ptr(kC).i32(kScale).i32(kN);
  Params add;
  add.ptr(kC).i32(kN);
  uint64_t fn_saxpy = b.function_get(kModuleA, kSaxpy, "saxpy_int", saxpy.layout());
  uint64_t fn_add = b.function_get(kModuleA, kAddOffset, "add_offset", add.layout());
  b.global_get(kModuleA, "g_offset", kGlobal, 4);
  b.alloc(a_address, kN * 4);
  b.alloc(kC, kN * 4);
  b.alloc(kD, 4096);
  b.alloc(kE, 512);
  b.free(kE);
  b.htod(a_address, as_bytes(f.a));
  b.htod(kC, as_bytes(f.c0));
  b.htod(kD, as_bytes(f.d));
  b.htod(kGlobal, as_bytes(offset));

  const uint32_t grid = (kN + 127) / 128;
  auto memory = [&](const std::vector<int>& c) {
    return std::map<uint64_t, std::vector<uint8_t>>{{a_address, to_bytes(f.a)},
                                                    {kC, to_bytes(c)},
                                                    {kD, to_bytes(f.d)},
                                                    {kGlobal, to_bytes(offset)}};
  };
  f.saxpy = b.launch(kSaxpy, "saxpy_int", grid, 128, saxpy, /*stream=*/0, /*ordinal=*/0, fn_saxpy);
  if (snapshots) {
    b.snapshot(f.saxpy, 0, kBeforeLaunch, b.tile(memory(f.c0)));
    b.snapshot(f.saxpy, 0, kAfterLaunch, b.tile(memory(f.c1)));
  }
  std::vector<int> seen = f.c1;
  if (wrong_checksum) seen[17] += 1;
  f.copy_after_saxpy = b.dtoh(kC, seen.size() * sizeof(int), format::checksum64(as_bytes(seen)));
  f.add = b.launch(kAddOffset, "add_offset", grid, 128, add, /*stream=*/0, /*ordinal=*/0, fn_add);
  if (snapshots) {
    b.snapshot(f.add, 1, kBeforeLaunch, b.tile(memory(f.c1)));
    b.snapshot(f.add, 1, kAfterLaunch, b.tile(memory(f.c2)));
  }
  b.dtoh(kC, f.c2.size() * sizeof(int), format::checksum64(as_bytes(f.c2)));
  b.close();
  return f;
}

}  // namespace cusnap::extract::test
