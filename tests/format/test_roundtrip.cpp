// Round trip of the header and of every CallRecord kind; random access by call and launch.
#include <capnp/schema.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <map>

#include "test_util.h"

using namespace cusnap::format;
using namespace cusnap::format::test;

namespace {

struct Written {
  std::vector<std::string> texts;     // by seq, writer fields cleared
  std::vector<uint16_t> kinds;        // by seq
  std::vector<uint64_t> launch_seqs;  // by ordinal
};

// Writes `count` records cycling through every union member, each fully populated at random.
Written write_all_kinds(const std::string& path, size_t count, const WriterOptions& options) {
  capnp::MallocMessageBuilder header;
  make_header(header, "roundtrip");
  auto writer = Writer::create(path, header, options);
  REQUIRE(writer.is_ok());
  Written w;
  std::mt19937_64 rng(7);
  uint16_t kinds = call_kind_count();
  for (size_t i = 0; i < count; ++i) {
    capnp::MallocMessageBuilder message;
    auto root = message.initRoot<schema::CallRecord>();
    fill_random(capnp::toDynamic(root), rng, 0, static_cast<int>(i % kinds));
    w.texts.push_back(record_text_without_writer_fields(root.asReader()));
    w.kinds.push_back(static_cast<uint16_t>(root.which()));
    auto seq = writer.value()->append_call(message);
    REQUIRE(seq.is_ok());
    CHECK(seq.value() == i);
    if (root.isLaunch()) {
      CHECK(root.getLaunch().getOrdinal() == w.launch_seqs.size());
      w.launch_seqs.push_back(i);
    }
  }
  REQUIRE(writer.value()->close().is_ok());
  return w;
}

}  // namespace

TEST_CASE("every record kind round-trips field for field", "[format][roundtrip]") {
  TempDir dir;
  std::string path = dir.file("all.cusnap");
  WriterOptions options;
  options.call_frame_bytes = 16 << 10;  // many frames, so random access crosses frame boundaries
  Written w = write_all_kinds(path, 2000, options);

  auto reader = Reader::open(path);
  REQUIRE(reader.is_ok());
  Reader& r = *reader.value();
  CHECK(r.recovery().state == Integrity::kWhole);
  CHECK(r.recovery().footer_used);
  REQUIRE(r.call_count() == w.texts.size());
  CHECK(std::string(r.header().getHostName().cStr()) == "roundtrip");
  CHECK(r.header().getSchemaVersion() == schema::SCHEMA_VERSION);
  CHECK(r.header().getDevices()[0].getComputeCapabilityMajor() == 9);
  CHECK(r.frames().size() > 10);

  // Every kind appeared, and the index counts match what was written.
  std::vector<uint64_t> expected_counts(call_kind_count(), 0);
  for (uint16_t k : w.kinds) ++expected_counts[k];
  for (uint16_t k = 0; k < call_kind_count(); ++k) {
    INFO("kind " << call_kind_name(k));
    CHECK(expected_counts[k] > 0);
    CHECK(r.kind_counts()[k] == expected_counts[k]);
  }

  // Sequential iteration.
  uint64_t next = 0;
  Status st = r.for_each_call([&](const CallRef& ref) {
    auto rec = ref.get();
    REQUIRE(rec.getSeq() == next);
    REQUIRE(record_text_without_writer_fields(rec) == w.texts[next]);
    ++next;
    return true;
  });
  REQUIRE(st.is_ok());
  CHECK(next == w.texts.size());

  // Random access by seq, in a scrambled order.
  std::mt19937_64 rng(99);
  for (int i = 0; i < 300; ++i) {
    uint64_t seq = rng() % w.texts.size();
    auto ref = r.call(seq);
    REQUIRE(ref.is_ok());
    CHECK(ref.value().get().getSeq() == seq);
    CHECK(record_text_without_writer_fields(ref.value().get()) == w.texts[seq]);
  }
  CHECK(r.call(w.texts.size()).status().code() == ErrorCode::kNotFound);

  // Random access by launch ordinal.
  REQUIRE(r.launches().size() == w.launch_seqs.size());
  for (size_t ordinal = 0; ordinal < w.launch_seqs.size(); ordinal += 7) {
    auto ref = r.launch(ordinal);
    REQUIRE(ref.is_ok());
    CHECK(ref.value().seq() == w.launch_seqs[ordinal]);
    CHECK(ref.value().get().getLaunch().getOrdinal() == ordinal);
  }
  CHECK(r.launch(w.launch_seqs.size()).status().code() == ErrorCode::kNotFound);

  // CallRef outlives the reader's cache moving on.
  auto early = r.call(3);
  REQUIRE(early.is_ok());
  REQUIRE(r.call(w.texts.size() - 1).is_ok());
  CHECK(record_text_without_writer_fields(early.value().get()) == w.texts[3]);

  IntegrityReport report = r.verify();
  INFO(report.summary());
  CHECK(report.state == Integrity::kWhole);
  CHECK(report.deep_checked);
}

TEST_CASE("scan-rebuilt index equals the footer index", "[format][roundtrip]") {
  TempDir dir;
  std::string path = dir.file("scan.cusnap");
  WriterOptions options;
  options.call_frame_bytes = 8 << 10;
  write_all_kinds(path, 500, options);
  auto footer = Reader::open(path);
  ReaderOptions scan_options;
  scan_options.use_footer = false;
  auto scanned = Reader::open(path, scan_options);
  REQUIRE(footer.is_ok());
  REQUIRE(scanned.is_ok());
  CHECK(scanned.value()->recovery().state == Integrity::kWhole);
  CHECK_FALSE(scanned.value()->recovery().footer_used);
  const auto& a = footer.value()->frames();
  const auto& b = scanned.value()->frames();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].offset == b[i].offset);
    CHECK(a[i].kind == b[i].kind);
    CHECK(a[i].stored_size == b[i].stored_size);
    CHECK(a[i].first_seq == b[i].first_seq);
    CHECK(a[i].last_seq == b[i].last_seq);
  }
  REQUIRE(footer.value()->launches().size() == scanned.value()->launches().size());
  for (size_t i = 0; i < footer.value()->launches().size(); ++i) {
    CHECK(footer.value()->launches()[i].seq == scanned.value()->launches()[i].seq);
    CHECK(footer.value()->launches()[i].frame == scanned.value()->launches()[i].frame);
  }
  CHECK(footer.value()->kind_counts() == scanned.value()->kind_counts());
  CHECK(footer.value()->call_count() == scanned.value()->call_count());
}

TEST_CASE("container structures encode and decode", "[format][container]") {
  FrameHeader h;
  h.kind = FrameKind::kBlob;
  h.codec = Codec::kZstd;
  h.stored_size = 100;
  h.raw_size = 300;
  h.blob_id = BlobId{0x0123456789abcdefull, 0xfedcba9876543210ull};
  h.chunk_offset = 1000;
  h.blob_size = 5000;
  h.payload_checksum = 77;
  h.frame_index = 12;
  std::array<uint8_t, kFrameHeaderSize> bytes{};
  h.encode(bytes);
  // Spot-check the documented byte layout (docs/format.md), independently of decode().
  CHECK(load_le32(bytes.data()) == kFrameMagic);
  CHECK(bytes[0] == 'C');
  CHECK(bytes[3] == 'R');
  CHECK(bytes[4] == 3);
  CHECK(bytes[5] == 1);
  CHECK(load_le64(bytes.data() + 8) == 100);
  CHECK(load_le64(bytes.data() + 16) == 300);
  CHECK(load_le64(bytes.data() + 24) == h.blob_id.high);
  CHECK(load_le64(bytes.data() + 40) == 1000);
  CHECK(load_le64(bytes.data() + 64) == 12);
  CHECK(load_le64(bytes.data() + 72) == checksum64({bytes.data(), 72}));
  auto back = FrameHeader::decode(bytes);
  REQUIRE(back.is_ok());
  CHECK(back.value().blob_id == h.blob_id);
  CHECK(back.value().chunk_offset == 1000);

  bytes[9] ^= 0x10;
  CHECK(FrameHeader::decode(bytes).status().code() == ErrorCode::kCorrupt);

  BlobId id{0x00ff00ff00ff00ffull, 0x1234};
  CHECK(id.to_hex() == "00ff00ff00ff00ff0000000000001234");
  CHECK(BlobId::from_hex(id.to_hex()) == id);
  CHECK_FALSE(BlobId::from_hex("xyz").has_value());
}

TEST_CASE("capture files are created owner-only, whatever the umask", "[format][writer]") {
  TempDir dir;
  std::string fresh = dir.file("fresh.cusnap");
  std::string existing = dir.file("existing.cusnap");
  write_file(existing, {1, 2, 3});
  REQUIRE(::chmod(existing.c_str(), 0644) == 0);
  mode_t old_mask = ::umask(0);
  for (const std::string& path : {fresh, existing}) {
    INFO(path);
    capnp::MallocMessageBuilder header;
    make_header(header, "mode");
    auto writer = Writer::create(path, header);
    REQUIRE(writer.is_ok());
    REQUIRE(writer.value()->close().is_ok());
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == kCaptureFileMode);
    CHECK(kCaptureFileMode == 0600);
  }
  ::umask(old_mask);
}
