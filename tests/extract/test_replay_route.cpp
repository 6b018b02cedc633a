// cusnap extract --route replay: the source replayed on the emulator up to each launch, its
// memory read there by the interceptor's rule (format/snapshot_ranges.h), gives the same
// extracted capture as the snapshot route (compare.h); a replay that diverged first refuses.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>

#include "compare.h"
#include "cusnap/extract/extract.h"
#include "cusnap/format/reader.h"
#include "fixture.h"
#include "test_files.h"

#ifdef CUSNAP_TEST_EMULATOR

using namespace cusnap;
using namespace cusnap::extract;
using namespace cusnap::extract::test;
namespace schema = format::schema;
namespace fs = std::filesystem;

namespace {

std::string tmp(const std::string& name) { return scratch_path("replay_route", name); }

std::unique_ptr<format::Reader> open(const std::string& path) { return open_capture(path); }

struct Written {
  std::map<uint64_t, std::string> paths;   // launch seq -> extracted capture
  std::map<uint64_t, std::string> errors;  // launch seq -> why not
  std::map<uint64_t, std::vector<std::string>> notes;
};

// Every launch of `source` by `route`, into files named after `stem`.
Written extract_all(const std::string& source, Route route, const std::string& stem,
                    bool allow_diverged = false) {
  auto reader = open(source);
  ExtractOptions options;
  options.route = route;
  options.driver = CUSNAP_TEST_EMULATOR;
  options.allow_diverged = allow_diverged;
  Selection all;
  all.kernel_regex = "regex:.";
  auto plans = plan_extraction(*reader, all, options);
  INFO(plans.status().to_string());
  REQUIRE(plans.is_ok());
  std::vector<std::string> paths;
  for (const auto& p : *plans) {
    CHECK(p.route == (route == Route::kSnapshots ? Route::kSnapshots : Route::kReplay));
    paths.push_back(tmp(stem + "-" + std::to_string(p.launch_seq) + ".cusnap"));
  }
  Written w;
  format::Status st =
      extract_launches(*reader, source, *plans, paths, options,
                       [&](const LaunchPlan& p, const format::Result<ExtractedLaunch>& done) {
                         if (done) {
                           w.paths[p.launch_seq] = done->output_path;
                           w.notes[p.launch_seq] = done->plan.notes;
                         } else {
                           w.errors[p.launch_seq] = done.status().message();
                         }
                       });
  INFO(st.to_string());
  REQUIRE(st.is_ok());
  return w;
}

std::vector<uint8_t> memory_at(format::Reader& r, uint64_t seq, uint64_t address, uint64_t size) {
  auto ref = r.call(seq);
  REQUIRE(ref.is_ok());
  std::vector<uint8_t> out;
  for (auto c : ref->get().getMemorySnapshot().getChunks()) {
    if (c.getAddress() < address || c.getAddress() >= address + size) continue;
    auto bytes = r.read_blob(format::BlobId{c.getBlob().getHigh(), c.getBlob().getLow()});
    REQUIRE(bytes.is_ok());
    out.insert(out.end(), bytes->begin(), bytes->end());
  }
  return out;
}

}  // namespace

TEST_CASE("replay route: the same extracted captures as the snapshot route") {
  std::string source = tmp("with-snapshots.cusnap");
  Replayable f = write_replayable_fixture(source, read_text(CUSNAP_TEST_PTX_PATH), true);
  Written by_file = extract_all(source, Route::kSnapshots, "file");
  Written by_replay = extract_all(source, Route::kReplay, "replay");
  CHECK(by_file.errors.empty());
  CHECK(by_replay.errors.empty());
  REQUIRE(by_file.paths.size() == 2);
  REQUIRE(by_replay.paths.size() == 2);
  for (uint64_t seq : {f.saxpy, f.add}) {
    auto a = open(by_file.paths.at(seq));
    auto b = open(by_replay.paths.at(seq));
    CHECK(compare_extracts(*a, *b, false) == "");
    auto x = b->header().getExtract();
    CHECK(x.getRoute() == schema::ExtractInfo::Route::REPLAY);
    CHECK(std::string(x.getRouteDriver()) == CUSNAP_TEST_EMULATOR);
    CHECK(x.getLaunchSeq() == seq);
    CHECK(b->header().getOptions().getSnapshotChunkBytes() == kChunkBytes);
    // In seq order: moduleLoad, functionGet, globalGet, memAlloc a, c, d, launch, before, after:
    // every range live at the launch (d is never read by the kernels, but a snapshot covers it).
    CHECK(b->call_count() == 9);
    CHECK(b->verify().state == format::Integrity::kWhole);
  }
  // The replay computed what the host reference says.
  auto saxpy = open(by_replay.paths.at(f.saxpy));
  CHECK(memory_at(*saxpy, 7, kC, kN * 4) == to_bytes(f.c0));
  CHECK(memory_at(*saxpy, 8, kC, kN * 4) == to_bytes(f.c1));
  auto add = open(by_replay.paths.at(f.add));
  CHECK(memory_at(*add, 8, kC, kN * 4) == to_bytes(f.c2));
  CHECK(memory_at(*add, 7, kGlobal, 4) == to_bytes(std::vector<int>{kOffset}));
  // The comparison sees a difference where there is one.
  CHECK(compare_extracts(*saxpy, *add, false) != "");
}

TEST_CASE("replay route: a capture without snapshots gives the snapshot route's extracts") {
  std::string with = tmp("snapshots.cusnap");
  std::string without = tmp("no-snapshots.cusnap");
  std::string ptx = read_text(CUSNAP_TEST_PTX_PATH);
  Replayable f = write_replayable_fixture(with, ptx, true);
  Replayable g = write_replayable_fixture(without, ptx, false);
  Written by_file = extract_all(with, Route::kSnapshots, "with");
  Written by_auto = extract_all(without, Route::kAuto, "without");  // auto: no snapshots, replay
  REQUIRE(by_auto.errors.empty());
  REQUIRE(by_auto.paths.size() == 2);
  auto a = open(by_file.paths.at(f.saxpy));
  auto b = open(by_auto.paths.at(g.saxpy));
  CHECK(compare_extracts(*a, *b, false) == "");
  auto c = open(by_file.paths.at(f.add));
  auto d = open(by_auto.paths.at(g.add));
  CHECK(compare_extracts(*c, *d, false) == "");
  // --route snapshots on it: refused (no snapshots), naming the replay route.
  auto reader = open(without);
  ExtractOptions only_snapshots;
  only_snapshots.route = Route::kSnapshots;
  Selection one;
  one.call_seq = g.saxpy;
  auto plans = plan_extraction(*reader, one, only_snapshots);
  REQUIRE(plans.is_ok());
  auto refused = write_extracted(*reader, without, plans->front(), tmp("refused.cusnap"));
  REQUIRE_FALSE(refused.is_ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("--route replay"));
}

TEST_CASE("replay route: a replay that diverged before the launch refuses it") {
  std::string source = tmp("diverged.cusnap");
  for (const auto& entry : fs::directory_iterator(fs::path(source).parent_path()))
    if (entry.path().filename().string().rfind("diverged-", 0) == 0) fs::remove(entry.path());
  Replayable f = write_replayable_fixture(source, read_text(CUSNAP_TEST_PTX_PATH), false, true);
  Written w = extract_all(source, Route::kReplay, "diverged");
  // saxpy_int comes before the copy that does not match: written.
  CHECK(w.paths.count(f.saxpy) == 1);
  REQUIRE(w.errors.count(f.add) == 1);
  CHECK_THAT(w.errors.at(f.add), Catch::Contains("diverged from the capture before it"));
  CHECK_THAT(w.errors.at(f.add),
             Catch::Contains("copy of call " + std::to_string(f.copy_after_saxpy)));
  CHECK_THAT(w.errors.at(f.add), Catch::Contains("--allow-diverged"));
  CHECK_FALSE(fs::exists(tmp("diverged-" + std::to_string(f.add) + ".cusnap")));

  Written allowed = extract_all(source, Route::kReplay, "allowed", true);
  CHECK(allowed.errors.empty());
  REQUIRE(allowed.paths.count(f.add) == 1);
  REQUIRE(allowed.notes.at(f.add).size() == 1);
  CHECK_THAT(allowed.notes.at(f.add).front(), Catch::Contains("diverged"));
}

TEST_CASE("replay route: a driver that cannot be loaded is an error for the whole pass") {
  std::string source = tmp("nodriver.cusnap");
  write_replayable_fixture(source, read_text(CUSNAP_TEST_PTX_PATH), false);
  auto reader = open(source);
  ExtractOptions options;
  options.driver = tmp("no-such-driver/libcuda.so.1");
  Selection all;
  all.kernel_regex = "regex:.";
  auto plans = plan_extraction(*reader, all, options);
  REQUIRE(plans.is_ok());
  std::vector<std::string> paths{tmp("nd-1.cusnap"), tmp("nd-2.cusnap")};
  int called = 0;
  format::Status st = extract_launches(*reader, source, *plans, paths, options,
                                       [&](const LaunchPlan&, const auto&) { ++called; });
  CHECK_FALSE(st.is_ok());
  CHECK_THAT(st.message(), Catch::Contains("prefix replay"));
  CHECK(called == 0);
}

TEST_CASE("replay route: memory the driver could not place at its captured address is an error") {
  std::string source = tmp("relocated.cusnap");
  write_replayable_fixture(source, read_text(CUSNAP_TEST_PTX_PATH), false, false, kLowA);
  auto reader = open(source);
  ExtractOptions options;
  options.driver = CUSNAP_TEST_EMULATOR;
  Selection all;
  all.kernel_regex = "regex:.";
  auto plans = plan_extraction(*reader, all, options);
  REQUIRE(plans.is_ok());
  std::vector<std::string> paths{tmp("rel-1.cusnap"), tmp("rel-2.cusnap")};
  for (const auto& p : paths) fs::remove(p);  // a file left by an earlier run proves nothing
  int called = 0;
  format::Status st = extract_launches(*reader, source, *plans, paths, options,
                                       [&](const LaunchPlan&, const auto&) { ++called; });
  CHECK_FALSE(st.is_ok());
  CHECK_THAT(st.message(), Catch::Contains("did not place"));
  CHECK(called == 0);
  CHECK_FALSE(fs::exists(paths[0]));
}

#endif  // CUSNAP_TEST_EMULATOR
