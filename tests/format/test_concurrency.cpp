// Many threads appending: one global, gap-free, strictly increasing order.
#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <thread>

#include "test_util.h"

using namespace cusnap::format;
using namespace cusnap::format::test;

TEST_CASE("8 threads produce a gap-free, strictly increasing sequence", "[format][threads]") {
  TempDir dir;
  std::string path = dir.file("threads.cusnap");
  capnp::MallocMessageBuilder header;
  make_header(header);
  WriterOptions options;
  options.call_frame_bytes = 32 << 10;
  options.flush_interval = std::chrono::milliseconds(5);  // exercise the timed flush as well
  auto writer = Writer::create(path, header, options);
  REQUIRE(writer.is_ok());
  constexpr int kThreads = 8;
  constexpr int kPerThread = 5000;
  std::vector<std::vector<uint64_t>> seqs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // One reused first segment per thread, as the interceptor does (a builder is cheap; the
      // scratch space is what is worth reusing, and the builder zeroes it again on destruction).
      std::unique_ptr<capnp::word[]> scratch(new capnp::word[1024]());  // zeroed
      for (int i = 0; i < kPerThread; ++i) {
        capnp::MallocMessageBuilder message(kj::arrayPtr(scratch.get(), 1024));
        auto rec = message.initRoot<schema::CallRecord>();
        rec.setThreadId(static_cast<uint64_t>(t));
        rec.setApiName("cuLaunchKernel");
        auto l = rec.initLaunch();
        l.setGridX(static_cast<uint32_t>(i));
        l.setBlockX(static_cast<uint32_t>(t));
        auto seq = writer.value()->append_call(message);
        // Catch2 assertions are not thread-safe: record, check on the main thread.
        seqs[t].push_back(seq.is_ok() ? seq.value() : UINT64_MAX);
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE(writer.value()->close().is_ok());

  // Per thread, seqs increase; across threads, they are a permutation of 0..N-1.
  std::set<uint64_t> all;
  for (const auto& s : seqs) {
    CHECK(std::is_sorted(s.begin(), s.end()));
    all.insert(s.begin(), s.end());
  }
  constexpr uint64_t kTotal = uint64_t{kThreads} * kPerThread;
  REQUIRE(all.size() == kTotal);
  CHECK(*all.rbegin() == kTotal - 1);

  auto reader = Reader::open(path);
  REQUIRE(reader.is_ok());
  REQUIRE(reader.value()->call_count() == kTotal);
  REQUIRE(reader.value()->launches().size() == kTotal);
  // In the file, each thread's records appear in the order that thread made them, with the seq
  // the writer returned to it; launch ordinals follow seq order.
  std::vector<int> next_i(kThreads, 0);
  uint64_t expect_seq = 0;
  Status st = reader.value()->for_each_call([&](const CallRef& ref) {
    auto rec = ref.get();
    auto t = static_cast<int>(rec.getThreadId());
    REQUIRE(rec.getSeq() == expect_seq);
    REQUIRE(rec.getLaunch().getOrdinal() == expect_seq);
    REQUIRE(rec.getLaunch().getGridX() == static_cast<uint32_t>(next_i[t]));
    REQUIRE(seqs[t][next_i[t]] == expect_seq);
    ++next_i[t];
    ++expect_seq;
    return true;
  });
  CHECK(st.is_ok());
  CHECK(expect_seq == kTotal);
}

TEST_CASE("timed flush makes records durable without close", "[format][threads]") {
  TempDir dir;
  std::string path = dir.file("timed.cusnap");
  capnp::MallocMessageBuilder header;
  make_header(header);
  WriterOptions options;
  options.flush_interval = std::chrono::milliseconds(20);
  auto writer = Writer::create(path, header, options);
  REQUIRE(writer.is_ok());
  REQUIRE(writer.value()
              ->append_tool_event(static_cast<uint16_t>(schema::ToolEvent::Kind::CAPTURE_ENABLED),
                                  "hello")
              .is_ok());
  // Without flush() or close(), the ticker seals the frame; a reader of the live file finds it.
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto reader = Reader::open(path);
    seen = reader.is_ok() && reader.value()->call_count() == 1;
    if (seen) {
      CHECK(reader.value()->recovery().state == Integrity::kTruncated);
      auto ref = reader.value()->call(0);
      REQUIRE(ref.is_ok());
      CHECK(std::string(ref.value().get().getToolEvent().getMessage().cStr()) == "hello");
    }
  }
  CHECK(seen);
  CHECK(writer.value()->close().is_ok());
}
