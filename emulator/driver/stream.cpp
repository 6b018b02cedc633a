#include "driver/stream.h"

#include <algorithm>
#include <atomic>
#include <exception>

#include "driver/graph.h"
#include "driver/log.h"

namespace cusnap::emu::driver {

void Timeline::wait_for(uint64_t seq) const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return completed_ >= seq; });
}

bool Timeline::reached(uint64_t seq) const {
  std::lock_guard lock(mutex_);
  return completed_ >= seq;
}

uint64_t Timeline::time_of(uint64_t seq) const {
  std::lock_guard lock(mutex_);
  if (seq == 0 || seq > end_ns_.size()) return 0;
  return end_ns_[seq - 1];
}

void Timeline::complete(uint64_t seq, uint64_t end_ns) {
  {
    std::lock_guard lock(mutex_);
    end_ns_.resize(seq, end_ns);
    end_ns_[seq - 1] = end_ns;
    completed_ = seq;
  }
  changed_.notify_all();
}

namespace {
std::atomic<unsigned long long> g_next_stream_id{1};
thread_local uint64_t t_operation_start_ns = 0;
}  // namespace

uint64_t current_operation_start_ns() { return t_operation_start_ns; }

Stream::Stream(Context* context, StreamKind kind, unsigned flags, int priority)
    : context_(context), kind_(kind), flags_(flags), priority_(priority), id_(g_next_stream_id++) {
  worker_ = std::thread([this] { run(); });
}

Stream::~Stream() {
  capture_forget_stream(this);
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  if (worker_.joinable()) worker_.join();
}

uint64_t Stream::enqueue(Work work, std::vector<Dependency> deps) {
  uint64_t seq;
  {
    std::lock_guard lock(mutex_);
    seq = ++enqueued_;
    queue_.push_back(Op{seq, std::move(work), std::move(deps)});
  }
  work_ready_.notify_one();
  return seq;
}

uint64_t Stream::last_enqueued() const {
  std::lock_guard lock(mutex_);
  return enqueued_;
}

Dependency Stream::tail() const { return Dependency{timeline_, last_enqueued()}; }

void Stream::synchronize() const { timeline_->wait_for(last_enqueued()); }

StreamHints Stream::hints() const {
  std::lock_guard lock(mutex_);
  return hints_;
}

void Stream::set_hints(const StreamHints& hints) {
  std::lock_guard lock(mutex_);
  hints_ = hints;
}

bool Stream::idle() const { return timeline_->reached(last_enqueued()); }

void Stream::run() {
  for (;;) {
    Op op;
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    uint64_t start = clock_ns_;
    for (const Dependency& dep : op.deps) {
      if (!dep.timeline || dep.seq == 0) continue;
      dep.timeline->wait_for(dep.seq);
      start = std::max(start, dep.timeline->time_of(dep.seq));
    }
    uint64_t duration = 0;
    t_operation_start_ns = start;
    try {
      if (op.work) duration = op.work();
    } catch (const std::exception& e) {
      log(LogLevel::kError, "stream %llu: operation %llu failed: %s", id_,
          static_cast<unsigned long long>(op.seq), e.what());
    } catch (...) {
      log(LogLevel::kError, "stream %llu: operation %llu failed", id_,
          static_cast<unsigned long long>(op.seq));
    }
    clock_ns_ = start + duration;
    timeline_->complete(op.seq, clock_ns_);
  }
}

}  // namespace cusnap::emu::driver
