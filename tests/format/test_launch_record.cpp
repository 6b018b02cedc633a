// Writer::append_launch: launch records given as plain fields and built on a worker must read back
// field for field, byte for byte as append_call() of the same record writes them, in seq order,
// mixed with ordinary records, across frames and threads.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <thread>

#include "test_util.h"

using namespace cusnap::format;
using namespace cusnap::format::test;

namespace {

// A launch with every field drawn at random, owning what its views point to.
struct OwnedLaunch {
  LaunchFields fields;
  std::string api;
  std::string name;
  std::vector<LaunchParamSlot> layout;
  std::vector<uint8_t> params;
  std::vector<std::vector<uint8_t>> attribute_values;
  std::vector<LaunchAttributeFields> attributes;

  // Points the views of `fields` at what this object owns (again, after a move).
  void bind() {
    attributes.clear();
    for (size_t i = 0; i < attribute_values.size(); ++i)
      attributes.push_back({attribute_ids[i], attribute_values[i]});
    fields.api_name = api;
    fields.kernel_name = name;
    fields.layout = layout;
    fields.params = params;
    fields.attributes = attributes;
  }
  std::vector<uint32_t> attribute_ids;
};

OwnedLaunch random_launch(std::mt19937_64& rng) {
  OwnedLaunch o;
  LaunchFields& f = o.fields;
  f.thread_id = rng();
  f.start_ns = static_cast<int64_t>(rng() >> 2);
  f.end_ns = f.start_ns + static_cast<int64_t>(rng() % 100000);
  f.result = static_cast<int32_t>(rng() % 1000);
  f.context = rng();
  f.kind = static_cast<schema::Launch::Kind>(rng() % 4);
  f.function = rng();
  for (int i = 0; i < 3; ++i) {
    f.grid[i] = static_cast<uint32_t>(rng());
    f.block[i] = static_cast<uint32_t>(rng());
  }
  f.shared_bytes = static_cast<uint32_t>(rng());
  f.stream = rng();
  f.cooperative = rng() % 2 != 0;
  f.via_extra = rng() % 2 != 0;
  f.layout_seq = rng() % 3 == 0 ? LaunchFields::kNoLayoutSeq : rng() % 100000;
  static const char* kApis[] = {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", ""};
  o.api = kApis[rng() % 4];
  size_t name_len = rng() % 5 == 0 ? 0 : (rng() % 4 == 0 ? 1000 + rng() % 3000 : 1 + rng() % 60);
  for (size_t i = 0; i < name_len; ++i) o.name.push_back(static_cast<char>('A' + rng() % 58));
  // A successful launch of a function no record obtained needs its kernel name, or verify()
  // calls the file corrupt (format/record_handles.h); which random launch hits that depended on
  // how many random numbers the schema's fields consumed before it.
  if (f.result == 0 && o.name.empty()) o.name.push_back('k');
  f.has_layout = rng() % 4 != 0;
  if (f.has_layout) {
    size_t slots = rng() % 20;
    uint32_t offset = 0;
    for (size_t i = 0; i < slots; ++i) {
      uint32_t size = 1u << (rng() % 5);
      offset = (offset + size - 1) / size * size;
      o.layout.push_back({offset, size});
      offset += size;
    }
  }
  // Slots lie inside the parameter bytes (verify checks it, format/record_sizes.h).
  size_t layout_end = o.layout.empty() ? 0 : o.layout.back().offset + o.layout.back().size;
  f.has_params = rng() % 4 != 0;
  if (f.has_params) {
    o.params = random_bytes(rng() % 5 == 0 ? 0 : rng() % 4097, rng());
    if (o.params.size() < layout_end) o.params.resize(layout_end, 0x5a);
  } else {
    o.layout.clear();
  }
  size_t attributes = rng() % 4;
  for (size_t i = 0; i < attributes; ++i)
    o.attribute_values.push_back(random_bytes(rng() % 2 ? 64 : 8, rng()));
  for (size_t i = 0; i < attributes; ++i)
    o.attribute_ids.push_back(static_cast<uint32_t>(rng() % 20));
  return o;
}

std::vector<uint8_t> bytes_of(capnp::Data::Reader data) { return {data.begin(), data.end()}; }

// Field by field, straight from the fields (not through build_launch_record).
void check_launch(schema::CallRecord::Reader r, const LaunchFields& f) {
  CHECK(r.getThreadId() == f.thread_id);
  CHECK(r.getStartNs() == f.start_ns);
  CHECK(r.getEndNs() == f.end_ns);
  CHECK(r.getResult() == f.result);
  CHECK(std::string(r.getApiName().cStr()) == std::string(f.api_name));
  CHECK(r.getContext() == f.context);
  REQUIRE(r.isLaunch());
  auto l = r.getLaunch();
  CHECK(l.getKind() == f.kind);
  CHECK(l.getFunction() == f.function);
  CHECK(l.getGridX() == f.grid[0]);
  CHECK(l.getGridY() == f.grid[1]);
  CHECK(l.getGridZ() == f.grid[2]);
  CHECK(l.getBlockX() == f.block[0]);
  CHECK(l.getBlockY() == f.block[1]);
  CHECK(l.getBlockZ() == f.block[2]);
  CHECK(l.getSharedBytes() == f.shared_bytes);
  CHECK(l.getStream() == f.stream);
  CHECK(l.getCooperative() == f.cooperative);
  CHECK(l.getViaExtra() == f.via_extra);
  CHECK(std::string(l.getKernelName().cStr()) == std::string(f.kernel_name));
  CHECK(l.getLayoutSeq() == (f.layout_seq == LaunchFields::kNoLayoutSeq ? 0 : f.layout_seq));
  CHECK(l.hasLayout() == f.has_layout);
  REQUIRE(l.getLayout().size() == f.layout.size());
  for (size_t i = 0; i < f.layout.size(); ++i) {
    CHECK(l.getLayout()[i].getOffset() == f.layout[i].offset);
    CHECK(l.getLayout()[i].getSize() == f.layout[i].size);
  }
  CHECK(l.hasParams() == f.has_params);
  CHECK(bytes_of(l.getParams()) == std::vector<uint8_t>(f.params.begin(), f.params.end()));
  REQUIRE(l.getAttributes().size() == f.attributes.size());
  for (size_t i = 0; i < f.attributes.size(); ++i) {
    CHECK(l.getAttributes()[i].getId() == f.attributes[i].id);
    CHECK(bytes_of(l.getAttributes()[i].getValue()) ==
          std::vector<uint8_t>(f.attributes[i].value.begin(), f.attributes[i].value.end()));
  }
}

std::unique_ptr<Writer> open_writer(const std::string& path, const WriterOptions& options) {
  capnp::MallocMessageBuilder header;
  make_header(header, "launch");
  auto writer = Writer::create(path, header, options);
  REQUIRE(writer.is_ok());
  return std::move(writer.value());
}

}  // namespace

TEST_CASE("append_launch writes what append_call of the same record writes", "[format][launch]") {
  for (int level : {3, 0}) {
    INFO("compression level " << level);
    TempDir dir;
    WriterOptions options;
    options.compression_level = level;
    options.call_frame_bytes = 8 << 10;  // many frames: entries expanded across frame boundaries
    auto deferred = open_writer(dir.file("deferred.cusnap"), options);
    auto direct = open_writer(dir.file("direct.cusnap"), options);

    std::mt19937_64 rng(11);
    std::vector<std::unique_ptr<OwnedLaunch>> launches;
    std::map<uint64_t, size_t> launch_at_seq;
    const size_t kRecords = 3000;
    for (size_t i = 0; i < kRecords; ++i) {
      if (rng() % 3 != 0) {
        launches.push_back(std::make_unique<OwnedLaunch>(random_launch(rng)));
        launches.back()->bind();
        const LaunchFields& f = launches.back()->fields;
        auto seq = deferred->append_launch(f);
        INFO(seq.status().to_string());
        REQUIRE(seq.is_ok());
        CHECK(seq.value() == i);
        launch_at_seq[i] = launches.size() - 1;
        capnp::MallocMessageBuilder message;
        auto root = message.initRoot<schema::CallRecord>();
        build_launch_record(f, root);
        REQUIRE(direct->append_call(message).value() == i);
      } else {
        capnp::MallocMessageBuilder message;
        auto root = message.initRoot<schema::CallRecord>();
        fill_random(capnp::toDynamic(root), rng, 0, static_cast<int>(schema::CallRecord::MEMCPY));
        auto seq = deferred->append_call(message);
        INFO(seq.status().to_string());
        REQUIRE(seq.is_ok());
        CHECK(seq.value() == i);
        REQUIRE(direct->append_call(message).value() == i);
      }
    }
    CHECK(deferred->counters().launches == launches.size());
    REQUIRE(deferred->close().is_ok());
    REQUIRE(direct->close().is_ok());

    auto a = Reader::open(dir.file("deferred.cusnap"));
    auto b = Reader::open(dir.file("direct.cusnap"));
    REQUIRE(a.is_ok());
    REQUIRE(b.is_ok());
    Reader& ra = *a.value();
    Reader& rb = *b.value();
    REQUIRE(ra.call_count() == kRecords);
    CHECK(ra.verify().state == Integrity::kWhole);
    CHECK(ra.kind_counts()[schema::CallRecord::LAUNCH] == launches.size());
    REQUIRE(ra.launches().size() == launches.size());
    uint64_t ordinal = 0;
    for (uint64_t seq = 0; seq < kRecords; ++seq) {
      auto x = ra.call(seq);
      auto y = rb.call(seq);
      REQUIRE(x.is_ok());
      REQUIRE(y.is_ok());
      std::span<const uint8_t> xb = x.value().message_bytes();
      std::span<const uint8_t> yb = y.value().message_bytes();
      CHECK(std::vector<uint8_t>(xb.begin(), xb.end()) ==
            std::vector<uint8_t>(yb.begin(), yb.end()));
      auto rec = x.value().get();
      CHECK(rec.getSeq() == seq);
      if (auto it = launch_at_seq.find(seq); it != launch_at_seq.end()) {
        check_launch(rec, launches[it->second]->fields);
        CHECK(rec.getLaunch().getOrdinal() == ordinal);
        auto by_ordinal = ra.launch(ordinal);
        REQUIRE(by_ordinal.is_ok());
        CHECK(by_ordinal.value().seq() == seq);
        ++ordinal;
      }
    }
  }
}

TEST_CASE("append_launch from several threads keeps seq, ordinal and per-thread order",
          "[format][launch]") {
  TempDir dir;
  WriterOptions options;
  options.call_frame_bytes = 4 << 10;
  options.flush_interval = std::chrono::milliseconds(1);  // the ticker seals frames concurrently
  auto writer = open_writer(dir.file("threads.cusnap"), options);
  const int kThreads = 4;
  const uint64_t kEach = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writer, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t) + 100);
      for (uint64_t i = 0; i < kEach; ++i) {
        OwnedLaunch o = random_launch(rng);
        o.bind();
        o.fields.thread_id = static_cast<uint64_t>(t);
        o.fields.function = i;  // the thread's own launch counter
        if (i % 5 == 0) {
          capnp::MallocMessageBuilder message;
          auto root = message.initRoot<schema::CallRecord>();
          build_launch_record(o.fields, root);  // a launch through the ordinary path too
          REQUIRE(writer->append_call(message).is_ok());
        } else {
          REQUIRE(writer->append_launch(o.fields).is_ok());
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(writer->close().is_ok());

  auto opened = Reader::open(dir.file("threads.cusnap"));
  REQUIRE(opened.is_ok());
  Reader& r = *opened.value();
  REQUIRE(r.call_count() == kThreads * kEach);
  REQUIRE(r.launches().size() == kThreads * kEach);
  std::vector<uint64_t> next(kThreads, 0);
  uint64_t seq = 0;
  Status st = r.for_each_call([&](const CallRef& ref) {
    auto rec = ref.get();
    REQUIRE(rec.getSeq() == seq);
    REQUIRE(rec.getLaunch().getOrdinal() == seq);  // every record is a launch
    uint64_t t = rec.getThreadId();
    REQUIRE(t < static_cast<uint64_t>(kThreads));
    REQUIRE(rec.getLaunch().getFunction() == next[t]);
    ++next[t];
    ++seq;
    return true;
  });
  REQUIRE(st.is_ok());
  for (int t = 0; t < kThreads; ++t) CHECK(next[t] == kEach);
}

TEST_CASE("launch entries still pending reach the file on flush and survive a later crash",
          "[format][launch]") {
  TempDir dir;
  std::string path = dir.file("flush.cusnap");
  auto writer = open_writer(path, {});
  std::mt19937_64 rng(5);
  OwnedLaunch o = random_launch(rng);
  o.bind();
  REQUIRE(writer->append_launch(o.fields).value() == 0);
  REQUIRE(writer->flush().is_ok());
  // Read the file as a crashed process would have left it: no index, no trailer.
  std::vector<uint8_t> bytes = read_file(path);
  write_file(dir.file("copy.cusnap"), bytes);
  auto opened = Reader::open(dir.file("copy.cusnap"));
  REQUIRE(opened.is_ok());
  REQUIRE(opened.value()->call_count() == 1);
  check_launch(opened.value()->call(0).value().get(), o.fields);
  REQUIRE(writer->close().is_ok());
}
