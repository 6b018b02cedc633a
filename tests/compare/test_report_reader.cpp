// read_report(): a schema 1 report as `cusnap replay --report` wrote it before timing samples
// existed (a literal), a schema 2 report with samples, and every refusal naming file and field.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "cusnap/compare/compare.h"
#include "report_builder.h"

using namespace cusnap::compare;

namespace {

// Trimmed from a real schema 1 report of samples/vector_add on the emulator.
constexpr const char* kSchema1 = R"({"schema":"cusnap-replay-report","schema_version":1,
"capture":{"path":"va.cusnap","tool_version":"0.1.0","integrity":"complete","calls":31,
"launches":1,"driver_version":13000,"command_line":["va"],"devices":[]},
"driver":{"path":"/e/libcuda.so.1","chosen":"--driver emulator","version":13000},
"device":{"ordinal":0,"name":"cusnap emulator","compute_capability":"9.0",
"total_memory_bytes":1},
"verification":{"result":"matched","matched":1,"mismatched":0,"unverified":0,
"first_mismatch":null,"copies":[{"call":27,"address":"0x7f1200000000","bytes":4096,
"state":"matched","expected_checksum":"0x1a2b","actual_checksum":"0x1a2b",
"launches_before":1,"recent_launches":[{"call":25,"ordinal":0,"kernel":"vectorAdd"}],
"allocation":{"call":9,"address":"0x7f1200000000","bytes":4096,"kind":"device"}}]},
"snapshots":{"extracted":false,"extract":null,"chunk_bytes":0,"records":0,
"result":"nothing compared","restored_chunks":0,"restored_bytes":0,"compared_chunks":0,
"compared_bytes":0,"matched_chunks":0,"within_tolerance_chunks":0,"mismatched_chunks":0,
"tolerances":[],"checks":[],"skipped":[]},
"expected_error":null,
"launches":[{"call":25,"ordinal":0,"kernel":"vectorAdd","grid":[4,1,1],"block":[256,1,1],
"shared_bytes":0,"selected":true,"verification":"matched","pointers_rewritten":0,
"time_ms":{"samples":1,"min":0.25,"median":0.25,"mean":0.25,"max":0.25,"stddev":0}}],
"skipped":{},"warnings":[],"wall_seconds":0.5}
)";

std::string error_of(const std::string& text) {
  Expected<Report> r = parse_report(text, "r.json");
  return r ? std::string() : r.error().message();
}

}  // namespace

TEST_CASE("a schema 1 report reads back", "[compare]") {
  Expected<Report> r = parse_report(kSchema1, "old.json");
  REQUIRE(r);
  CHECK(r->schema_version == 1);
  CHECK(r->capture_calls == 31);
  CHECK(r->device_name == "cusnap emulator");
  REQUIRE(r->copies.size() == 1);
  CHECK(r->copies[0].address == 0x7f1200000000u);
  CHECK(r->copies[0].allocation_address == 0x7f1200000000u);
  CHECK(r->copies[0].launches_before == 1);
  CHECK(r->copies[0].output.empty());
  REQUIRE(r->launches.size() == 1);
  REQUIRE(r->launches[0].time);
  CHECK(r->launches[0].time->median_ms == 0.25);
  CHECK(r->launches[0].time->values_ms.empty());
  CHECK(r->outputs_dir.empty());
  // Two schema 1 reports: equal results, a time change without an interval (one sample).
  Comparison c = compare_reports(r.value(), r.value(), {});
  CHECK(!c.flagged());
  REQUIRE(c.launches[0].time);
  CHECK(!c.launches[0].time->interval_known);
}

TEST_CASE("a schema 2 report keeps its samples", "[compare]") {
  cusnap::test::BuiltReport b;
  b.launches = {{5, "k", {1.0, 1.5, 2.0}, true}};
  b.outputs_dir = "/somewhere";
  std::string path = std::string(CUSNAP_TEST_TMP_DIR) + "/schema2.json";
  b.write(path);
  Expected<Report> r = read_report(path);
  REQUIRE(r);
  CHECK(r->path == path);
  CHECK(r->schema_version == 2);
  REQUIRE(r->launches[0].time);
  CHECK(r->launches[0].time->values_ms == std::vector<double>{1.0, 1.5, 2.0});
  CHECK(r->launches[0].time->cap_hit);
  CHECK(r->launches[0].time->mode == "cold");
  CHECK(r->outputs_dir == "/somewhere");
}

TEST_CASE("reports that cannot be read are refused naming the file and the field", "[compare]") {
  CHECK(error_of("{").find("r.json: not JSON: line 1") == 0);
  CHECK(error_of("[]") == "r.json: not an object");
  CHECK(error_of(R"({"schema":"cusnap-compare"})").find("not a cusnap replay report") !=
        std::string::npos);
  CHECK(error_of(R"({"schema":"cusnap-replay-report","schema_version":3})") ==
        "r.json: report schema version 3 (this cusnap reads 1 to 2)");
  std::string bad = kSchema1;
  bad.replace(bad.find("\"launches_before\":1"), 19, "\"launches_before\":\"1\"");
  CHECK(error_of(bad) ==
        "r.json: $.verification.copies[0].launches_before: not an unsigned integer");
  std::string no_launches = kSchema1;
  no_launches.replace(no_launches.find("\"launches\":["), 11, "\"launchez\":");
  CHECK(error_of(no_launches) == "r.json: $.launches: missing");
  Expected<Report> missing = read_report(std::string(CUSNAP_TEST_TMP_DIR) + "/no-such.json");
  REQUIRE(!missing);
  CHECK(missing.error().kind() == ErrorKind::kIo);
}
