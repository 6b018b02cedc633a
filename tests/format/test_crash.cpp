// Crash consistency and corruption detection.
//
// A capture written by the real writer is cut at every frame boundary and at many random offsets;
// the reader must never fail unsafely (every cut is a fresh, exactly-sized heap buffer, so ASan
// catches any read past its end) and must recover exactly the calls of the complete frames.
// Single-bit flips in every frame must be reported as corruption of that frame.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <set>

#include "reseal.h"
#include "test_util.h"

using namespace cusnap::format;
using namespace cusnap::format::test;

namespace {

struct Sample {
  std::vector<uint8_t> bytes;
  std::vector<FrameInfo> frames;   // from the footer of the intact file
  std::vector<std::string> texts;  // every record's text, by seq
  uint64_t index_offset = 0;
};

const Sample& sample() {
  static Sample s = [] {
    Sample out;
    TempDir dir;
    std::string path = dir.file("crash.cusnap");
    capnp::MallocMessageBuilder header;
    make_header(header, "crash");
    WriterOptions options;
    options.call_frame_bytes = 4 << 10;
    options.blob_chunk_bytes = 16 << 10;
    auto writer = Writer::create(path, header, options);
    REQUIRE(writer.is_ok());
    std::mt19937_64 rng(3);
    for (int i = 0; i < 600; ++i) {
      capnp::MallocMessageBuilder message;
      auto rec = message.initRoot<schema::CallRecord>();
      rec.setApiName("cuSomething");
      rec.setThreadId(static_cast<uint64_t>(i % 3));
      if (i % 25 == 0) {
        // A payload spanning several chunk frames, sometimes repeated (dedup).
        auto bytes = (i % 50 == 0) ? compressible_bytes(40000 + static_cast<size_t>(i), 1)
                                   : random_bytes(20000 + static_cast<size_t>(i) * 3,
                                                  static_cast<uint64_t>(i));
        auto id = writer.value()->put_blob(bytes);
        REQUIRE(id.is_ok());
        rec.setApiName("cuMemcpyHtoD_v2");  // fill_random never makes upper case
        auto m = rec.initMemcpy();
        m.setSize(bytes.size());
        m.getPayload().setHigh(id.value().high);
        m.getPayload().setLow(id.value().low);
      } else if (i % 5 == 0) {
        auto l = rec.initLaunch();
        l.setGridX(static_cast<uint32_t>(i));
        l.setKernelName("kernel_" + std::to_string(i));
      } else {
        fill_random(capnp::toDynamic(rec), rng);
      }
      auto seq = writer.value()->append_call(message);
      REQUIRE(seq.is_ok());
      capnp::MallocMessageBuilder copy;
      copy.setRoot(rec.asReader());
      out.texts.push_back(kj::str(copy.getRoot<schema::CallRecord>().asReader()).cStr());
    }
    REQUIRE(writer.value()->close().is_ok());
    out.bytes = read_file(path);
    auto reader = Reader::open(path);
    REQUIRE(reader.is_ok());
    out.frames = reader.value()->frames();
    out.index_offset = out.frames.back().end_offset();
    return out;
  }();
  return s;
}

// Calls in call frames that end at or before `cut`.
uint64_t expected_calls(const Sample& s, uint64_t cut) {
  uint64_t calls = 0;
  for (const FrameInfo& f : s.frames) {
    if (f.kind == FrameKind::kCalls && f.end_offset() <= cut) calls = f.last_seq + 1;
  }
  return calls;
}

void check_cut(const Sample& s, uint64_t cut) {
  INFO("cut at " << cut << " of " << s.bytes.size());
  std::vector<uint8_t> bytes(s.bytes.begin(), s.bytes.begin() + static_cast<ptrdiff_t>(cut));
  auto reader = Reader::open_memory(bytes);
  if (cut < s.frames[0].end_offset()) {
    // Without an intact header frame there is nothing to recover, and open says why.
    REQUIRE_FALSE(reader.is_ok());
    CHECK((reader.status().code() == ErrorCode::kTruncated ||
           reader.status().code() == ErrorCode::kNotACapture));
    return;
  }
  REQUIRE(reader.is_ok());
  Reader& r = *reader.value();
  const IntegrityReport& rep = r.recovery();
  INFO(rep.summary());
  if (cut == s.bytes.size()) {
    CHECK(rep.state == Integrity::kWhole);
  } else {
    CHECK(rep.state == Integrity::kTruncated);
    CHECK_FALSE(rep.footer_used);
  }
  uint64_t expect = expected_calls(s, cut);
  REQUIRE(r.call_count() == expect);
  if (expect > 0) {
    REQUIRE(rep.last_good_seq.has_value());
    CHECK(*rep.last_good_seq == expect - 1);
  } else {
    CHECK_FALSE(rep.last_good_seq.has_value());
  }
  uint64_t seq = 0;
  Status st = r.for_each_call([&](const CallRef& ref) {
    REQUIRE(kj::str(ref.get()).cStr() == s.texts[seq]);
    if (ref.get().isMemcpy() && ref.get().getApiName() == "cuMemcpyHtoD_v2") {
      // The writer's ordering guarantee: a recovered call's blob is recovered too.
      auto p = ref.get().getMemcpy().getPayload();
      BlobId id{p.getHigh(), p.getLow()};
      auto blob = r.read_blob(id);
      REQUIRE(blob.is_ok());
      CHECK(blob.value().size() == ref.get().getMemcpy().getSize());
    }
    ++seq;
    return true;
  });
  CHECK(st.is_ok());
  CHECK(seq == expect);
  // The deep check agrees with the recovery.
  IntegrityReport deep = r.verify();
  CHECK(deep.state == rep.state);
  CHECK(deep.last_good_seq == rep.last_good_seq);
}

}  // namespace

TEST_CASE("truncation at every frame boundary recovers exactly the complete frames",
          "[format][crash]") {
  const Sample& s = sample();
  REQUIRE(s.frames.size() > 30);
  std::set<uint64_t> cuts = {0,
                             1,
                             8,
                             kFileHeaderSize,
                             s.bytes.size(),
                             s.bytes.size() - 1,
                             s.bytes.size() - kTrailerSize,
                             s.index_offset,
                             s.index_offset + kFrameHeaderSize};
  for (const FrameInfo& f : s.frames) {
    cuts.insert(f.offset);
    cuts.insert(f.offset + kFrameHeaderSize);  // header complete, payload missing
    cuts.insert(f.end_offset() - 1);
    cuts.insert(f.end_offset());
  }
  for (uint64_t cut : cuts) {
    if (cut <= s.bytes.size()) check_cut(s, cut);
  }
}

TEST_CASE("truncation at random offsets recovers exactly the complete frames", "[format][crash]") {
  const Sample& s = sample();
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 400; ++i) check_cut(s, rng() % (s.bytes.size() + 1));
}

TEST_CASE("a zero-filled tail reads as truncation, not corruption", "[format][crash]") {
  const Sample& s = sample();
  uint64_t cut = s.frames[s.frames.size() / 2].offset + 100;
  std::vector<uint8_t> bytes(s.bytes.begin(), s.bytes.begin() + static_cast<ptrdiff_t>(cut));
  bytes.resize(bytes.size() + 8192, 0);
  auto reader = Reader::open_memory(bytes);
  REQUIRE(reader.is_ok());
  CHECK(reader.value()->recovery().state == Integrity::kTruncated);
  CHECK(reader.value()->call_count() == expected_calls(s, cut));
}

TEST_CASE("a single flipped bit in any frame is detected by checksum", "[format][crash]") {
  const Sample& s = sample();
  std::mt19937_64 rng(777);
  // Regions: file header, each frame's header and payload, the index frame, the trailer.
  struct Region {
    uint64_t begin, end;
    std::optional<uint64_t> frame;
  };
  std::vector<Region> regions;
  regions.push_back({0, kFileHeaderSize, std::nullopt});
  for (size_t i = 0; i < s.frames.size(); ++i) {
    const FrameInfo& f = s.frames[i];
    regions.push_back({f.offset, f.offset + kFrameHeaderSize, i});
    if (f.stored_size > 0) regions.push_back({f.offset + kFrameHeaderSize, f.end_offset(), i});
  }
  regions.push_back({s.index_offset, s.bytes.size() - kTrailerSize, s.frames.size()});
  regions.push_back({s.bytes.size() - kTrailerSize, s.bytes.size(), std::nullopt});

  for (const Region& region : regions) {
    uint64_t at = region.begin + rng() % (region.end - region.begin);
    int bit = static_cast<int>(rng() % 8);
    INFO("bit " << bit << " of byte " << at << " (frame "
                << (region.frame ? std::to_string(*region.frame) : "-") << ")");
    std::vector<uint8_t> bytes = s.bytes;
    bytes[at] ^= static_cast<uint8_t>(1u << bit);
    auto reader = Reader::open_memory(bytes);
    if (at < s.frames[0].end_offset()) {
      // File header or header frame: nothing can be trusted, open refuses.
      REQUIRE_FALSE(reader.is_ok());
      CHECK((reader.status().code() == ErrorCode::kCorrupt ||
             reader.status().code() == ErrorCode::kNotACapture ||
             reader.status().code() == ErrorCode::kMalformed));
      continue;
    }
    REQUIRE(reader.is_ok());
    IntegrityReport rep = reader.value()->verify();
    INFO(rep.summary());
    CHECK(rep.state == Integrity::kCorrupt);
    CHECK(rep.bad_frame == region.frame);
    if (region.frame && *region.frame < s.frames.size()) {
      CHECK(rep.end_offset == s.frames[*region.frame].offset);
      uint64_t before = expected_calls(s, s.frames[*region.frame].offset);
      if (before > 0) CHECK(rep.last_good_seq == before - 1);
      // Reading through the footer index also refuses the damaged frame.
      const FrameInfo& f = s.frames[*region.frame];
      if (reader.value()->recovery().footer_used && f.kind == FrameKind::kCalls) {
        auto ref = reader.value()->call(f.first_seq);
        CHECK_FALSE(ref.is_ok());
      }
    }
  }
}

TEST_CASE("reader refuses empty, header-only prefixes and garbage cleanly", "[format][crash]") {
  std::vector<uint8_t> empty;
  CHECK(Reader::open_memory(empty).status().code() == ErrorCode::kTruncated);

  auto garbage = random_bytes(10000, 9);
  CHECK(Reader::open_memory(garbage).status().code() == ErrorCode::kNotACapture);

  const Sample& s = sample();
  // A valid file header followed by garbage.
  std::vector<uint8_t> bad(s.bytes.begin(), s.bytes.begin() + kFileHeaderSize);
  bad.insert(bad.end(), garbage.begin(), garbage.end());
  auto r1 = Reader::open_memory(bad);
  REQUIRE_FALSE(r1.is_ok());
  CHECK(r1.status().code() == ErrorCode::kCorrupt);

  // Header frame only: a capture with no calls yet.
  std::vector<uint8_t> header_only(
      s.bytes.begin(), s.bytes.begin() + static_cast<ptrdiff_t>(s.frames[0].end_offset()));
  auto r2 = Reader::open_memory(header_only);
  REQUIRE(r2.is_ok());
  CHECK(r2.value()->call_count() == 0);
  CHECK(r2.value()->recovery().state == Integrity::kTruncated);
  CHECK(r2.value()->recovery().summary().find("no calls") != std::string::npos);
  CHECK(std::string(r2.value()->header().getHostName().cStr()) == "crash");

  TempDir dir;
  CHECK(Reader::open(dir.file("missing.cusnap")).status().code() == ErrorCode::kIo);
}

TEST_CASE("a closed capture with no calls is whole", "[format][crash]") {
  TempDir dir;
  std::string path = dir.file("nothing.cusnap");
  capnp::MallocMessageBuilder header;
  make_header(header);
  auto writer = Writer::create(path, header);
  REQUIRE(writer.is_ok());
  REQUIRE(writer.value()->close().is_ok());
  auto reader = Reader::open(path);
  REQUIRE(reader.is_ok());
  CHECK(reader.value()->recovery().state == Integrity::kWhole);
  CHECK(reader.value()->call_count() == 0);
  CHECK(reader.value()->verify().state == Integrity::kWhole);
}

// The reader's checksum comparisons are one switch away from being skipped (fuzz builds only,
// format/src/internal.h): each kind of check is exercised here alone, so a build that skipped
// any of them fails.
TEST_CASE("every checksum is compared with the bytes it covers", "[format][crash]") {
  const Sample& s = sample();
  auto flipped = [&](uint64_t at) {
    std::vector<uint8_t> bytes = s.bytes;
    bytes[at] ^= 0x01;
    return bytes;
  };
  auto has = [](const Status& st, const char* what) {
    INFO(st.to_string());
    CHECK(st.code() == ErrorCode::kCorrupt);
    CHECK(st.message().find(what) != std::string::npos);
  };
  SECTION("file header") {
    auto bytes = flipped(24);  // the stored checksum itself
    auto h = FileHeader::decode(
        std::span<const uint8_t, kFileHeaderSize>(bytes.data(), kFileHeaderSize));
    REQUIRE_FALSE(h.is_ok());
    has(h.status(), "file header checksum mismatch");
    auto reader = Reader::open_memory(bytes);
    REQUIRE_FALSE(reader.is_ok());
    has(reader.status(), "file header checksum mismatch");
  }
  SECTION("frame header") {
    uint64_t at = s.frames[1].offset;
    auto bytes = flipped(at + 72);
    auto h = FrameHeader::decode(
        std::span<const uint8_t, kFrameHeaderSize>(bytes.data() + at, kFrameHeaderSize));
    REQUIRE_FALSE(h.is_ok());
    has(h.status(), "frame header checksum mismatch");
  }
  SECTION("trailer") {
    uint64_t at = s.bytes.size() - kTrailerSize;
    auto bytes = flipped(at + 24);
    auto t =
        Trailer::decode(std::span<const uint8_t, kTrailerSize>(bytes.data() + at, kTrailerSize));
    REQUIRE_FALSE(t.is_ok());
    has(t.status(), "trailer checksum mismatch");
  }
  SECTION("call frame payload") {
    auto calls = std::find_if(s.frames.begin(), s.frames.end(), [](const FrameInfo& f) {
      return f.kind == FrameKind::kCalls && f.stored_size > 0;
    });
    REQUIRE(calls != s.frames.end());
    auto bytes = flipped(calls->offset + kFrameHeaderSize + calls->stored_size / 2);
    auto reader = Reader::open_memory(bytes);
    REQUIRE(reader.is_ok());
    auto ref = reader.value()->call(calls->first_seq);
    REQUIRE_FALSE(ref.is_ok());
    has(ref.status(), "payload checksum mismatch");
    IntegrityReport rep = reader.value()->verify();
    CHECK(rep.state == Integrity::kCorrupt);
    has(rep.detail, "payload checksum mismatch");
  }
  SECTION("blob content against its id") {
    // A stored (uncompressed) blob chunk changed with its payload and header checksums redone:
    // only the content hash can tell.
    std::vector<uint8_t> bytes = s.bytes;
    auto header_at = [&](const FrameInfo& f) {
      return FrameHeader::decode(
          std::span<const uint8_t, kFrameHeaderSize>(bytes.data() + f.offset, kFrameHeaderSize));
    };
    auto chunk = std::find_if(s.frames.begin(), s.frames.end(), [&](const FrameInfo& f) {
      auto h = header_at(f);
      return h.is_ok() && h.value().kind == FrameKind::kBlob && h.value().codec == Codec::kNone &&
             f.stored_size > 0;
    });
    REQUIRE(chunk != s.frames.end());
    auto h = header_at(*chunk);
    REQUIRE(h.is_ok());
    uint8_t* header = bytes.data() + chunk->offset;
    std::span<uint8_t> payload(header + kFrameHeaderSize, chunk->stored_size);
    payload[payload.size() / 2] ^= 0x01;
    FrameHeader changed = h.value();
    changed.payload_checksum = checksum64(payload);
    changed.encode(std::span<uint8_t, kFrameHeaderSize>(header, kFrameHeaderSize));
    auto reader = Reader::open_memory(bytes);
    REQUIRE(reader.is_ok());
    auto blob = reader.value()->read_blob(h.value().blob_id);
    REQUIRE_FALSE(blob.is_ok());
    has(blob.status(), "blob content does not match its id");
    IntegrityReport rep = reader.value()->verify();
    CHECK(rep.state == Integrity::kCorrupt);
    has(rep.detail, "blob content does not match its id");
  }
}

TEST_CASE("a blob whose recorded size no chunk can back is read without a huge allocation",
          "[format][crash][fuzz]") {
  // tests/fuzz/regressions, found by the reader fuzzer, checksums resealed (tests/support): the
  // index gives a blob a size of about 2^60 bytes, and read_blob reserved that much up front
  // (std::length_error out of the reader) before reading the chunks that could never fill it.
  std::vector<uint8_t> bytes =
      read_file(std::string(CUSNAP_FUZZ_REGRESSIONS) + "/reader-blob-size.cusnap");
  REQUIRE(cusnap::test::reseal_checksums(bytes) > 0);
  auto reader = Reader::open_memory(bytes);
  REQUIRE(reader.is_ok());
  bool forged = false;
  for (const BlobInfo& blob : reader.value()->blobs()) {
    INFO("blob " << blob.id.to_hex() << ", size " << blob.size);
    if (blob.size > bytes.size() * 1024) forged = true;
    std::optional<Result<std::vector<uint8_t>>> read;
    REQUIRE_NOTHROW(read.emplace(reader.value()->read_blob(blob.id)));
    if (read->is_ok()) CHECK(read->value().size() == blob.size);
  }
  // Since the index is bounded against the file when it is decoded (test_hostile_index.cpp), the
  // forged size may no longer reach blobs() at all; either way nothing threw or over-allocated.
  if (!forged) SUCCEED("the index decoder refused the forged blob size before read_blob");
}
