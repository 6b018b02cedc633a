// Blob store: dedup, large blobs in chunks, raw storage of incompressible data, hashes on read.
#include <catch2/catch.hpp>
#include <map>
#include <thread>

#include "test_util.h"

using namespace cusnap::format;
using namespace cusnap::format::test;

namespace {

Result<uint64_t> append_memcpy(Writer& w, const BlobId& payload, uint64_t size) {
  capnp::MallocMessageBuilder message;
  auto rec = message.initRoot<schema::CallRecord>();
  rec.setApiName("cuMemcpyHtoD_v2");
  auto m = rec.initMemcpy();
  m.setKind(schema::Memcpy::Kind::HOST_TO_DEVICE);
  m.setSize(size);
  m.getPayload().setHigh(payload.high);
  m.getPayload().setLow(payload.low);
  return w.append_call(message);
}

}  // namespace

TEST_CASE("identical blobs are stored once and read back verified", "[format][blob]") {
  TempDir dir;
  std::string path = dir.file("dedup.cusnap");
  capnp::MallocMessageBuilder header;
  make_header(header);
  auto writer = Writer::create(path, header);
  REQUIRE(writer.is_ok());
  Writer& w = *writer.value();

  auto a = compressible_bytes(1 << 20, 1);
  auto b = random_bytes(300000, 2);
  std::vector<uint8_t> empty;
  std::vector<BlobId> ids;
  for (int round = 0; round < 5; ++round) {
    for (const auto* bytes : {&a, &b, &empty}) {
      auto id = w.put_blob(*bytes);
      REQUIRE(id.is_ok());
      CHECK(id.value() == hash_blob(*bytes));
      CHECK(w.has_blob(id.value()));
      REQUIRE(append_memcpy(w, id.value(), bytes->size()).is_ok());
      ids.push_back(id.value());
    }
  }
  WriterCounters c = w.counters();
  CHECK(c.blob_puts == 15);
  CHECK(c.dedup_hits == 12);
  CHECK(c.blob_bytes_logical == 5 * (a.size() + b.size()));
  CHECK(c.blob_bytes_unique == a.size() + b.size());
  REQUIRE(w.close().is_ok());

  auto reader = Reader::open(path);
  REQUIRE(reader.is_ok());
  Reader& r = *reader.value();
  REQUIRE(r.blobs().size() == 3);
  CaptureStats s = r.stats();
  CHECK(s.blob_bytes_unique == a.size() + b.size());
  REQUIRE(s.blob_bytes_logical.has_value());
  CHECK(*s.blob_bytes_logical == 5 * (a.size() + b.size()));
  CHECK(s.blob_bytes_stored < a.size() / 2 + b.size() + 1024);  // a compresses, b is stored raw

  auto back_a = r.read_blob(hash_blob(a));
  REQUIRE(back_a.is_ok());
  CHECK(back_a.value() == a);
  auto back_b = r.read_blob(hash_blob(b));
  REQUIRE(back_b.is_ok());
  CHECK(back_b.value() == b);
  auto back_empty = r.read_blob(hash_blob(empty));
  REQUIRE(back_empty.is_ok());
  CHECK(back_empty.value().empty());
  // The random blob must have been stored raw: its frame's stored size equals its raw size.
  const BlobInfo* info_b = r.find_blob(hash_blob(b));
  REQUIRE(info_b != nullptr);
  CHECK(info_b->stored_bytes == b.size());
  CHECK(r.read_blob(BlobId{1, 2}).status().code() == ErrorCode::kNotFound);

  // Every memcpy record references a blob present in the file.
  Status st = r.for_each_call([&](const CallRef& ref) {
    auto p = ref.get().getMemcpy().getPayload();
    CHECK(r.find_blob(BlobId{p.getHigh(), p.getLow()}) != nullptr);
    return true;
  });
  CHECK(st.is_ok());
}

TEST_CASE("a 64 MiB blob streams in chunks, its second upload adds almost nothing",
          "[format][blob][large]") {
  TempDir dir;
  std::string path = dir.file("large.cusnap");
  capnp::MallocMessageBuilder header;
  make_header(header);
  WriterOptions options;
  options.blob_chunk_bytes = 4 << 20;
  options.max_queued_bytes = 16 << 20;  // smaller than the blob: forces streaming
  auto writer = Writer::create(path, header, options);
  REQUIRE(writer.is_ok());
  Writer& w = *writer.value();
  auto big = compressible_bytes(64u << 20, 5);
  auto id = w.put_blob(big);
  REQUIRE(id.is_ok());
  REQUIRE(append_memcpy(w, id.value(), big.size()).is_ok());
  REQUIRE(w.flush().is_ok());
  uint64_t after_first = w.counters().file_bytes;
  auto again = w.put_blob(big);
  REQUIRE(again.is_ok());
  CHECK(again.value() == id.value());
  REQUIRE(append_memcpy(w, again.value(), big.size()).is_ok());
  REQUIRE(w.flush().is_ok());
  uint64_t after_second = w.counters().file_bytes;
  CHECK(after_second - after_first < 4096);
  REQUIRE(w.close().is_ok());

  auto reader = Reader::open(path);
  REQUIRE(reader.is_ok());
  const BlobInfo* info = reader.value()->find_blob(id.value());
  REQUIRE(info != nullptr);
  CHECK(info->chunks.size() == 16);
  uint64_t expect_offset = 0;
  Status st = reader.value()->read_blob_chunks(
      id.value(), [&](uint64_t offset, std::span<const uint8_t> bytes) {
        CHECK(offset == expect_offset);
        CHECK(std::equal(bytes.begin(), bytes.end(), big.begin() + static_cast<ptrdiff_t>(offset)));
        expect_offset += bytes.size();
        return Status::ok();
      });
  CHECK(st.is_ok());
  CHECK(expect_offset == big.size());
}

TEST_CASE("threads storing the same blob at once store it once, before any reference",
          "[format][blob][threads]") {
  TempDir dir;
  std::string path = dir.file("race.cusnap");
  capnp::MallocMessageBuilder header;
  make_header(header);
  WriterOptions options;
  options.blob_chunk_bytes = 256 << 10;
  auto writer = Writer::create(path, header, options);
  REQUIRE(writer.is_ok());
  auto shared = compressible_bytes(4 << 20, 11);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) {
        auto own = random_bytes(1000 + static_cast<size_t>(t), static_cast<uint64_t>(t));
        auto id1 = writer.value()->put_blob(shared);
        auto id2 = writer.value()->put_blob(own);
        if (!id1 || !id2 || !append_memcpy(*writer.value(), id1.value(), shared.size()) ||
            !append_memcpy(*writer.value(), id2.value(), own.size())) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  REQUIRE(writer.value()->close().is_ok());

  auto reader = Reader::open(path);
  REQUIRE(reader.is_ok());
  CHECK(reader.value()->blobs().size() == 9);
  // File order: every record comes after all frames of the blob it names.
  std::map<BlobId, uint32_t> last_chunk_frame;
  for (const BlobInfo& b : reader.value()->blobs()) last_chunk_frame[b.id] = b.chunks.back().frame;
  Status st = reader.value()->for_each_call([&](const CallRef& ref) {
    auto p = ref.get().getMemcpy().getPayload();
    CHECK(last_chunk_frame.at(BlobId{p.getHigh(), p.getLow()}) < ref.frame());
    return true;
  });
  CHECK(st.is_ok());
  CHECK(reader.value()->verify().state == Integrity::kWhole);
}

TEST_CASE("try_put_blob refuses instead of waiting when the queue is full", "[format][blob]") {
  TempDir dir;
  capnp::MallocMessageBuilder header;
  make_header(header);
  WriterOptions options;
  options.max_queued_bytes = 1 << 20;
  auto writer = Writer::create(dir.file("try.cusnap"), header, options);
  REQUIRE(writer.is_ok());
  auto big = random_bytes(2 << 20, 3);
  auto refused = writer.value()->try_put_blob(big);  // larger than the cap: can never fit
  CHECK(refused.status().code() == ErrorCode::kWouldBlock);
  CHECK_FALSE(writer.value()->has_blob(hash_blob(big)));
  auto stored = writer.value()->put_blob(big);  // the blocking form streams it
  REQUIRE(stored.is_ok());
  auto dedup = writer.value()->try_put_blob(big);  // known blobs always succeed
  CHECK(dedup.is_ok());
  REQUIRE(writer.value()->close().is_ok());
  CHECK(writer.value()->put_blob(big).status().code() == ErrorCode::kClosed);
}
