// Streaming capture writer.
//
// Threading and ordering contract
// - Every method is safe to call from any number of threads at once.
// - append_call() assigns the record's global sequence number (CallRecord.seq) and, for launch
//   records, the launch ordinal (Launch.ordinal), under one short lock. Sequence numbers are
//   0-based, gap-free and strictly increasing in file order; the order is the order in which
//   append_call() calls acquire that lock.
// - put_blob() returns only after all of the blob's frames are queued, and frames reach the file
//   in queue order. So a record that references a blob id obtained from put_blob() is always
//   written after that blob: a truncated file never holds a call whose blobs are missing.
//
// Pipeline and memory bound
// - Call records are serialized (standard Cap'n Proto framing, the caller's builder is only read
//   and patched) into the current call frame buffer. The buffer is sealed into a frame job when it
//   reaches `call_frame_bytes`, when `flush_interval` passes, or on flush()/close(). Call frame
//   buffers come from the same recycled pool as blob chunks (below), so appending a record costs
//   no page faults and no zero-filling once the pool is warm.
// - Launch records given as plain fields (append_launch) are copied flat into the same buffer and
//   turned into framed records by the compression worker that takes the sealed frame, before it
//   compresses it: the caller's thread never builds a message for them. The expanded frame is
//   what reaches the file; `max_queued_bytes` counts the flat size (records grow ~1.5x on
//   expansion, so the bound is approximate for launch-heavy frames).
// - Blobs are hashed first (XXH3-128 over the caller's bytes, no copy); a known id returns at once
//   having written nothing, which makes a repeated upload cost zero bytes of blob data. New blobs
//   are cut into `blob_chunk_bytes` chunks, one frame job each.
// - Caller memory (lifetime contract): put_blob() never keeps a reference to `bytes` past its
//   return. A blocking put_blob() of at least `zero_copy_min_bytes` compresses straight from the
//   caller's memory (no copy) and therefore returns only once no job reads that memory any more:
//   every chunk has been compressed, and every chunk stored raw has been written to the file. The
//   bytes must not change during the call (a concurrent write would be captured torn, and its
//   hash would not match). Smaller blobs, and every try_put_blob(), are copied into recycled
//   buffers and the call returns once they are queued, without waiting for compression. The
//   threshold trades latency for CPU and memory: a copy returns sooner while the queue has room,
//   compressing in place saves a pass over memory that large blobs make expensive. A zero-copy
//   put_blob() that the disk failed under returns that error itself.
// - Memory: copies of queued chunks (at most `max_queued_bytes`) plus one compressed output per
//   job in flight. Released buffers are recycled, never zero-filled; at most
//   min(max_queued_bytes, 2 * (threads + 2) * blob_chunk_bytes) of them are kept idle.
// - `compression_threads` workers compress jobs in parallel (independent zstd frames at
//   `compression_level`); one writer thread appends finished jobs to the file in queue order,
//   several frames per writev(). A job whose compressed form would not save at least 1/64 of its
//   bytes is stored raw (codec none); zstd is given only that much output room, so it gives up as
//   soon as the output would exceed it.
// - Policy when the disk cannot keep up: uncompressed bytes queued (sealed jobs not yet written)
//   are capped by `max_queued_bytes`. Blocking calls wait for room; the try_* variants return
//   kWouldBlock instead and enqueue nothing. A single chunk larger than the cap is admitted when
//   the queue is empty, so progress never deadlocks. queued_bytes() lets a caller watch the depth.
// - An I/O error puts the writer in a failed state: every later call returns that error (the
//   interceptor then records nothing more and lets the application run on).
#pragma once

#include <capnp/message.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/capture.capnp.h"  // generated from format/schema/capture.capnp
#include "cusnap/format/launch_record.h"
#include "cusnap/format/status.h"

namespace cusnap::format {

struct WriterOptions {
  int compression_level = 3;  // zstd level (1..19); 0 stores everything raw
  // Call frames are compressed at min(compression_level, call_compression_level): call records
  // compress ~19x at level 1 and ~20x at level 3, for about half the CPU time at level 1, and
  // that time competes with the application (bench/writer: cusnap_bench_launch_records).
  int call_compression_level = 1;
  unsigned compression_threads = 0;      // 0: hardware_concurrency(), at most 16
  size_t call_frame_bytes = 2u << 20;    // seal a call frame at this many uncompressed bytes
  size_t blob_chunk_bytes = 8u << 20;    // blobs are split into frames of this size
  size_t max_queued_bytes = 256u << 20;  // cap on uncompressed bytes waiting for disk
  // Blocking put_blob() of blobs at least this large reads the caller's memory instead of copying
  // it, and returns when the blob is compressed (see the lifetime contract above). SIZE_MAX: never.
  size_t zero_copy_min_bytes = 32u << 20;
  // A non-empty call frame is sealed once its first record is this old (checked 4x per interval).
  std::chrono::milliseconds flush_interval{200};
  bool sync_on_flush = false;  // fdatasync() in flush() and close()
};

// Counters, cheap to read at any time.
struct WriterCounters {
  uint64_t calls = 0;  // records appended
  uint64_t launches = 0;
  uint64_t frames_written = 0;
  uint64_t file_bytes = 0;  // bytes written to the file so far
  uint64_t blob_puts = 0;
  uint64_t blob_bytes_logical = 0;  // sum of put_blob sizes, dedup hits included
  uint64_t blob_bytes_unique = 0;   // sizes of distinct blobs
  uint64_t blob_bytes_stored = 0;   // blob frame payload bytes written (after compression)
  uint64_t dedup_hits = 0;
};

// Mode of every capture file cusnap creates: owner read/write only, because a capture holds the
// application's data (its buffers, kernels and arguments). Not subject to widening by the umask.
inline constexpr unsigned kCaptureFileMode = 0600;

// The note the interceptor leaves next to a capture it could not finish writing (disk full,
// RLIMIT_FSIZE, an I/O error): one line, the reason. `cusnap info` shows it. Also 0600.
inline std::string incomplete_note_path(const std::string& capture) {
  return capture + ".incomplete";
}

class Writer {
 public:
  // Creates (truncating) `path` with kCaptureFileMode, writes the file header and the header frame.
  // `header` must have a schema::CaptureHeader root; schemaVersion and containerVersion are filled
  // in by the writer, toolName defaults to "cusnap". The header builder is not retained.
  static Result<std::unique_ptr<Writer>> create(const std::string& path,
                                                capnp::MessageBuilder& header,
                                                const WriterOptions& options = {});
  // Same, on an already open, writable, empty file descriptor (which the writer then owns).
  static Result<std::unique_ptr<Writer>> create_fd(int fd, std::string display_name,
                                                   capnp::MessageBuilder& header,
                                                   const WriterOptions& options = {});

  ~Writer();  // close()s if still open, ignoring errors
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Appends a record. `record` must have a schema::CallRecord root; the writer sets its `seq`
  // (and `launch.ordinal` for launches) and returns the seq. Only the call itself touches the
  // builder. Every segment of the builder is copied, garbage included: do not reuse one builder
  // by calling initRoot() again (the old root stays in its arena and the copies grow); instead
  // construct a MallocMessageBuilder per record over a reused, zeroed first segment
  // (MallocMessageBuilder(kj::ArrayPtr<capnp::word>)), which zeroes it again when destroyed.
  Result<uint64_t> append_call(capnp::MessageBuilder& record);
  // The same, for a caller that holds the record's root already (`root` must be record's root):
  // saves looking it up again on the recording thread.
  Result<uint64_t> append_call(capnp::MessageBuilder& record, schema::CallRecord::Builder root);
  // As append_call, but returns kWouldBlock instead of waiting when the queue is full.
  Result<uint64_t> try_append_call(capnp::MessageBuilder& record);
  // Appends a launch record given as plain fields (launch_record.h): same seq/ordinal contract
  // and the same bytes in the file as append_call(), but the caller's thread only copies the
  // fields; the Cap'n Proto record is built on a compression worker when the frame is sealed.
  // `fields` (and what its views point to) is not used after the call returns.
  Result<uint64_t> append_launch(const LaunchFields& fields);

  // Convenience: a toolEvent record (kind is a schema::ToolEvent::Kind value).
  Result<uint64_t> append_tool_event(uint16_t kind, const std::string& message,
                                     uint64_t thread_id = 0);

  // Stores `bytes` once per file and returns their content id (see the contract above). Empty
  // input returns the id of the empty blob and is stored too (one empty frame).
  Result<BlobId> put_blob(std::span<const uint8_t> bytes);
  // Never waits: kWouldBlock (nothing stored) when the bytes do not fit in the queue right now.
  // A blob already in the file always succeeds.
  Result<BlobId> try_put_blob(std::span<const uint8_t> bytes);
  // True when a blob with this id has already been stored (or queued) in this file.
  bool has_blob(const BlobId& id) const;

  // Seals the current call frame and waits until everything queued so far is in the file.
  Status flush();
  // flush(), then writes the index frame and the trailer and closes the file. Idempotent; the
  // first call's result is returned again by later calls. After close() every append fails.
  Status close();

  size_t queued_bytes() const;  // uncompressed bytes queued and not yet written
  WriterCounters counters() const;
  Status status() const;  // OK, or the error that failed the writer
  const std::string& path() const;

  class Impl;

 private:
  explicit Writer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cusnap::format
