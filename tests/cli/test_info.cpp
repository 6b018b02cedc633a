// `cusnap info`: numbers against what the sample writer says it wrote.
#include <capnp/message.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>

#include "cusnap/cli/info.capnp.h"
#include "info_collect.h"
#include "record_json.h"
#include "sample_fixture.h"
#include "table.h"

using namespace cusnap;
using namespace cusnap::cli_test;

namespace {

// Kernels in the order info must list them: launches descending (ties: any order).
std::vector<std::pair<std::string, ExpectedKernel>> kernels_by_launches(const ExpectedCapture& e) {
  std::vector<std::pair<std::string, ExpectedKernel>> v(e.kernels.begin(), e.kernels.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second.launches > b.second.launches;
  });
  return v;
}

}  // namespace

TEST_CASE("info --json reports counts, kernels and dedup as written", "[info]") {
  const Sample& s = sample();
  const ExpectedCapture& e = s.expected;
  RunResult r = run_cusnap({"info", s.path, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(split_lines(r.out).size() == 1);  // one JSON object on one line

  cli::RecordJson json;
  capnp::MallocMessageBuilder message;
  auto info = message.initRoot<cli::schema::InfoReport>();
  json.codec().decode(kj::ArrayPtr<const char>(r.out.data(), r.out.size()),
                      capnp::DynamicStruct::Builder(info));

  CHECK(info.getInfoVersion() == 5);
  CHECK(info.getNvtx().getRecords() == 0);  // the sample writes no nvtx record
  CHECK(std::string(info.getFile().cStr()) == s.path);
  CHECK(info.getFileBytes() == read_file(s.path).size());
  CHECK(std::string(info.getContainerVersion().cStr()) == "1.0");
  CHECK(std::string(info.getHeader().getHostName().cStr()) == "testhost");
  CHECK(info.getHeader().getPid() == 4242);
  CHECK(info.getHeader().getDevices().size() == 1);
  // Data fields are hex strings in cusnap's JSON.
  CHECK(r.out.find("\"uuid\":\"0102030405060708090a0b0c0d0e0f10\"") != std::string::npos);

  CHECK(info.getIntegrity().getState() == cli::schema::Integrity::State::WHOLE);
  CHECK(info.getIntegrity().getIndexSource() == cli::schema::Integrity::IndexSource::FOOTER);
  CHECK(info.getIntegrity().getLastGoodSeq() == e.calls.size() - 1);

  auto counts = info.getCounts();
  CHECK(counts.getCalls() == e.calls.size());
  CHECK(counts.getLaunches() == e.launches);
  CHECK(counts.getKernels() == e.kernels.size());
  CHECK(counts.getThreads() == e.threads);
  CHECK(counts.getBlobs() == e.distinct_blobs);
  CHECK(counts.getCallFrames() > 3);  // small call frames: the file really has many

  std::map<std::string, uint64_t> kinds;
  uint64_t previous = UINT64_MAX;
  for (auto k : info.getCallKinds()) {
    kinds[k.getKind().cStr()] = k.getCount();
    CHECK(k.getCount() <= previous);  // most frequent first
    previous = k.getCount();
  }
  CHECK(kinds == e.kind_counts);

  auto expected_kernels = kernels_by_launches(e);
  auto kernels = info.getKernels();
  REQUIRE(kernels.size() == expected_kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    const auto& [name, ek] = expected_kernels[i];
    INFO("kernel " << i);
    CHECK(kernels[i].getLaunches() == ek.launches);
    auto found = e.kernels.find(kernels[i].getName().cStr());
    REQUIRE(found != e.kernels.end());
    CHECK(found->second.launches == kernels[i].getLaunches());
    std::map<ShapeKey, uint64_t> shapes;
    for (auto sh : kernels[i].getShapes()) {
      ShapeKey key{{sh.getGrid().getX(), sh.getGrid().getY(), sh.getGrid().getZ()},
                   {sh.getBlock().getX(), sh.getBlock().getY(), sh.getBlock().getZ()},
                   sh.getSharedBytes()};
      shapes[key] = sh.getLaunches();
    }
    CHECK(shapes == found->second.shapes);
  }

  REQUIRE(!e.unmodelled.empty());
  CHECK(info.getReplayMayDiverge());
  std::map<std::string, uint64_t> unmodelled;
  previous = UINT64_MAX;
  for (auto a : info.getUnmodelledCalls()) {
    unmodelled[a.getApi().cStr()] = a.getCount();
    CHECK(a.getCount() <= previous);  // most frequent first
    previous = a.getCount();
  }
  CHECK(unmodelled == e.unmodelled);

  auto bytes = info.getBytes();
  CHECK(bytes.getBlobReferences() == e.blob_references);
  CHECK(bytes.getBlobReferenced() == e.blob_referenced_bytes);
  CHECK(bytes.getBlobUnique() == e.blob_unique_bytes);
  CHECK(bytes.getDedupSaved() == e.blob_referenced_bytes - e.blob_unique_bytes);
  CHECK(bytes.getBlobReferencesMissing() == 0);
  CHECK(bytes.getCallRaw() > 0);
  CHECK(bytes.getLogical() == bytes.getCallRaw() + e.blob_referenced_bytes);
  CHECK(bytes.getHasWriterStats());
  CHECK(bytes.getWriterBlobPuts() == e.blob_references);
  CHECK(bytes.getWriterBlobBytesLogical() == e.blob_referenced_bytes);
}

TEST_CASE("info prints aligned human tables", "[info]") {
  const Sample& s = sample();
  const ExpectedCapture& e = s.expected;
  RunResult r = run_cusnap({"info", s.path});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  auto lines = split_lines(r.out);
  CHECK(r.out.find("Calls: " + std::to_string(e.calls.size()) + " in ") != std::string::npos);
  CHECK(r.out.find("whole (" + std::to_string(e.calls.size()) + " calls)") != std::string::npos);
  CHECK(r.out.find("Kernels: " + std::to_string(e.kernels.size()) + " distinct, " +
                   std::to_string(e.launches) + " launches") != std::string::npos);
  CHECK(r.out.find("saved " + cli::human_bytes(e.blob_referenced_bytes - e.blob_unique_bytes)) !=
        std::string::npos);
  CHECK(r.out.find("12.4 (12040)") != std::string::npos);
  CHECK(r.out.find("2023-11-14 22:13:20 UTC") != std::string::npos);

  // The kernels table: rows in launch order, launches right-aligned in the first column.
  auto header = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("launches") != std::string::npos && l.find("kernel") != std::string::npos &&
           l.find("grid") != std::string::npos;
  });
  REQUIRE(header != lines.end());
  auto expected_kernels = kernels_by_launches(e);
  size_t name_column = header->find("kernel");
  for (size_t i = 0; i < expected_kernels.size(); ++i) {
    const std::string& row = *(header + 2 + static_cast<long>(i));
    INFO(row);
    CHECK(row.substr(name_column) == expected_kernels[i].first);
    std::string launches = std::to_string(expected_kernels[i].second.launches);
    size_t launches_end = header->find("launches") + std::string("launches").size();
    CHECK(row.substr(launches_end - launches.size(), launches.size()) == launches);
  }
}

TEST_CASE("info flags unmodelled state-changing calls: replay may diverge", "[info]") {
  const Sample& s = sample();
  RunResult r = run_cusnap({"info", s.path});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  uint64_t total = 0;
  for (const auto& [api, count] : s.expected.unmodelled) total += count;
  CHECK(r.out.find("Replay may diverge: " + std::to_string(total) + " successful calls") !=
        std::string::npos);
  auto lines = split_lines(r.out);
  // Each API with its count, then why it is not replayed (by API family).
  for (const auto& [api, count] : s.expected.unmodelled) {
    std::string want = std::to_string(count) + "  " + api + " ";
    bool found = std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.find(want) != std::string::npos &&
             (api != "cuGraphLaunch" ||
              line.ends_with("graph call not typed yet (docs/capture.md)"));
    });
    CHECK(found);
  }
  // Neither the failed call nor the query is listed.
  CHECK(r.out.find("cuCtxGetLimit") == std::string::npos);

  // A capture whose generic records are all queries (or failed) is not flagged.
  SampleOptions options;
  options.rounds = 4;
  options.unmodelled_calls = false;
  std::string clean = scratch_dir("info_clean") + "/clean.cusnap";
  ExpectedCapture e = write_sample_capture(clean, options);
  CHECK(e.unmodelled.empty());
  r = run_cusnap({"info", clean, "--json"});
  REQUIRE(r.exit_code == 0);
  cli::RecordJson json;
  capnp::MallocMessageBuilder message;
  auto info = message.initRoot<cli::schema::InfoReport>();
  json.codec().decode(kj::ArrayPtr<const char>(r.out.data(), r.out.size()),
                      capnp::DynamicStruct::Builder(info));
  CHECK_FALSE(info.getReplayMayDiverge());
  CHECK(info.getUnmodelledCalls().size() == 0);
  r = run_cusnap({"info", clean});
  CHECK(r.out.find("Replay: every successful call that may change device state is modelled") !=
        std::string::npos);
}

TEST_CASE("info on a truncated capture reports the recovered part", "[info]") {
  const Sample& s = sample();
  auto bytes = read_file(s.path);
  auto frames = walk_frames(bytes);
  // Cut in the middle of the last call frame.
  const RawFrame* last_calls = nullptr;
  const RawFrame* previous_calls = nullptr;
  for (const auto& f : frames) {
    if (f.kind == kKindCalls) {
      previous_calls = last_calls;
      last_calls = &f;
    }
  }
  REQUIRE(previous_calls != nullptr);
  std::string path = scratch_dir("info_truncated") + "/cut.cusnap";
  bytes.resize(last_calls->offset + 80 + last_calls->stored_size / 2);
  write_file(path, bytes);

  RunResult r = run_cusnap({"info", path});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("Calls: " + std::to_string(previous_calls->last_seq + 1) + " in ") !=
        std::string::npos);
  CHECK(r.out.find("truncated: capture ends after call " +
                   std::to_string(previous_calls->last_seq)) != std::string::npos);
  CHECK(r.out.find("index from scan") != std::string::npos);
  CHECK(r.err.find("truncated") != std::string::npos);  // the warning goes to stderr
}

TEST_CASE("info --json streamed piece by piece is byte for byte the codec's encoding", "[info]") {
  const Sample& s = sample();
  auto reader = format::Reader::open(s.path);
  REQUIRE(reader.is_ok());
  capnp::MallocMessageBuilder message;
  auto report = message.initRoot<cli::schema::InfoReport>();
  REQUIRE(cli::collect_info(*reader.value(), s.path, report).is_ok());
  cli::RecordJson json;
  std::string whole = json.codec().encode(report.asReader()).cStr();
  auto type = capnp::Type::from<cli::schema::InfoReport>();
  // piece_words 0: every struct and list is written by the streamer itself, down to the leaves.
  for (uint64_t piece : {uint64_t{0}, uint64_t{4}, uint64_t{64}, uint64_t{2048}}) {
    std::ostringstream out;
    json.stream(out, report.asReader(), type, piece);
    INFO("piece_words " << piece);
    CHECK(out.str() == whole);
  }
  // Every record kind the sample holds, unions included.
  uint64_t records = 0;
  auto record_type = capnp::Type::from<format::schema::CallRecord>();
  REQUIRE(reader.value()
              ->for_each_call([&](const format::CallRef& call) {
                std::ostringstream out;
                json.stream(out, call.get(), record_type, 0);
                CHECK(out.str() == json.codec().encode(call.get()).cStr());
                ++records;
                return true;
              })
              .is_ok());
  CHECK(records == s.expected.calls.size());
}
