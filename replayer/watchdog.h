// Replay time limits (`cusnap replay --timeout-launch S`, `--timeout S`; docs/replay.md).
//
// A kernel that never ends cannot be interrupted from the host portably: the driver call waiting
// for it does not return. The watchdog is a thread of its own that never calls the driver; it
// only watches the clock against what the replay thread tells it (the call being replayed, the
// launch being waited for). When a limit passes it describes what hung and hands that to the
// timeout handler, which must end the process (the CLI prints it and exits with
// kTimeoutExitCode); should the handler return, the watchdog ends the process itself with
// std::_Exit(kTimeoutExitCode), without waiting for the driver or running destructors.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "replayer/plan.h"
#include "replayer/verify.h"

namespace cusnap::replayer {

// The process exit code of a replay that ran past a time limit (docs/cli.md, Exit codes).
inline constexpr int kTimeoutExitCode = 9;

struct TimeoutEvent {
  bool per_launch = false;  // --timeout-launch (else the whole replay's --timeout)
  double limit_seconds = 0;
  double elapsed_seconds = 0;  // of the launch (per_launch) or of the replay
  // The launch that did not end (per_launch) or the last one issued; none before the first.
  std::optional<LaunchRef> launch;
  uint64_t call = 0;        // the call being replayed when the limit passed
  std::string record;       // its record kind ("launch", "memcpy", ...)
  bool in_call = false;     // false: before the first call or after the last (final sync)
  uint64_t calls_done = 0;  // calls replayed before it
  uint64_t calls_total = 0;
  // "launch #3 of spin (call 7) did not end within 2 s (--timeout-launch); ..."
  std::string message;
};
using TimeoutHandler = std::function<void(const TimeoutEvent&)>;

class Watchdog {
 public:
  // No thread unless a limit is set (> 0 seconds). `plan` outlives the watchdog.
  Watchdog(double launch_seconds, double total_seconds, const Plan& plan, TimeoutHandler handler);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The replay thread is about to replay `action` (index `done` in the plan).
  void at_call(const Action& action, uint64_t done) {
    if (!thread_.joinable()) return;
    current_.store(&action, std::memory_order_relaxed);
    done_.store(done, std::memory_order_relaxed);
  }
  void at_end() {
    if (!thread_.joinable()) return;
    current_.store(nullptr, std::memory_order_relaxed);
    done_.store(plan_.actions.size(), std::memory_order_relaxed);
  }
  // With a launch limit the replay thread waits for each launch to end (launch_limited()):
  // between these two calls the launch of `action`, run `runs` times, must end within
  // runs x the limit.
  bool launch_limited() const { return launch_limit_ > 0; }
  void launch_started(const Action& action, unsigned runs);
  void launch_ended();
  // The last launch issued (named by the whole-replay limit).
  void launch_issued(const Action& action) {
    if (thread_.joinable()) last_launch_.store(&action, std::memory_order_relaxed);
  }

 private:
  void watch();
  [[noreturn]] void expire(bool per_launch, double limit, double elapsed, const Action* launch);

  const double launch_limit_;
  const double total_limit_;
  const Plan& plan_;
  TimeoutHandler handler_;
  const std::chrono::steady_clock::time_point started_;

  std::atomic<const Action*> current_{nullptr};
  std::atomic<uint64_t> done_{0};
  std::atomic<const Action*> last_launch_{nullptr};

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  const Action* launch_ = nullptr;  // armed launch (mutex_)
  std::chrono::steady_clock::time_point launch_started_{};
  double launch_budget_ = 0;  // seconds
  std::thread thread_;
};

}  // namespace cusnap::replayer
