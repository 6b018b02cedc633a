// `cusnap dump`: one line per call, --calls slicing, and JSON Lines that decode back to the
// exact records.
#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <catch2/catch.hpp>

#include "common.h"
#include "cusnap/format/reader.h"
#include "record_json.h"
#include "result_names.h"
#include "sample_fixture.h"

using namespace cusnap;
using namespace cusnap::cli_test;

TEST_CASE("dump prints one line per call with seq, thread, api and result", "[dump]") {
  const Sample& s = sample();
  const ExpectedCapture& e = s.expected;
  RunResult r = run_cusnap({"dump", s.path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  auto lines = split_lines(r.out);
  REQUIRE(lines.size() == e.calls.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const ExpectedCall& c = e.calls[i];
    std::string result = c.result == 0 ? "CUDA_SUCCESS" : "CUDA_ERROR_INVALID_VALUE";
    std::string prefix = "#";  // appended piecewise: GCC 12's bogus -Wrestrict (PR105651)
    prefix += std::to_string(c.seq) + "  " + std::to_string(c.thread_id) + "  " + c.api + "  " +
              result + "  " + c.kind;
    INFO(lines[i]);
    CHECK(lines[i].substr(0, prefix.size()) == prefix);
    if (c.kind == "memAlloc") {
      CHECK(lines[i].find(" address=" + cli::hex(c.key_value)) != std::string::npos);
    }
    if (c.kind == "launch") {
      CHECK(lines[i].find(" function=" + cli::hex(c.key_value)) != std::string::npos);
      CHECK(lines[i].find(" grid=(") != std::string::npos);
      CHECK(lines[i].find(" block=(") != std::string::npos);
      CHECK(lines[i].find(" layout=[{offset=0 size=8}, {offset=8 size=8}]") != std::string::npos);
    }
    if (c.kind == "functionGet") {
      CHECK(lines[i].find(" handle=" + cli::hex(c.key_value)) != std::string::npos);
      CHECK(lines[i].find(" layoutSource=driverQuery") != std::string::npos);
    }
    if (c.kind == "generic" && c.api == "cuGraphLaunch") {
      CHECK(lines[i].find(" affectsDeviceState=true") != std::string::npos);
    }
    if (c.kind == "deferredResult") {
      CHECK(lines[i].find(" callSeq=" + std::to_string(c.key_value) +
                          " hostChecksum=0xfeedface12345678 hasHostChecksum=true") !=
            std::string::npos);
    }
    CHECK(lines[i].find(" ctx=0x55550000c0de") != std::string::npos);
  }
  // A specific launch, all fields: shape (64,2,1)x(256,1,1) with 1024 shared bytes in round 0.
  CHECK(r.out.find("grid=(64,2,1) block=(256,1,1) sharedBytes=1024 stream=0x7f00a000") !=
        std::string::npos);
}

TEST_CASE("dump --calls slices half-open ranges and rejects bad ones", "[dump]") {
  const Sample& s = sample();
  const uint64_t n = s.expected.calls.size();
  auto first_seq = [](const std::string& line) { return std::stoull(line.substr(1)); };

  RunResult r = run_cusnap({"dump", s.path, "--calls", "10:20"});
  REQUIRE(r.exit_code == 0);
  auto lines = split_lines(r.out);
  REQUIRE(lines.size() == 10);
  for (size_t i = 0; i < lines.size(); ++i) CHECK(first_seq(lines[i]) == 10 + i);

  r = run_cusnap({"dump", s.path, "--calls", "7"});
  REQUIRE(r.exit_code == 0);
  REQUIRE(split_lines(r.out).size() == 1);
  CHECK(first_seq(r.out) == 7);

  r = run_cusnap({"dump", s.path, "--calls", std::to_string(n - 3) + ":"});
  REQUIRE(r.exit_code == 0);
  lines = split_lines(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(first_seq(lines.back()) == n - 1);

  r = run_cusnap({"dump", s.path, "--calls", ":4"});
  REQUIRE(r.exit_code == 0);
  CHECK(split_lines(r.out).size() == 4);

  r = run_cusnap({"dump", s.path, "--calls", "5:5"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.empty());

  struct Bad {
    std::string range;
    std::string message;
  };
  const Bad bad[] = {
      {"20:10", "start 20 is after end 10"},
      {"0:" + std::to_string(n + 1), "the capture has " + std::to_string(n) + " calls"},
      {std::to_string(n), "does not exist"},
      {"abc", "expected A:B"},
      {"1:x", "end 'x' is not a decimal call number"},
      {"-1:3", "start '-1' is not a decimal call number"},
      {"1:2:3", "more than one ':'"},
  };
  for (const Bad& b : bad) {
    INFO(b.range);
    r = run_cusnap({"dump", s.path, "--calls", b.range});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find(b.message) != std::string::npos);
  }
}

TEST_CASE("dump --json lines decode back into the exact records", "[dump][json]") {
  const Sample& s = sample();
  const ExpectedCapture& e = s.expected;
  RunResult r = run_cusnap({"dump", s.path, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto lines = split_lines(r.out);
  REQUIRE(lines.size() == e.calls.size());

  auto reader = format::Reader::open(s.path);
  REQUIRE(reader.is_ok());
  cli::RecordJson json;
  for (size_t i = 0; i < lines.size(); ++i) {
    INFO(lines[i]);
    // Envelope.
    capnp::MallocMessageBuilder scratch;
    auto value = scratch.initRoot<capnp::JsonValue>();
    json.codec().decodeRaw(kj::ArrayPtr<const char>(lines[i].data(), lines[i].size()), value);
    REQUIRE(value.isObject());
    std::map<std::string, capnp::JsonValue::Reader> fields;
    for (auto f : value.asReader().getObject()) fields.emplace(f.getName().cStr(), f.getValue());
    CHECK(fields.at("v").getNumber() == 1);
    CHECK(std::string(fields.at("seq").getString().cStr()) == std::to_string(i));
    CHECK(std::string(fields.at("kind").getString().cStr()) == e.calls[i].kind);
    CHECK(fields.at("frame").isNumber());

    // The record, decoded by the same codec, equals the stored record bit for bit (canonical form).
    capnp::MallocMessageBuilder decoded;
    auto record = decoded.initRoot<format::schema::CallRecord>();
    format::Status st = json.decode_record(lines[i], record);
    REQUIRE(st.is_ok());
    auto original = reader.value()->call(i);
    REQUIRE(original.is_ok());
    CHECK(original.value().frame() == static_cast<uint32_t>(fields.at("frame").getNumber()));
    auto a = capnp::canonicalize(original.value().get());
    auto b = capnp::canonicalize(record.asReader());
    CHECK(a.asBytes() == b.asBytes());
    CHECK(std::string(record.getApiName().cStr()) == e.calls[i].api);
    CHECK(record.getThreadId() == e.calls[i].thread_id);
    CHECK(record.getResult() == e.calls[i].result);
  }
  // Field names are schema names, 64-bit integers are strings, BlobIds and Data are hex.
  CHECK(r.out.find("\"memcpy\":{\"kind\":\"hostToDevice\"") != std::string::npos);
  CHECK(r.out.find("\"payload\":\"") != std::string::npos);
  CHECK(r.out.find("\"params\":\"") != std::string::npos);
  CHECK(r.out.find("\"address\":\"139637978824704\"") != std::string::npos);  // 0x7f0000200000

  r = run_cusnap({"dump", s.path, "--json", "--calls", "3:6"});
  REQUIRE(r.exit_code == 0);
  lines = split_lines(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].find("\"seq\":\"3\"") != std::string::npos);
}

TEST_CASE("decode_record rejects malformed JSON with a message", "[dump][json]") {
  cli::RecordJson json;
  capnp::MallocMessageBuilder message;
  auto record = message.initRoot<format::schema::CallRecord>();
  CHECK_FALSE(json.decode_record("{not json", record).is_ok());
  CHECK_FALSE(json.decode_record("[1,2]", record).is_ok());
  auto st = json.decode_record(R"({"launch":{"params":"abc"}})", record);
  CHECK_FALSE(st.is_ok());
  CHECK(st.message().find("odd number of hex digits") != std::string::npos);
  st = json.decode_record(R"({"memcpy":{"payload":"zz"}})", record);
  CHECK(st.message().find("BlobId") != std::string::npos);
  CHECK(json.decode_record(R"({"seq":"5","apiName":"cuInit","generic":{}})", record).is_ok());
  CHECK(record.getSeq() == 5);
  CHECK(record.isGeneric());
}

TEST_CASE("dump and info report a damaged call frame, go on past it and exit 3", "[dump]") {
  const Sample& s = sample();
  auto bytes = read_file(s.path);
  auto frames = walk_frames(bytes);
  // A call frame in the middle; the footer stays valid, so opening succeeds.
  std::vector<RawFrame> call_frames;
  for (const auto& f : frames) {
    if (f.kind == kKindCalls) call_frames.push_back(f);
  }
  REQUIRE(call_frames.size() > 4);
  const RawFrame& bad = call_frames[call_frames.size() / 2];
  bytes[bad.offset + 80 + bad.stored_size / 2] ^= 0x40;
  std::string path = scratch_dir("dump_corrupt") + "/flipped.cusnap";
  write_file(path, bytes);

  RunResult r = run_cusnap({"dump", path});
  INFO(r.err);
  CHECK(r.exit_code == 3);
  // Every call except the bad frame's: the frames after it are read too.
  auto lines = split_lines(r.out);
  CHECK(lines.size() == s.expected.calls.size() - (bad.last_seq - bad.first_seq + 1));
  REQUIRE(!lines.empty());
  CHECK(lines.back().rfind("#" + std::to_string(s.expected.calls.size() - 1) + " ", 0) == 0);
  CHECK(r.err.find("checksum") != std::string::npos);
  CHECK(r.err.find("offset " + std::to_string(bad.offset)) != std::string::npos);
  CHECK(r.err.find("call " + std::to_string(bad.first_seq)) != std::string::npos);

  std::string before = ":";  // appended piecewise: GCC 12's bogus -Wrestrict (PR105651)
  before += std::to_string(bad.first_seq);
  r = run_cusnap({"dump", path, "--calls", before});
  CHECK(r.exit_code == 0);  // the damage is outside the selection

  // info summarizes what it could read and says what it could not.
  r = run_cusnap({"info", path});
  CHECK(r.exit_code == 3);
  size_t bad_index = 0;
  while (frames[bad_index].offset != bad.offset) ++bad_index;
  CHECK(r.err.find("frame " + std::to_string(bad_index)) != std::string::npos);
  CHECK(r.out.find("Calls") != std::string::npos);
}
