// Writer memory contracts: when put_blob() stops reading the caller's bytes, the recycled buffer
// pool's bounds, and what a zero-copy put_blob() does when the disk fails under it.
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>

#include "buffer_pool.h"
#include "test_util.h"

using namespace cusnap::format;
using namespace cusnap::format::test;

namespace {

// Half compressible, half random: some chunks are compressed, others stored raw (those are
// written straight from the caller's memory in zero-copy mode, the longest borrow).
std::vector<uint8_t> mixed_bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> bytes = compressible_bytes(n / 2, seed);
  std::vector<uint8_t> noise = random_bytes(n - n / 2, seed + 100);
  bytes.insert(bytes.end(), noise.begin(), noise.end());
  return bytes;
}

// Stores several blobs through `put`, scribbling over each caller buffer as soon as the call
// returns, then checks that the file holds the bytes as they were at the call.
template <typename Put>
void check_caller_bytes_released(const WriterOptions& options, Put put) {
  TempDir dir;
  std::string path = dir.file("lifetime.cusnap");
  capnp::MallocMessageBuilder header;
  make_header(header);
  auto writer = Writer::create(path, header, options);
  REQUIRE(writer.is_ok());
  std::vector<std::vector<uint8_t>> originals;
  std::vector<BlobId> ids;
  for (uint64_t i = 0; i < 4; ++i) {
    std::vector<uint8_t> buffer = mixed_bytes((3u << 20) + i * 4097, i);
    originals.push_back(buffer);
    auto id = put(*writer.value(), buffer);
    REQUIRE(id.is_ok());
    CHECK(id.value() == hash_blob(originals.back()));
    ids.push_back(id.value());
    std::fill(buffer.begin(), buffer.end(), uint8_t{0xA5});  // the caller reuses its memory
  }
  REQUIRE(writer.value()->close().is_ok());

  auto reader = Reader::open(path);
  REQUIRE(reader.is_ok());
  CHECK(reader.value()->verify().state == Integrity::kWhole);
  for (size_t i = 0; i < ids.size(); ++i) {
    auto back = reader.value()->read_blob(ids[i]);  // verifies the content hash too
    REQUIRE(back.is_ok());
    CHECK(back.value() == originals[i]);
  }
}

}  // namespace

TEST_CASE("put_blob never reads the caller's bytes after it returns", "[format][blob][memory]") {
  WriterOptions options;
  options.blob_chunk_bytes = 256 << 10;
  options.max_queued_bytes = 1 << 20;  // smaller than each blob
  options.compression_threads = 2;
  auto blocking = [](Writer& w, std::span<const uint8_t> bytes) { return w.put_blob(bytes); };

  SECTION("zero-copy (blocking, large)") {
    options.zero_copy_min_bytes = 1 << 20;
    check_caller_bytes_released(options, blocking);
  }
  SECTION("copied (blocking, below the zero-copy size)") {
    options.zero_copy_min_bytes = SIZE_MAX;
    check_caller_bytes_released(options, blocking);
  }
  SECTION("copied (try_put_blob, even when large)") {
    options.zero_copy_min_bytes = 1 << 20;
    options.max_queued_bytes = 64 << 20;  // room for a whole blob: try_ never waits
    check_caller_bytes_released(
        options, [](Writer& w, std::span<const uint8_t> bytes) { return w.try_put_blob(bytes); });
  }
}

TEST_CASE("buffer pool recycles by size class within its idle bound", "[format][memory]") {
  using detail::BufferPool;
  using detail::ByteBuffer;
  BufferPool pool(16u << 20);

  ByteBuffer a = pool.acquire(5u << 20);
  CHECK(a.capacity() == (8u << 20));  // rounded up to the size class
  CHECK(a.size() == 0);
  std::memset(a.data(), 1, a.capacity());  // usable over its whole capacity
  a.set_size(123);
  const uint8_t* a_data = a.data();
  pool.release(std::move(a));
  CHECK(pool.idle_bytes() == (8u << 20));

  ByteBuffer b = pool.acquire(7u << 20);  // same class: the same memory comes back, emptied
  CHECK(b.data() == a_data);
  CHECK(b.size() == 0);
  CHECK(pool.idle_bytes() == 0);

  ByteBuffer c = pool.acquire(8u << 20);
  ByteBuffer d = pool.acquire(8u << 20);
  pool.release(std::move(b));
  pool.release(std::move(c));
  pool.release(std::move(d));  // would exceed 16 MiB idle: freed instead
  CHECK(pool.idle_bytes() == (16u << 20));

  ByteBuffer small = pool.acquire(1000);  // below kMinPooledBytes: exact size, never kept
  CHECK(small.capacity() == 1000);
  pool.release(std::move(small));
  CHECK(pool.idle_bytes() == (16u << 20));

  ByteBuffer other = pool.acquire(1u << 20);  // another class: a fresh buffer
  CHECK(other.capacity() == (1u << 20));
  CHECK(pool.idle_bytes() == (16u << 20));
}

TEST_CASE("a zero-copy put_blob returns the disk's error instead of hanging",
          "[format][blob][memory]") {
  TempDir dir;
  std::string path = dir.file("full.cusnap");
  capnp::MallocMessageBuilder header;
  make_header(header);
  WriterOptions options;
  options.blob_chunk_bytes = 256 << 10;
  options.zero_copy_min_bytes = 1 << 20;
  options.max_queued_bytes = 1 << 20;
  auto writer = Writer::create(path, header, options);
  REQUIRE(writer.is_ok());

  // Past 2 MiB every write fails with EFBIG (SIGXFSZ ignored for the test's duration).
  struct rlimit saved {};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &saved) == 0);
  struct sigaction ignore {
  }, old_action{};
  ignore.sa_handler = SIG_IGN;
  REQUIRE(sigaction(SIGXFSZ, &ignore, &old_action) == 0);
  struct rlimit limited = saved;
  limited.rlim_cur = 2u << 20;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &limited) == 0);

  std::vector<uint8_t> big = random_bytes(8u << 20, 9);
  BlobId big_id = hash_blob(big);
  auto id = writer.value()->put_blob(big);
  std::fill(big.begin(), big.end(), uint8_t{0});  // must be safe: the writer let go of it
  Status after = writer.value()->put_blob(random_bytes(4u << 20, 10)).status();
  Status closed = writer.value()->close();

  setrlimit(RLIMIT_FSIZE, &saved);
  sigaction(SIGXFSZ, &old_action, nullptr);

  CHECK(id.status().code() == ErrorCode::kIo);
  CHECK(after.code() == ErrorCode::kIo);
  CHECK(closed.code() == ErrorCode::kIo);
  CHECK_FALSE(writer.value()->has_blob(big_id));
}
