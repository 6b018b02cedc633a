#include "writer_queue.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "launch_entry.h"

namespace cusnap::format::detail {

FramePipeline::FramePipeline(int fd, std::string path, PipelineOptions options,
                             uint64_t next_frame_index, uint64_t offset, IndexData index)
    : fd_(fd),
      path_(std::move(path)),
      options_(options),
      pool_(options.pool_idle_bytes),
      next_frame_index_(next_frame_index),
      offset_(offset),
      file_bytes_(offset),
      index_(std::move(index)) {
  unsigned n = options_.threads == 0 ? 1 : options_.threads;
  for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { worker_main(); });
  writer_ = std::thread([this] { writer_main(); });
}

FramePipeline::~FramePipeline() { stop(); }

Status FramePipeline::reserve(size_t bytes, bool block) {
  std::unique_lock lock(mu_);
  auto fits = [&] {
    return queued_bytes_ + bytes <= options_.max_queued_bytes || (block && queued_bytes_ == 0);
  };
  if (block) {
    space_cv_.wait(lock, [&] { return !status_.is_ok() || stopping_ || fits(); });
  }
  if (!status_.is_ok()) return status_;
  if (stopping_) return Status::error(ErrorCode::kClosed, "writer is closing").in_file(path_);
  if (!fits()) {
    return Status::error(ErrorCode::kWouldBlock, "writer queue full")
        .expected_found("<= " + std::to_string(options_.max_queued_bytes) + " queued bytes",
                        std::to_string(queued_bytes_ + bytes));
  }
  queued_bytes_ += bytes;
  return Status::ok();
}

void FramePipeline::unreserve(size_t bytes) {
  std::lock_guard lock(mu_);
  queued_bytes_ -= std::min(bytes, queued_bytes_);
  space_cv_.notify_all();
}

Status FramePipeline::push(std::unique_ptr<FrameJob> job) {
  std::lock_guard lock(mu_);
  if (!status_.is_ok()) {
    queued_bytes_ -= std::min(job->reserved, queued_bytes_);
    space_cv_.notify_all();
    return status_;
  }
  job->header.frame_index = next_frame_index_++;
  jobs_.push_back(std::move(job));
  ++pushed_;
  work_cv_.notify_one();
  return Status::ok();
}

Status FramePipeline::drain() {
  std::unique_lock lock(mu_);
  uint64_t target = pushed_;
  space_cv_.wait(lock, [&] { return written_ >= target || !status_.is_ok(); });
  return status_;
}

Status FramePipeline::stop() {
  Status result = drain();
  {
    std::lock_guard lock(mu_);
    if (stopping_ && workers_.empty()) return status_;
    stopping_ = true;
    work_cv_.notify_all();
    done_cv_.notify_all();
    space_cv_.notify_all();
  }
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
  if (writer_.joinable()) writer_.join();
  std::lock_guard lock(mu_);
  return status_;
}

size_t FramePipeline::queued_bytes() const {
  std::lock_guard lock(mu_);
  return queued_bytes_;
}

Status FramePipeline::status() const {
  if (!failed()) return Status::ok();
  std::lock_guard lock(mu_);
  return status_;
}

uint64_t FramePipeline::file_offset() const { return offset_; }

uint64_t FramePipeline::frames_written() const {
  std::lock_guard lock(mu_);
  return written_;
}

uint64_t FramePipeline::file_bytes() const {
  std::lock_guard lock(mu_);
  return file_bytes_;
}

uint64_t FramePipeline::blob_bytes_stored() const {
  std::lock_guard lock(mu_);
  return blob_bytes_stored_;
}

void FramePipeline::fail(Status status) {
  if (status_.is_ok()) {
    status_ = std::move(status);
    failed_.store(!status_.is_ok(), std::memory_order_release);
  }
  space_cv_.notify_all();
}

Status FramePipeline::compress_job(FrameJob& job, ZstdCompressor& compressor) {
  job.header.raw_size = job.input.size();
  job.header.codec = Codec::kNone;
  // Failed pipelines write nothing more: skip the work, the writer thread only drops the job.
  if (failed()) return Status::ok();
  if (job.launch_entries) {
    ByteBuffer expanded;
    Status st = expand_launch_entries(job.input, pool_, expanded);
    if (!st.is_ok()) return st;
    pool_.release(std::move(job.copy));
    job.copy = std::move(expanded);
    job.input = job.copy.bytes();
    job.header.raw_size = job.input.size();
    job.launch_entries = false;
  }
  std::span<const uint8_t> input = job.input;
  // zstd must save at least 1/64 of the bytes, so its output never needs more room than that;
  // on incompressible input it stops with dstSize_tooSmall instead of filling a larger buffer.
  size_t limit = input.size() - input.size() / 64;
  int level = job.header.kind == FrameKind::kCalls ? options_.call_compression_level
                                                   : options_.compression_level;
  if (level > 0 && limit > 1) {
    job.stored = pool_.acquire(limit - 1);
    size_t n = compressor.compress_into(input, level, job.stored.data(), limit - 1);
    if (n > 0) {
      job.stored.set_size(n);
      job.header.codec = Codec::kZstd;
    } else {
      pool_.release(std::move(job.stored));
      job.stored = ByteBuffer();
    }
  }
  std::span<const uint8_t> payload = input;
  if (job.header.codec == Codec::kZstd) {
    payload = job.stored.bytes();
    // The uncompressed bytes are no longer needed: hand borrowed memory back to its owner now
    // and recycle the copy, rather than when the frame is written.
    job.input = {};
    job.end_borrow();
    if (!job.copy.empty_buffer()) pool_.release(std::move(job.copy));
    job.copy = ByteBuffer();
    job.call_bytes = {};
  }
  // Checksums are computed here, in parallel, so the writer thread only issues system calls.
  job.header.stored_size = payload.size();
  job.header.payload_checksum = checksum64(payload);
  return Status::ok();
}

void FramePipeline::worker_main() {
  ZstdCompressor compressor;
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || next_to_compress_ < jobs_.size(); });
    if (next_to_compress_ >= jobs_.size()) {
      if (stopping_) return;
      continue;
    }
    FrameJob* job = jobs_[next_to_compress_++].get();
    lock.unlock();
    // Jobs are only popped by the writer thread once compressed, so `job` stays valid here.
    Status st = compress_job(*job, compressor);
    lock.lock();
    if (!st.is_ok()) fail(std::move(st));
    job->compressed = true;
    if (!jobs_.empty() && jobs_.front().get() == job) done_cv_.notify_one();
  }
}

void FramePipeline::record_written(const FrameJob& job, uint64_t offset) {
  const FrameHeader& h = job.header;
  auto frame_pos = static_cast<uint32_t>(index_.frames.size());
  FrameInfo info;
  info.offset = offset;
  info.kind = h.kind;
  info.stored_size = h.stored_size;
  info.raw_size = h.raw_size;
  if (h.kind == FrameKind::kCalls) {
    info.first_seq = h.first_seq;
    info.last_seq = h.last_seq;
    for (const auto& [ordinal, seq] : job.launches) {
      index_.launches.push_back(LaunchInfo{ordinal, seq, frame_pos});
    }
    index_.call_count = h.last_seq + 1;
    if (index_.writer_stats) {
      index_.writer_stats->call_bytes_raw += h.raw_size;
      index_.writer_stats->call_bytes_stored += h.stored_size;
    }
  } else if (h.kind == FrameKind::kBlob) {
    auto [it, inserted] = blob_pos_.try_emplace(h.blob_id, index_.blobs.size());
    if (inserted) {
      BlobInfo blob;
      blob.id = h.blob_id;
      blob.size = h.blob_size;
      index_.blobs.push_back(std::move(blob));
    }
    BlobInfo& blob = index_.blobs[it->second];
    blob.chunks.push_back(BlobChunkRef{frame_pos, h.chunk_offset});
    blob.stored_bytes += h.stored_size;
  }
  index_.frames.push_back(info);
}

Status FramePipeline::write_batch(std::vector<std::unique_ptr<FrameJob>>& batch) {
  // One header buffer per frame, then one writev for header + payload of every frame.
  std::vector<uint8_t> headers(batch.size() * kFrameHeaderSize);
  std::vector<iovec> iov;
  iov.reserve(batch.size() * 2);
  for (size_t i = 0; i < batch.size(); ++i) {
    FrameJob& job = *batch[i];
    std::span<const uint8_t> payload =
        job.header.codec == Codec::kZstd ? job.stored.bytes() : job.input;
    uint8_t* h = headers.data() + i * kFrameHeaderSize;
    job.header.encode(std::span<uint8_t, kFrameHeaderSize>(h, kFrameHeaderSize));
    iov.push_back(iovec{h, kFrameHeaderSize});
    if (!payload.empty()) {
      iov.push_back(iovec{const_cast<uint8_t*>(payload.data()), payload.size()});
    }
  }
  Status st = write_all_v(fd_, iov, path_);
  if (!st.is_ok()) return st.in_frame(batch.front()->header.frame_index).at_offset(offset_);
  for (const auto& job : batch) {
    record_written(*job, offset_);
    offset_ += kFrameHeaderSize + job->header.stored_size;
  }
  return Status::ok();
}

void FramePipeline::writer_main() {
  // Frames that are ready together are written together, up to these bounds.
  constexpr size_t kMaxBatchFrames = 64;
  constexpr size_t kMaxBatchBytes = 64u << 20;
  std::vector<std::unique_ptr<FrameJob>> batch;
  std::unique_lock lock(mu_);
  for (;;) {
    done_cv_.wait(lock, [&] {
      return (!jobs_.empty() && jobs_.front()->compressed) || (stopping_ && jobs_.empty());
    });
    if (jobs_.empty()) return;  // stopping and nothing left
    size_t batch_bytes = 0;
    while (!jobs_.empty() && jobs_.front()->compressed && batch.size() < kMaxBatchFrames &&
           batch_bytes < kMaxBatchBytes) {
      batch_bytes += jobs_.front()->header.stored_size;
      batch.push_back(std::move(jobs_.front()));
      jobs_.pop_front();
      if (next_to_compress_ > 0) --next_to_compress_;
    }
    bool failed = !status_.is_ok();
    lock.unlock();

    Status st = failed ? Status::ok() : write_batch(batch);
    size_t released = 0;
    uint64_t blob_stored = 0;
    for (auto& job : batch) {
      released += job->reserved;
      if (job->header.kind == FrameKind::kBlob) blob_stored += job->header.stored_size;
      if (!job->copy.empty_buffer()) pool_.release(std::move(job->copy));
      if (!job->stored.empty_buffer()) pool_.release(std::move(job->stored));
    }
    size_t count = batch.size();
    batch.clear();  // ends the borrows of chunks stored raw from the caller's memory

    lock.lock();
    if (!st.is_ok()) fail(st);
    if (!failed && st.is_ok()) {
      file_bytes_ = offset_;
      blob_bytes_stored_ += blob_stored;
    }
    queued_bytes_ -= std::min(released, queued_bytes_);
    written_ += count;
    space_cv_.notify_all();
    // The next front may already be compressed.
  }
}

}  // namespace cusnap::format::detail
