#include "cusnap/format/writer.h"

#include <capnp/schema.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/header_info.h"
#include "internal.h"
#include "launch_entry.h"
#include "writer_queue.h"

namespace cusnap::format {

using detail::FrameJob;
using detail::FramePipeline;

class Writer::Impl {
 public:
  Impl(int fd, std::string path, const WriterOptions& options)
      : fd_(fd), path_(std::move(path)), options_(options) {}

  ~Impl() { close(); }

  Status start(capnp::MessageBuilder& header);
  // `root`: the record's root, or nullptr to look it up.
  Result<uint64_t> append(capnp::MessageBuilder& record, schema::CallRecord::Builder* root,
                          bool block);
  Result<uint64_t> append_launch(const LaunchFields& fields, bool block);
  Result<BlobId> put_blob(std::span<const uint8_t> bytes, bool block);
  bool has_blob(const BlobId& id) const {
    std::lock_guard lock(blob_mu_);
    return blobs_.count(id) != 0;
  }
  Status flush();
  Status close();
  size_t queued_bytes() const { return pipeline_ ? pipeline_->queued_bytes() : 0; }
  WriterCounters counters() const;
  Status status() const;
  const std::string& path() const { return path_; }

 private:
  enum class BlobState { kQueueing, kQueued };

  // call_mu_ held. Moves the call buffer into a frame job; `block` waits for queue room.
  Status seal_calls_locked(bool block);
  // call_mu_ held. What every append checks first (closed, failed, room for a try_).
  Status begin_append_locked(bool block);
  // call_mu_ held. Counts the record just written at `before` and seals a full buffer.
  Result<uint64_t> finish_append_locked(size_t before, uint16_t which, bool block);
  // call_mu_ held. Where `bytes` more go at the end of the call buffer (grown if needed).
  uint8_t* room_locked(size_t bytes);
  void ticker_main();

  int fd_;
  const std::string path_;
  const WriterOptions options_;
  std::unique_ptr<FramePipeline> pipeline_;

  // Call records (call_mu_). The call buffer is a pooled buffer that the frame job takes over and
  // the pipeline recycles once the frame is written: appending to a buffer whose pages are already
  // resident costs no page faults, and nothing is zero-filled before being overwritten.
  mutable std::mutex call_mu_;
  detail::ByteBuffer call_buf_;
  size_t call_buf_capacity_ = 0;  // what a fresh call buffer holds (frame size + room for a record)
  std::vector<std::pair<uint64_t, uint64_t>> call_launches_;
  uint64_t buf_first_seq_ = 0;
  bool buf_has_launch_entries_ = false;  // call_buf_ holds deferred launch entries (launch_entry.h)
  uint64_t next_seq_ = 0;
  uint64_t next_launch_ = 0;
  std::vector<uint64_t> kind_counts_;
  std::chrono::steady_clock::time_point buf_started_;
  bool closed_ = false;
  std::atomic<bool> closed_flag_{false};  // closed_, readable without call_mu_
  Status close_status_;

  // Blob store (blob_mu_).
  mutable std::mutex blob_mu_;
  std::condition_variable blob_cv_;
  std::unordered_map<BlobId, BlobState, BlobIdHash> blobs_;
  detail::IndexStats blob_stats_;
  uint64_t dedup_hits_ = 0;

  // Time-based flush.
  std::mutex tick_mu_;
  std::condition_variable tick_cv_;
  bool tick_stop_ = false;
  std::thread ticker_;
};

Status Writer::Impl::start(capnp::MessageBuilder& header_message) {
  std::vector<uint8_t> buf(kFileHeaderSize);
  FileHeader fh;
  fh.encode(std::span<uint8_t, kFileHeaderSize>(buf.data(), kFileHeaderSize));

  std::vector<uint8_t> raw;
  try {
    auto header = header_message.getRoot<schema::CaptureHeader>();
    header.setSchemaVersion(schema::SCHEMA_VERSION);
    header.setContainerVersion((uint32_t{kContainerVersionMajor} << 16) | kContainerVersionMinor);
    if (!header.hasToolName()) header.setToolName("cusnap");
    if (!header.hasToolVersion()) header.setToolVersion(tool_version());
    detail::append_message(raw, header_message);
  } catch (const kj::Exception& e) {
    return Status::error(ErrorCode::kInvalidArgument,
                         std::string("header message: ") + e.getDescription().cStr());
  }
  FrameHeader h;
  h.kind = FrameKind::kHeader;
  h.raw_size = raw.size();
  h.frame_index = 0;
  std::vector<uint8_t> stored;
  detail::ZstdCompressor compressor;
  bool zstd = options_.compression_level > 0 &&
              compressor.compress(raw, options_.compression_level, stored);
  h.codec = zstd ? Codec::kZstd : Codec::kNone;
  const std::vector<uint8_t>& payload = zstd ? stored : raw;
  size_t frame_at = buf.size();
  buf.resize(frame_at + kFrameHeaderSize);
  detail::encode_frame_header(
      h, payload, std::span<uint8_t, kFrameHeaderSize>(buf.data() + frame_at, kFrameHeaderSize));
  buf.insert(buf.end(), payload.begin(), payload.end());
  Status st = detail::write_all(fd_, buf.data(), buf.size(), path_);
  if (!st.is_ok()) return st;

  detail::IndexData index;
  index.writer_stats = detail::IndexStats{};
  FrameInfo info;
  info.offset = kFileHeaderSize;
  info.kind = FrameKind::kHeader;
  info.stored_size = payload.size();
  info.raw_size = raw.size();
  index.frames.push_back(info);

  detail::PipelineOptions po;
  po.compression_level = options_.compression_level;
  po.call_compression_level =
      std::min(options_.compression_level, std::max(options_.call_compression_level, 0));
  po.threads = options_.compression_threads != 0
                   ? options_.compression_threads
                   : std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  po.max_queued_bytes = options_.max_queued_bytes;
  // Enough recycled buffers for every worker's chunk copy and output plus some slack, never more
  // than the queue could hold anyway.
  po.pool_idle_bytes =
      std::min(options_.max_queued_bytes,
               2 * (size_t{po.threads} + 2) *
                   std::bit_ceil(std::max<size_t>(options_.blob_chunk_bytes, 4096)));
  pipeline_ = std::make_unique<FramePipeline>(fd_, path_, po, 1, buf.size(), std::move(index));
  kind_counts_.assign(capnp::Schema::from<schema::CallRecord>().getUnionFields().size(), 0);
  call_buf_capacity_ = std::bit_ceil(options_.call_frame_bytes + (64u << 10));
  call_buf_ = pipeline_->pool().acquire(call_buf_capacity_);
  ticker_ = std::thread([this] { ticker_main(); });
  return Status::ok();
}

void Writer::Impl::ticker_main() {
  // Four looks per interval: a frame is sealed at most 1.25 intervals after its first record
  // (waking once per interval could leave it for almost two).
  const auto tick = std::max<std::chrono::milliseconds>(options_.flush_interval / 4,
                                                        std::chrono::milliseconds(1));
  std::unique_lock lock(tick_mu_);
  while (!tick_stop_) {
    tick_cv_.wait_for(lock, tick);
    if (tick_stop_) break;
    lock.unlock();
    {
      std::lock_guard call_lock(call_mu_);
      if (!closed_ && call_buf_.size() != 0 &&
          std::chrono::steady_clock::now() - buf_started_ >= options_.flush_interval) {
        // Errors surface through status() and the next append.
        (void)seal_calls_locked(/*block=*/true);
      }
    }
    lock.lock();
  }
}

Status Writer::Impl::seal_calls_locked(bool block) {
  if (call_buf_.size() == 0) return Status::ok();
  size_t bytes = call_buf_.size();
  Status st = pipeline_->reserve(bytes, block);
  if (!st.is_ok()) return st;
  auto job = std::make_unique<FrameJob>();
  job->header.kind = FrameKind::kCalls;
  job->header.first_seq = buf_first_seq_;
  job->header.last_seq = next_seq_ - 1;
  job->header.record_count = static_cast<uint32_t>(next_seq_ - buf_first_seq_);
  job->copy = std::move(call_buf_);
  job->input = job->copy.bytes();
  job->launch_entries = buf_has_launch_entries_;
  buf_has_launch_entries_ = false;
  // The next frame likely holds as many launches: one allocation now instead of a vector grown
  // (and its old storage freed) on the application's launches.
  size_t launches = call_launches_.size();
  job->launches = std::move(call_launches_);
  job->reserved = bytes;
  call_buf_ = pipeline_->pool().acquire(call_buf_capacity_);
  call_launches_ = {};
  call_launches_.reserve(launches);
  buf_first_seq_ = next_seq_;
  return pipeline_->push(std::move(job));
}

Status Writer::Impl::begin_append_locked(bool block) {
  if (closed_) return Status::error(ErrorCode::kClosed, "writer is closed").in_file(path_);
  if (pipeline_->failed()) return pipeline_->status();
  // A full buffer whose seal could not get queue room: try_ refuses more rather than grow.
  if (!block && call_buf_.size() >= 2 * options_.call_frame_bytes) {
    Status st = seal_calls_locked(false);
    if (!st.is_ok()) return st;
  }
  // A record may not push a call frame over the 32-bit record count.
  if (next_seq_ - buf_first_seq_ >= UINT32_MAX) return seal_calls_locked(block);
  return Status::ok();
}

Result<uint64_t> Writer::Impl::finish_append_locked(size_t before, uint16_t which, bool block) {
  uint64_t seq = next_seq_;
  if (before == 0) buf_started_ = std::chrono::steady_clock::now();
  ++next_seq_;
  if (which == schema::CallRecord::LAUNCH) ++next_launch_;
  if (which < kind_counts_.size()) ++kind_counts_[which];
  if (call_buf_.size() >= options_.call_frame_bytes) {
    Status st = seal_calls_locked(block);
    // The record itself is accepted; a try_ seal that found no room retries on the next append.
    if (!st.is_ok() && st.code() != ErrorCode::kWouldBlock) return st;
  }
  return seq;
}

uint8_t* Writer::Impl::room_locked(size_t bytes) {
  size_t used = call_buf_.size();
  if (used + bytes > call_buf_.capacity()) {
    // A record larger than the room left (rare: the buffer has a frame's size plus 64 KiB).
    detail::ByteBuffer bigger =
        pipeline_->pool().acquire(std::max(call_buf_capacity_, std::bit_ceil(used + bytes)));
    if (used != 0) std::memcpy(bigger.data(), call_buf_.data(), used);
    bigger.set_size(used);
    pipeline_->pool().release(std::move(call_buf_));
    call_buf_ = std::move(bigger);
  }
  return call_buf_.data() + used;
}

Result<uint64_t> Writer::Impl::append(capnp::MessageBuilder& record,
                                      schema::CallRecord::Builder* given, bool block) {
  std::lock_guard lock(call_mu_);
  if (Status st = begin_append_locked(block); !st.is_ok()) return st;
  uint64_t seq = next_seq_;
  size_t before = call_buf_.size();
  uint16_t which = 0;
  try {
    schema::CallRecord::Builder root =
        given != nullptr ? *given : record.getRoot<schema::CallRecord>();
    root.setSeq(seq);
    which = static_cast<uint16_t>(root.which());
    if (root.isLaunch()) {
      root.getLaunch().setOrdinal(next_launch_);
      call_launches_.emplace_back(next_launch_, seq);
    }
    detail::Segments segments = record.getSegmentsForOutput();
    size_t total = detail::framed_size(segments);
    detail::write_framed(segments, room_locked(total));
    call_buf_.set_size(before + total);
  } catch (const kj::Exception& e) {
    call_buf_.set_size(before);
    if (!call_launches_.empty() && call_launches_.back().second == seq) call_launches_.pop_back();
    return Status::error(ErrorCode::kInvalidArgument,
                         std::string("call record: ") + e.getDescription().cStr())
        .at_call(seq);
  }
  return finish_append_locked(before, which, block);
}

Result<uint64_t> Writer::Impl::append_launch(const LaunchFields& fields, bool block) {
  size_t bytes = detail::launch_entry_size(fields);
  std::lock_guard lock(call_mu_);
  if (Status st = begin_append_locked(block); !st.is_ok()) return st;
  uint64_t seq = next_seq_;
  size_t before = call_buf_.size();
  detail::write_launch_entry(fields, seq, next_launch_, room_locked(bytes));
  call_buf_.set_size(before + bytes);
  call_launches_.emplace_back(next_launch_, seq);
  buf_has_launch_entries_ = true;
  return finish_append_locked(before, schema::CallRecord::LAUNCH, block);
}

Result<BlobId> Writer::Impl::put_blob(std::span<const uint8_t> bytes, bool block) {
  if (closed_flag_) return Status::error(ErrorCode::kClosed, "writer is closed").in_file(path_);
  Status failed = pipeline_->status();
  if (!failed.is_ok()) return failed;
  BlobId id = hash_blob(bytes);
  {
    std::unique_lock lock(blob_mu_);
    for (;;) {
      auto it = blobs_.find(id);
      if (it == blobs_.end()) break;
      if (it->second == BlobState::kQueued) {
        ++blob_stats_.blob_puts;
        blob_stats_.blob_bytes_logical += bytes.size();
        ++dedup_hits_;
        return id;
      }
      // Another thread is queueing the same bytes: wait until its frames are queued, so that our
      // caller's record cannot reach the file before them.
      if (!block) {
        return Status::error(ErrorCode::kWouldBlock,
                             "the same blob is being stored by another thread");
      }
      blob_cv_.wait(lock);
    }
    blobs_.emplace(id, BlobState::kQueueing);
  }

  size_t chunk = std::max<size_t>(options_.blob_chunk_bytes, 4096);
  // Zero-copy: chunks read the caller's memory, which a blocking call owns until it returns.
  const bool borrow = block && bytes.size() >= options_.zero_copy_min_bytes;
  detail::BorrowLatch latch;
  detail::BufferPool& pool = pipeline_->pool();
  Status st;
  size_t reserved_left = 0;
  if (!block) {
    st = pipeline_->reserve(bytes.size(), false);
    if (st.is_ok()) reserved_left = bytes.size();
  }
  uint64_t offset = 0;
  do {
    if (!st.is_ok()) break;
    size_t n = std::min<size_t>(chunk, bytes.size() - offset);
    if (block) {
      st = pipeline_->reserve(n, true);
      if (!st.is_ok()) break;
    } else {
      reserved_left -= n;
    }
    auto job = std::make_unique<FrameJob>();
    job->header.kind = FrameKind::kBlob;
    job->header.blob_id = id;
    job->header.chunk_offset = offset;
    job->header.blob_size = bytes.size();
    std::span<const uint8_t> part = bytes.subspan(offset, n);
    if (borrow) {
      latch.add();
      job->borrow = &latch;
      job->input = part;
    } else {
      job->copy = pool.acquire(n);
      if (n > 0) std::memcpy(job->copy.data(), part.data(), n);
      job->copy.set_size(n);
      job->input = job->copy.bytes();
    }
    job->reserved = n;
    st = pipeline_->push(std::move(job));
    offset += n;
  } while (offset < bytes.size());
  if (reserved_left > 0) pipeline_->unreserve(reserved_left);
  // Every job, pushed or dropped, ends its borrow; the bytes are ours again after this.
  if (borrow) {
    latch.wait();
    // The whole blob went through the pipeline: report a failure now rather than at the next call.
    if (st.is_ok()) st = pipeline_->status();
  }

  std::lock_guard lock(blob_mu_);
  if (!st.is_ok()) {
    blobs_.erase(id);
    blob_cv_.notify_all();
    return st;
  }
  blobs_[id] = BlobState::kQueued;
  ++blob_stats_.blob_puts;
  blob_stats_.blob_bytes_logical += bytes.size();
  blob_stats_.blob_bytes_unique += bytes.size();
  blob_cv_.notify_all();
  return id;
}

Status Writer::Impl::flush() {
  Status st;
  {
    std::lock_guard lock(call_mu_);
    if (closed_) return close_status_;
    st = seal_calls_locked(true);
  }
  if (!st.is_ok()) return st;
  st = pipeline_->drain();
  if (st.is_ok() && options_.sync_on_flush && ::fdatasync(fd_) != 0) {
    return Status::error(ErrorCode::kIo, std::string("fdatasync: ") + std::strerror(errno))
        .in_file(path_);
  }
  return st;
}

Status Writer::Impl::close() {
  {
    std::lock_guard lock(call_mu_);
    if (closed_) return close_status_;
    if (pipeline_) close_status_ = seal_calls_locked(true);
    closed_ = true;
    closed_flag_ = true;
  }
  {
    std::lock_guard lock(tick_mu_);
    tick_stop_ = true;
    tick_cv_.notify_all();
  }
  if (ticker_.joinable()) ticker_.join();
  if (pipeline_) {
    Status st = pipeline_->stop();
    if (close_status_.is_ok()) close_status_ = st;
  }
  if (close_status_.is_ok() && pipeline_) {
    detail::IndexData& index = pipeline_->index();
    {
      std::lock_guard lock(call_mu_);
      index.kind_counts = kind_counts_;
      index.call_count = next_seq_;
    }
    {
      std::lock_guard lock(blob_mu_);
      detail::IndexStats stats = blob_stats_;
      stats.call_bytes_raw = index.writer_stats->call_bytes_raw;
      stats.call_bytes_stored = index.writer_stats->call_bytes_stored;
      for (const BlobInfo& b : index.blobs) stats.blob_bytes_stored += b.stored_bytes;
      index.writer_stats = stats;
    }
    std::vector<uint8_t> raw = detail::encode_index(index);
    FrameHeader h;
    h.kind = FrameKind::kIndex;
    h.raw_size = raw.size();
    h.frame_index = pipeline_->next_frame_index();
    std::vector<uint8_t> stored;
    detail::ZstdCompressor compressor;
    bool zstd = options_.compression_level > 0 &&
                compressor.compress(raw, options_.compression_level, stored);
    h.codec = zstd ? Codec::kZstd : Codec::kNone;
    const std::vector<uint8_t>& payload = zstd ? stored : raw;
    uint64_t index_offset = pipeline_->file_offset();
    std::vector<uint8_t> buf(kFrameHeaderSize);
    detail::encode_frame_header(h, payload,
                                std::span<uint8_t, kFrameHeaderSize>(buf.data(), kFrameHeaderSize));
    buf.insert(buf.end(), payload.begin(), payload.end());
    Trailer t;
    t.index_offset = index_offset;
    t.trailer_offset = index_offset + buf.size();
    size_t at = buf.size();
    buf.resize(at + kTrailerSize);
    t.encode(std::span<uint8_t, kTrailerSize>(buf.data() + at, kTrailerSize));
    close_status_ = detail::write_all(fd_, buf.data(), buf.size(), path_);
    if (close_status_.is_ok() && options_.sync_on_flush && ::fdatasync(fd_) != 0) {
      close_status_ =
          Status::error(ErrorCode::kIo, std::string("fdatasync: ") + std::strerror(errno))
              .in_file(path_);
    }
  }
  if (fd_ >= 0 && ::close(fd_) != 0 && close_status_.is_ok()) {
    close_status_ =
        Status::error(ErrorCode::kIo, std::string("close: ") + std::strerror(errno)).in_file(path_);
  }
  fd_ = -1;
  return close_status_;
}

WriterCounters Writer::Impl::counters() const {
  WriterCounters c;
  {
    std::lock_guard lock(call_mu_);
    c.calls = next_seq_;
    c.launches = next_launch_;
  }
  {
    std::lock_guard lock(blob_mu_);
    c.blob_puts = blob_stats_.blob_puts;
    c.blob_bytes_logical = blob_stats_.blob_bytes_logical;
    c.blob_bytes_unique = blob_stats_.blob_bytes_unique;
    c.dedup_hits = dedup_hits_;
  }
  if (pipeline_) {
    c.frames_written = pipeline_->frames_written() + 1;  // + the header frame
    c.file_bytes = pipeline_->file_bytes();
    c.blob_bytes_stored = pipeline_->blob_bytes_stored();
  }
  return c;
}

Status Writer::Impl::status() const {
  {
    std::lock_guard lock(call_mu_);
    if (closed_ && !close_status_.is_ok()) return close_status_;
  }
  return pipeline_ ? pipeline_->status() : Status::ok();
}

// ---- public wrappers ----------------------------------------------------------------------------

Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Writer::~Writer() = default;

Result<std::unique_ptr<Writer>> Writer::create(const std::string& path,
                                               capnp::MessageBuilder& header,
                                               const WriterOptions& options) {
  // 0600: a capture holds the application's data. fchmod covers a file that existed already.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, kCaptureFileMode);
  if (fd < 0) {
    return Status::error(ErrorCode::kIo, std::string("cannot create: ") + std::strerror(errno))
        .in_file(path);
  }
  (void)::fchmod(fd, kCaptureFileMode);
  return create_fd(fd, path, header, options);
}

Result<std::unique_ptr<Writer>> Writer::create_fd(int fd, std::string display_name,
                                                  capnp::MessageBuilder& header,
                                                  const WriterOptions& options) {
  if (options.compression_level < 0 || options.compression_level > 22 ||
      options.call_frame_bytes == 0 || options.max_queued_bytes == 0) {
    ::close(fd);
    return Status::error(ErrorCode::kInvalidArgument, "writer options out of range");
  }
  auto impl = std::make_unique<Impl>(fd, std::move(display_name), options);
  Status st = impl->start(header);
  if (!st.is_ok()) return st;  // ~Impl closes the fd
  return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

Result<uint64_t> Writer::append_call(capnp::MessageBuilder& record) {
  return impl_->append(record, nullptr, true);
}
Result<uint64_t> Writer::append_call(capnp::MessageBuilder& record,
                                     schema::CallRecord::Builder root) {
  return impl_->append(record, &root, true);
}
Result<uint64_t> Writer::try_append_call(capnp::MessageBuilder& record) {
  return impl_->append(record, nullptr, false);
}
Result<uint64_t> Writer::append_launch(const LaunchFields& fields) {
  return impl_->append_launch(fields, true);
}

Result<uint64_t> Writer::append_tool_event(uint16_t kind, const std::string& message,
                                           uint64_t thread_id) {
  capnp::MallocMessageBuilder builder(256);
  auto rec = builder.initRoot<schema::CallRecord>();
  rec.setThreadId(thread_id);
  rec.setApiName("cusnap");
  auto ev = rec.initToolEvent();
  ev.setKind(static_cast<schema::ToolEvent::Kind>(kind));
  ev.setMessage(message);
  return impl_->append(builder, &rec, true);
}

Result<BlobId> Writer::put_blob(std::span<const uint8_t> bytes) {
  return impl_->put_blob(bytes, true);
}
Result<BlobId> Writer::try_put_blob(std::span<const uint8_t> bytes) {
  return impl_->put_blob(bytes, false);
}
bool Writer::has_blob(const BlobId& id) const { return impl_->has_blob(id); }
Status Writer::flush() { return impl_->flush(); }
Status Writer::close() { return impl_->close(); }
size_t Writer::queued_bytes() const { return impl_->queued_bytes(); }
WriterCounters Writer::counters() const { return impl_->counters(); }
Status Writer::status() const { return impl_->status(); }
const std::string& Writer::path() const { return impl_->path(); }

}  // namespace cusnap::format
