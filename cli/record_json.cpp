#include "record_json.h"

#include <capnp/message.h>
#include <kj/exception.h>

#include "cusnap/format/blob_id.h"

namespace cusnap::cli {

namespace schema = format::schema;

namespace {

class DataAsHex final : public capnp::JsonCodec::Handler<capnp::Data> {
 public:
  void encode(const capnp::JsonCodec&, capnp::Data::Reader input,
              capnp::JsonValue::Builder output) const override {
    output.setString(format::bytes_to_hex(std::span<const uint8_t>(input.begin(), input.size())));
  }

  capnp::Orphan<capnp::Data> decode(const capnp::JsonCodec&, capnp::JsonValue::Reader input,
                                    capnp::Orphanage orphanage) const override {
    KJ_REQUIRE(input.isString(), "Data field: expected a hex string");
    auto text = input.getString();
    KJ_REQUIRE(text.size() % 2 == 0, "Data field: odd number of hex digits");
    auto orphan = orphanage.newOrphan<capnp::Data>(text.size() / 2);
    auto bytes = orphan.get();
    for (size_t i = 0; i < bytes.size(); ++i) {
      int hi = format::hex_digit_value(text[2 * i]);
      int lo = format::hex_digit_value(text[2 * i + 1]);
      KJ_REQUIRE(hi >= 0 && lo >= 0, "Data field: not a hex digit");
      bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return orphan;
  }
};

class BlobIdAsHex final : public capnp::JsonCodec::Handler<schema::BlobId> {
 public:
  void encode(const capnp::JsonCodec&, schema::BlobId::Reader input,
              capnp::JsonValue::Builder output) const override {
    format::BlobId id{input.getHigh(), input.getLow()};
    output.setString(id.to_hex());
  }

  void decode(const capnp::JsonCodec&, capnp::JsonValue::Reader input,
              schema::BlobId::Builder output) const override {
    KJ_REQUIRE(input.isString(), "BlobId: expected a 32-digit hex string");
    auto text = input.getString();
    auto id = format::BlobId::from_hex(std::string_view(text.cStr(), text.size()));
    KJ_REQUIRE(id.has_value(), "BlobId: expected a 32-digit hex string");
    output.setHigh(id->high);
    output.setLow(id->low);
  }
};

}  // namespace

struct RecordJson::Handlers {
  DataAsHex data;
  BlobIdAsHex blob_id;
};

RecordJson::RecordJson()
    : handlers_(std::make_unique<Handlers>()), codec_(std::make_unique<capnp::JsonCodec>()) {
  codec_->addTypeHandler(handlers_->data);
  codec_->addTypeHandler(handlers_->blob_id);
}

// The codec keeps pointers to the handlers: destroy it first.
RecordJson::~RecordJson() { codec_.reset(); }

const capnp::JsonCodec& RecordJson::codec() const { return *codec_; }

void RecordJson::stream(std::ostream& out, capnp::DynamicValue::Reader value, capnp::Type type,
                        uint64_t piece_words) const {
  // Up to piece_words words a value is encoded by the codec in one piece (its tree stays small).
  if (type.isList()) {
    // Runs of small elements go to the codec together, copied into a scratch list of at most
    // piece_words words (one encode per element would cost a message builder each).
    auto list = value.as<capnp::DynamicList>();
    capnp::Type element = type.asList().getElementType();
    auto words_of = [&](capnp::DynamicValue::Reader item) -> uint64_t {
      if (element.isStruct()) return item.as<capnp::DynamicStruct>().totalSize().wordCount;
      if (element.isText()) return item.as<capnp::Text>().size() / 8 + 1;
      if (element.isData()) return item.as<capnp::Data>().size() / 8 + 1;
      return element.isList() ? UINT64_MAX : 1;  // nested lists: streamed one by one
    };
    bool first = true;
    auto separator = [&] {
      if (!first) out << ',';
      first = false;
    };
    unsigned begin = 0;
    uint64_t run_words = 0;
    auto flush = [&](unsigned end) {
      if (end > begin) {
        capnp::MallocMessageBuilder scratch;
        auto run = scratch.getOrphanage().newOrphan(type.asList(), end - begin);
        for (unsigned i = begin; i < end; ++i) run.get().set(i - begin, list[i]);
        kj::String text = codec_->encode(run.getReader(), type);  // "[a,b,...]"
        separator();
        out.write(text.begin() + 1, static_cast<std::streamsize>(text.size() - 2));
      }
      begin = end;
      run_words = 0;
    };
    out << '[';
    for (unsigned i = 0; i < list.size(); ++i) {
      uint64_t words = words_of(list[i]);
      if (words > piece_words) {
        flush(i);
        separator();
        stream(out, list[i], element, piece_words);
        begin = i + 1;
        continue;
      }
      if (run_words + words > piece_words) flush(i);
      run_words += words;
    }
    flush(list.size());
    out << ']';
    return;
  }
  if (!type.isStruct() || type.asStruct() == capnp::Schema::from<schema::BlobId>() ||
      value.as<capnp::DynamicStruct>().totalSize().wordCount <= piece_words) {
    out << codec_->encode(value, type).cStr();
    return;
  }
  // The codec's rules for a struct (capnp/compat/json.c++): non-union fields that are present
  // (HasMode::NON_NULL) in declaration order, the active union member in its place among them,
  // written even when null unless it is the union's default member.
  auto s = value.as<capnp::DynamicStruct>();
  bool first = true;
  auto field_out = [&](capnp::StructSchema::Field field, bool null) {
    out << (first ? "" : ",") << '"' << field.getProto().getName().cStr() << "\":";
    first = false;
    if (null) {
      out << "null";
    } else {
      stream(out, s.get(field), field.getType(), piece_words);
    }
  };
  kj::Maybe<capnp::StructSchema::Field> active = s.which();
  bool active_null = false;
  KJ_IF_MAYBE (field, active) {
    active_null = !s.has(*field, capnp::HasMode::NON_NULL);
    if (field->getProto().getDiscriminantValue() == 0 && active_null) active = nullptr;
  }
  out << '{';
  for (auto field : s.getSchema().getNonUnionFields()) {
    KJ_IF_MAYBE (u, active) {
      if (u->getIndex() < field.getIndex()) {
        field_out(*u, active_null);
        active = nullptr;
      }
    }
    if (s.has(field, capnp::HasMode::NON_NULL)) field_out(field, false);
  }
  KJ_IF_MAYBE (u, active) {
    field_out(*u, active_null);
  }
  out << '}';
}

std::string RecordJson::dump_line(const format::CallRef& call) const {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<capnp::JsonValue>();
  auto fields = root.initObject(5);
  fields[0].setName("v");
  fields[0].initValue().setNumber(kDumpJsonVersion);
  fields[1].setName("seq");
  fields[1].initValue().setString(std::to_string(call.seq()));
  fields[2].setName("kind");
  fields[2].initValue().setString(
      format::call_kind_name(static_cast<uint16_t>(call.get().which())));
  fields[3].setName("frame");
  fields[3].initValue().setNumber(call.frame());
  fields[4].setName("record");
  codec_->encode(call.get(), fields[4].initValue());
  kj::String text = codec_->encodeRaw(root.asReader());
  return std::string(text.cStr(), text.size());
}

format::Status RecordJson::decode_record(std::string_view json,
                                         schema::CallRecord::Builder out) const {
  std::string error;
  KJ_IF_MAYBE (exception, kj::runCatchingExceptions([&]() {
                 capnp::MallocMessageBuilder scratch;
                 auto value = scratch.initRoot<capnp::JsonValue>();
                 codec_->decodeRaw(kj::ArrayPtr<const char>(json.data(), json.size()), value);
                 capnp::JsonValue::Reader record = value.asReader();
                 if (record.isObject()) {
                   for (auto field : record.getObject()) {
                     if (field.getName() == "record") record = field.getValue();
                   }
                 }
                 KJ_REQUIRE(record.isObject(), "expected a JSON object");
                 codec_->decode(record, capnp::DynamicStruct::Builder(out));
               })) {
    error = exception->getDescription().cStr();
  }
  if (!error.empty()) {
    return format::Status::error(format::ErrorCode::kInvalidArgument,
                                 "cannot decode call record JSON: " + error);
  }
  return format::Status::ok();
}

}  // namespace cusnap::cli
