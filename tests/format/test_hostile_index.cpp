// Forged footer indexes: checksums recomputed, contents lying. The reader must bound every size
// and count it reads from the index before allocating, and verify() must find every
// disagreement between the index and the frames, not only in the frame/call/launch counts.
// (White-box: the forgeries are written with the format's own index encoder and frame codec;
// tests/format/hostile_capture.py writes hostile records independently of them.)
#include <catch2/catch.hpp>
#include <functional>

#include "internal.h"
#include "test_util.h"

using namespace cusnap::format;
using namespace cusnap::format::test;

namespace {

// A small capture: one 1000-byte blob, a memcpy referring to it, a launch, a few generic calls.
std::vector<uint8_t> sample_file(const TempDir& dir) {
  std::string path = dir.file("base.cusnap");
  capnp::MallocMessageBuilder header;
  make_header(header);
  auto writer = Writer::create(path, header);
  REQUIRE(writer.is_ok());
  Writer& w = *writer.value();
  auto bytes = random_bytes(1000, 7);
  auto id = w.put_blob(bytes);
  REQUIRE(id.is_ok());
  for (int i = 0; i < 3; ++i) {
    capnp::MallocMessageBuilder message;
    auto rec = message.initRoot<schema::CallRecord>();
    rec.setApiName("cuCtxSynchronize");
    rec.initGeneric();
    REQUIRE(w.append_call(message).is_ok());
  }
  {
    capnp::MallocMessageBuilder message;
    auto rec = message.initRoot<schema::CallRecord>();
    rec.setApiName("cuMemcpyHtoD_v2");
    auto m = rec.initMemcpy();
    m.setSize(bytes.size());
    m.getPayload().setHigh(id.value().high);
    m.getPayload().setLow(id.value().low);
    REQUIRE(w.append_call(message).is_ok());
  }
  {
    capnp::MallocMessageBuilder message;
    auto rec = message.initRoot<schema::CallRecord>();
    rec.setApiName("cuLaunchKernel");
    rec.initLaunch().setKernelName("k");
    REQUIRE(w.append_call(message).is_ok());
  }
  REQUIRE(w.close().is_ok());
  return read_file(path);
}

// The index of `file` as the reader decoded it from the footer.
detail::IndexData index_of(const std::vector<uint8_t>& file) {
  auto reader = Reader::open_memory(file);
  REQUIRE(reader.is_ok());
  Reader& r = *reader.value();
  REQUIRE(r.recovery().footer_used);
  detail::IndexData d;
  d.frames = r.frames();
  d.blobs = r.blobs();
  d.launches = r.launches();
  d.call_count = r.call_count();
  d.kind_counts = r.kind_counts();
  return d;
}

// `file` with its index frame replaced by `index` (codec none, checksums recomputed) and a new
// trailer: a file every checksum vouches for.
std::vector<uint8_t> with_index(const std::vector<uint8_t>& file, const detail::IndexData& index) {
  uint64_t index_offset = load_le64(&file[file.size() - kTrailerSize + 8]);
  std::vector<uint8_t> out(file.begin(), file.begin() + static_cast<ptrdiff_t>(index_offset));
  std::vector<uint8_t> payload = detail::encode_index(index);
  FrameHeader h;
  h.kind = FrameKind::kIndex;
  h.raw_size = payload.size();
  h.frame_index = index.frames.size();
  uint8_t head[kFrameHeaderSize];
  detail::encode_frame_header(h, payload, std::span<uint8_t, kFrameHeaderSize>(head, sizeof head));
  out.insert(out.end(), head, head + sizeof head);
  out.insert(out.end(), payload.begin(), payload.end());
  Trailer t{index_offset, out.size()};
  uint8_t tail[kTrailerSize];
  t.encode(std::span<uint8_t, kTrailerSize>(tail, sizeof tail));
  out.insert(out.end(), tail, tail + sizeof tail);
  return out;
}

size_t blob_frame(const detail::IndexData& d) {
  for (size_t i = 0; i < d.frames.size(); ++i) {
    if (d.frames[i].kind == FrameKind::kBlob) return i;
  }
  FAIL("no blob frame");
  return 0;
}

}  // namespace

TEST_CASE("a forged index cannot make read_blob or open allocate what the file cannot hold",
          "[format][hostile]") {
  TempDir dir;
  auto file = sample_file(dir);
  detail::IndexData index = index_of(file);
  REQUIRE(index.blobs.size() == 1);
  const BlobId id = index.blobs[0].id;

  SECTION("a blob chunk whose raw size is 2^60 bytes") {
    size_t f = blob_frame(index);
    index.frames[f].raw_size = 1ull << 60;
    index.blobs[0].size = 1ull << 60;
  }
  SECTION("a call frame claiming 2^40 records") {
    for (FrameInfo& f : index.frames) {
      if (f.kind == FrameKind::kCalls) {
        f.last_seq = f.first_seq + (1ull << 40);
        index.call_count = f.last_seq + 1;
        index.kind_counts.assign(1, index.call_count);
        break;
      }
    }
  }
  auto forged = with_index(file, index);
  auto reader = Reader::open_memory(forged);
  REQUIRE(reader.is_ok());
  Reader& r = *reader.value();
  // The footer is refused; the scan rebuilds the true index.
  CHECK_FALSE(r.recovery().footer_used);
  CHECK(r.call_count() == 5);
  Result<std::vector<uint8_t>> blob = std::vector<uint8_t>{};
  CHECK_NOTHROW(blob = r.read_blob(id));
  REQUIRE(blob.is_ok());
  CHECK(blob.value() == random_bytes(1000, 7));
  // verify() reads the forged index frame itself and calls it what it is.
  IntegrityReport report = r.verify();
  CHECK(report.state == Integrity::kCorrupt);
  CHECK(report.detail.code() == ErrorCode::kMalformed);
}

TEST_CASE("read_blob refuses a blob larger than the reader's limit instead of allocating it",
          "[format][hostile]") {
  TempDir dir;
  auto file = sample_file(dir);
  ReaderOptions options;
  options.max_blob_bytes = 999;
  auto reader = Reader::open_memory(file, options);
  REQUIRE(reader.is_ok());
  auto blob = reader.value()->read_blob(reader.value()->blobs()[0].id);
  REQUIRE_FALSE(blob.is_ok());
  CHECK(blob.status().code() == ErrorCode::kLimitExceeded);
}

TEST_CASE("verify compares the whole footer index with the frames, not three counts",
          "[format][hostile]") {
  TempDir dir;
  auto file = sample_file(dir);
  detail::IndexData index = index_of(file);
  REQUIRE(Reader::open_memory(with_index(file, index)).value()->verify().state ==
          Integrity::kWhole);  // the rewrite alone changes nothing

  std::string expect;
  SECTION("per-kind counts that add up but are wrong") {
    auto generic = static_cast<size_t>(schema::CallRecord::GENERIC);
    auto memcpy_kind = static_cast<size_t>(schema::CallRecord::MEMCPY);
    REQUIRE(index.kind_counts[generic] == 3);
    index.kind_counts[generic] -= 1;
    index.kind_counts[memcpy_kind] += 1;
    expect = "count of generic records";
  }
  SECTION("a call frame's raw size") {
    // decode_index only checks sizes against the file; the frame header says otherwise.
    for (FrameInfo& f : index.frames) {
      if (f.kind == FrameKind::kCalls) {
        f.raw_size += 8;
        break;
      }
    }
    expect = "frame ";
  }
  SECTION("the launch table pointing at another record of the same frame") {
    REQUIRE(index.launches.size() == 1);
    REQUIRE(index.launches[0].seq > 0);
    index.launches[0].seq -= 1;
    expect = "launch 0";
  }
  auto forged = with_index(file, index);
  auto reader = Reader::open_memory(forged);
  REQUIRE(reader.is_ok());
  IntegrityReport report = reader.value()->verify();
  INFO(report.summary());
  CHECK(report.state == Integrity::kCorrupt);
  CHECK(report.detail.message().find("index frame disagrees with the frames") != std::string::npos);
  CHECK(report.detail.message().find(expect) != std::string::npos);
}
