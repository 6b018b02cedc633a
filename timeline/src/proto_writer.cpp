#include "cusnap/timeline/proto_writer.h"

namespace cusnap::timeline {

void ProtoWriter::append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void ProtoWriter::append_key(std::string& out, uint32_t field, WireType type) {
  append_varint(out, (static_cast<uint64_t>(field) << 3) | type);
}

void ProtoWriter::varint(uint32_t field, uint64_t value) {
  append_key(data_, field, kVarint);
  append_varint(data_, value);
}

void ProtoWriter::fixed64(uint32_t field, uint64_t value) {
  append_key(data_, field, kFixed64);
  for (int i = 0; i < 8; ++i) data_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void ProtoWriter::bytes(uint32_t field, std::string_view value) {
  append_key(data_, field, kLengthDelimited);
  append_varint(data_, value.size());
  data_.append(value);
}

}  // namespace cusnap::timeline
