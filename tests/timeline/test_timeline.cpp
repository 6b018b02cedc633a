// build_timeline() on captures written here (tests/support/capture_builder.h) with the threads
// and times a test needs; replay reports from tests/compare/report_builder.h.
#include <capnp/message.h>

#include <catch2/catch.hpp>
#include <string>

#include "capture_builder.h"
#include "cusnap/compare/compare.h"
#include "cusnap/format/reader.h"
#include "cusnap/timeline/timeline.h"
#include "report_builder.h"

namespace {

namespace schema = cusnap::format::schema;
using cusnap::timeline::build_timeline;
using cusnap::timeline::TimelineOptions;
using cusnap::timeline::TimelineSummary;

std::string scratch(const std::string& name) {
  return std::string(CUSNAP_TEST_TMP_DIR) + "/" + name;
}

schema::CallRecord::Builder call(capnp::MallocMessageBuilder& m, const char* api, uint64_t thread,
                                 int64_t start, int64_t end) {
  auto r = m.initRoot<schema::CallRecord>();
  r.setApiName(api);
  r.setThreadId(thread);
  r.setStartNs(start);
  r.setEndNs(end);
  r.setContext(0x1000);
  return r;
}

uint64_t launch(cusnap::test::CaptureBuilder& b, uint64_t thread, int64_t start, int64_t end,
                const char* kernel, uint64_t stream) {
  capnp::MallocMessageBuilder m;
  auto l = call(m, "cuLaunchKernel", thread, start, end).initLaunch();
  l.setKernelName(kernel);
  l.setStream(stream);
  l.setGridX(1);
  l.setBlockX(32);
  return b.append_record(m);
}

uint64_t plain_call(cusnap::test::CaptureBuilder& b, const char* api, uint64_t thread,
                    int64_t start, int64_t end) {
  capnp::MallocMessageBuilder m;
  call(m, api, thread, start, end).initContextSynchronize();
  return b.append_record(m);
}

uint64_t async_copy(cusnap::test::CaptureBuilder& b, uint64_t thread, int64_t start, int64_t end,
                    uint64_t stream) {
  capnp::MallocMessageBuilder m;
  auto c = call(m, "cuMemcpyDtoHAsync_v2", thread, start, end).initMemcpy();
  c.setKind(schema::Memcpy::Kind::DEVICE_TO_HOST);
  c.setAsync(true);
  c.setStream(stream);
  c.setSize(64);
  return b.append_record(m);
}

// Three threads, two streams: launches and a copy, a call that crosses another on its thread.
// Each test case its own file: ctest runs them in parallel.
std::string write_capture(const std::string& name) {
  std::string path = scratch(name + ".cusnap");
  cusnap::test::HeaderOptions header;
  header.pid = 7;
  header.command_line = {"/opt/app/bin/app", "--flag"};
  cusnap::test::CaptureBuilder b(path, header);
  launch(b, 7, 100, 200, "first", 0x50);           // 0
  launch(b, 7, 210, 220, "second", 0x50);          // 1: queued behind `first` when timed
  async_copy(b, 8, 150, 160, 0x60);                // 2
  plain_call(b, "cuCtxSynchronize", 8, 155, 400);  // 3: crosses call 2 on thread 8
  plain_call(b, "cuCtxSynchronize", 9, 500, 600);  // 4
  b.close();
  return path;
}

}  // namespace

TEST_CASE("a capture without a report: API slices, device instants, flows", "[timeline]") {
  auto reader = cusnap::format::Reader::open(write_capture("no_report"));
  REQUIRE(reader);
  TimelineSummary summary;
  auto trace = build_timeline(*reader.value(), {}, &summary);
  REQUIRE(trace);
  CHECK(summary.calls == 5);
  CHECK(summary.api_slices == 5);
  CHECK(summary.threads == 3);
  CHECK(summary.streams == 2);
  CHECK(summary.device_slices == 0);
  CHECK(summary.device_instants == 3);  // no duration without a report
  CHECK(summary.flows == 3);
  CHECK(summary.overlap_tracks == 1);  // call 3 starts inside call 2 and ends after it
  // process + 3 threads + 1 overlap track + 2 streams
  CHECK(trace->track_count() == 7);
  CHECK(trace->event_count() == 5 * 2 + 3);
  std::string bytes = trace->serialize();
  CHECK(bytes.find("app") != std::string::npos);  // the process: argv[0]'s file name
  CHECK(bytes.find("/opt/app") == std::string::npos);
  CHECK(bytes.find("none: a capture holds no device timings") != std::string::npos);
}

TEST_CASE("a report gives launches their replayed duration, in stream order", "[timeline]") {
  std::string capture = write_capture("report");
  cusnap::test::BuiltReport built;
  built.calls = 5;
  built.launches = {{0, "first", {0.001, 0.003, 0.002}, false}, {1, "second", {}, false}};
  std::string path = scratch("timeline_report.json");
  built.write(path);
  auto report = cusnap::compare::read_report(path);
  REQUIRE(report);
  auto reader = cusnap::format::Reader::open(capture);
  REQUIRE(reader);
  TimelineOptions options;
  options.report = &report.value();
  TimelineSummary summary;
  auto trace = build_timeline(*reader.value(), options, &summary);
  REQUIRE(trace);
  CHECK(summary.device_slices == 1);    // `first`: the median, 2000 ns
  CHECK(summary.device_instants == 2);  // `second` untimed, the copy
  CHECK(trace->serialize().find("replay median of 3 timed run(s)") != std::string::npos);
}

TEST_CASE("a report of another capture is refused naming the call", "[timeline]") {
  std::string capture = write_capture("other_report");
  auto reader = cusnap::format::Reader::open(capture);
  REQUIRE(reader);
  cusnap::test::BuiltReport built;
  std::string path = scratch("timeline_other.json");
  TimelineOptions options;

  SECTION("another call count") {
    built.calls = 6;
    built.launches = {{0, "first", {0.001}, false}};
    built.write(path);
    auto report = cusnap::compare::read_report(path);
    REQUIRE(report);
    options.report = &report.value();
    auto trace = build_timeline(*reader.value(), options);
    REQUIRE(!trace);
    CHECK(trace.status().message().find("6 calls, this one has 5") != std::string::npos);
  }
  SECTION("another kernel at a call") {
    built.calls = 5;
    built.launches = {{1, "other", {0.001}, false}};
    built.write(path);
    auto report = cusnap::compare::read_report(path);
    REQUIRE(report);
    options.report = &report.value();
    auto trace = build_timeline(*reader.value(), options);
    REQUIRE(!trace);
    CHECK(trace.status().call() == 1u);
    CHECK(trace.status().message().find("is other, the capture's is second") != std::string::npos);
  }
  SECTION("a launch where the capture has none") {
    built.calls = 5;
    built.launches = {{3, "first", {0.001}, false}};
    built.write(path);
    auto report = cusnap::compare::read_report(path);
    REQUIRE(report);
    options.report = &report.value();
    auto trace = build_timeline(*reader.value(), options);
    REQUIRE(!trace);
    CHECK(trace.status().call() == 3u);
  }
}

TEST_CASE("NVTX ranges given to the hook land on an NVTX track of their thread", "[timeline]") {
  auto reader = cusnap::format::Reader::open(write_capture("nvtx"));
  REQUIRE(reader);
  TimelineOptions options;
  options.nvtx = {{7, 90, 230, false, "outer", "app", 3, 0xff00ff00},
                  {7, 95, 205, false, "inner", "", 0, 0},
                  {7, 200, 250, false, "crossing", "", 0, 0},  // crosses `outer`: a second track
                  {42, 10, 10, true, "mark", "", 0, 0}};       // a thread with no calls
  TimelineSummary summary;
  auto trace = build_timeline(*reader.value(), options, &summary);
  REQUIRE(trace);
  CHECK(summary.nvtx_ranges == 4);
  CHECK(summary.threads == 4);
  CHECK(summary.overlap_tracks == 2);  // thread 8's calls, thread 7's crossing range
  std::string bytes = trace->serialize();
  CHECK(bytes.find("thread 7: NVTX 1") != std::string::npos);
  CHECK(bytes.find("0xff00ff00") != std::string::npos);
}

namespace {
uint64_t nvtx_event(cusnap::test::CaptureBuilder& b, schema::NvtxEvent::Kind kind, uint64_t thread,
                    int64_t at, const char* message, uint64_t domain, uint64_t range_id = 0) {
  capnp::MallocMessageBuilder m;
  auto e = call(m, "nvtxDomainRangePushEx", thread, at, at).initNvtx();
  e.setKind(kind);
  e.setDomain(domain != 0 ? "app" : "");
  e.setDomainHandle(domain);
  e.setMessage(message);
  e.setRangeId(range_id);
  return b.append_record(m);
}
}  // namespace

TEST_CASE("the capture's own NVTX records become ranges: push/pop nest, start/end pair by id",
          "[timeline]") {
  using Kind = schema::NvtxEvent::Kind;
  std::string path = scratch("nvtx_records.cusnap");
  {
    cusnap::test::CaptureBuilder b(path);
    nvtx_event(b, Kind::PUSH, 7, 100, "outer", 0);
    nvtx_event(b, Kind::PUSH, 7, 110, "in domain", 0xd0);  // another domain: its own stack
    nvtx_event(b, Kind::PUSH, 7, 120, "inner", 0);
    nvtx_event(b, Kind::POP, 7, 130, "inner", 0);  // closes "inner", not "in domain"
    nvtx_event(b, Kind::START, 7, 140, "async", 0, 5);
    nvtx_event(b, Kind::POP, 7, 150, "outer", 0);
    nvtx_event(b, Kind::MARK, 8, 160, "mark", 0);
    nvtx_event(b, Kind::END, 9, 170, "", 0, 5);  // ends on another thread: kept on the starter's
    nvtx_event(b, Kind::POP, 9, 175, "", 0);     // a pop without its push: nothing
    plain_call(b, "cuCtxSynchronize", 7, 180, 190);
    b.close();  // "in domain" is still open
  }
  auto reader = cusnap::format::Reader::open(path);
  REQUIRE(reader);
  TimelineSummary summary;
  auto trace = build_timeline(*reader.value(), TimelineOptions{}, &summary);
  REQUIRE(trace);
  CHECK(summary.nvtx_ranges == 5);  // outer, inner, async, mark, the open one
  std::string bytes = trace->serialize();
  for (const char* name : {"outer", "inner", "async", "mark", "thread 7: NVTX", "thread 8: NVTX"})
    CHECK(bytes.find(name) != std::string::npos);
  CHECK(bytes.find("in domain (not closed when the capture ended)") != std::string::npos);
  CHECK(bytes.find("thread 9: NVTX") == std::string::npos);
}

TEST_CASE("a graph launch holds its kernel nodes when the report timed them all", "[timeline]") {
  std::string path = scratch("graph.cusnap");
  {
    cusnap::test::CaptureBuilder b(path);
    b.graph_create(0x900);
    b.graph_instantiate(0x910, 0x900);
    b.graph_launch(0x910, 0x50, 0);  // call 2
    b.graph_launch(0x910, 0x50, 1);  // call 3
    b.close();
  }
  cusnap::test::BuiltReport built;
  built.calls = 4;
  // Launch 0: both nodes timed (a slice of 1000 + 3000 ns with two children); launch 1: one
  // node untimed, so the launch and its nodes are instants.
  built.graph_nodes = {{2, "step", 0, 0xa1, {0.001}},
                       {2, "accumulate", 0, 0xa2, {0.003}},
                       {3, "step", 1, 0xa1, {0.001}},
                       {3, "accumulate", 1, 0xa2, {}}};
  std::string report_path = scratch("graph_report.json");
  built.write(report_path);
  auto report = cusnap::compare::read_report(report_path);
  REQUIRE(report);
  REQUIRE(report->launches.size() == 4);
  CHECK(report->launches[1].graph_launch == 0u);
  CHECK(report->launches[1].graph_node == 0xa2u);
  auto reader = cusnap::format::Reader::open(path);
  REQUIRE(reader);
  TimelineOptions options;
  options.report = &report.value();
  TimelineSummary summary;
  auto trace = build_timeline(*reader.value(), options, &summary);
  REQUIRE(trace);
  CHECK(summary.device_slices == 1);
  CHECK(summary.device_instants == 1);
  CHECK(summary.graph_nodes == 4);
  // 4 API calls (begin + end), graph 0: begin, 2 x (begin + end), end; graph 1: 1 + 2 instants.
  CHECK(trace->event_count() == 8 + 6 + 3);
  CHECK(trace->serialize().find("sum of its kernel nodes") != std::string::npos);
}
