#include "driver/stats.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "cusnap/common/json_writer.h"
#include "driver/log.h"

namespace cusnap::emu::driver {
namespace {

struct Tally {
  uint64_t count = 0;
  uint64_t bytes = 0;
  void add(uint64_t n) {
    ++count;
    bytes += n;
  }
};

constexpr const char* kCopyNames[] = {"hostToDevice", "deviceToHost", "deviceToDevice",
                                      "hostToHost"};
constexpr const char* kAllocationNames[] = {"device",  "hostPinned",     "hostRegistered",
                                            "managed", "moduleVariable", "vmm"};
constexpr size_t kAllocationKinds = sizeof kAllocationNames / sizeof kAllocationNames[0];

// What the launches of one kernel executed (filled when they finish, not when they are queued).
struct Execution {
  uint64_t launches = 0;
  uint64_t warp_instructions = 0;
  uint64_t thread_instructions = 0;
  double seconds = 0;
};

struct Counts {
  std::map<std::string, uint64_t, std::less<>> launches;  // successful, per kernel name
  std::map<std::string, Execution, std::less<>> executions;
  uint64_t launches_failed = 0;
  Tally copies[4];
  Tally memsets;
  uint64_t profiler_starts = 0, profiler_stops = 0;
  Tally allocations[kAllocationKinds];
  Tally frees[kAllocationKinds];
};

class Stats {
 public:
  Stats() {
    const char* path = std::getenv("CUSNAP_EMU_STATS");
    if (path == nullptr || *path == '\0') return;
    pattern_ = path;
    enabled_ = true;
    ::pthread_atfork(nullptr, nullptr, [] { instance().reset_in_child(); });
  }

  // Never destroyed: a driver call made by another library's destructor after ours still finds
  // a live object (it is counted, but the file has been written by then).
  static Stats& instance() {
    static Stats* stats = new Stats();
    return *stats;
  }

  bool enabled() const { return enabled_; }
  template <class Update>
  void update(Update&& update) {
    std::lock_guard lock(mutex_);
    update(counts_);
  }

 private:
  friend void write_stats_at_exit();

  // After fork() only the calling thread exists, so the lock may be held by a thread that is
  // gone: start over with a fresh one and no counts (the child reports its own calls).
  void reset_in_child() {
    new (&mutex_) std::mutex();
    counts_ = Counts();
  }

  std::string file_name() const {
    std::string out;
    for (size_t i = 0; i < pattern_.size(); ++i) {
      if (pattern_[i] == '%' && i + 1 < pattern_.size() && pattern_[i + 1] == 'p') {
        out += std::to_string(static_cast<long>(::getpid()));
        ++i;
      } else {
        out += pattern_[i];
      }
    }
    return out;
  }

  static void tally(common::JsonWriter& j, const Tally& t) {
    j.begin_object().key("count").num(t.count).key("bytes").num(t.bytes).end_object();
  }

  // The document docs/schemas/emulator-stats.md describes, through cusnap's one JSON writer.
  std::string json() const {
    common::JsonWriter j(2);
    j.begin_object();
    j.key("pid").num(static_cast<long>(::getpid()));
    uint64_t launched = 0;
    for (const auto& entry : counts_.launches) launched += entry.second;
    j.key("launches").begin_object();
    j.key("total").num(launched + counts_.launches_failed);
    j.key("succeeded").num(launched);
    j.key("failed").num(counts_.launches_failed);
    j.key("kernels").begin_object();
    for (const auto& [name, count] : counts_.launches) j.key(name).num(count);
    j.end_object();
    j.end_object();
    j.key("execution").begin_object();
    for (const auto& [name, e] : counts_.executions) {
      j.key(name).begin_object();
      j.key("launches").num(e.launches);
      j.key("warpInstructions").num(e.warp_instructions);
      j.key("threadInstructions").num(e.thread_instructions);
      j.key("seconds").real(e.seconds);
      j.end_object();
    }
    j.end_object();
    j.key("copies").begin_object();
    for (size_t i = 0; i < 4; ++i) tally(j.key(kCopyNames[i]), counts_.copies[i]);
    j.end_object();
    tally(j.key("memsets"), counts_.memsets);
    j.key("profiler").begin_object();
    j.key("starts").num(counts_.profiler_starts);
    j.key("stops").num(counts_.profiler_stops);
    j.end_object();
    for (const char* section : {"allocations", "frees"}) {
      const Tally* tallies = section[0] == 'a' ? counts_.allocations : counts_.frees;
      j.key(section).begin_object();
      for (size_t i = 0; i < kAllocationKinds; ++i) tally(j.key(kAllocationNames[i]), tallies[i]);
      j.end_object();
    }
    j.end_object();
    return j.take() + "\n";
  }

  void write() noexcept {
    if (!enabled_) return;
    try {
      std::string text;
      {
        std::lock_guard lock(mutex_);
        text = json();
      }
      std::string name = file_name();
      std::string temporary = name + ".tmp" + std::to_string(static_cast<long>(::getpid()));
      int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) {
        log(LogLevel::kError, "CUSNAP_EMU_STATS: cannot create %s", temporary.c_str());
        return;
      }
      size_t done = 0;
      while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      ::close(fd);
      if (done != text.size() || ::rename(temporary.c_str(), name.c_str()) != 0) {
        log(LogLevel::kError, "CUSNAP_EMU_STATS: cannot write %s", name.c_str());
        ::unlink(temporary.c_str());
      }
    } catch (...) {
    }
  }

  bool enabled_ = false;
  std::string pattern_;
  std::mutex mutex_;
  Counts counts_;
};

// Constructed when the library loads; the file is written by the library destructor at exit,
// after the application's last driver call.
Stats& g_stats = Stats::instance();

__attribute__((destructor)) void write_stats_at_exit() { g_stats.write(); }

size_t allocation_index(AllocationKind kind) {
  size_t index = static_cast<size_t>(kind);
  return index < kAllocationKinds ? index : 0;
}

}  // namespace

bool stats_enabled() noexcept { return g_stats.enabled(); }

void note_launch(std::string_view kernel, bool succeeded) noexcept {
  if (!g_stats.enabled()) return;
  try {
    g_stats.update([&](Counts& c) {
      if (!succeeded) {
        ++c.launches_failed;
        return;
      }
      auto it = c.launches.find(kernel);
      if (it == c.launches.end()) it = c.launches.emplace(std::string(kernel), 0).first;
      ++it->second;
    });
  } catch (...) {
  }
}

void note_execution(std::string_view kernel, uint64_t warp_instructions,
                    uint64_t thread_instructions, double seconds) noexcept {
  if (!g_stats.enabled()) return;
  try {
    g_stats.update([&](Counts& c) {
      auto it = c.executions.find(kernel);
      if (it == c.executions.end())
        it = c.executions.emplace(std::string(kernel), Execution{}).first;
      Execution& e = it->second;
      ++e.launches;
      e.warp_instructions += warp_instructions;
      e.thread_instructions += thread_instructions;
      e.seconds += seconds;
    });
  } catch (...) {
  }
}

void note_copy(CopyDirection direction, uint64_t bytes) noexcept {
  if (!g_stats.enabled()) return;
  g_stats.update([&](Counts& c) { c.copies[static_cast<size_t>(direction) & 3].add(bytes); });
}

void note_memset(uint64_t bytes) noexcept {
  if (!g_stats.enabled()) return;
  g_stats.update([&](Counts& c) { c.memsets.add(bytes); });
}

void note_profiler(bool start) noexcept {
  if (!g_stats.enabled()) return;
  g_stats.update([&](Counts& c) { ++(start ? c.profiler_starts : c.profiler_stops); });
}

void note_allocation(AllocationKind kind, uint64_t bytes) noexcept {
  if (!g_stats.enabled()) return;
  g_stats.update([&](Counts& c) { c.allocations[allocation_index(kind)].add(bytes); });
}

void note_free(AllocationKind kind, uint64_t bytes) noexcept {
  if (!g_stats.enabled()) return;
  g_stats.update([&](Counts& c) { c.frees[allocation_index(kind)].add(bytes); });
}

}  // namespace cusnap::emu::driver
