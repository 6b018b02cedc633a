// cusnap minimize (docs/minimize.md): captures written by tests/support's independent writer,
// minimized with cusnap::reduce; two-driver conditions replay through runner/'s local runner
// (`cusnap replay` children) on emulator entries with CUSNAP_EMU_INJECT faults.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "capture_builder.h"
#include "cusnap/extract/extract.h"
#include "cusnap/format/reader.h"
#include "cusnap/reduce/minimize.h"
#include "cusnap/runner/runner.h"

using namespace cusnap;
using cusnap::test::as_bytes;
using cusnap::test::CaptureBuilder;
using cusnap::test::Params;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kModule = 0xA000;
constexpr uint64_t kAddOne = 0xF001, kFaultOn = 0xF002;
constexpr uint64_t kIn = 0x7e0000000000, kOutA = 0x7e0000200000, kOutB = 0x7e0000400000;
constexpr uint64_t kSpare = 0x7e0000600000;
constexpr int kN = 1024;
constexpr int kMagic = 0x5EC12E7;
constexpr int kMagicIndex = 300;

std::string tmp(const std::string& name) {
  fs::path dir = fs::path(CUSNAP_TEST_TMP_DIR) / "minimize";
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string ptx() {
  std::ifstream f(CUSNAP_TEST_PTX_PATH);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Several launches of two kernels, each result leaving by a checksummed copy: add_one into
// kOutA, fault_on (out = in * 2; with `magic`, the element kMagicIndex makes its thread write
// far out of bounds: the capture then ends with the sticky 700) into kOutB, and a spare
// allocation no launch uses. Returns the seq of every launch of fault_on.
std::vector<uint64_t> write_two_kernel_capture(const std::string& path, bool magic) {
  std::vector<int> in(kN), plus(kN), twice(kN);
  for (int i = 0; i < kN; ++i) in[i] = i * 7 + 3;
  if (magic) in[kMagicIndex] = kMagic;
  for (int i = 0; i < kN; ++i) {
    plus[i] = in[i] + 1;
    twice[i] = in[i] * 2;
  }
  CaptureBuilder b(path);
  b.module_load_ptx(kModule, ptx());
  Params pa;
  pa.ptr(kIn).ptr(kOutA).i32(kN);
  Params pf;
  pf.ptr(kIn).ptr(kOutB).i32(kN).i32(kMagic);
  uint64_t fa = b.function_get(kModule, kAddOne, "add_one", pa.layout());
  uint64_t ff = b.function_get(kModule, kFaultOn, "fault_on", pf.layout());
  b.alloc(kIn, kN * 4);
  b.alloc(kOutA, kN * 4);
  b.alloc(kOutB, kN * 4);
  b.alloc(kSpare, 4096);
  b.memset32(kSpare, 0, 1024);
  b.htod(kIn, as_bytes(in));
  b.memset32(kOutA, 0, kN);
  b.memset32(kOutB, 0, kN);
  std::vector<uint64_t> faults;
  b.launch(kAddOne, "add_one", kN / 128, 128, pa, 0, 0, fa);
  b.dtoh(kOutA, kN * 4, format::checksum64(as_bytes(plus)));
  if (magic) {
    // The faulting launch among the others; the sticky error ends the capture.
    b.launch(kAddOne, "add_one", kN / 128, 128, pa, 0, 0, fa);
    b.dtoh(kOutA, kN * 4, format::checksum64(as_bytes(plus)));
    faults.push_back(b.launch(kFaultOn, "fault_on", kN / 128, 128, pf, 0, 0, ff));
    b.context_sync(700);
    b.close();
    return faults;
  }
  faults.push_back(b.launch(kFaultOn, "fault_on", kN / 128, 128, pf, 0, 0, ff));
  b.dtoh(kOutB, kN * 4, format::checksum64(as_bytes(twice)));
  b.launch(kAddOne, "add_one", kN / 128, 128, pa, 0, 0, fa);
  b.dtoh(kOutA, kN * 4, format::checksum64(as_bytes(plus)));
  faults.push_back(b.launch(kFaultOn, "fault_on", kN / 128, 128, pf, 0, 0, ff));
  b.dtoh(kOutB, kN * 4, format::checksum64(as_bytes(twice)));
  b.close();
  return faults;
}

// The kernel names of every launch in `path`.
std::vector<std::string> launched_kernels(const std::string& path) {
  auto r = format::Reader::open(path);
  REQUIRE(r.is_ok());
  std::vector<std::string> names;
  REQUIRE((*r)->for_each_call([&](const format::CallRef& ref) {
    if (ref.get().isLaunch()) names.push_back(ref.get().getLaunch().getKernelName().cStr());
    return true;
  }));
  return names;
}

reduce::Condition condition(const std::string& text) {
  auto c = reduce::parse_condition(text, [](const std::string& name) -> std::optional<int32_t> {
    if (name == "CUDA_ERROR_ILLEGAL_ADDRESS") return 700;
    return std::nullopt;
  });
  INFO(c.status().to_string());
  REQUIRE(c.is_ok());
  return *c;
}

// A LIST and a local runner for the two-driver conditions.
struct Drivers {
  runner::DriverList list;
  std::unique_ptr<runner::Runner> run;
};

Drivers drivers(const std::string& bad_env, const std::string& work, unsigned jobs) {
  Drivers d;
  std::string error;
  auto list = runner::parse_driver_list(
      "good emulator\nbad emulator CUSNAP_EMU_INJECT=" + bad_env + "\n", "test-list", &error);
  INFO(error);
  REQUIRE(list);
  d.list = *list;
  runner::RunnerOptions ro;
  ro.cusnap = CUSNAP_TEST_CUSNAP;
  ro.work_dir = work;
  ro.jobs = jobs;
  d.run = runner::make_runner(ro, &error);
  INFO(error);
  REQUIRE(d.run);
  return d;
}

reduce::MinimizeOptions options_for(const std::string& until, const std::string& work,
                                    unsigned jobs = 1) {
  fs::remove_all(work);
  fs::create_directories(work);
  reduce::MinimizeOptions o;
  o.until = condition(until);
  o.condition.work_dir = fs::absolute(work).string();
  o.condition.jobs = jobs;
  return o;
}

reduce::MinimizeReport minimize(const std::string& in, const std::string& out,
                                const reduce::MinimizeOptions& options) {
  auto r = reduce::minimize_capture(in, out, options);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return *r;
}

}  // namespace

TEST_CASE("mismatch between a good and a flipped entry ends with the flipped kernel's launches") {
  const std::string in = tmp("flip.cusnap"), out = tmp("flip-min.cusnap");
  write_two_kernel_capture(in, false);
  auto o = options_for("mismatch:good,bad", tmp("flip-work"));
  Drivers d = drivers("flip:^fault_on$", o.condition.work_dir, 2);
  o.condition.drivers = &d.list;
  o.condition.runner = d.run.get();
  reduce::MinimizeReport r = minimize(in, out, o);
  CHECK(r.outcome == reduce::MinimizeOutcome::kMinimized);
  const auto kernels = launched_kernels(out);
  REQUIRE_FALSE(kernels.empty());
  for (const auto& k : kernels) CHECK(k == "fault_on");
  CHECK(r.calls_after < r.calls_before);
  CHECK(r.data_bytes_after < r.data_bytes_before);
  CHECK(r.replays == 2 * (r.evaluations + 1));
  INFO(r.evidence);
  CHECK(r.evidence.find("results differ") != std::string::npos);
  {
    // The header says what was kept, as the report does (`cusnap info` shows it).
    auto reader = format::Reader::open(out);
    REQUIRE(reader.is_ok());
    auto source = format::Reader::open(in);
    REQUIRE(source.is_ok());
    REQUIRE((*reader)->header().hasMinimize());
    auto m = (*reader)->header().getMinimize();
    CHECK(std::string(m.getCondition().cStr()) == "mismatch:good,bad");
    CHECK(m.getSourceCreationTimeNs() == (*source)->header().getCreationTimeNs());
    CHECK(m.getCallsBefore() == r.calls_before);
    CHECK(m.getCallsAfter() == r.calls_after);
    CHECK(m.getUnitsBefore() == r.units_before);
    CHECK(m.getUnitsAfter() == r.units_after);
    CHECK(m.getDataBytesBefore() == r.data_bytes_before);
    CHECK(m.getDataBytesAfter() == r.data_bytes_after);
    CHECK(m.getEvaluations() == r.evaluations);
    CHECK(m.getReplays() == r.replays);
    CHECK(m.getMinimal());
    REQUIRE(m.getKept().size() == r.kept.size());
    for (unsigned i = 0; i < m.getKept().size(); ++i)
      CHECK(std::string(m.getKept()[i].cStr()) == r.kept[i]);
    CHECK_FALSE((*source)->header().hasMinimize());
  }
  // It still mismatches, judged afresh; and the good entry alone sees nothing to compare.
  auto again = reduce::evaluate(o.until, out, o.condition);
  REQUIRE(again.is_ok());
  CHECK(again->holds);
  Drivers same = drivers("", o.condition.work_dir, 1);
  reduce::ConditionOptions no_fault = o.condition;
  no_fault.drivers = &same.list;
  no_fault.runner = same.run.get();
  auto clean = reduce::evaluate(o.until, out, no_fault);
  REQUIRE(clean.is_ok());
  CHECK_FALSE(clean->holds);
}

TEST_CASE("a memcheck bug planted in one of many kernels minimizes to that kernel") {
  const std::string in = tmp("memcheck.cusnap"), out = tmp("memcheck-min.cusnap");
  write_two_kernel_capture(in, true);
  auto o = options_for("memcheck", tmp("memcheck-work"));
  reduce::MinimizeReport r = minimize(in, out, o);
  CHECK(r.outcome == reduce::MinimizeOutcome::kMinimized);
  CHECK(launched_kernels(out) == std::vector<std::string>{"fault_on"});
  // The input copy holding the magic value stays: without it nothing faults.
  bool input_copy = false;
  for (const auto& k : r.kept) input_copy |= k.rfind("copy call", 0) == 0;
  CHECK(input_copy);
  CHECK(r.units_after < r.units_before);
  CHECK(r.evidence.find("700") != std::string::npos);
  CHECK(r.cache_hits > 0);
}

TEST_CASE("error: minimizes the same with two jobs as with one") {
  const std::string in = tmp("error.cusnap");
  write_two_kernel_capture(in, true);
  // Two jobs first: evaluations in child processes must fork before this process replays
  // anything itself (condition.h, evaluate_all).
  auto two = options_for("error:CUDA_ERROR_ILLEGAL_ADDRESS", tmp("error-work-2"), 2);
  reduce::MinimizeReport r2 = minimize(in, tmp("error-min-2.cusnap"), two);
  auto one = options_for("error:CUDA_ERROR_ILLEGAL_ADDRESS", tmp("error-work-1"), 1);
  reduce::MinimizeReport r1 = minimize(in, tmp("error-min-1.cusnap"), one);
  CHECK(r1.outcome == reduce::MinimizeOutcome::kMinimized);
  CHECK(r2.outcome == reduce::MinimizeOutcome::kMinimized);
  CHECK(r1.kept == r2.kept);
  CHECK(r1.calls_after == r2.calls_after);
  CHECK(r1.data_bytes_after == r2.data_bytes_after);
  CHECK(launched_kernels(tmp("error-min-1.cusnap")) == std::vector<std::string>{"fault_on"});
  // Two at a time never takes fewer evaluations: a batch runs whole.
  CHECK(r2.evaluations >= r1.evaluations);
}

TEST_CASE("slower: a kernel slowed on one entry minimizes to that kernel's launches") {
  const std::string in = tmp("slow.cusnap"), out = tmp("slow-min.cusnap");
  write_two_kernel_capture(in, false);
  auto o = options_for("slower:2:good,bad", tmp("slow-work"));
  Drivers d = drivers("slow:^fault_on$:3", o.condition.work_dir, 2);
  o.condition.drivers = &d.list;
  o.condition.runner = d.run.get();
  reduce::MinimizeReport r = minimize(in, out, o);
  CHECK(r.outcome == reduce::MinimizeOutcome::kMinimized);
  const auto kernels = launched_kernels(out);
  REQUIRE(kernels.size() == 1);
  CHECK(kernels.front() == "fault_on");
  CHECK(r.evidence.find("slower") != std::string::npos);
  // A factor above the injected slowdown does not hold for the input.
  auto high = options_for("slower:4:good,bad", tmp("slow-work-high"));
  high.condition.drivers = &d.list;
  high.condition.runner = d.run.get();
  reduce::MinimizeReport none = minimize(in, tmp("slow-none.cusnap"), high);
  CHECK(none.outcome == reduce::MinimizeOutcome::kInputDoesNotHold);
  CHECK_FALSE(fs::exists(tmp("slow-none.cusnap")));
}

TEST_CASE("command: the script decides, and no candidate is handed to it twice") {
  const std::string in = tmp("command.cusnap"), out = tmp("command-min.cusnap");
  const std::string log = tmp("command-seen.txt");
  write_two_kernel_capture(in, false);
  fs::remove(log);
  // Holds while the candidate still launches fault_on (as `cusnap dump` shows); every
  // candidate's bytes are hashed into the log first.
  auto o = options_for("command:'cksum < \"$1\" >> " + log + "; " + CUSNAP_TEST_CUSNAP +
                           " dump \"$1\" | grep -q kernelName=fault_on'",
                       tmp("command-work"));
  reduce::MinimizeReport r = minimize(in, out, o);
  CHECK(r.outcome == reduce::MinimizeOutcome::kMinimized);
  CHECK(r.replays == 0);
  // One launch of fault_on and the two allocations it gets pointers to.
  CHECK(launched_kernels(out) == std::vector<std::string>{"fault_on"});
  CHECK(r.units_after == 3);
  std::ifstream f(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  // The input, every candidate evaluated and the output's final check; candidates never repeat.
  CHECK(lines.size() == r.evaluations + 1);
  std::set<std::string> distinct(lines.begin(), lines.end() - 1);
  CHECK(distinct.size() == lines.size() - 1);
  CHECK(r.cache_hits > 0);
}

TEST_CASE("minimize refuses hostile and meaningless requests") {
  const std::string in = tmp("hostile.cusnap");
  write_two_kernel_capture(in, false);
  SECTION("one-driver mismatch") {
    auto o = options_for("mismatch", tmp("hostile-work"));
    auto r = reduce::minimize_capture(in, tmp("hostile-out.cusnap"), o);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().to_string().find("mismatch:A,B") != std::string::npos);
  }
  SECTION("the output is the input") {
    auto o = options_for("memcheck", tmp("hostile-work"));
    CHECK_FALSE(reduce::minimize_capture(in, in, o).is_ok());
  }
  SECTION("a corrupt capture") {
    std::ifstream f(in, std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    REQUIRE(bytes.size() > 400);
    bytes[bytes.size() / 2] ^= 0x40;
    const std::string bad = tmp("hostile-corrupt.cusnap");
    std::ofstream(bad, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
    auto o = options_for("memcheck", tmp("hostile-work"));
    auto r = reduce::minimize_capture(bad, tmp("hostile-out.cusnap"), o);
    REQUIRE_FALSE(r.is_ok());
    CHECK_FALSE(fs::exists(tmp("hostile-out.cusnap")));
  }
  SECTION("a condition the input does not meet") {
    auto o = options_for("memcheck", tmp("hostile-work"));
    auto r = reduce::minimize_capture(in, tmp("hostile-out.cusnap"), o);
    REQUIRE(r.is_ok());
    CHECK(r->outcome == reduce::MinimizeOutcome::kInputDoesNotHold);
    CHECK_FALSE(fs::exists(tmp("hostile-out.cusnap")));
  }
  SECTION("two-driver conditions name known drivers") {
    auto o = options_for("mismatch:good,nowhere", tmp("hostile-work"));
    Drivers d = drivers("flip:x", o.condition.work_dir, 1);
    o.condition.drivers = &d.list;
    o.condition.runner = d.run.get();
    auto r = reduce::minimize_capture(in, tmp("hostile-out.cusnap"), o);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().to_string().find("nowhere") != std::string::npos);
  }
}

TEST_CASE("an extracted launch's input chunks are minimized, the others zeroed") {
  // A snapshot capture of the faulting fault_on (1 KiB chunks: 4 per allocation), extracted.
  const std::string source = tmp("snap.cusnap"), extracted = tmp("snap-extract.cusnap"),
                    out = tmp("snap-extract-min.cusnap");
  std::vector<int> in(kN), zero(kN, 0);
  for (int i = 0; i < kN; ++i) in[i] = i * 7 + 3;
  in[kMagicIndex] = kMagic;
  {
    cusnap::test::HeaderOptions header;
    header.snapshot = cusnap::test::SnapshotHeader{};
    header.snapshot->chunk_bytes = 1024;
    CaptureBuilder b(source, header);
    b.module_load_ptx(kModule, ptx());
    Params p;
    p.ptr(kIn).ptr(kOutB).i32(kN).i32(kMagic);
    uint64_t fn = b.function_get(kModule, kFaultOn, "fault_on", p.layout());
    b.alloc(kIn, kN * 4);
    b.alloc(kOutB, kN * 4);
    b.htod(kIn, as_bytes(in));
    b.memset32(kOutB, 0, kN);
    uint64_t launch = b.launch(kFaultOn, "fault_on", kN / 128, 128, p, 0, 0, fn);
    using Memory = std::map<uint64_t, std::vector<uint8_t>>;
    b.snapshot(
        launch, 0, cusnap::test::kBeforeLaunch,
        b.tile(Memory{{kIn, cusnap::test::to_bytes(in)}, {kOutB, cusnap::test::to_bytes(zero)}}));
    b.snapshot(
        launch, 0, cusnap::test::kAfterLaunch,
        b.tile(Memory{{kIn, cusnap::test::to_bytes(in)}, {kOutB, cusnap::test::to_bytes(zero)}}));
    b.context_sync(700);
    b.close();
  }
  {
    auto src = format::Reader::open(source);
    REQUIRE(src.is_ok());
    auto plans = extract::plan_extraction(**src, extract::Selection{});
    REQUIRE(plans.is_ok());
    REQUIRE(plans->size() == 1);
    auto written = extract::write_extracted(**src, source, plans->front(), extracted);
    INFO(written.status().to_string());
    REQUIRE(written.is_ok());
  }
  auto o = options_for("memcheck", tmp("snap-work"));
  reduce::MinimizeReport r = minimize(extracted, out, o);
  CHECK(r.outcome == reduce::MinimizeOutcome::kMinimized);
  CHECK(r.chunks_before == 8);
  // Only the chunk holding the magic value must stay original.
  CHECK(r.chunks_after == 1);
  CHECK(launched_kernels(out) == std::vector<std::string>{"fault_on"});
  auto nochunks = options_for("memcheck", tmp("snap-work-nochunks"));
  nochunks.chunks = false;
  CHECK(minimize(extracted, tmp("snap-extract-all.cusnap"), nochunks).chunks_after == 8);
}
