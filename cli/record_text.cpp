#include "record_text.h"

#include <capnp/dynamic.h>
#include <capnp/schema.h>

#include <array>
#include <cstdio>
#include <string_view>

#include "common.h"
#include "cusnap/format/blob_id.h"
#include "cusnap/format/reader.h"
#include "result_names.h"

namespace cusnap::cli {

namespace schema = format::schema;

namespace {

constexpr size_t kMaxDataBytes = 32;
constexpr size_t kMaxListElements = 16;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Text printed bare when it is a plain token, otherwise quoted with C-style escapes.
std::string text_value(std::string_view text) {
  bool plain = !text.empty();
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || c == '"' || c == '\\' || c == '=' || u >= 0x7f) plain = false;
  }
  if (plain) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < ' ' || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string data_value(capnp::Data::Reader data) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  size_t shown = std::min(data.size(), kMaxDataBytes);
  for (size_t i = 0; i < shown; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 15];
  }
  if (shown < data.size()) out += "...";
  return out + "(" + std::to_string(data.size()) + "B)";
}

bool is_blob_id(capnp::StructSchema s) {
  return s.getProto().getId() == capnp::typeId<schema::BlobId>();
}

std::string struct_body(capnp::DynamicStruct::Reader s, bool all);

// Formats one value; returns "" when it equals the default and may be left out.
std::string value_text(const std::string& name, capnp::DynamicValue::Reader value, capnp::Type type,
                       bool keep_default) {
  switch (type.which()) {
    case capnp::schema::Type::VOID:
      return keep_default ? "void" : "";
    case capnp::schema::Type::BOOL:
      return value.as<bool>() ? "true" : (keep_default ? "false" : "");
    case capnp::schema::Type::INT8:
    case capnp::schema::Type::INT16:
    case capnp::schema::Type::INT32:
    case capnp::schema::Type::INT64: {
      int64_t v = value.as<int64_t>();
      return v != 0 || keep_default ? std::to_string(v) : "";
    }
    case capnp::schema::Type::UINT8:
    case capnp::schema::Type::UINT16:
    case capnp::schema::Type::UINT32:
    case capnp::schema::Type::UINT64: {
      uint64_t v = value.as<uint64_t>();
      if (v == 0 && !keep_default) return "";
      bool as_hex = type.which() == capnp::schema::Type::UINT64 && is_hex_field(name);
      return as_hex ? hex(v) : std::to_string(v);
    }
    case capnp::schema::Type::FLOAT32:
    case capnp::schema::Type::FLOAT64: {
      double v = value.as<double>();
      if (v == 0 && !keep_default) return "";
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", v);
      return buf;
    }
    case capnp::schema::Type::TEXT: {
      auto text = value.as<capnp::Text>();
      if (text.size() == 0 && !keep_default) return "";
      return text_value(std::string_view(text.cStr(), text.size()));
    }
    case capnp::schema::Type::DATA: {
      auto data = value.as<capnp::Data>();
      if (data.size() == 0 && !keep_default) return "";
      return data_value(data);
    }
    case capnp::schema::Type::ENUM: {
      auto e = value.as<capnp::DynamicEnum>();
      KJ_IF_MAYBE (enumerant, e.getEnumerant()) {
        return std::string(enumerant->getProto().getName().cStr());
      }
      return std::to_string(e.getRaw());
    }
    case capnp::schema::Type::STRUCT: {
      auto s = value.as<capnp::DynamicStruct>();
      if (is_blob_id(s.getSchema())) {
        format::BlobId id{s.get("high").as<uint64_t>(), s.get("low").as<uint64_t>()};
        if (id.is_null() && !keep_default) return "";
        return id.to_hex();
      }
      // Inside lists every field is shown, so elements line up: [{offset=0 size=8}, ...].
      std::string body = struct_body(s, keep_default);
      if (body.empty() && !keep_default) return "";
      return "{" + body + "}";
    }
    case capnp::schema::Type::LIST: {
      auto list = value.as<capnp::DynamicList>();
      if (list.size() == 0 && !keep_default) return "";
      auto element_type = type.asList().getElementType();
      std::string out = "[";
      size_t shown = std::min<size_t>(list.size(), kMaxListElements);
      for (size_t i = 0; i < shown; ++i) {
        if (i > 0) out += ", ";
        out += value_text(name, list[i], element_type, true);
      }
      if (shown < list.size()) out += ", ...+" + std::to_string(list.size() - shown);
      return out + "]";
    }
    default:
      return keep_default ? "?" : "";
  }
}

// "x=1 y=2" for the struct's fields (non-union fields, then the active union member); `all`
// keeps fields that equal their default.
std::string struct_body(capnp::DynamicStruct::Reader s, bool all) {
  std::string out;
  auto append = [&](const std::string& key, const std::string& value) {
    if (value.empty()) return;
    if (!out.empty()) out += ' ';
    out += key + "=" + value;
  };
  auto schema_of = s.getSchema();
  auto fields = schema_of.getNonUnionFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    auto field = fields[i];
    std::string name = field.getProto().getName().cStr();
    // fooX, fooY, fooZ in a row print as foo=(x,y,z), always (a grid of 1x1x1 is worth seeing).
    if (ends_with(name, "X") && i + 2 < fields.size()) {
      std::string stem = name.substr(0, name.size() - 1);
      if (fields[i + 1].getProto().getName() == (stem + "Y").c_str() &&
          fields[i + 2].getProto().getName() == (stem + "Z").c_str()) {
        std::string triple = "(";
        for (size_t k = 0; k < 3; ++k) {
          if (k > 0) triple += ",";
          triple += std::to_string(s.get(fields[i + k]).as<uint64_t>());
        }
        append(stem, triple + ")");
        i += 2;
        continue;
      }
    }
    if (field.getProto().isGroup()) {
      append(name, value_text(name, s.get(field), field.getType(), false));
      continue;
    }
    bool is_pointer = field.getType().isText() || field.getType().isData() ||
                      field.getType().isList() || field.getType().isStruct();
    if (is_pointer && !s.has(field)) continue;
    // Enums always show (kind=...); so does a launch ordinal, for which 0 is a real value.
    bool keep = all || field.getType().isEnum() || name == "ordinal";
    append(name, value_text(name, s.get(field), field.getType(), keep));
  }
  KJ_IF_MAYBE (active, s.which()) {
    std::string name = active->getProto().getName().cStr();
    std::string value = value_text(name, s.get(*active), active->getType(), true);
    append(name, value);
  }
  return out;
}

}  // namespace

bool is_hex_field(const std::string& name) {
  static constexpr std::array<std::string_view, 32> kHexNames = {
      "context",     "handle",       "module",     "function",     "kernel",    "stream",
      "event",       "pool",         "address",    "dst",          "src",       "hostPointer",
      "userData",    "start",        "end",        "flags",        "value",     "accessFlags",
      "handleTypes", "hostChecksum", "graph",      "node",         "exec",      "from",
      "to",          "original",     "childGraph", "hostFunction", "graphNode", "ref",
      "array",       "mipmapped"};
  for (auto n : kHexNames) {
    if (name == n) return true;
  }
  // Families: srcContext/dstContext, srcArray/dstArray, ...Pointer, ...Handle.
  return ends_with(name, "Context") || ends_with(name, "Array") || ends_with(name, "Pointer") ||
         ends_with(name, "Handle") || ends_with(name, "Address") || ends_with(name, "Stream") ||
         ends_with(name, "Node");
}

std::string record_text(schema::CallRecord::Reader record) {
  // Appended piecewise: `"#" + std::to_string(..)` trips GCC 12's bogus -Wrestrict (PR105651).
  std::string out = "#";
  out += std::to_string(record.getSeq());
  out += "  " + std::to_string(record.getThreadId());
  std::string api = record.hasApiName() ? std::string(record.getApiName().cStr()) : "-";
  out += "  " + text_value(api);
  out += "  " + result_text(record.getResult());
  auto kind = static_cast<uint16_t>(record.which());
  out += "  " + format::call_kind_name(kind);

  capnp::DynamicStruct::Reader dynamic = record;
  KJ_IF_MAYBE (active, dynamic.which()) {
    auto value = dynamic.get(*active);
    if (active->getType().isStruct()) {
      std::string body = struct_body(value.as<capnp::DynamicStruct>(), false);
      if (!body.empty()) out += " " + body;
    }
  }
  if (record.getContext() != 0) out += " ctx=" + hex(record.getContext());
  return out;
}

}  // namespace cusnap::cli
