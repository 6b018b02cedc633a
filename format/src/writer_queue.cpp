#include "writer_queue.h"

#include <cerrno>
#include <cstring>

namespace cusnap::format::detail {

FramePipeline::FramePipeline(int fd, std::string path, PipelineOptions options,
                             uint64_t next_frame_index, uint64_t offset, IndexData index)
    : fd_(fd),
      path_(std::move(path)),
      options_(options),
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
  if (status_.is_ok()) status_ = std::move(status);
  space_cv_.notify_all();
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
    bool use_zstd = options_.compression_level > 0 && !job->raw.empty() && status().is_ok() &&
                    compressor.compress(job->raw, options_.compression_level, job->stored);
    job->header.codec = use_zstd ? Codec::kZstd : Codec::kNone;
    if (!use_zstd) job->stored.clear();
    lock.lock();
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

void FramePipeline::writer_main() {
  std::unique_lock lock(mu_);
  for (;;) {
    done_cv_.wait(lock, [&] { return (!jobs_.empty() && jobs_.front()->compressed) ||
                                     (stopping_ && jobs_.empty()); });
    if (jobs_.empty()) return;  // stopping and nothing left
    std::unique_ptr<FrameJob> job = std::move(jobs_.front());
    jobs_.pop_front();
    if (next_to_compress_ > 0) --next_to_compress_;
    bool failed = !status_.is_ok();
    lock.unlock();

    Status st;
    if (!failed) {
      std::span<const uint8_t> stored =
          job->header.codec == Codec::kZstd ? std::span<const uint8_t>(job->stored)
                                            : std::span<const uint8_t>(job->raw);
      job->header.raw_size = job->raw.size();
      uint8_t header_bytes[kFrameHeaderSize];
      encode_frame_header(job->header, stored, std::span<uint8_t, kFrameHeaderSize>(header_bytes));
      st = write_all(fd_, header_bytes, kFrameHeaderSize, path_);
      if (st.is_ok()) st = write_all(fd_, stored.data(), stored.size(), path_);
      if (st.is_ok()) {
        record_written(*job, offset_);
        offset_ += kFrameHeaderSize + stored.size();
      } else {
        st.in_frame(job->header.frame_index).at_offset(offset_);
      }
    }

    lock.lock();
    if (!st.is_ok()) fail(st);
    if (!failed && st.is_ok()) {
      file_bytes_ = offset_;
      if (job->header.kind == FrameKind::kBlob) blob_bytes_stored_ += job->header.stored_size;
    }
    queued_bytes_ -= std::min(job->reserved, queued_bytes_);
    ++written_;
    space_cv_.notify_all();
    // The next front may already be compressed.
  }
}

}  // namespace cusnap::format::detail
