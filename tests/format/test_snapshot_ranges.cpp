// What a memory snapshot covers and how it is tiled (format/snapshot_ranges.h): the one rule of
// the interceptor and of `cusnap extract --route replay`, here applied to call records.
#include <capnp/message.h>

#include <catch2/catch.hpp>
#include <vector>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/snapshot_ranges.h"

using namespace cusnap::format;

namespace {

using Ranges = std::vector<AddressRange>;

// One record, built and applied.
struct Records {
  SnapshotRanges table;

  void alloc(schema::MemAlloc::Kind kind, uint64_t address, uint64_t size, int result = 0) {
    capnp::MallocMessageBuilder m;
    auto r = m.initRoot<schema::CallRecord>();
    r.setResult(result);
    auto a = r.initMemAlloc();
    a.setKind(kind);
    a.setAddress(address);
    a.setSize(size);
    table.apply(r.asReader());
  }
  void free(schema::MemFree::Kind kind, uint64_t address, uint64_t size = 0, int result = 0) {
    capnp::MallocMessageBuilder m;
    auto r = m.initRoot<schema::CallRecord>();
    r.setResult(result);
    auto f = r.initMemFree();
    f.setKind(kind);
    f.setAddress(address);
    f.setSize(size);
    table.apply(r.asReader());
  }
  void global(uint64_t module, uint64_t address, uint64_t size) {
    capnp::MallocMessageBuilder m;
    auto r = m.initRoot<schema::CallRecord>();
    auto g = r.initGlobalGet();
    g.setModule(module);
    g.setAddress(address);
    g.setSize(size);
    table.apply(r.asReader());
  }
  void unload(uint64_t module) {
    capnp::MallocMessageBuilder m;
    auto r = m.initRoot<schema::CallRecord>();
    r.initModuleUnload().setHandle(module);
    table.apply(r.asReader());
  }
};

}  // namespace

TEST_CASE("snapshot ranges: device-reachable allocations are covered, host memory is not",
          "[format][snapshot]") {
  using K = schema::MemAlloc::Kind;
  Records r;
  r.alloc(K::DEVICE, 0x1000, 0x100);
  r.alloc(K::PITCH, 0x2000, 0x200);  // the record's size: pitch x height
  r.alloc(K::ASYNC, 0x3000, 0x10);
  r.alloc(K::FROM_POOL, 0x4000, 0x20);
  r.alloc(K::MANAGED, 0x5000, 0x30);
  r.alloc(K::HOST, 0x6000, 0x40);
  r.alloc(K::HOST_ALLOC, 0x7000, 0x40);
  r.alloc(K::HOST_REGISTER, 0x8000, 0x40);
  r.alloc(K::VMM_RESERVE, 0x10000, 0x10000);  // not reachable until mapped and accessible
  r.alloc(K::VMM_CREATE, 0, 0x10000);
  r.alloc(K::VMM_MAP, 0x10000, 0x10000);
  r.alloc(K::DEVICE, 0x9000, 0x100, 2);  // failed: nothing allocated
  CHECK(r.table.live() ==
        Ranges{{0x1000, 0x100}, {0x2000, 0x200}, {0x3000, 0x10}, {0x4000, 0x20}, {0x5000, 0x30}});
  r.alloc(K::VMM_SET_ACCESS, 0x10000, 0x8000);
  r.alloc(K::VMM_SET_ACCESS, 0x14000, 0x8000);  // overlapping access settings merge
  CHECK(r.table.live().back() == AddressRange{0x10000, 0xc000});
}

TEST_CASE("snapshot ranges: frees, unmaps and unloads remove what they release",
          "[format][snapshot]") {
  using K = schema::MemAlloc::Kind;
  using F = schema::MemFree::Kind;
  Records r;
  r.alloc(K::DEVICE, 0x1000, 0x100);
  r.alloc(K::ASYNC, 0x2000, 0x100);
  r.alloc(K::VMM_SET_ACCESS, 0x10000, 0x1000);
  r.alloc(K::VMM_SET_ACCESS, 0x11000, 0x1000);
  r.alloc(K::VMM_SET_ACCESS, 0x20000, 0x1000);
  r.global(0xA, 0x30000, 4);
  r.global(0xB, 0x30010, 8);
  r.global(0xA, 0x30020, 0);  // a variable of size 0 covers nothing
  r.free(F::HOST, 0x1000);    // a host free never names device memory
  CHECK(r.table.live().size() == 7);
  r.free(F::DEVICE, 0x1000);
  r.free(F::ASYNC, 0x2000, 0, 1);  // removed whatever the result (the shim removes it first)
  r.free(F::VMM_UNMAP, 0x10000, 0x2000);
  r.unload(0xA);
  CHECK(r.table.live() == Ranges{{0x20000, 0x1000}, {0x30010, 8}});
  r.free(F::VMM_ADDRESS_FREE, 0x20000, 0x10000);
  CHECK(r.table.live() == Ranges{{0x30010, 8}});
}

TEST_CASE("snapshot chunks tile each range from its start, the last one shorter",
          "[format][snapshot]") {
  CHECK(snapshot_chunk_tiles({{0x1000, 600}, {0x9000, 256}}, 256) ==
        Ranges{{0x1000, 256}, {0x1100, 256}, {0x1200, 88}, {0x9000, 256}});
  std::vector<uint8_t> bytes(600);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  std::vector<std::pair<uint64_t, BlobId>> whole, pieces;
  auto into = [](auto& out) {
    return [&out](uint64_t address, std::span<const uint8_t> b) {
      out.emplace_back(address, hash_blob(b));
    };
  };
  for_each_snapshot_chunk(0x1000, bytes, 256, into(whole));
  // Read in two pieces, the first a multiple of the chunk size: the same chunks.
  for_each_snapshot_chunk(0x1000, std::span<const uint8_t>(bytes).first(512), 256, into(pieces));
  for_each_snapshot_chunk(0x1200, std::span<const uint8_t>(bytes).subspan(512), 256, into(pieces));
  REQUIRE(whole.size() == 3);
  CHECK(whole == pieces);
  CHECK(whole[2].second == hash_blob(std::span<const uint8_t>(bytes).subspan(512)));
}
