// Inputs the fuzzers found (tests/fuzz/regressions, checksums resealed so every build reads them
// alike): records Cap'n Proto cannot decode used to escape `cusnap info` and `cusnap dump` as
// kj::Exception (the process aborted); they are errors naming the record now.
#include <capnp/message.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "cli_test_util.h"
#include "common.h"
#include "cusnap/format/reader.h"
#include "dump.h"
#include "info_collect.h"
#include "record_json.h"
#include "reseal.h"

using namespace cusnap;
using namespace cusnap::cli_test;

namespace {

std::vector<uint8_t> finding(const std::string& name) {
  std::vector<uint8_t> bytes = read_file(std::string(CUSNAP_FUZZ_REGRESSIONS) + "/" + name);
  REQUIRE(cusnap::test::reseal_checksums(bytes) > 0);
  return bytes;
}

void check_unreadable(const format::Status& st) {
  INFO(st.to_string());
  CHECK(st.code() == format::ErrorCode::kMalformed);
  CHECK(st.message().find("record: ") != std::string::npos);
}

}  // namespace

TEST_CASE("dump reports a record it cannot decode as malformed (fuzz finding)", "[dump][fuzz]") {
  std::vector<uint8_t> bytes = finding("dump-record-text.cusnap");
  auto reader = format::Reader::open_memory(bytes);
  REQUIRE(reader.is_ok());
  cli::CallRange all{0, reader.value()->call_count()};
  const cli::RecordJson json;
  for (const cli::RecordJson* codec : {static_cast<const cli::RecordJson*>(nullptr), &json}) {
    std::ostringstream out;
    uint64_t printed = 0;
    format::Status st = format::Status::ok();
    REQUIRE_NOTHROW(st = cli::write_calls(*reader.value(), all, codec, out, printed));
    check_unreadable(st);
    CHECK(printed < all.end);
  }
  // The command: a corrupt capture's exit code and message, not an abort.
  std::string path = scratch_dir("dump_fuzz_finding") + "/finding.cusnap";
  write_file(path, bytes);
  RunResult r = run_cusnap({"dump", path});
  CHECK(r.exit_code == cli::kExitCorrupt);
  CHECK(r.err.find("record: ") != std::string::npos);
}

TEST_CASE("info reports a record it cannot decode as malformed (fuzz finding)", "[info][fuzz]") {
  std::vector<uint8_t> bytes = finding("info-blob-refs.cusnap");
  auto reader = format::Reader::open_memory(bytes);
  REQUIRE(reader.is_ok());
  capnp::MallocMessageBuilder message;
  format::Status st = format::Status::ok();
  REQUIRE_NOTHROW(st = cli::collect_info(*reader.value(), "finding.cusnap",
                                         message.initRoot<cli::schema::InfoReport>()));
  check_unreadable(st);
  std::string path = scratch_dir("info_fuzz_finding") + "/finding.cusnap";
  write_file(path, bytes);
  RunResult r = run_cusnap({"info", path});
  CHECK(r.exit_code == cli::kExitCorrupt);
  CHECK(r.err.find("record: ") != std::string::npos);
}
