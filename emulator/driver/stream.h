// Streams, their timelines, and events.
//
// Each stream has one worker thread that runs its operations in order, asynchronously to the
// host. Ordering between streams (legacy default stream semantics, cuStreamWaitEvent) is
// expressed as dependencies on another stream's Timeline: "do not start before operation N of
// that stream has completed". Dependencies only ever point at work enqueued earlier, so no
// cycle (and no deadlock) can form.
//
// Time is emulated: every operation reports a duration in nanoseconds (a kernel's
// LaunchResult::emulated_ns, a copy's modelled size / bandwidth) and starts when its stream and
// its dependencies are done, so event timings are deterministic whatever the host does.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "generated_driver_api.h"

namespace cusnap::emu::driver {

class Context;

// The completion record of one stream's operations; shared so that dependents and events can
// outlive the stream.
class Timeline {
 public:
  void wait_for(uint64_t seq) const;
  bool reached(uint64_t seq) const;
  // Emulated completion time of operation `seq` (which must have completed); 0 for seq 0.
  uint64_t time_of(uint64_t seq) const;
  void complete(uint64_t seq, uint64_t end_ns);

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  uint64_t completed_ = 0;
  std::vector<uint64_t> end_ns_;  // end_ns_[seq - 1]
};

struct Dependency {
  std::shared_ptr<const Timeline> timeline;
  uint64_t seq = 0;
};

enum class StreamKind : uint8_t { kLegacy, kPerThread, kUser };

// The stream attributes other than the priority (cuStreamSetAttribute): caching, scheduling and
// memory-fence hints. They are stored and answered; nothing the emulator computes depends on them.
struct StreamHints {
  CUaccessPolicyWindow access_policy_window{};  // zero: no window
  CUsynchronizationPolicy sync_policy = CU_SYNC_POLICY_AUTO;
  CUlaunchMemSyncDomain mem_sync_domain = CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT;
  CUlaunchMemSyncDomainMap mem_sync_domain_map{0, 1};  // default -> domain 0, remote -> 1
};

class Stream {
 public:
  // Runs the operation on the worker thread and returns its emulated duration in ns.
  using Work = std::function<uint64_t()>;

  Stream(Context* context, StreamKind kind, unsigned flags, int priority);
  ~Stream();  // finishes queued work, then joins the worker
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Queues `work` after everything queued before and after `deps`; returns its sequence number.
  uint64_t enqueue(Work work, std::vector<Dependency> deps);
  uint64_t last_enqueued() const;
  Dependency tail() const;  // "everything enqueued so far"
  void synchronize() const;
  void wait_for(uint64_t seq) const { timeline_->wait_for(seq); }
  bool idle() const;

  Context* context() const { return context_; }
  StreamKind kind() const { return kind_; }
  unsigned flags() const { return flags_; }
  int priority() const { return priority_.load(); }
  void set_priority(int priority) { priority_.store(priority); }
  StreamHints hints() const;
  void set_hints(const StreamHints& hints);
  unsigned long long id() const { return id_; }
  // Blocking streams synchronise with the legacy default stream.
  bool blocking() const {
    return kind_ != StreamKind::kLegacy && (flags_ & CU_STREAM_NON_BLOCKING) == 0;
  }

 private:
  struct Op {
    uint64_t seq;
    Work work;
    std::vector<Dependency> deps;
  };
  void run();

  Context* context_;
  StreamKind kind_;
  unsigned flags_;
  std::atomic<int> priority_;
  unsigned long long id_;
  StreamHints hints_;  // guarded by mutex_
  std::shared_ptr<Timeline> timeline_ = std::make_shared<Timeline>();
  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<Op> queue_;
  uint64_t enqueued_ = 0;
  uint64_t clock_ns_ = 0;  // worker-only
  bool stopping_ = false;
  std::thread worker_;
};

// On a stream's worker, inside an operation: the emulated time (ns) the operation started at
// (kernels read it as the base of %globaltimer). 0 elsewhere.
uint64_t current_operation_start_ns();

struct Event {
  unsigned flags = 0;
  const Context* context = nullptr;  // current at creation; only compared, never dereferenced
  std::mutex mutex;
  bool recorded = false;
  Dependency point;  // the recorded position in a stream
};

}  // namespace cusnap::emu::driver
