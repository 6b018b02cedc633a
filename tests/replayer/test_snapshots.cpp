// Memory snapshots on replay: extracted captures (restore, launch, compare), whole-run captures
// (compare only), tolerances, repetitions. Captures are written with format::Writer directly.
#include <catch2/catch.hpp>

#include "replayer/report.h"
#include "test_support.h"

using namespace cusnap::replayer;
using namespace cusnap::replayer::test;

namespace {

ReplayResult replay_ok(const std::string& path, const ReplayOptions& options) {
  auto result = replay_capture(path, options);
  if (!result) FAIL(result.error().to_string());
  return std::move(result.value());
}

Tolerance tolerance(const std::string& spec) {
  auto t = parse_tolerance(spec);
  if (!t) FAIL(t.error().to_string());
  return t.value();
}

}  // namespace

TEST_CASE("an extracted capture restores its inputs and every expected chunk matches",
          "[snapshot]") {
  auto capture = write_snapshot_capture(temp_path("extract_ok.cusnap"));
  ReplayResult r = replay_ok(capture.path, emulator_options());
  CHECK(r.plan.extracted());
  CHECK(r.plan.snapshots == 2);
  CHECK(r.snapshots.restored_chunks == 4);  // 4000 bytes in 1 KiB chunks
  CHECK(r.snapshots.restored_bytes == kN * 4);
  CHECK(r.snapshots.compared_chunks == 4);
  CHECK(r.snapshots.compared_bytes == kN * 4);
  CHECK(r.snapshots.matched_chunks == 4);
  CHECK(r.snapshots.mismatched_chunks == 0);
  REQUIRE(r.snapshots.checks.size() == 1);
  CHECK(r.snapshots.checks[0].phase == SnapshotPhase::kAfterLaunch);
  CHECK(r.snapshots.checks[0].seq == capture.after_seq);
  CHECK(r.snapshots.checks[0].launch_seq == capture.launch_seq);
  CHECK(r.matched());
  std::string json = report_json(r, emulator_options());
  CHECK(json.find("\"compared_chunks\":4") != std::string::npos);
  CHECK(json.find("\"extracted\":true") != std::string::npos);

  // Relocated memory: chunks are written and read through the address translation.
  ReplayOptions relocate = emulator_options();
  relocate.address_mode = AddressMode::kRelocate;
  ReplayResult moved = replay_ok(capture.path, relocate);
  CHECK(moved.relocated_ranges == 1);
  CHECK(moved.snapshots.matched_chunks == 4);
  CHECK(moved.matched());
}

TEST_CASE("an altered expected chunk is a mismatch naming the first differing byte", "[snapshot]") {
  SnapshotCaptureOptions o;
  o.alter_expected = true;
  auto capture = write_snapshot_capture(temp_path("extract_altered.cusnap"), o);
  ReplayResult r = replay_ok(capture.path, emulator_options());
  CHECK_FALSE(r.matched());
  CHECK(r.verification.ok());  // no copy checksums in an extracted capture
  CHECK(r.snapshots.mismatched_chunks == 1);
  CHECK(r.snapshots.matched_chunks == 3);
  REQUIRE(r.snapshots.checks.size() == 1);
  REQUIRE(r.snapshots.checks[0].mismatches.size() == 1);
  const ChunkMismatch& m = r.snapshots.checks[0].mismatches[0];
  CHECK(m.address == capture.x);  // the flipped byte (offset 309) lies in the first chunk
  CHECK(m.bytes_known);
  CHECK(m.differing_bytes == 1);
  CHECK(m.first_difference == capture.altered_address);
  CHECK((m.expected_byte ^ m.actual_byte) == 0x01);
  REQUIRE(m.allocation);
  CHECK(m.allocation->address == capture.x);
  CHECK(m.allocation->kind == "device");
}

TEST_CASE("a hashOnly expected chunk mismatches without bytes, and refuses a tolerance",
          "[snapshot]") {
  SnapshotCaptureOptions o;
  o.alter_expected = true;
  o.hash_only_after = true;
  auto capture = write_snapshot_capture(temp_path("extract_hashonly.cusnap"), o);
  ReplayOptions options = emulator_options();
  options.tolerances.push_back(tolerance("f32:ulp=4"));
  ReplayResult r = replay_ok(capture.path, options);
  CHECK(r.snapshots.mismatched_chunks == 1);
  REQUIRE(r.snapshots.checks.at(0).mismatches.size() == 1);
  const ChunkMismatch& m = r.snapshots.checks[0].mismatches[0];
  CHECK_FALSE(m.bytes_known);
  CHECK(m.tolerance_text.empty());
  CHECK(m.note == "only its hash was captured: exact comparison only");
}

TEST_CASE("approximate float results fail exact comparison and pass with a tolerance",
          "[snapshot]") {
  SnapshotCaptureOptions o;
  o.kernel = "fast_exp";
  auto capture = write_snapshot_capture(temp_path("extract_float.cusnap"), o);
  // Exact: the approximate __expf differs from the reference in the last bits.
  ReplayResult exact = replay_ok(capture.path, emulator_options());
  CHECK_FALSE(exact.matched());
  CHECK(exact.snapshots.mismatched_chunks > 0);
  for (const ChunkMismatch& m : exact.snapshots.checks.at(0).mismatches) {
    CHECK(m.address >= capture.y);  // x is an input the kernel does not write
  }

  // A tolerance for the output allocation: every element is within 8 ulp.
  ReplayOptions options = emulator_options();
  char rule[64];
  std::snprintf(rule, sizeof rule, "0x%llx=f32:ulp=8", static_cast<unsigned long long>(capture.y));
  options.tolerances.push_back(tolerance(rule));
  ReplayResult tolerant = replay_ok(capture.path, options);
  CHECK(tolerant.matched());
  CHECK(tolerant.snapshots.mismatched_chunks == 0);
  CHECK(tolerant.snapshots.within_tolerance_chunks == exact.snapshots.mismatched_chunks);
  const ChunkMismatch& m = tolerant.snapshots.checks.at(0).mismatches.at(0);
  CHECK(m.within_tolerance);
  CHECK(m.tolerance_text == rule);
  CHECK(m.elements.elements == 256);  // a 1 KiB chunk of floats
  CHECK(m.elements.differing > 0);
  CHECK(m.elements.over == 0);
  REQUIRE_FALSE(m.elements.worst.empty());
  CHECK(m.elements.worst[0].ulp >= 1);
  CHECK(m.elements.worst[0].ulp <= 8);

  // Too tight a tolerance: mismatches, with the worst elements named.
  ReplayOptions tight = emulator_options();
  tight.tolerances.push_back(tolerance("f32:ulp=0"));
  ReplayResult strict = replay_ok(capture.path, tight);
  CHECK_FALSE(strict.matched());
  const ChunkMismatch& s = strict.snapshots.checks.at(0).mismatches.at(0);
  REQUIRE_FALSE(s.elements.worst.empty());
  CHECK_FALSE(s.elements.worst[0].within);
  CHECK(s.elements.worst[0].address >= capture.y);
  CHECK(s.elements.worst[0].index == (s.elements.worst[0].address - capture.y) / 4);
}

TEST_CASE("repetitions of an extracted launch each start from the restored inputs", "[snapshot]") {
  auto capture = write_snapshot_capture(temp_path("extract_repeat.cusnap"));
  ReplayOptions options = emulator_options();
  options.repeat = 3;
  options.warmup = 1;
  ReplayResult r = replay_ok(capture.path, options);
  // increment is not idempotent: without a restore before each run x would be +4.
  CHECK(r.matched());
  CHECK(r.snapshots.matched_chunks == 4);
  CHECK(r.snapshots.restored_chunks == 4 * 4);
  REQUIRE(r.launches.size() == 1);
  CHECK(r.launches[0].time.samples == 3);
}

TEST_CASE("module variables in snapshots are restored and compared through their live address",
          "[snapshot]") {
  SnapshotCaptureOptions o;
  o.kernel = "add_bias";
  auto capture = write_snapshot_capture(temp_path("extract_global.cusnap"), o);
  ReplayOptions options = emulator_options();
  options.repeat = 2;
  ReplayResult r = replay_ok(capture.path, options);
  CHECK(r.matched());
  CHECK(r.snapshots.compared_chunks == 6);  // 4 chunks of x, the two 4-byte variables
  CHECK(r.snapshots.matched_chunks == 6);
}

TEST_CASE("a whole-run capture verifies its snapshots and never restores them", "[snapshot]") {
  SnapshotCaptureOptions o;
  o.extracted = false;
  o.wrong_before = true;
  o.with_skipped = true;
  auto capture = write_snapshot_capture(temp_path("wholerun.cusnap"), o);
  ReplayResult r = replay_ok(capture.path, emulator_options());
  CHECK_FALSE(r.plan.extracted());
  CHECK(r.snapshots.restored_chunks == 0);
  REQUIRE(r.snapshots.checks.size() == 2);
  // The wrong beforeLaunch snapshot is reported, at the byte that differs...
  const SnapshotCheck& before = r.snapshots.checks[0];
  CHECK(before.phase == SnapshotPhase::kBeforeLaunch);
  CHECK(before.mismatched_chunks == 1);
  CHECK(before.mismatches.at(0).first_difference == capture.x + 8);
  // ...and did not reach device memory: the results and the afterLaunch snapshot match.
  CHECK(r.snapshots.checks[1].phase == SnapshotPhase::kAfterLaunch);
  CHECK(r.snapshots.checks[1].mismatched_chunks == 0);
  CHECK(r.verification.matched == 1);
  CHECK(r.verification.mismatched == 0);
  CHECK_FALSE(r.matched());
  // The second launch's snapshot was skipped at capture, with its reason.
  REQUIRE(r.plan.skipped_snapshots.size() == 1);
  CHECK(r.plan.skipped_snapshots[0].seq == capture.skipped_seq);
  CHECK(r.plan.skipped_snapshots[0].launch_ordinal == 1);
  CHECK(r.plan.skipped_snapshots[0].reason == "the stream was being captured into a graph");
}

TEST_CASE("a whole-run capture whose snapshots are right matches", "[snapshot]") {
  SnapshotCaptureOptions o;
  o.extracted = false;
  auto capture = write_snapshot_capture(temp_path("wholerun_ok.cusnap"), o);
  ReplayResult r = replay_ok(capture.path, emulator_options());
  CHECK(r.matched());
  CHECK(r.snapshots.compared_chunks == 8);
  CHECK(r.snapshots.matched_chunks == 8);
  CHECK(r.verification.matched == 1);
}

TEST_CASE(
    "snapshot chunks in host memory: an extract restores and compares them, a whole run warns",
    "[snapshot]") {
  // Host memory a kernel can reach is recreated at replay. In an extract its chunks are the
  // launch's inputs and expected outputs like any others; in a whole-run replay what host code
  // wrote there was never captured, so they are not compared (and a warning says so).
  const uint64_t host = 0x7ffe00000000ull;
  auto write = [&](const std::string& path, bool extracted) {
    SnapshotHeader header;
    header.chunk_bytes = 1024;
    header.extracted = extracted;
    CaptureBuilder w(path, header);
    w.module_load_ptx(0xA000, test_ptx());
    w.function_get(0xA000, 0xF001, "increment");
    w.alloc(kBase, 128);
    w.host_alloc(host, 256);
    std::vector<int> x(32, 7), x_after(32, 8);
    if (!extracted) w.htod(kBase, as_bytes(x));  // a whole run's memory comes from its copies
    uint64_t launch = w.launch(0xF001, "increment", 1, 32, Params().ptr(kBase).i32(32));
    std::vector<uint8_t> pinned(256, 0x11);
    auto before = w.chunks(kBase, as_bytes(x), 1024);
    auto after = w.chunks(kBase, as_bytes(x_after), 1024);
    for (auto* c : {&before, &after}) {
      auto h = w.chunks(host, pinned, 1024);
      c->insert(c->end(), h.begin(), h.end());
    }
    w.snapshot(launch, 0, 0, before);
    w.snapshot(launch, 0, 1, after);
    w.close();
  };
  auto warned_about_host = [](const ReplayResult& r) {
    bool warned = false;
    for (const PlanWarning& w : r.plan.warnings)
      warned |= w.message.find("host memory") != std::string::npos;
    return warned;
  };
  SECTION("extract") {
    std::string path = temp_path("snap_host_extract.cusnap");
    write(path, true);
    ReplayResult r = replay_ok(path, emulator_options());
    CHECK(r.matched());
    CHECK(r.snapshots.restored_chunks == 2);
    CHECK(r.snapshots.compared_chunks == 2);
    CHECK_FALSE(warned_about_host(r));
  }
  SECTION("whole run") {
    std::string path = temp_path("snap_host_run.cusnap");
    write(path, false);
    ReplayResult r = replay_ok(path, emulator_options());
    CHECK(r.matched());
    CHECK(r.snapshots.restored_chunks == 0);
    CHECK(r.snapshots.compared_chunks == 2);  // the device chunk, before and after the launch
    CHECK(warned_about_host(r));
  }
}

TEST_CASE("tolerance rules parse and compare elements on their ordered representation",
          "[snapshot]") {
  Tolerance t = tolerance("0x7f00=f16:ulp=2,abs=1e-3");
  CHECK(t.allocation == 0x7f00u);
  CHECK(t.type == ElementType::kF16);
  CHECK(t.ulp == 2u);
  CHECK(t.abs == Approx(1e-3));
  CHECK_FALSE(t.rel);
  for (const char* bad :
       {"f32", "f33:ulp=1", "f32:ulp=-1", "f32:rel=x", "f32:", "0xZZ=f32:ulp=1", "f32:foo=1"}) {
    CHECK_FALSE(parse_tolerance(bad));
  }
  // +0 and -0 are adjacent; the distance across zero counts every value between.
  CHECK(ulp_distance(ElementType::kF32, 0x00000000u, 0x80000000u) == 1);
  CHECK(ulp_distance(ElementType::kF32, 0x00000001u, 0x80000001u) == 3);
  CHECK(ulp_distance(ElementType::kF32, 0x3f800000u, 0x3f800002u) == 2);
  CHECK(ulp_distance(ElementType::kF64, 0x3ff0000000000000ull, 0x3fefffffffffffffull) == 1);
  CHECK(ulp_distance(ElementType::kBF16, 0x3f80u, 0xbf80u) == 2 * 0x3f80u + 1);
  CHECK(ulp_distance(ElementType::kF16, 0x7e00u, 0x7c01u) == 0);  // NaN matches NaN
  CHECK(element_value(ElementType::kF16, 0x3c00u) == 1.0);
  CHECK(element_value(ElementType::kF16, 0x0001u) == Approx(5.960464477539063e-08));
  CHECK(element_value(ElementType::kBF16, 0xc040u) == -3.0);

  std::vector<float> want{1.0f, 2.0f, std::nanf(""), 100.0f};
  std::vector<float> got{1.0f, std::nextafter(2.0f, 3.0f), std::nanf(""), 100.5f};
  auto w = as_bytes(want), g = as_bytes(got);
  auto c = compare_elements(tolerance("f32:ulp=1"), w, g, 0x1000, 10, 8);
  CHECK(c.elements == 4);
  CHECK(c.differing == 2);
  CHECK(c.over == 1);
  REQUIRE(c.worst.size() == 2);
  CHECK(c.worst[0].address == 0x100c);
  CHECK(c.worst[0].index == 13);
  CHECK(c.worst[0].abs_error == Approx(0.5));
  CHECK_FALSE(c.worst[0].within);
  CHECK(c.worst[1].within);
  auto rel = compare_elements(tolerance("f32:rel=0.01"), w, g, 0x1000, 0, 8);
  CHECK(rel.over == 0);
}
