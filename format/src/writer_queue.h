// The writer's frame pipeline: compression workers plus one thread that appends finished frames
// to the file in submission order, and keeps the index of what it wrote.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "buffer_pool.h"
#include "cusnap/format/container.h"
#include "cusnap/format/index.h"
#include "cusnap/format/status.h"
#include "internal.h"

namespace cusnap::format::detail {

// Counts the jobs still reading memory that a blocking put_blob() lent them (zero-copy chunks);
// put_blob() returns only once the count is back to zero.
class BorrowLatch {
 public:
  void add() {
    std::lock_guard lock(mu_);
    ++outstanding_;
  }
  void release() {
    std::lock_guard lock(mu_);
    if (--outstanding_ == 0) cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return outstanding_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t outstanding_ = 0;
};

struct FrameJob {
  FrameJob() = default;
  FrameJob(const FrameJob&) = delete;
  FrameJob& operator=(const FrameJob&) = delete;
  ~FrameJob() { end_borrow(); }

  // Called once the job no longer reads `input` from borrowed memory.
  void end_borrow() {
    if (borrow != nullptr) {
      borrow->release();
      borrow = nullptr;
    }
  }

  FrameHeader header;               // kind and kind-specific fields; the rest is filled in later
  std::vector<uint8_t> call_bytes;  // call frames: the serialized records
  ByteBuffer copy;                  // a blob chunk copied from the caller (pooled)
  // The uncompressed payload: call_bytes, copy, or the caller's memory while `borrow` is set.
  std::span<const uint8_t> input;
  ByteBuffer stored;              // compressed payload when header.codec == kZstd (pooled)
  BorrowLatch* borrow = nullptr;  // released (once) when the job stops reading `input`
  std::vector<std::pair<uint64_t, uint64_t>> launches;  // (ordinal, seq) in a call frame
  size_t reserved = 0;          // queue bytes this job holds (released once written)
  bool compressed = false;      // the compression step has run (stored_size, checksum are set)
  bool launch_entries = false;  // call frames: `copy` holds deferred launch entries to expand first
};

struct PipelineOptions {
  int compression_level = 3;
  int call_compression_level = 1;  // call frames: min(compression_level, this)
  unsigned threads = 1;
  size_t max_queued_bytes = 256u << 20;
  size_t pool_idle_bytes = 64u << 20;  // payload buffers kept for reuse at most
};

class FramePipeline {
 public:
  // `next_frame_index` and `offset` continue after what the caller already wrote (file header,
  // header frame); `index` holds the header frame's entry.
  FramePipeline(int fd, std::string path, PipelineOptions options, uint64_t next_frame_index,
                uint64_t offset, IndexData index);
  ~FramePipeline();
  FramePipeline(const FramePipeline&) = delete;
  FramePipeline& operator=(const FramePipeline&) = delete;

  // Claims `bytes` of queue room. Blocking: waits until they fit under the cap, or the queue is
  // empty (so a single oversized chunk still goes through). Non-blocking: kWouldBlock unless they
  // fit now. Fails with the pipeline's error once it has failed.
  Status reserve(size_t bytes, bool block);
  void unreserve(size_t bytes);
  // Queues a job whose raw size was reserved. Never blocks.
  Status push(std::unique_ptr<FrameJob> job);
  // Waits until every job pushed so far is written (or the pipeline failed).
  Status drain();
  // drain(), then stops all threads. Returns the pipeline's final status.
  Status stop();

  size_t queued_bytes() const;
  Status status() const;
  // True once the pipeline has failed (status() then returns the error). Lock-free, so that the
  // per-record success path does not take the pipeline lock and copy a Status.
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  uint64_t file_offset() const;  // valid after stop()
  uint64_t frames_written() const;
  uint64_t file_bytes() const;
  uint64_t blob_bytes_stored() const;
  // The index as built by the writer thread; valid after stop().
  IndexData& index() { return index_; }
  uint64_t next_frame_index() const { return next_frame_index_; }
  // Payload buffers shared by producers (chunk copies) and workers (compressed output).
  BufferPool& pool() { return pool_; }

 private:
  void worker_main();
  void writer_main();
  void fail(Status status);  // mu_ held
  void record_written(const FrameJob& job, uint64_t offset);
  // Expands deferred launch entries, then compresses; an error fails the pipeline.
  Status compress_job(FrameJob& job, ZstdCompressor& compressor);
  // Writes the frames of `batch` with as few system calls as possible; writer thread only.
  Status write_batch(std::vector<std::unique_ptr<FrameJob>>& batch);

  const int fd_;
  const std::string path_;
  const PipelineOptions options_;
  BufferPool pool_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // workers: a job to compress, or stopping
  std::condition_variable done_cv_;   // writer thread: the front job is compressed, or stopping
  std::condition_variable space_cv_;  // producers: queue room, drained, or failed
  std::deque<std::unique_ptr<FrameJob>> jobs_;
  size_t next_to_compress_ = 0;  // index into jobs_ of the first job nobody has taken
  size_t queued_bytes_ = 0;
  uint64_t pushed_ = 0;
  uint64_t written_ = 0;
  bool stopping_ = false;
  Status status_;
  std::atomic<bool> failed_{
      false};  // !status_.is_ok(), readable without mu_ (set once, never cleared)

  uint64_t next_frame_index_;
  uint64_t offset_;                                          // writer thread only (read after stop)
  uint64_t file_bytes_;                                      // guarded by mu_
  uint64_t blob_bytes_stored_ = 0;                           // guarded by mu_
  IndexData index_;                                          // writer thread only (read after stop)
  std::unordered_map<BlobId, size_t, BlobIdHash> blob_pos_;  // id -> index_.blobs (writer thread)

  std::vector<std::thread> workers_;
  std::thread writer_;
};

}  // namespace cusnap::format::detail
