#include "test_util.h"

#include <capnp/schema.h>
#include <kj/string.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace cusnap::format::test {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("cusnap-format-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

std::string random_text(std::mt19937_64& rng) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz_0123456789";
  size_t n = rng() % 24;
  std::string s;
  for (size_t i = 0; i < n; ++i) s += kChars[rng() % (sizeof kChars - 1)];
  return s;
}

capnp::DynamicValue::Reader random_scalar(capnp::Type type, std::mt19937_64& rng,
                                          std::string& text_storage,
                                          std::vector<uint8_t>& data_storage) {
  switch (type.which()) {
    case capnp::schema::Type::BOOL:
      return (rng() & 1) != 0;
    case capnp::schema::Type::INT8:
      return static_cast<int8_t>(rng());
    case capnp::schema::Type::INT16:
      return static_cast<int16_t>(rng());
    case capnp::schema::Type::INT32:
      return static_cast<int32_t>(rng());
    case capnp::schema::Type::INT64:
      return static_cast<int64_t>(rng());
    case capnp::schema::Type::UINT8:
      return static_cast<uint8_t>(rng());
    case capnp::schema::Type::UINT16:
      return static_cast<uint16_t>(rng());
    case capnp::schema::Type::UINT32:
      return static_cast<uint32_t>(rng());
    case capnp::schema::Type::UINT64:
      return static_cast<uint64_t>(rng());
    case capnp::schema::Type::FLOAT32:
      return static_cast<float>(rng() % 100000) / 8.0f;
    case capnp::schema::Type::FLOAT64:
      return static_cast<double>(rng() % 100000) / 16.0;
    case capnp::schema::Type::TEXT:
      text_storage = random_text(rng);
      return capnp::Text::Reader(text_storage.c_str(), text_storage.size());
    case capnp::schema::Type::DATA:
      data_storage.resize(rng() % 40);
      for (auto& b : data_storage) b = static_cast<uint8_t>(rng());
      return capnp::Data::Reader(data_storage.data(), data_storage.size());
    case capnp::schema::Type::ENUM: {
      auto enumerants = type.asEnum().getEnumerants();
      return capnp::DynamicEnum(enumerants[static_cast<unsigned>(rng() % enumerants.size())]);
    }
    default:
      return capnp::DynamicValue::Reader();
  }
}

void fill_field(capnp::DynamicStruct::Builder builder, capnp::StructSchema::Field field,
                std::mt19937_64& rng, int depth) {
  capnp::Type type = field.getType();
  std::string text;
  std::vector<uint8_t> data;
  if (type.isStruct()) {
    if (depth < 4) fill_random(builder.init(field).as<capnp::DynamicStruct>(), rng, depth + 1);
    return;
  }
  if (type.isList()) {
    unsigned n = static_cast<unsigned>(rng() % 4);
    auto list = builder.init(field, n).as<capnp::DynamicList>();
    capnp::Type element = type.asList().getElementType();
    for (unsigned i = 0; i < n; ++i) {
      if (element.isStruct()) {
        fill_random(list[i].as<capnp::DynamicStruct>(), rng, depth + 1);
      } else if (!element.isList() && !element.isInterface() && !element.isAnyPointer()) {
        list.set(i, random_scalar(element, rng, text, data));
      }
    }
    return;
  }
  if (type.isInterface() || type.isAnyPointer() || type.isVoid()) return;
  builder.set(field, random_scalar(type, rng, text, data));
}

}  // namespace

void fill_random(capnp::DynamicStruct::Builder builder, std::mt19937_64& rng, int depth,
                 int union_member) {
  auto schema = builder.getSchema();
  // A BlobId other than the null one must name a blob stored before the record (verify checks
  // it); random records name none.
  if (schema == capnp::Schema::from<schema::BlobId>()) return;
  for (auto field : schema.getNonUnionFields()) fill_field(builder, field, rng, depth);
  auto members = schema.getUnionFields();
  if (members.size() > 0) {
    unsigned pick = union_member >= 0 ? static_cast<unsigned>(union_member)
                                      : static_cast<unsigned>(rng() % members.size());
    auto field = members[pick];
    if (field.getType().isStruct()) {
      // Void-like structs (no fields) still need init() to select the member.
      auto s = builder.init(field).as<capnp::DynamicStruct>();
      if (depth < 4) fill_random(s, rng, depth + 1);
    } else {
      fill_field(builder, field, rng, depth);
    }
  }
  // A launch's parameter slots lie inside its parameter bytes (verify checks it,
  // format/record_sizes.h): random slots are folded into them.
  if (schema == capnp::Schema::from<schema::Launch>()) {
    auto launch = builder.as<schema::Launch>();
    auto bytes = static_cast<uint32_t>(launch.getParams().size());
    for (auto slot : launch.getLayout()) {
      uint32_t offset = slot.getOffset() % (bytes + 1);
      slot.setOffset(offset);
      slot.setSize(slot.getSize() % (bytes - offset + 1));
    }
  }
}

void make_header(capnp::MallocMessageBuilder& message, const std::string& marker) {
  auto h = message.initRoot<schema::CaptureHeader>();
  h.setHostName(marker);
  h.setPid(4242);
  h.setDriverVersion(13000);
  auto argv = h.initCommandLine(2);
  argv.set(0, "./app");
  argv.set(1, marker);
  auto devs = h.initDevices(1);
  devs[0].setName("Emulated GPU");
  devs[0].setComputeCapabilityMajor(9);
  devs[0].setComputeCapabilityMinor(0);
  devs[0].setTotalMemoryBytes(80ull << 30);
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng();
    std::memcpy(out.data() + i, &v, 8);
  }
  for (; i < n; ++i) out[i] = static_cast<uint8_t>(rng());
  return out;
}

std::vector<uint8_t> compressible_bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  std::mt19937_64 rng(seed);
  size_t floats = n / 4;
  float phase = static_cast<float>(rng() % 1000);
  for (size_t i = 0; i < floats; ++i) {
    // Quantized sine with occasional noise: realistic-ish activations.
    float v = std::round(std::sin(phase + static_cast<float>(i) * 0.001f) * 256.0f) / 256.0f;
    if (rng() % 16 == 0) v += static_cast<float>(rng() % 8) / 64.0f;
    std::memcpy(out.data() + 4 * i, &v, 4);
  }
  return out;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::string record_text_without_writer_fields(schema::CallRecord::Reader record) {
  capnp::MallocMessageBuilder copy;
  copy.setRoot(record);
  auto root = copy.getRoot<schema::CallRecord>();
  root.setSeq(0);
  if (root.isLaunch()) root.getLaunch().setOrdinal(0);
  return kj::str(root.asReader()).cStr();
}

}  // namespace cusnap::format::test
