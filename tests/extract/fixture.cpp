// A capture of one program run with snapshots (chunk size 256 bytes): two modules (B is never
// launched), three allocations live at the launches (d never reached) and one freed before
// them, then
//   saxpy_int(a, c, 3, 1000)   snapshots before and after (contents, as --snapshot-outputs)
//   add_offset(c, 1000)        reads the module variable g_offset = 7; snapshots cover it
//   saxpy_int                  not selected at capture: no snapshot
//   saxpy_int                  its snapshot was skipped (stream capture)
#include "fixture.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace cusnap::extract::test {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

cusnap::test::HeaderOptions snapshot_header() {
  cusnap::test::SnapshotHeader snapshot;
  snapshot.chunk_bytes = kChunkBytes;
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

}  // namespace cusnap::extract::test
