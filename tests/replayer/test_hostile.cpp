// Damaged, truncated and hostile captures: clear errors, never crashes.
#include <catch2/catch.hpp>
#include <fstream>
#include <random>

#include "cusnap/format/reader.h"
#include "replayer/plan.h"
#include "test_support.h"

using namespace cusnap;
using namespace cusnap::replayer;
using namespace cusnap::replayer::test;

namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::string s = read_text(path);
  return {s.begin(), s.end()};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// Plan building on arbitrary bytes: a value or an error, nothing else.
void plan_from_bytes(const std::vector<uint8_t>& bytes) {
  auto reader = format::Reader::open_memory(bytes);
  if (!reader) return;
  auto plan = build_plan(*reader.value());
  if (!plan) CHECK_FALSE(plan.error().to_string().empty());
}

}  // namespace

TEST_CASE("a launch whose layout leaves its parameter block is refused with its call",
          "[hostile]") {
  std::string path = temp_path("bad_layout.cusnap");
  uint64_t seq = 0;
  {
    CaptureBuilder w(path);
    w.module_load_ptx(0xA000, test_ptx());
    w.function_get(0xA000, 0xF001, "increment");
    w.alloc(kBase, 4096);
    // A layout slot far beyond the 12 parameter bytes.
    seq = w.launch(0xF001, "increment", 1, 1, Params().ptr(kBase).i32(1).slot_only(100, 8));
    w.close();
  }
  auto result = replay_capture(path, emulator_options());
  REQUIRE_FALSE(result);
  CHECK(result.error().kind() == ErrorKind::kCapture);
  CHECK(result.error().seq() == seq);
  CHECK(result.error().to_string().find("parameter slot") != std::string::npos);
}

TEST_CASE("a copy outside every captured allocation is an error at that call", "[hostile]") {
  std::string path = temp_path("outside.cusnap");
  uint64_t seq = 0;
  {
    CaptureBuilder w(path);
    w.alloc(kBase, 4096);
    std::vector<int> data(16, 7);
    seq = w.htod(kBase + 4096 * 1024, as_bytes(data));  // inside the widened region? no: 4 MiB away
    w.close();
  }
  auto result = replay_capture(path, emulator_options());
  REQUIRE_FALSE(result);
  CHECK(result.error().seq() == seq);
  CHECK(result.error().kind() == ErrorKind::kCapture);
}

TEST_CASE("a launch of a function never obtained is an error at that call", "[hostile]") {
  std::string path = temp_path("nofunction.cusnap");
  uint64_t seq = 0;
  {
    CaptureBuilder w(path);
    w.alloc(kBase, 4096);
    seq = w.launch(0xBAD, "", 1, 1, Params().ptr(kBase).i32(1));
    w.close();
  }
  auto result = replay_capture(path, emulator_options());
  REQUIRE_FALSE(result);
  CHECK(result.error().seq() == seq);
  CHECK(result.error().handle() == 0xBADu);
}

TEST_CASE("truncated captures replay what they hold or fail clearly", "[hostile]") {
  auto capture = write_standard_capture(temp_path("whole.cusnap"));
  std::vector<uint8_t> bytes = read_bytes(capture.path);
  std::string cut_path = temp_path("cut.cusnap");
  size_t errors = 0, replays = 0;
  for (size_t cut = 0; cut < bytes.size(); cut += std::max<size_t>(bytes.size() / 23, 1)) {
    write_bytes(cut_path, {bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut)});
    auto result = replay_capture(cut_path, emulator_options());
    if (result) {
      ++replays;
      // What was replayed must never mismatch: the prefix is the application's own history.
      CHECK(result.value().verification.mismatched == 0);
    } else {
      ++errors;
      CHECK_FALSE(result.error().to_string().empty());
    }
  }
  CHECK(errors > 0);
}

TEST_CASE("corrupted captures never crash the plan builder or the replay", "[hostile]") {
  auto capture = write_standard_capture(temp_path("flip.cusnap"));
  std::vector<uint8_t> bytes = read_bytes(capture.path);
  std::mt19937_64 rng(1234);
  std::string flip_path = temp_path("flipped.cusnap");
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> damaged = bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i)
      damaged[rng() % damaged.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    plan_from_bytes(damaged);
    if (trial % 30 == 0) {
      write_bytes(flip_path, damaged);
      auto result = replay_capture(flip_path, emulator_options());
      if (!result) CHECK_FALSE(result.error().to_string().empty());
    }
  }
}

namespace {

// A snapshot capture with one launch on a 4 KiB allocation at kBase, then one snapshot record
// made by `edit` from well-formed chunks of the allocation; returns the record's seq.
template <typename Edit>
uint64_t hostile_snapshot(const std::string& path, Edit edit, uint64_t chunk_bytes = 1024,
                          bool extracted = false) {
  SnapshotHeader header;
  header.chunk_bytes = chunk_bytes;
  header.extracted = extracted;
  CaptureBuilder w(path, header);
  w.module_load_ptx(0xA000, test_ptx());
  w.function_get(0xA000, 0xF001, "increment");
  w.alloc(kBase, 4096);
  uint64_t launch = w.launch(0xF001, "increment", 1, 32, Params().ptr(kBase).i32(32));
  std::vector<uint8_t> bytes(4096, 0x5a);
  std::vector<RawChunk> chunks = w.chunks(kBase, bytes, std::max<uint64_t>(chunk_bytes, 1));
  uint64_t seq = edit(w, launch, chunks);
  w.close();
  return seq;
}

void expect_snapshot_error(const std::string& path, uint64_t seq, const std::string& text) {
  auto result = replay_capture(path, emulator_options());
  REQUIRE_FALSE(result);
  CHECK(result.error().kind() == ErrorKind::kCapture);
  CHECK(result.error().seq() == seq);
  INFO(result.error().to_string());
  CHECK(result.error().to_string().find(text) != std::string::npos);
}

}  // namespace

TEST_CASE("hostile snapshot records are refused with their call and a clear reason",
          "[hostile][snapshot]") {
  using Chunks = std::vector<RawChunk>;
  SECTION("a launch that does not exist") {
    std::string path = temp_path("snap_nolaunch.cusnap");
    uint64_t seq = hostile_snapshot(path, [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
      return w.snapshot(launch + 100, 0, 1, c);
    });
    expect_snapshot_error(path, seq, "not a replayable launch");
  }
  SECTION("a launch ordinal that is not the launch's") {
    std::string path = temp_path("snap_ordinal.cusnap");
    uint64_t seq = hostile_snapshot(path, [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
      return w.snapshot(launch, 7, 1, c);
    });
    expect_snapshot_error(path, seq, "ordinal 7");
  }
  SECTION("overlapping chunks") {
    std::string path = temp_path("snap_overlap.cusnap");
    uint64_t seq = hostile_snapshot(path, [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
      c[1].address -= 1;
      return w.snapshot(launch, 0, 1, c);
    });
    expect_snapshot_error(path, seq, "overlaps or precedes");
  }
  SECTION("chunks out of order") {
    std::string path = temp_path("snap_order.cusnap");
    uint64_t seq = hostile_snapshot(path, [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
      std::swap(c[0], c[2]);
      return w.snapshot(launch, 0, 1, c);
    });
    expect_snapshot_error(path, seq, "overlaps or precedes");
  }
  SECTION("a chunk larger than the header's chunk size") {
    std::string path = temp_path("snap_big.cusnap");
    uint64_t seq = hostile_snapshot(path, [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
      c[0].size = uint64_t{1} << 40;
      return w.snapshot(launch, 0, 1, Chunks{c[0]});
    });
    expect_snapshot_error(path, seq, "the chunk size is 1024");
  }
  SECTION("a chunk outside every allocation") {
    std::string path = temp_path("snap_outside.cusnap");
    uint64_t seq = hostile_snapshot(path, [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
      c[3].address += 512;  // runs 512 bytes past the 4 KiB allocation
      return w.snapshot(launch, 0, 1, c);
    });
    expect_snapshot_error(path, seq, "outside every allocation");
  }
  SECTION("a chunk whose blob is not in the file") {
    std::string path = temp_path("snap_noblob.cusnap");
    uint64_t seq = hostile_snapshot(path, [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
      c[2].blob.low ^= 1;
      return w.snapshot(launch, 0, 1, c);
    });
    expect_snapshot_error(path, seq, "is not in the capture");
  }
  SECTION("a chunk whose blob has another size") {
    std::string path = temp_path("snap_blobsize.cusnap");
    uint64_t seq = hostile_snapshot(path, [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
      c[3].size = 1000;  // the blob holds 1024 bytes
      return w.snapshot(launch, 0, 1, c);
    });
    expect_snapshot_error(path, seq, "holds 1024 bytes");
  }
  SECTION("two snapshots of one phase") {
    std::string path = temp_path("snap_twice.cusnap");
    uint64_t seq = hostile_snapshot(path, [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
      w.snapshot(launch, 0, 0, c);
      return w.snapshot(launch, 0, 0, c);
    });
    expect_snapshot_error(path, seq, "a second beforeLaunch snapshot");
  }
  SECTION("no chunk size in the header") {
    std::string path = temp_path("snap_nochunk.cusnap");
    uint64_t seq = hostile_snapshot(
        path,
        [](CaptureBuilder& w, uint64_t launch, Chunks& c) { return w.snapshot(launch, 0, 1, c); },
        0);
    expect_snapshot_error(path, seq, "snapshot chunk size 0");
  }
  SECTION("a skipped snapshot with chunks") {
    std::string path = temp_path("snap_skipchunks.cusnap");
    uint64_t seq = hostile_snapshot(path, [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
      return w.snapshot(launch, 0, 0, c, "stream capture");
    });
    expect_snapshot_error(path, seq, "skipped snapshot");
  }
  SECTION("an extracted capture whose inputs are only hashes") {
    std::string path = temp_path("snap_hashinput.cusnap");
    uint64_t seq = hostile_snapshot(
        path,
        [](CaptureBuilder& w, uint64_t launch, Chunks& c) {
          for (RawChunk& chunk : c) chunk.hash_only = true;
          return w.snapshot(launch, 0, 0, c);
        },
        1024, true);
    expect_snapshot_error(path, seq, "must hold its bytes");
  }
}

TEST_CASE("graph nodes the replay cannot rebuild are refused at their call, by kind", "[hostile]") {
  using Kind = cusnap::format::schema::GraphNode::Kind;
  struct Case {
    Kind kind;
    const char* says;
  };
  for (Case c : {Case{Kind::EXTERNAL_SEMAPHORE_SIGNAL, "external semaphore"},
                 Case{Kind::EXTERNAL_SEMAPHORE_WAIT, "external semaphore"},
                 Case{Kind::BATCH_MEM_OP, "batch memory operation"},
                 Case{Kind::CONDITIONAL, "conditional"}}) {
    std::string path = temp_path("graph_refused.cusnap");
    uint64_t seq = 0;
    {
      CaptureBuilder w(path);
      w.graph_create(0x6a00);
      seq = w.graph_bare_node(0x6a00, 0x6b01, c.kind);
      w.close();
    }
    auto result = replay_capture(path, emulator_options());
    REQUIRE_FALSE(result);
    CHECK(result.error().seq() == seq);
    CHECK(result.error().kind() == ErrorKind::kUnsupported);
    CHECK_THAT(result.error().to_string(), Catch::Contains(c.says));
  }
}

TEST_CASE("a memory allocation node without its address and size is refused at its call",
          "[hostile]") {
  std::string path = temp_path("graph_bare_alloc.cusnap");
  uint64_t seq = 0;
  {
    CaptureBuilder w(path);
    w.graph_create(0x6a00);
    seq = w.graph_bare_node(0x6a00, 0x6b01, cusnap::format::schema::GraphNode::Kind::MEM_ALLOC);
    w.close();
  }
  auto result = replay_capture(path, emulator_options());
  REQUIRE_FALSE(result);
  CHECK(result.error().seq() == seq);
  CHECK_THAT(result.error().to_string(), Catch::Contains("without its address or size"));
}

TEST_CASE("graph nodes given by generic node parameters are refused at their call", "[hostile]") {
  for (const char* api : {"cuGraphAddNode", "cuGraphAddNode_v2", "cuGraphNodeSetParams",
                          "cuGraphExecNodeSetParams", "cuGraphConditionalHandleCreate"}) {
    INFO(api);
    std::string path = temp_path("graph_generic_node.cusnap");
    uint64_t seq = 0;
    {
      CaptureBuilder w(path);
      w.graph_create(0x6a00);
      seq = w.generic(api, true);
      w.close();
    }
    auto result = replay_capture(path, emulator_options());
    REQUIRE_FALSE(result);
    CHECK(result.error().seq() == seq);
    CHECK(result.error().kind() == ErrorKind::kUnsupported);
    CHECK_THAT(result.error().to_string(), Catch::Contains(api));
  }
}

TEST_CASE("a launch of an executable graph the capture never made is an error at that call",
          "[hostile]") {
  std::string path = temp_path("graph_noexec.cusnap");
  uint64_t seq = 0;
  {
    CaptureBuilder w(path);
    w.alloc(kBase, 4096);
    seq = w.graph_launch(0x6e00, 0, 0);
    w.close();
  }
  auto result = replay_capture(path, emulator_options());
  REQUIRE_FALSE(result);
  CHECK(result.error().seq() == seq);
  CHECK(result.error().kind() == ErrorKind::kCapture);
}

TEST_CASE(
    "nvtx records become NVTX operations in capture order, a kind of a newer schema is "
    "skipped",
    "[plan][nvtx]") {
  std::string path = temp_path("nvtx_plan.cusnap");
  uint64_t push_seq = 0, end_seq = 0;
  {
    CaptureBuilder w(path);
    using Kind = format::schema::NvtxEvent::Kind;
    push_seq = w.nvtx(static_cast<uint16_t>(Kind::PUSH), "dom", 0x77, "phase", 0xff00ff00u, 0);
    w.nvtx(static_cast<uint16_t>(Kind::POP), "dom", 0x77, "phase", 0, 0);
    w.nvtx(40, "", 0, "from the future", 0, 0);
    end_seq = w.nvtx(static_cast<uint16_t>(Kind::END), "", 0, "async", 0, 5);
    w.close();
  }
  auto reader = format::Reader::open(path);
  REQUIRE(reader);
  auto plan = build_plan(*reader.value());
  REQUIRE(plan);
  std::vector<const NvtxOp*> ops;
  std::vector<uint64_t> seqs;
  for (const Action& a : plan.value().actions) {
    if (const auto* op = std::get_if<NvtxOp>(&a.op)) {
      ops.push_back(op);
      seqs.push_back(a.seq);
    }
  }
  REQUIRE(ops.size() == 3);
  CHECK(seqs.front() == push_seq);
  CHECK(seqs.back() == end_seq);
  CHECK(ops[0]->kind == NvtxOp::Kind::kPush);
  CHECK(ops[0]->domain == "dom");
  CHECK(ops[0]->domain_handle == 0x77);
  CHECK(ops[0]->message == "phase");
  CHECK(ops[0]->has_color);
  CHECK(ops[0]->color == 0xff00ff00u);
  CHECK(ops[1]->kind == NvtxOp::Kind::kPop);
  CHECK(ops[2]->kind == NvtxOp::Kind::kEnd);
  CHECK(ops[2]->range_id == 5);
  CHECK(ops[2]->domain.empty());
  CHECK(plan.value().skipped.at("nvtx (unknown kind)") == 1);
}
