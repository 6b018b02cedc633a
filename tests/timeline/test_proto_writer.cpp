// The protobuf wire encoder and the Perfetto packets it writes, against byte strings worked out
// by hand from the encoding rules (https://protobuf.dev/programming-guides/encoding/) and the
// field numbers of the perfetto trace protos.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cusnap/timeline/perfetto_trace.h"
#include "cusnap/timeline/proto_writer.h"

using cusnap::timeline::EventDetails;
using cusnap::timeline::PerfettoTrace;
using cusnap::timeline::ProtoWriter;

namespace {

std::string bytes(std::vector<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

}  // namespace

TEST_CASE("varints are 7-bit groups, low group first", "[timeline]") {
  std::string out;
  ProtoWriter::append_varint(out, 0);
  CHECK(out == bytes({0x00}));
  out.clear();
  ProtoWriter::append_varint(out, 127);
  CHECK(out == bytes({0x7f}));
  out.clear();
  ProtoWriter::append_varint(out, 128);
  CHECK(out == bytes({0x80, 0x01}));
  out.clear();
  ProtoWriter::append_varint(out, 300);  // 0b10_0101100
  CHECK(out == bytes({0xac, 0x02}));
  out.clear();
  ProtoWriter::append_varint(out, UINT64_MAX);  // 64 bits: nine full groups and a 1
  CHECK(out == bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
}

TEST_CASE("fields carry their number and wire type in the key", "[timeline]") {
  ProtoWriter w;
  w.varint(1, 150);  // the encoding guide's example: 08 96 01
  CHECK(w.data() == bytes({0x08, 0x96, 0x01}));

  w.clear();
  w.bytes(2, "testing");  // 2 << 3 | 2 = 0x12, length 7
  CHECK(w.data() == bytes({0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'}));

  w.clear();
  w.signed_varint(1, -1);  // two's complement, ten bytes
  CHECK(w.data() == bytes({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));

  w.clear();
  w.boolean(3, true);
  CHECK(w.data() == bytes({0x18, 0x01}));

  w.clear();
  // 47 << 3 | 1 = 377 = 0xf9 0x02, then eight little-endian bytes.
  w.fixed64(47, 0x0102030405060708ull);
  CHECK(w.data() == bytes({0xf9, 0x02, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01}));

  w.clear();
  w.bytes(60, "");  // 60 << 3 | 2 = 482 = 0xe2 0x03: a two-byte key, an empty value
  CHECK(w.data() == bytes({0xe2, 0x03, 0x00}));
}

TEST_CASE("a nested message is its bytes, length-delimited", "[timeline]") {
  ProtoWriter inner;
  inner.varint(1, 150);
  ProtoWriter outer;
  outer.message(3, inner);  // the encoding guide's Test3: 1a 03 08 96 01
  CHECK(outer.data() == bytes({0x1a, 0x03, 0x08, 0x96, 0x01}));
}

TEST_CASE("a trace is descriptor packets then event packets on one sequence", "[timeline]") {
  PerfettoTrace trace;
  uint64_t track = trace.add_track(0, "t");
  CHECK(track == 1);
  EventDetails details;
  details.flow_ids.push_back(2);
  trace.instant(track, 5, "i", details);

  std::string expected;
  // Trace.packet (1): TracePacket{track_descriptor (60) = {uuid (1) = 1, name (2) = "t"},
  // trusted_packet_sequence_id (10) = 1, sequence_flags (13) = SEQ_INCREMENTAL_STATE_CLEARED}.
  expected +=
      bytes({0x0a, 0x0c, 0xe2, 0x03, 0x05, 0x08, 0x01, 0x12, 0x01, 't', 0x50, 0x01, 0x68, 0x01});
  // TracePacket{timestamp (8) = 5, track_event (11) = {type (9) = TYPE_INSTANT (3),
  // track_uuid (11) = 1, name (23) = "i", flow_ids (47, fixed64) = 2},
  // trusted_packet_sequence_id (10) = 1}.
  expected += bytes({0x0a, 0x18, 0x40, 0x05, 0x5a, 0x12, 0x48, 0x03, 0x58, 0x01, 0xba, 0x01, 0x01,
                     'i',  0xf9, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x50, 0x01});
  CHECK(trace.serialize() == expected);
}

TEST_CASE("events are written in time order, each track's own order kept", "[timeline]") {
  PerfettoTrace trace;
  uint64_t a = trace.add_track(0, "a");
  uint64_t b = trace.add_track(0, "b");
  trace.begin_slice(a, 10, "zero-length");
  trace.end_slice(a, 10);  // zero-length: its end stays after its begin
  trace.begin_slice(a, 10, "ten-long");
  trace.end_slice(a, 20);
  trace.instant(b, 5, "early");
  std::string s = trace.serialize();
  // The instant at 5 comes first among the events although it was added last.
  size_t early = s.find("early");
  size_t x = s.find("zero-length");
  size_t y = s.find("ten-long");
  REQUIRE(early != std::string::npos);
  REQUIRE(x != std::string::npos);
  REQUIRE(y != std::string::npos);
  CHECK(early < x);
  CHECK(x < y);
  CHECK(trace.event_count() == 5);
}
