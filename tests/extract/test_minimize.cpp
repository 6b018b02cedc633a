// cusnap extract --minimize: the extract replayed once on the emulator with access tracking, then
// cut to the memory the launch touched; the minimized extract replayed alone must still match.
// The expected memory of every source here is a host reference (tests/support/capture_builder.h).
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>

#include "cusnap/extract/extract.h"
#include "cusnap/format/reader.h"
#include "fixture.h"
#include "replayer/replay.h"
#include "test_files.h"

using namespace cusnap;
using namespace cusnap::extract;
using namespace cusnap::extract::test;
namespace schema = format::schema;
namespace fs = std::filesystem;

namespace {

std::string tmp(const std::string& name) { return scratch_path("minimize", name); }

std::unique_ptr<format::Reader> open(const std::string& path) { return open_capture(path); }

LaunchPlan plan_call(format::Reader& r, uint64_t seq) {
  Selection sel;
  sel.call_seq = seq;
  auto plans = plan_extraction(r, sel);
  INFO(plans.status().to_string());
  REQUIRE(plans.is_ok());
  REQUIRE(plans->size() == 1);
  return plans->front();
}

// The extract at `path` replayed alone on the emulator, without tracking: every chunk compared.
replayer::ReplayResult replay(const std::string& path) {
  replayer::ReplayOptions options;
  options.driver = "emulator";
  options.timing = false;
  options.nvtx = false;
  auto r = replayer::replay_capture(path, options);
  INFO((r ? std::string() : r.error().to_string()));
  REQUIRE(r);
  return std::move(r.value());
}

struct Extracted {
  ExtractedLaunch full, minimized;
  std::string full_path, minimized_path;
};

// Extracts call `seq` of `source` in full and minimized (what `cusnap extract --minimize` does).
Extracted extract_both(const std::string& source_path, uint64_t seq, const std::string& name) {
  auto source = open(source_path);
  LaunchPlan plan = plan_call(*source, seq);
  Extracted e;
  e.full_path = tmp(name + "-full.cusnap");
  e.minimized_path = tmp(name + "-min.cusnap");
  auto full = write_extracted(*source, source_path, plan, e.full_path);
  INFO(full.status().to_string());
  REQUIRE(full.is_ok());
  e.full = *full;
  auto touched = track_extracted(e.full_path);
  INFO(touched.status().to_string());
  REQUIRE(touched.is_ok());
  auto minimized = write_extracted(*source, source_path, plan, e.minimized_path, &*touched);
  INFO(minimized.status().to_string());
  REQUIRE(minimized.is_ok());
  e.minimized = *minimized;
  return e;
}

// Every memAlloc address in an extracted capture, and its snapshots' chunk addresses.
struct Contents {
  std::vector<uint64_t> allocations;
  std::vector<uint64_t> before, after;
};

Contents contents(format::Reader& r) {
  Contents c;
  for (uint64_t seq = 0; seq < r.call_count(); ++seq) {
    auto ref = r.call(seq);
    REQUIRE(ref.is_ok());
    auto rec = ref->get();
    if (rec.which() == schema::CallRecord::MEM_ALLOC)
      c.allocations.push_back(rec.getMemAlloc().getAddress());
    if (rec.which() == schema::CallRecord::MEMORY_SNAPSHOT) {
      auto s = rec.getMemorySnapshot();
      auto& list =
          s.getPhase() == schema::MemorySnapshot::Phase::BEFORE_LAUNCH ? c.before : c.after;
      for (auto chunk : s.getChunks()) list.push_back(chunk.getAddress());
    }
  }
  return c;
}

// Bytes that no compressor shrinks much, distinct per allocation (xorshift).
std::vector<uint32_t> noise(size_t words, uint32_t seed) {
  std::vector<uint32_t> v(words);
  uint32_t x = seed * 2654435761u + 1;
  for (uint32_t& w : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    w = x;
  }
  return v;
}

}  // namespace

TEST_CASE("a kernel that touches 1 of 20 large allocations keeps only that one") {
  constexpr uint64_t kBase = 0x7e1000000000, kStep = 16ull << 20, kBytes = 8ull << 20;
  constexpr int kAllocations = 20, kTouched = 7;
  constexpr int kWords = static_cast<int>(kBytes / 4);
  const std::string path = tmp("twenty.cusnap");
  uint64_t launch = 0;
  {
    CaptureBuilder b(path, snapshot_header(64 << 10));
    b.module_load_ptx(kModuleA, read_text(CUSNAP_TEST_PTX_PATH));
    // saxpy_int(a, c, 2, n) with a == c, the whole 8 MiB allocation: c = 3 c.
    const uint64_t touched = kBase + kTouched * kStep;
    Params p;
    p.ptr(touched).ptr(touched).i32(2).i32(kWords);
    uint64_t fn = b.function_get(kModuleA, kSaxpy, "saxpy_int", p.layout());
    std::map<uint64_t, std::vector<uint8_t>> before, after;
    for (int i = 0; i < kAllocations; ++i) {
      const uint64_t address = kBase + i * kStep;
      b.alloc(address, kBytes);
      std::vector<uint32_t> v = noise(kBytes / 4, i);
      before[address] = to_bytes(v);
      if (i == kTouched)
        for (uint32_t& w : v) w *= 3;
      after[address] = to_bytes(v);
    }
    launch = b.launch(kSaxpy, "saxpy_int", kWords / 256, 256, p, /*stream=*/0, /*ordinal=*/0, fn);
    b.snapshot(launch, 0, kBeforeLaunch, b.tile(before));
    b.snapshot(launch, 0, kAfterLaunch, b.tile(after));
    b.close();
  }
  Extracted e = extract_both(path, launch, "twenty");
  CHECK(e.full.input_bytes == kAllocations * kBytes);
  CHECK_FALSE(e.full.minimized);
  CHECK(e.minimized.minimized);
  CHECK(e.minimized.input_bytes == kBytes);
  CHECK(e.minimized.expected_bytes == kBytes);
  CHECK(e.minimized.dropped_input_bytes == (kAllocations - 1) * kBytes);
  CHECK(e.minimized.dropped_expected_bytes == (kAllocations - 1) * kBytes);
  CHECK(e.minimized.dropped_ranges == kAllocations - 1);
  // The file shrinks with it (the noise does not compress away): the full extract holds 20
  // allocations before and the touched one after, the minimized one only the touched one twice.
  const auto full_size = fs::file_size(e.full_path), min_size = fs::file_size(e.minimized_path);
  INFO("full " << full_size << " bytes, minimized " << min_size);
  CHECK(full_size > (kAllocations + 1) * kBytes);
  CHECK(min_size < 2 * kBytes + (1 << 20));

  auto r = open(e.minimized_path);
  Contents c = contents(*r);
  CHECK(c.allocations == std::vector<uint64_t>{kBase + kTouched * kStep});
  auto x = r->header().getExtract();
  CHECK(x.getMinimized());
  CHECK(x.getInputBytes() == kBytes);
  CHECK(x.getDroppedInputBytes() == (kAllocations - 1) * kBytes);
  CHECK(x.getDroppedRanges() == kAllocations - 1);
  r.reset();

  replayer::ReplayResult replayed = replay(e.minimized_path);
  CHECK(replayed.matched());
  CHECK(replayed.snapshots.restored_bytes == kBytes);
  CHECK(replayed.snapshots.compared_bytes == kBytes);
}

TEST_CASE("a kernel that writes a strided subset has only those chunks compared") {
  // fixture.h: every chunk it writes is kept as input too (its other 252 bytes are compared).
  const std::string path = tmp("strided.cusnap");
  const uint64_t launch = write_strided_fixture(path, read_text(CUSNAP_TEST_PTX_PATH));
  Extracted e = extract_both(path, launch, "strided");
  std::vector<uint64_t> written;
  for (int i = 0; i < kStridedCount; ++i)
    written.push_back(kStridedX + static_cast<uint64_t>(i) * kStride * 4);
  auto r = open(e.minimized_path);
  Contents c = contents(*r);
  r.reset();
  CHECK(c.after == written);
  CHECK(c.before == written);
  CHECK(c.allocations == std::vector<uint64_t>{kStridedX});
  CHECK(e.minimized.input_bytes == kStridedCount * kChunkBytes);
  CHECK(e.minimized.expected_bytes == kStridedCount * kChunkBytes);
  CHECK(e.minimized.dropped_expected_bytes ==
        (kStridedWords * 4 - kStridedCount * kChunkBytes) + kStridedYBytes);
  CHECK(e.minimized.dropped_ranges == 1);

  replayer::ReplayResult replayed = replay(e.minimized_path);
  CHECK(replayed.matched());
  CHECK(replayed.snapshots.compared_chunks == kStridedCount);
}

TEST_CASE("an extract that does not match on the emulator is not minimized") {
  // The capture claims saxpy_int left c unchanged: on the emulator it does not, so what the
  // launch touched there is no evidence about the capture, and minimizing is refused.
  const std::string path = tmp("wrong.cusnap");
  uint64_t launch = 0;
  {
    CaptureBuilder b(path, snapshot_header());
    b.module_load_ptx(kModuleA, read_text(CUSNAP_TEST_PTX_PATH));
    Params p;
    p.ptr(kA).ptr(kC).i32(kScale).i32(kN);
    uint64_t fn = b.function_get(kModuleA, kSaxpy, "saxpy_int", p.layout());
    b.alloc(kA, kN * 4);
    b.alloc(kC, kN * 4);
    std::vector<int> a(kN, 1), c(kN, 2);
    launch =
        b.launch(kSaxpy, "saxpy_int", (kN + 127) / 128, 128, p, /*stream=*/0, /*ordinal=*/0, fn);
    b.snapshot(launch, 0, kBeforeLaunch, b.tile({{kA, to_bytes(a)}, {kC, to_bytes(c)}}));
    b.snapshot(launch, 0, kAfterLaunch, b.tile({{kA, to_bytes(a)}, {kC, to_bytes(c)}}));
    b.close();
  }
  auto source = open(path);
  LaunchPlan plan = plan_call(*source, launch);
  const std::string full = tmp("wrong-full.cusnap");
  REQUIRE(write_extracted(*source, path, plan, full).is_ok());
  auto touched = track_extracted(full);
  REQUIRE_FALSE(touched.is_ok());
  CHECK_THAT(touched.status().to_string(),
             Catch::Contains("does not leave memory as captured") && Catch::Contains("--keep-all"));
}

TEST_CASE("tracked accesses are captured addresses also when the replay relocates") {
  // The replayer's translation back from the addresses the emulator saw: with every range
  // relocated, strided_store's writes must still come back at x's captured addresses.
  const std::string path = tmp("relocated.cusnap");
  const uint64_t launch = write_strided_fixture(path, read_text(CUSNAP_TEST_PTX_PATH));
  auto source = open(path);
  LaunchPlan plan = plan_call(*source, launch);
  const std::string full = tmp("relocated-full.cusnap");
  REQUIRE(write_extracted(*source, path, plan, full).is_ok());
  for (auto mode : {replayer::AddressMode::kSame, replayer::AddressMode::kRelocate}) {
    replayer::ReplayOptions options;
    options.driver = "emulator";
    options.timing = false;
    options.nvtx = false;
    options.address_mode = mode;
    options.track_chunk_bytes = 256;
    auto r = replayer::replay_capture(full, options);
    INFO((r ? std::string() : r.error().to_string()));
    REQUIRE(r);
    CHECK(r.value().matched());
    CHECK((r.value().relocated_ranges > 0) == (mode == replayer::AddressMode::kRelocate));
    REQUIRE(r.value().launches.size() == 1);
    REQUIRE(r.value().launches[0].accesses);
    const replayer::LaunchAccesses& a = *r.value().launches[0].accesses;
    std::vector<std::pair<uint64_t, uint64_t>> written;
    for (int i = 0; i < kStridedCount; ++i)
      written.emplace_back(kStridedX + static_cast<uint64_t>(i) * kStride * 4, 256);
    CHECK(a.read.empty());
    CHECK(a.written == written);
    CHECK(a.untranslated_bytes == 0);
  }
  // Tracking needs a power of two.
  replayer::ReplayOptions options;
  options.driver = "emulator";
  options.track_chunk_bytes = 300;
  auto r = replayer::replay_capture(full, options);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().to_string(), Catch::Contains("not a power of two"));
}
