// A small Protocol Buffers wire-format encoder: what a Perfetto trace (timeline/perfetto_trace.h)
// needs, nothing more. Encoding rules (https://protobuf.dev/programming-guides/encoding/): a
// field is a key varint (field number << 3 | wire type) followed by its value; wire type 0 is a
// varint (unsigned LEB128, 7 bits a byte, low group first, high bit = more follows), 1 is 8
// little-endian bytes (fixed64), 2 is a varint length then that many bytes (strings, bytes and
// nested messages). Negative int32/int64 values are varints of their 64-bit two's complement
// (10 bytes), as protobuf encodes them; sint (zigzag) fields are not needed and not offered.
//
// Messages are built inside out: fill a ProtoWriter for the nested message, then add it to its
// parent with message(). Repeated fields are written one element per key (unpacked), which every
// protobuf parser accepts for any repeated scalar.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cusnap::timeline {

class ProtoWriter {
 public:
  enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

  // Field `field` as a varint: uint32/uint64/bool/enum values, and int32/int64 through cast.
  void varint(uint32_t field, uint64_t value);
  void signed_varint(uint32_t field, int64_t value) { varint(field, static_cast<uint64_t>(value)); }
  void boolean(uint32_t field, bool value) { varint(field, value ? 1 : 0); }
  // fixed64 / sfixed64 / double bits: 8 bytes, little-endian.
  void fixed64(uint32_t field, uint64_t value);
  // string / bytes.
  void bytes(uint32_t field, std::string_view value);
  // A nested message: `inner`'s bytes, length-delimited.
  void message(uint32_t field, const ProtoWriter& inner) { bytes(field, inner.data()); }

  const std::string& data() const { return data_; }
  bool empty() const { return data_.empty(); }
  void clear() { data_.clear(); }

  // The raw encodings, for tests and for callers that frame bytes themselves.
  static void append_varint(std::string& out, uint64_t value);
  static void append_key(std::string& out, uint32_t field, WireType type);

 private:
  std::string data_;
};

}  // namespace cusnap::timeline
