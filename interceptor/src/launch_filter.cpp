#include "launch_filter.h"

#include <atomic>
#include <cstring>
#include <string>

#include "capture_range.h"
#include "cusnap/format/kernel_filter_summary.h"
#include "log.h"
#include "session.h"
#include "snapshot.h"

namespace cusnap::icpt {

bool g_kernel_filtered = false;

namespace {

bool g_recorded[kSymbolCount] = {};
std::atomic<bool> g_summary_written{false};

// The entry points a kernel-filtered capture records besides the state calls: the launches the
// filter chooses among, and the calls whose recorders keep the shim's own bookkeeping (host
// functions and the streams waiting on them, stream capture) true.
bool recorded_name(const char* name) {
  static const char* const kExact[] = {
      "cuLaunchKernel",          "cuLaunchKernel_ptsz",       "cuLaunchKernelEx",
      "cuLaunchKernelEx_ptsz",   "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz",
      "cuLaunchHostFunc",        "cuLaunchHostFunc_ptsz",     "cuStreamAddCallback",
      "cuStreamAddCallback_ptsz"};
  for (const char* exact : kExact) {
    if (std::strcmp(name, exact) == 0) return true;
  }
  static const char* const kPrefixes[] = {"cuEventRecord", "cuStreamWaitEvent",
                                          "cuStreamBeginCapture", "cuStreamEndCapture"};
  for (const char* prefix : kPrefixes) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return is_state_name(name);
}

void write_summary() noexcept {
  if (g_summary_written.exchange(true)) return;
  Session* session = Session::current();
  if (session == nullptr || !session->open()) return;
  try {
    session->tool_event(0 /* info */, format::kernel_filter_summary(launch_selection_counts()));
  } catch (...) {
  }
}

}  // namespace

bool configure_launch_filter(const capture::CaptureConfig& config) noexcept {
  try {
    if (!config.kernel_filtered()) return true;
    if (config.snapshots()) {
      log(LogLevel::kError,
          "CUSNAP_KERNEL_NAME and CUSNAP_SNAPSHOT_KERNELS cannot both be set (a kernel-filtered "
          "capture snapshots the launches it records); nothing is recorded");
      return false;
    }
    capture::RangeSettings ranges;
    std::string error;
    if (capture::parse_range_settings(config, ranges, error) && ranges.active()) {
      log(LogLevel::kError,
          "CUSNAP_KERNEL_NAME cannot be combined with CUSNAP_CAPTURE_RANGE (a kernel-filtered "
          "capture is one file of the selected launches); nothing is recorded");
      return false;
    }
    for (size_t id = 0; id < kSymbolCount; ++id) g_recorded[id] = recorded_name(kSymbolNames[id]);
    g_kernel_filtered = true;
    return true;
  } catch (...) {
    log(LogLevel::kError, "cannot configure the kernel filter: out of memory; nothing is recorded");
    return false;
  }
}

bool launch_filter_skips(SymbolId id) noexcept { return g_kernel_filtered && !g_recorded[id]; }

void launch_filter_recorded() noexcept {
  if (!launch_selection_exhausted()) return;
  write_summary();
  stop_recording();  // nothing more is recorded: every call takes the fast path
}

void launch_filter_at_close() noexcept { write_summary(); }

}  // namespace cusnap::icpt
