// `cusnap export --perfetto`: the command around timeline/ (tests/timeline checks the trace):
// output file, exit codes, errors that name where a capture is damaged.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>

#include "cli_test_util.h"
#include "sample_fixture.h"

using namespace cusnap::cli_test;

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("export writes the trace and says what it holds", "[export]") {
  const Sample& s = sample();
  std::string out = scratch_dir("export_whole") + "/sample.pftrace";
  RunResult r = run_cusnap({"export", s.path, "--perfetto", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  uint64_t api_calls = 0;
  for (const ExpectedCall& c : s.expected.calls) api_calls += c.api != "cusnap";
  CHECK(r.out.rfind(out + ": " + std::to_string(api_calls) + " API calls on " +
                        std::to_string(s.expected.threads) + " threads",
                    0) == 0);
  CHECK(read_file(out).size() > 0);
  CHECK(!exists(out + ".partial"));
}

TEST_CASE("export of a damaged call frame exits 3 naming it and writes nothing", "[export]") {
  const Sample& s = sample();
  auto bytes = read_file(s.path);
  RawFrame bad;
  for (const RawFrame& f : walk_frames(bytes)) {
    if (f.kind == kKindCalls && f.first_seq > 0) {
      bad = f;
      break;
    }
  }
  REQUIRE(bad.kind == kKindCalls);
  bytes[bad.offset + 80 + bad.stored_size / 2] ^= 0x40;
  std::string dir = scratch_dir("export_corrupt");
  write_file(dir + "/flipped.cusnap", bytes);
  std::string out = dir + "/flipped.pftrace";
  RunResult r = run_cusnap({"export", dir + "/flipped.cusnap", "--perfetto", out});
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("offset " + std::to_string(bad.offset)) != std::string::npos);
  CHECK(r.err.find("call " + std::to_string(bad.first_seq)) != std::string::npos);
  CHECK(!exists(out));
  CHECK(!exists(out + ".partial"));
}

TEST_CASE("export of a truncated capture exports what was recovered, with a warning", "[export]") {
  const Sample& s = sample();
  auto bytes = read_file(s.path);
  bytes.resize(bytes.size() * 2 / 3);
  std::string dir = scratch_dir("export_truncated");
  write_file(dir + "/cut.cusnap", bytes);
  RunResult r = run_cusnap({"export", dir + "/cut.cusnap", "--perfetto", dir + "/cut.pftrace"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("truncated") != std::string::npos);
  CHECK(exists(dir + "/cut.pftrace"));
}

TEST_CASE("export: not a capture exits 4, a bad report or option exits 1", "[export]") {
  const Sample& s = sample();
  std::string dir = scratch_dir("export_errors");
  write_file(dir + "/text.cusnap", {'h', 'e', 'l', 'l', 'o'});
  CHECK(run_cusnap({"export", dir + "/text.cusnap", "--perfetto", dir + "/t.pftrace"}).exit_code ==
        4);
  RunResult r = run_cusnap(
      {"export", s.path, "--perfetto", dir + "/r.pftrace", "--report", dir + "/missing.json"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("missing.json") != std::string::npos);
  CHECK(!exists(dir + "/r.pftrace"));
  CHECK(run_cusnap({"export", s.path}).exit_code == 1);  // --perfetto is required
  CHECK(run_cusnap({"export", s.path, "--perfetto", dir + "/no/such/dir/x.pftrace"}).exit_code ==
        1);
}
