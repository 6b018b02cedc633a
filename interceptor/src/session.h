// The capture session of one process: the writer, the file header, and the process-lifetime
// events around them (first cuInit, exit, fatal signals, fork).
//
// Life cycle
// - Created (pending) at the first driver call when CUSNAP_CAPTURE_OUTPUT is set. Records made
//   before the application's cuInit returns are kept in memory; the file is opened when cuInit
//   returns (so the header can list the devices without the tool calling cuInit itself), or
//   earlier when a blob must be stored, or at exit.
// - Closed (index and trailer written) by the library destructor at normal exit; on a fatal
//   signal the file is flushed and closed before the previous handler runs.
// - After fork() the child abandons the parent's writer (its threads do not exist in the child)
//   and starts a session of its own with its own file name (cusnap/capture/config.h).
// - Any internal error disables the capture: a captureDisabled event is written, the file is
//   closed, and every later call takes the fast path. The application never notices.
//
// Memory policy: at most CUSNAP_MAX_QUEUED_MB of uncompressed data waits for the disk. With the
// default policy "block", the recording thread waits (the application slows down, nothing is
// lost); with "drop", copy payloads that do not fit are not stored, the copy record says so
// (null payload) and a recordsDropped event counts them.
#pragma once

#include <capnp/message.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "cusnap/capture/config.h"
#include "cusnap/format/blob_id.h"
#include "cusnap/format/writer.h"

namespace cusnap::icpt {

using capture::CaptureConfig;  // the public configuration (cusnap::capture_config)

// What an asynchronous call turned out to produce, learnt in stream order (schema DeferredResult).
struct DeferredResult {
  uint64_t call_seq = 0;
  bool has_host_checksum = false;
  uint64_t host_checksum = 0;  // XXH3-64 of what the application received
  format::BlobId payload;      // bytes a copy read when it executed (null: same as at call time)
  std::string missing;         // non-empty: nothing could be observed, and why
  uint64_t graph_node = 0;     // call_seq is a graph launch: the memcpy node this is about
};

// One chunk of a memory snapshot (schema MemoryChunk).
struct SnapshotChunk {
  uint64_t address = 0;
  uint64_t size = 0;
  format::BlobId blob;
  bool hash_only = false;
};

class Session {
 public:
  explicit Session(CaptureConfig config);

  // The process's session, or nullptr when nothing is recorded (never deleted once created).
  static Session* current() noexcept;
  // Creates the process's session if the configuration asks for one; called once at start-up.
  static void start(const CaptureConfig& config) noexcept;

  // Appends a call record; returns its seq, or UINT64_MAX when it was only buffered (before the
  // file exists) or could not be written.
  uint64_t append(capnp::MessageBuilder& record) noexcept;
  // The same with the record's root at hand (the recording hot path).
  uint64_t append(capnp::MessageBuilder& record, format::schema::CallRecord::Builder root) noexcept;
  // A launch record as plain fields: the writer builds the message off this thread.
  uint64_t append_launch(const format::LaunchFields& fields) noexcept;
  // Stores bytes once; the null id when they could not be stored (disabled, dropped by policy).
  format::BlobId put_blob(std::span<const uint8_t> bytes) noexcept;
  // A tool event (ToolEvent::Kind value) about the call `related_seq` (UINT64_MAX: none).
  void tool_event(uint16_t kind, const std::string& message,
                  uint64_t related_seq = UINT64_MAX) noexcept;
  // A DeferredResult record completing the call `result.call_seq` (see the schema).
  void deferred_result(const DeferredResult& result) noexcept;

  // A memorySnapshot record for the launch `launch_seq` (`skipped` non-empty: none taken, why).
  void memory_snapshot(bool after_launch, uint64_t launch_seq, uint64_t launch_ordinal,
                       const std::vector<SnapshotChunk>& chunks,
                       const std::string& skipped) noexcept;

  // A globalGet record made by the tool (byTool): module variable `name` of `module` is `size`
  // bytes at `address` (a memory snapshot covers it; the application never looked it up).
  void tool_global_get(uint64_t module, bool is_library, const std::string& name, uint64_t address,
                       uint64_t size) noexcept;

  // A module image for a module-load record: stored (put_blob) when recording, and kept by the
  // capture ranges' state log while ranges are configured (capture_range.h).
  format::BlobId put_image(std::span<const uint8_t> bytes) noexcept;

  // Capture ranges (capture_range.h): opens the file of range `number` (0: the empty file that
  // says no range started), header included; nullptr when it cannot be created.
  format::Writer* open_range(uint32_t number) noexcept;
  // Closes the range's file; later records go to the state log only.
  void close_range() noexcept;
  // The rangeStart memorySnapshot record (`skipped` non-empty: none taken, why).
  void range_snapshot(const std::vector<SnapshotChunk>& chunks,
                      const std::string& skipped) noexcept;

  // The application's cuInit returned: open the file now.
  void on_driver_initialized() noexcept;
  // Internal error: record it, close the file, stop recording in this process.
  void disable(const std::string& why) noexcept;
  // Leaves format::incomplete_note_path(file) with `why` (once; best effort).
  void note_incomplete(const std::string& why) noexcept;
  // Flush and close (exit). Idempotent.
  void close() noexcept;
  // Flush what is queued (fatal signal), without closing.
  void flush() noexcept;

  const CaptureConfig& config() const { return config_; }
  const std::string& file_name() const { return file_name_; }
  bool open() const { return writer_.load(std::memory_order_acquire) != nullptr; }

 private:
  format::Writer* ensure_open() noexcept;
  template <class KeepPending>
  format::Writer* writer_or_pending(KeepPending&& keep_pending);
  uint64_t appended(const format::Result<uint64_t>& seq) noexcept;
  bool open_locked();
  // Appends a record made by the tool itself (apiName "cusnap"); `fill` sets its union member.
  template <class Fill>
  void append_tool_record(Fill&& fill) noexcept;

  CaptureConfig config_;
  std::mutex mutex_;                              // guards opening and pending_
  std::atomic<format::Writer*> writer_{nullptr};  // never deleted (other threads may hold it)
  std::vector<std::unique_ptr<capnp::MallocMessageBuilder>> pending_;  // before the file exists
  std::string file_name_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> failed_open_{false};
  std::atomic<bool> noted_incomplete_{false};
  std::atomic<uint64_t> dropped_payloads_{0};
  uint32_t range_number_ = 0;  // capture ranges: the range the open file holds
  // Capture ranges: driver version and devices as cuInit's return found them (under mutex_).
  std::unique_ptr<capnp::MallocMessageBuilder> device_header_;
};

// Recording state of the process (fast path switch lives in shim_runtime.h).
bool capture_active() noexcept;
void stop_recording() noexcept;

}  // namespace cusnap::icpt
