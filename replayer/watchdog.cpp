#include "replayer/watchdog.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "replayer/timing.h"

namespace cusnap::replayer {
namespace {

using Clock = std::chrono::steady_clock;

// How often the watchdog looks at the clock while nothing changes: a limit is noticed at most
// this late.
constexpr auto kTick = std::chrono::milliseconds(50);

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string seconds_text(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g s", s);
  return buffer;
}

std::optional<LaunchRef> launch_of(const Action* a) {
  if (a == nullptr) return std::nullopt;
  // A graph launch runs as a whole: "launch #<its index> of graph".
  if (const auto* graph = std::get_if<GraphExecOp>(&a->op))
    return LaunchRef{a->seq, graph->launch_index, "graph"};
  const auto* op = std::get_if<LaunchOp>(&a->op);
  if (op == nullptr) return std::nullopt;
  return LaunchRef{a->seq, op->ordinal, op->kernel_name};
}

std::string describe(const LaunchRef& l) {
  return "launch #" + std::to_string(l.ordinal) + " of " +
         (l.kernel.empty() ? std::string("?") : demangle(l.kernel)) + " (call " +
         std::to_string(l.seq) + ")";
}

}  // namespace

Watchdog::Watchdog(double launch_seconds, double total_seconds, const Plan& plan,
                   TimeoutHandler handler)
    : launch_limit_(launch_seconds > 0 ? launch_seconds : 0),
      total_limit_(total_seconds > 0 ? total_seconds : 0),
      plan_(plan),
      handler_(std::move(handler)),
      started_(Clock::now()) {
  if (launch_limit_ > 0 || total_limit_ > 0) thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::launch_started(const Action& action, unsigned runs) {
  if (!thread_.joinable()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  launch_ = &action;
  launch_started_ = Clock::now();
  launch_budget_ = launch_limit_ * std::max(runs, 1u);
}

void Watchdog::launch_ended() {
  if (!thread_.joinable()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  launch_ = nullptr;
}

void Watchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (total_limit_ > 0) {
      double elapsed = seconds_since(started_);
      if (elapsed >= total_limit_) {
        const Action* last = launch_ != nullptr ? launch_ : last_launch_.load();
        lock.unlock();
        expire(false, total_limit_, elapsed, last);
      }
    }
    if (launch_ != nullptr && launch_limit_ > 0) {
      double elapsed = seconds_since(launch_started_);
      if (elapsed >= launch_budget_) {
        const Action* hung = launch_;
        double budget = launch_budget_;
        lock.unlock();
        expire(true, budget, elapsed, hung);
      }
    }
    wake_.wait_for(lock, kTick);
  }
}

void Watchdog::expire(bool per_launch, double limit, double elapsed, const Action* launch) {
  TimeoutEvent event;
  event.per_launch = per_launch;
  event.limit_seconds = limit;
  event.elapsed_seconds = elapsed;
  event.launch = launch_of(launch);
  const Action* current = current_.load();
  event.in_call = current != nullptr;
  if (current != nullptr) {
    event.call = current->seq;
    event.record = operation_name(current->op);
  }
  event.calls_done = done_.load();
  event.calls_total = plan_.actions.size();
  std::string progress = std::to_string(event.calls_done) + " of " +
                         std::to_string(event.calls_total) + " calls replayed";
  if (per_launch) {
    event.message = describe(*event.launch) + " did not end within " + seconds_text(limit) +
                    " (--timeout-launch); " + progress + "; exiting without waiting for the driver";
  } else {
    event.message = "the replay did not end within " + seconds_text(limit) + " (--timeout); ";
    if (event.in_call) {
      event.message += "replaying call " + std::to_string(event.call) + " (" + event.record + ")";
    } else {
      event.message += event.calls_done == 0 ? "before the first call" : "after the last call";
    }
    event.message += ", " + progress;
    if (event.launch) event.message += "; last launch issued: " + describe(*event.launch);
    event.message += "; exiting without waiting for the driver";
  }
  if (handler_) handler_(event);
  std::fprintf(stderr, "cusnap replay: timeout: %s\n", event.message.c_str());
  std::fflush(stderr);
  std::_Exit(kTimeoutExitCode);
}

}  // namespace cusnap::replayer
