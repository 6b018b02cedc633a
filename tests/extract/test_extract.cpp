// cusnap extract by file work: the structure of the extracted capture (read back with the
// Reader), selection, and refusals of hostile sources.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <span>

#include "cusnap/extract/extract.h"
#include "cusnap/format/blob_id.h"
#include "cusnap/format/reader.h"
#include "fixture.h"
#include "reseal.h"
#include "test_files.h"

using namespace cusnap;
using namespace cusnap::extract;
using namespace cusnap::extract::test;
namespace schema = format::schema;
namespace fs = std::filesystem;

namespace {

std::string tmp(const std::string& name) { return scratch_path("unit", name); }

std::unique_ptr<format::Reader> open(const std::string& path) { return open_capture(path); }

std::vector<uint64_t> seqs(const std::vector<LaunchPlan>& plans) {
  std::vector<uint64_t> out;
  for (const auto& p : plans) out.push_back(p.launch_seq);
  return out;
}

// The memory a snapshot holds, reassembled from its chunks' blobs.
std::map<uint64_t, std::vector<uint8_t>> contents(format::Reader& r,
                                                  schema::MemorySnapshot::Reader s) {
  std::map<uint64_t, std::vector<uint8_t>> out;
  uint64_t base = 0;
  for (auto c : s.getChunks()) {
    auto bytes = r.read_blob(format::BlobId{c.getBlob().getHigh(), c.getBlob().getLow()});
    REQUIRE(bytes.is_ok());
    REQUIRE(bytes->size() == c.getSize());
    if (out.empty() || base + out[base].size() != c.getAddress()) base = c.getAddress();
    out[base].insert(out[base].end(), bytes->begin(), bytes->end());
  }
  return out;
}

struct Source {
  std::string path;
  Fixture f;
  std::unique_ptr<format::Reader> reader;
};

Source make_source(const std::string& name) {
  Source s;
  s.path = tmp(name);
  s.f = write_fixture(s.path, read_text(CUSNAP_TEST_PTX_PATH));
  s.reader = open(s.path);
  return s;
}

// The record at `seq`, kept alive by the caller (a reader into a temporary CallRef dangles).
format::CallRef record(format::Reader& r, uint64_t seq) {
  auto ref = r.call(seq);
  REQUIRE(ref.is_ok());
  return std::move(ref.value());
}

LaunchPlan plan_one(format::Reader& r, Selection sel) {
  auto plans = plan_extraction(r, sel);
  INFO(plans.status().to_string());
  REQUIRE(plans.is_ok());
  REQUIRE(plans->size() == 1);
  return plans->front();
}

}  // namespace

TEST_CASE("an extracted launch holds its module and function and covered memory and snapshots") {
  Source src = make_source("structure.cusnap");
  Selection sel;
  sel.call_seq = src.f.saxpy;
  LaunchPlan plan = plan_one(*src.reader, sel);
  std::string out = tmp("structure-out.cusnap");
  auto done = write_extracted(*src.reader, "the/source.cusnap", plan, out);
  INFO(done.status().to_string());
  REQUIRE(done.is_ok());
  CHECK(done->input_bytes == 2 * kN * 4);
  CHECK(done->expected_bytes == 2 * kN * 4);

  auto r = open(out);
  auto h = r->header();
  REQUIRE(h.hasExtract());
  auto x = h.getExtract();
  CHECK(std::string(x.getSourcePath()) == "the/source.cusnap");
  CHECK(x.getSourceCreationTimeNs() == 1700000000123456789LL);
  CHECK(std::string(x.getSourceHostName()) == "builder-host");
  CHECK(x.getSourcePid() == 4242);
  CHECK(x.getLaunchSeq() == src.f.saxpy);
  CHECK(x.getLaunchOrdinal() == 0);
  CHECK(std::string(x.getKernelName()) == "saxpy_int");
  CHECK(x.getRoute() == schema::ExtractInfo::Route::SNAPSHOT);
  CHECK(x.getInputBytes() == 2 * kN * 4);
  CHECK(x.getExpectedBytes() == 2 * kN * 4);
  CHECK(h.getOptions().getMode() == schema::CaptureOptions::CaptureMode::SNAPSHOT);
  CHECK(h.getOptions().getSnapshotChunkBytes() == kChunkBytes);
  REQUIRE(h.getDevices().size() == 1);
  CHECK(h.getDriverVersion() == 13000);

  // In seq order: moduleLoad, functionGet, memAlloc a, memAlloc c, launch, before, after.
  REQUIRE(r->call_count() == 7);
  std::vector<schema::CallRecord::Which> kinds;
  std::vector<format::CallRef> calls;
  for (uint64_t i = 0; i < r->call_count(); ++i) calls.push_back(record(*r, i));
  for (const auto& c : calls) kinds.push_back(c.get().which());
  using W = schema::CallRecord::Which;
  CHECK(kinds == std::vector<W>{W::MODULE_LOAD, W::FUNCTION_GET, W::MEM_ALLOC, W::MEM_ALLOC,
                                W::LAUNCH, W::MEMORY_SNAPSHOT, W::MEMORY_SNAPSHOT});
  auto ml = calls[0].get().getModuleLoad();
  CHECK(ml.getHandle() == kModuleA);
  auto fn = calls[1].get().getFunctionGet();
  CHECK(fn.getHandle() == kSaxpy);
  CHECK(std::string(fn.getName()) == "saxpy_int");
  CHECK(calls[2].get().getMemAlloc().getAddress() == kA);
  CHECK(calls[3].get().getMemAlloc().getAddress() == kC);
  CHECK(calls[3].get().getMemAlloc().getSize() == kN * 4);

  // The launch is the source's, with its layout pointing at the copied functionGet.
  auto l = calls[4].get().getLaunch();
  format::CallRef src_ref = record(*src.reader, src.f.saxpy);
  auto src_launch = src_ref.get().getLaunch();
  CHECK(l.getFunction() == kSaxpy);
  CHECK(l.getGridX() == src_launch.getGridX());
  CHECK(l.getBlockX() == 128);
  CHECK(l.getParams() == src_launch.getParams());
  CHECK(l.getLayout().size() == 4);
  CHECK(l.getLayoutSeq() == 1);
  CHECK(l.getOrdinal() == 0);
  REQUIRE(r->launches().size() == 1);

  // Only module A's image is in the file (B's differs, and is not there).
  format::CallRef load_a = record(*src.reader, src.f.module_a);
  format::CallRef load_b = record(*src.reader, src.f.module_b);
  auto image_a = load_a.get().getModuleLoad().getImage();
  auto image_b = load_b.get().getModuleLoad().getImage();
  CHECK(r->find_blob({image_a.getHigh(), image_a.getLow()}) != nullptr);
  CHECK(r->find_blob({image_b.getHigh(), image_b.getLow()}) == nullptr);

  // Snapshots name the launch in this file and hold the host reference's bytes.
  auto before = calls[5].get().getMemorySnapshot();
  auto after = calls[6].get().getMemorySnapshot();
  CHECK(before.getPhase() == schema::MemorySnapshot::Phase::BEFORE_LAUNCH);
  CHECK(after.getPhase() == schema::MemorySnapshot::Phase::AFTER_LAUNCH);
  CHECK(before.getLaunchSeq() == 4);
  CHECK(after.getLaunchSeq() == 4);
  CHECK(before.getLaunchOrdinal() == 0);
  CHECK(before.getChunks().size() == 2 * ((kN * 4 + kChunkBytes - 1) / kChunkBytes));
  auto in = contents(*r, before);
  auto expected = contents(*r, after);
  CHECK(in[kA] == to_bytes(src.f.a));
  CHECK(in[kC] == to_bytes(src.f.c0));
  CHECK(expected[kC] == to_bytes(src.f.c1));
  CHECK(r->verify().state == format::Integrity::kWhole);
}

TEST_CASE("a launch that reads a module variable carries its globalGet and contents") {
  Source src = make_source("global.cusnap");
  Selection sel;
  sel.kernel_regex = "add_offset";
  LaunchPlan plan = plan_one(*src.reader, sel);
  CHECK(plan.launch_seq == src.f.add);
  CHECK(plan.global_seqs == std::vector<uint64_t>{src.f.global});
  CHECK(plan.allocation_seqs == std::vector<uint64_t>{src.f.alloc_c});
  std::string out = tmp("global-out.cusnap");
  auto done = write_extracted(*src.reader, src.path, plan, out);
  INFO(done.status().to_string());
  REQUIRE(done.is_ok());
  CHECK(done->input_bytes == kN * 4 + 4);
  auto r = open(out);
  using W = schema::CallRecord::Which;
  REQUIRE(r->call_count() == 7);
  format::CallRef global = record(*r, 2), alloc = record(*r, 3), before = record(*r, 5),
                  after = record(*r, 6);
  CHECK(global.get().which() == W::GLOBAL_GET);
  CHECK(std::string(global.get().getGlobalGet().getName()) == "g_offset");
  CHECK(alloc.get().getMemAlloc().getAddress() == kC);
  auto in = contents(*r, before.get().getMemorySnapshot());
  CHECK(in[kGlobal] == to_bytes(std::vector<int>{kOffset}));
  CHECK(contents(*r, after.get().getMemorySnapshot())[kC] == to_bytes(src.f.c2));
}

TEST_CASE("selection follows the kernel-name and skip and count rules of capture and replay") {
  Source src = make_source("select.cusnap");
  auto pick = [&](Selection s) {
    auto plans = plan_extraction(*src.reader, s);
    INFO(plans.status().to_string());
    REQUIRE(plans.is_ok());
    return seqs(*plans);
  };
  Selection s;
  CHECK(pick(s) == std::vector<uint64_t>{src.f.saxpy, src.f.add, src.f.unsnapped, src.f.skipped});
  s.kernel_regex = "saxpy";  // exactly: no launch of "saxpy_int"
  auto exact = plan_extraction(*src.reader, s);
  CHECK_FALSE(exact.is_ok());
  s.kernel_regex = "regex:saxpy";
  CHECK(pick(s) == std::vector<uint64_t>{src.f.saxpy, src.f.unsnapped, src.f.skipped});
  s.launch_skip = 1;
  s.launch_count = 1;
  CHECK(pick(s) == std::vector<uint64_t>{src.f.unsnapped});
  Selection anchored;
  anchored.kernel_regex = "regex:^add_";
  CHECK(pick(anchored) == std::vector<uint64_t>{src.f.add});
  Selection call;
  call.call_seq = src.f.add;
  call.kernel_regex = "regex:saxpy";  // --call wins over a name
  CHECK(pick(call) == std::vector<uint64_t>{src.f.add});

  Selection none;
  none.kernel_regex = "no_such_kernel";
  auto empty = plan_extraction(*src.reader, none);
  REQUIRE_FALSE(empty.is_ok());
  CHECK_THAT(empty.status().message(), Catch::Contains("no launch matches"));
  Selection bad;
  bad.kernel_regex = "regex:(";
  CHECK_FALSE(plan_extraction(*src.reader, bad).is_ok());
  Selection not_launch;
  not_launch.call_seq = src.f.alloc_a;
  auto nl = plan_extraction(*src.reader, not_launch);
  REQUIRE_FALSE(nl.is_ok());
  CHECK_THAT(nl.status().message(), Catch::Contains("is not a launch record"));
  Selection past;
  past.call_seq = 100000;
  CHECK_FALSE(plan_extraction(*src.reader, past).is_ok());
}

TEST_CASE("selection: --kernel-name-base picks the name the filter compares") {
  std::string path = tmp("mangled.cusnap");
  {
    CaptureBuilder b(path, snapshot_header());
    b.module_load_ptx(kModuleA, read_text(CUSNAP_TEST_PTX_PATH));
    Params p;
    p.ptr(kC).i32(kN);
    uint64_t fn = b.function_get(kModuleA, kAddOffset, "_Z4gemmPf", p.layout());
    b.launch(kAddOffset, "_Z4gemmPf", 1, 32, p, /*stream=*/0, /*ordinal=*/0, fn);
    b.close();
  }
  auto r = open(path);
  auto selects = [&](const std::string& filter, common::KernelNameBase base) {
    Selection s;
    s.kernel_regex = filter;
    s.name_base = base;
    return plan_extraction(*r, s).is_ok();
  };
  using B = common::KernelNameBase;
  CHECK(selects("gemm", B::kFunction));
  CHECK_FALSE(selects("regex:float", B::kFunction));  // the function name has no parameters
  CHECK(selects("regex:float", B::kDemangled));
  CHECK(selects("_Z4gemmPf", B::kMangled));
  CHECK_FALSE(selects("gemm", B::kMangled));
}

TEST_CASE("a launch without snapshots or with a skipped one is refused naming it and the reason") {
  Source src = make_source("nosnap.cusnap");
  Selection s;
  s.call_seq = src.f.unsnapped;
  // --route auto would replay it; --route snapshots refuses it.
  CHECK(plan_one(*src.reader, s).route == Route::kReplay);
  ExtractOptions only_snapshots;
  only_snapshots.route = Route::kSnapshots;
  auto planned = plan_extraction(*src.reader, s, only_snapshots);
  REQUIRE(planned.is_ok());
  LaunchPlan plan = planned->front();
  CHECK(plan.route == Route::kSnapshots);
  std::string out = tmp("nosnap-out.cusnap");
  auto r = write_extracted(*src.reader, src.path, plan, out);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("launch seq " + std::to_string(src.f.unsnapped)));
  CHECK_THAT(r.status().message(), Catch::Contains("no beforeLaunch memory snapshot"));
  CHECK_THAT(r.status().message(), Catch::Contains("--route replay (or auto) extracts it"));
  CHECK_FALSE(fs::exists(out));

  s.call_seq = src.f.skipped;
  CHECK(plan_one(*src.reader, s).route == Route::kReplay);
  planned = plan_extraction(*src.reader, s, only_snapshots);
  REQUIRE(planned.is_ok());
  plan = planned->front();
  r = write_extracted(*src.reader, src.path, plan, out);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("skipped at capture time"));
  CHECK_THAT(r.status().message(), Catch::Contains("captured into a graph"));
  CHECK_THAT(r.status().message(), Catch::Contains("--route replay (or auto) extracts it"));
}

TEST_CASE("output paths: one file or a directory or a %n pattern") {
  LaunchPlan p;
  p.launch_seq = 42;
  fs::path dir = fs::path(tmp("outdir"));
  fs::remove_all(dir);
  CHECK(output_path("x.cusnap", p, 1).value() == "x.cusnap");
  CHECK(output_path("k-%n.cusnap", p, 3).value() == "k-42.cusnap");
  CHECK(output_path(dir.string(), p, 2).value() == (dir / "call-42.cusnap").string());
  CHECK(fs::is_directory(dir));
  CHECK(output_path(dir.string(), p, 1).value() == (dir / "call-42.cusnap").string());
  auto several = output_path("one.cusnap", p, 2);
  REQUIRE_FALSE(several.is_ok());
  CHECK_THAT(several.status().message(), Catch::Contains("%n"));
}

// Hostile sources: each one is a capture a buggy or malicious writer could produce.
namespace {

struct Hostile {
  std::string path;
  uint64_t launch = 0;
};

// module, function, one allocation of 512 bytes at kA, a launch; `snapshots` writes the rest.
template <typename F>
Hostile hostile(const std::string& name, F&& snapshots) {
  Hostile h;
  h.path = tmp(name);
  CaptureBuilder b(h.path, snapshot_header());
  b.module_load_ptx(kModuleA, read_text(CUSNAP_TEST_PTX_PATH));
  Params p;
  p.ptr(kC).i32(128);
  uint64_t fn = b.function_get(kModuleA, kAddOffset, "add_offset", p.layout());
  b.alloc(kA, 512);
  h.launch = b.launch(kAddOffset, "add_offset", 1, 128, p, /*stream=*/0, /*ordinal=*/0, fn);
  snapshots(b, h.launch);
  b.close();
  return h;
}

std::string failure(const Hostile& h) {
  auto r = open(h.path);
  Selection s;
  s.call_seq = h.launch;
  auto plans = plan_extraction(*r, s);
  if (!plans.is_ok()) return plans.status().to_string();
  auto w = write_extracted(*r, h.path, plans->front(), h.path + ".out");
  if (!w.is_ok()) return w.status().to_string();
  return "";
}

}  // namespace

TEST_CASE("hostile: a chunk outside every live allocation") {
  auto h = hostile("outside.cusnap", [](CaptureBuilder& b, uint64_t l) {
    std::vector<uint8_t> bytes(600, 1);  // runs 88 bytes past the 512-byte allocation
    b.snapshot(l, 0, kBeforeLaunch, b.tile({{kA, bytes}}));
    b.snapshot(l, 0, kAfterLaunch, b.tile({{kA, bytes}}));
  });
  CHECK_THAT(failure(h), Catch::Contains("outside every allocation"));
}

TEST_CASE("hostile: a chunk in memory freed before the launch") {
  Hostile h;
  h.path = tmp("freed.cusnap");
  {
    CaptureBuilder b(h.path, snapshot_header());
    b.module_load_ptx(kModuleA, read_text(CUSNAP_TEST_PTX_PATH));
    Params p;
    p.ptr(kE).i32(128);
    uint64_t fn = b.function_get(kModuleA, kAddOffset, "add_offset", p.layout());
    b.alloc(kE, 512);
    b.free(kE);
    h.launch = b.launch(kAddOffset, "add_offset", 1, 128, p, /*stream=*/0, /*ordinal=*/0, fn);
    std::vector<uint8_t> bytes(512, 2);
    b.snapshot(h.launch, 0, kBeforeLaunch, b.tile({{kE, bytes}}));
    b.snapshot(h.launch, 0, kAfterLaunch, b.tile({{kE, bytes}}));
    b.close();
  }
  CHECK_THAT(failure(h), Catch::Contains("outside every allocation"));
}

TEST_CASE("hostile: a snapshot naming a record that is not a launch") {
  auto h = hostile("notlaunch.cusnap", [](CaptureBuilder& b, uint64_t l) {
    std::vector<uint8_t> bytes(512, 1);
    b.snapshot(l - 1, 0, kBeforeLaunch, b.tile({{kA, bytes}}));  // the memAlloc record
  });
  CHECK_THAT(failure(h), Catch::Contains("which is not a launch record before it"));
}

TEST_CASE("hostile: a snapshot naming a launch that does not exist") {
  auto h = hostile("nolaunch.cusnap",
                   [](CaptureBuilder& b, uint64_t) { b.snapshot(999, 0, kBeforeLaunch, {}); });
  CHECK_THAT(failure(h), Catch::Contains("launch seq 999"));
}

TEST_CASE("hostile: a snapshot whose ordinal disagrees with its launch") {
  auto h = hostile("ordinal.cusnap", [](CaptureBuilder& b, uint64_t l) {
    b.snapshot(l, 5, kBeforeLaunch, b.tile({{kA, std::vector<uint8_t>(512, 1)}}));
  });
  CHECK_THAT(failure(h), Catch::Contains("ordinal 5"));
}

TEST_CASE("hostile: a chunk whose blob is missing") {
  auto h = hostile("noblob.cusnap", [](CaptureBuilder& b, uint64_t l) {
    std::vector<uint8_t> bytes(256, 9);
    RawChunk c{kA, 256, format::hash_blob(bytes), false};  // hash of bytes never stored
    b.snapshot(l, 0, kBeforeLaunch, {c});
    b.snapshot(l, 0, kAfterLaunch, {c});
  });
  CHECK_THAT(failure(h), Catch::Contains("is missing from the source"));
}

TEST_CASE("hostile: overlapping chunks and chunks larger than the header's chunk size") {
  auto overlap = hostile("overlap.cusnap", [](CaptureBuilder& b, uint64_t l) {
    std::vector<uint8_t> bytes(256, 3);
    auto id = b.put(bytes);
    b.snapshot(l, 0, kBeforeLaunch, {{kA, 256, id, false}, {kA + 128, 256, id, false}});
  });
  CHECK_THAT(failure(overlap), Catch::Contains("overlaps"));
  auto big = hostile("big.cusnap", [](CaptureBuilder& b, uint64_t l) {
    std::vector<uint8_t> bytes(512, 3);
    b.snapshot(l, 0, kBeforeLaunch, {{kA, 512, b.put(bytes), false}});
  });
  CHECK_THAT(failure(big), Catch::Contains("larger than the header's chunk size"));
}

TEST_CASE("hostile: a restore snapshot holding only hashes and a launch of an unknown function") {
  auto hashes = hostile("hashonly.cusnap", [](CaptureBuilder& b, uint64_t l) {
    std::vector<uint8_t> bytes(512, 1);
    b.snapshot(l, 0, kBeforeLaunch, b.tile({{kA, bytes}}, true));
    b.snapshot(l, 0, kAfterLaunch, b.tile({{kA, bytes}}, true));
  });
  CHECK_THAT(failure(hashes), Catch::Contains("only a hash"));

  Hostile h;
  h.path = tmp("nofunction.cusnap");
  {
    CaptureBuilder b(h.path, snapshot_header());
    Params p;
    p.i32(1);
    h.launch = b.launch(0xDEAD, "ghost", 1, 1, p, /*stream=*/0, /*ordinal=*/0, 0);
    b.close();
  }
  CHECK_THAT(failure(h), Catch::Contains("has no functionGet record"));
}

TEST_CASE("emit-cpp refuses a capture that is not extracted") {
  Source src = make_source("emit-refuse.cusnap");
  fs::path dir = fs::path(tmp("emit-refuse"));
  format::Status st = emit_cpp(*src.reader, dir.string());
  REQUIRE_FALSE(st.is_ok());
  CHECK_THAT(st.message(), Catch::Contains("is not an extracted capture"));
}

TEST_CASE("emit-cpp writes the hashes of an afterLaunch snapshot that holds only hashes") {
  // Captured without --snapshot-outputs: extraction keeps the hashes, and the reproducer
  // compares each chunk's XXH3-128 (xxh3_128.h, written next to main.cpp).
  std::vector<uint8_t> after(512, 1);
  after[300] = 7;  // the second chunk differs from the first
  auto h = hostile("hash-after.cusnap", [&](CaptureBuilder& b, uint64_t l) {
    std::vector<uint8_t> before(512, 0);
    b.snapshot(l, 0, kBeforeLaunch, b.tile({{kA, before}}));
    b.snapshot(l, 0, kAfterLaunch, b.tile({{kA, after}}, true));
  });
  auto r = open(h.path);
  Selection s;
  s.call_seq = h.launch;
  auto plans = plan_extraction(*r, s);
  REQUIRE(plans.is_ok());
  std::string out = tmp("hash-after-out.cusnap");
  auto done = write_extracted(*r, h.path, plans->front(), out);
  INFO(done.status().to_string());
  REQUIRE(done.is_ok());
  CHECK(done->expected_bytes == 512);
  auto extracted = open(out);
  format::CallRef rec = record(*extracted, 5);
  auto chunks = rec.get().getMemorySnapshot().getChunks();
  REQUIRE(chunks.size() == 2);
  CHECK(chunks[0].getHashOnly());
  fs::path dir = fs::path(tmp("emit-hash-after"));
  fs::remove_all(dir);
  format::Status st = emit_cpp(*extracted, dir.string());
  INFO(st.to_string());
  REQUIRE(st.is_ok());
  // One expected_hash line per chunk: address, size, XXH3-128 (libxxhash's, through hash_blob).
  std::ifstream in(dir / "manifest.txt");
  std::string manifest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::span<const uint8_t> bytes(after);
  char line[128];
  for (uint64_t i = 0; i < 2; ++i) {
    std::snprintf(line, sizeof line, "\nexpected_hash %llx 256 %s\n",
                  static_cast<unsigned long long>(kA + 256 * i),
                  format::hash_blob(bytes.subspan(256 * i, 256)).to_hex().c_str());
    CHECK_THAT(manifest, Catch::Contains(line));
  }
  CHECK_FALSE(fs::exists(dir / "expected_0.bin"));  // nothing to compare byte for byte
  // xxh3_128.h is the template, byte for byte (what tests/extract/test_xxh3.cpp checks).
  std::ifstream emitted(dir / "xxh3_128.h"), source(CUSNAP_TEST_XXH3_TEMPLATE);
  REQUIRE(emitted);
  REQUIRE(source);
  CHECK(std::string(std::istreambuf_iterator<char>(emitted), {}) ==
        std::string(std::istreambuf_iterator<char>(source), {}));
}

TEST_CASE("emit-cpp refuses a truncated extracted capture") {
  Source src = make_source("emit-trunc.cusnap");
  Selection sel;
  sel.call_seq = src.f.saxpy;
  LaunchPlan plan = plan_one(*src.reader, sel);
  std::string out = tmp("emit-trunc-out.cusnap");
  REQUIRE(write_extracted(*src.reader, src.path, plan, out).is_ok());
  // Cut the file in the middle of its blob and call frames (as a killed copy would be).
  fs::resize_file(out, fs::file_size(out) / 2);
  // The reader recovers what is before the cut (the header, some records): not enough.
  auto r = format::Reader::open(out);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  CHECK(r.value()->recovery().state == format::Integrity::kTruncated);
  format::Status st = emit_cpp(*r.value(), tmp("emit-trunc"));
  REQUIRE_FALSE(st.is_ok());
  CHECK_THAT(st.message(), Catch::Contains("an extracted capture needs a moduleLoad"));
}

TEST_CASE("a record Cap'n Proto cannot decode is an error, not an exception (fuzz finding)",
          "[extract][fuzz]") {
  // tests/fuzz/regressions: found by the extract fuzzer, checksums resealed so every build reads
  // it alike. The exception used to escape plan_extraction (and `cusnap extract` aborted).
  std::ifstream in(std::string(CUSNAP_FUZZ_REGRESSIONS) + "/extract-plan.cusnap", std::ios::binary);
  REQUIRE(in);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  REQUIRE(cusnap::test::reseal_checksums(bytes) > 0);
  auto source = format::Reader::open_memory(bytes);
  REQUIRE(source.is_ok());
  std::optional<format::Result<std::vector<LaunchPlan>>> plans;
  REQUIRE_NOTHROW(plans.emplace(plan_extraction(*source.value(), Selection{})));
  REQUIRE_FALSE(plans->is_ok());
  INFO(plans->status().to_string());
  CHECK(plans->status().code() == format::ErrorCode::kMalformed);
  CHECK(plans->status().message().find("record: ") != std::string::npos);
}

// Launches that reach CUDA arrays through texture objects (docs/extract.md, "Textures and
// surfaces"), planned by file work: a plain array goes by the replay route (no capture-time
// snapshot holds it) with its record and packed extent, and --route snapshots refuses it; what
// the extract cannot recreate is refused naming the object and why: a mipmapped array (no sample
// makes one), an array format without a known element size (NV12), an array destroyed before
// the launch. The object's value is the launch's 8-byte parameter (the replay's rule).
TEST_CASE("launches over CUDA arrays are planned by the replay route or refused saying why") {
  constexpr uint64_t kArray = 0xA1, kMipmapped = 0xA2;
  auto array_record = [](CaptureBuilder& b, schema::ArrayCall::Op op, uint64_t array,
                         uint64_t mipmapped) {
    capnp::MallocMessageBuilder m;
    auto r = m.initRoot<schema::CallRecord>();
    r.setApiName("cuMipmappedArrayCreate");
    auto a = r.initArray();
    a.setOp(op);
    a.setArray(array);
    a.setMipmapped(mipmapped);
    a.setFormat(0x20);
    a.setChannels(1);
    a.setWidth(64);
    a.setHeight(64);
    a.setLevels(3);
    return b.append_record(m);
  };
  struct Case {
    const char* name;
    std::function<void(CaptureBuilder&)> objects;
    const char* refusal;  // empty: planned
  };
  const Case cases[] = {
      {"plain",
       [](CaptureBuilder& b) {
         b.array_create(kArray, 0x20, 2, 32, 4);  // float2, 32 x 4
         b.tex_object_create(kE, kArray);
       },
       ""},
      {"mipmapped",
       [&](CaptureBuilder& b) {
         array_record(b, schema::ArrayCall::Op::MIPMAPPED_CREATE, 0, kMipmapped);
         capnp::MallocMessageBuilder m;
         auto r = m.initRoot<schema::CallRecord>();
         r.setApiName("cuTexObjectCreate");
         auto o = r.initTexObject();
         o.setOp(schema::TexObjectCall::Op::TEXTURE_CREATE);
         o.setObject(kE);
         o.initResource().setType(1);  // CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
         o.getResource().setMipmapped(kMipmapped);
         b.append_record(m);
       },
       "over mipmapped array 0xa2: extracts do not recreate mipmapped arrays"},
      {"nv12",
       [](CaptureBuilder& b) {
         b.array_create(kArray, 0xb0, 1, 64, 64);
         b.tex_object_create(kE, kArray);
       },
       "cannot be read back: array format 176"},
      {"destroyed",
       [&](CaptureBuilder& b) {
         b.array_create(kArray, 0x20, 1, 64);
         b.tex_object_create(kE, kArray);
         array_record(b, schema::ArrayCall::Op::DESTROY, kArray, 0);
       },
       "was made by no record before the launch"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string path = tmp(std::string("arrays-") + c.name + ".cusnap");
    uint64_t launch = 0;
    {
      CaptureBuilder b(path, snapshot_header());
      b.module_load_ptx(kModuleA, read_text(CUSNAP_TEST_PTX_PATH));
      Params p;
      p.ptr(kE).i32(128);
      uint64_t fn = b.function_get(kModuleA, kAddOffset, "add_offset", p.layout());
      b.alloc(kE, 512);
      c.objects(b);
      launch = b.launch(kAddOffset, "add_offset", 1, 128, p, /*stream=*/0, /*ordinal=*/0, fn);
      std::vector<uint8_t> bytes(512, 2);
      b.snapshot(launch, 0, kBeforeLaunch, b.tile({{kE, bytes}}));
      b.snapshot(launch, 0, kAfterLaunch, b.tile({{kE, bytes}}));
      b.close();
    }
    auto r = open(path);
    Selection sel;
    sel.call_seq = launch;
    LaunchPlan plan = plan_one(*r, sel);
    if (*c.refusal != 0) {
      CHECK_THAT(plan.unsupported_reason,
                 Catch::Contains("parameter at offset 0 is texture object"));
      CHECK_THAT(plan.unsupported_reason, Catch::Contains(c.refusal));
      continue;
    }
    CHECK(plan.unsupported_reason.empty());
    CHECK(plan.route == Route::kReplay);  // although the launch has both snapshots
    REQUIRE(plan.arrays.size() == 1);
    CHECK(plan.arrays[0].handle == kArray);
    CHECK(plan.arrays[0].extent.width_bytes == 32 * 8);
    CHECK(plan.arrays[0].extent.bytes == 32 * 8 * 4);
    CHECK(plan.object_seqs.size() == 1);
    ExtractOptions snapshots_only;
    snapshots_only.route = Route::kSnapshots;
    auto refused = plan_extraction(*r, sel, snapshots_only);
    REQUIRE(refused.is_ok());
    CHECK_THAT(refused->front().unsupported_reason,
               Catch::Contains("capture-time snapshots do not hold array contents"));
  }
}
