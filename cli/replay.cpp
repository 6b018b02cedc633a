// `cusnap replay CAPTURE [options]` (docs/replay.md).
#include "replay.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "common.h"
#include "replayer/replay.h"
#include "replayer/report.h"

namespace cusnap::cli {
namespace {

using namespace cusnap::replayer;

struct Options {
  std::string file;
  std::string driver = "auto";
  int device = 0;
  std::string verify = "checksum";
  std::string address_mode = "same";
  unsigned repeat = 1;
  unsigned warmup = 0;
  std::string cache_control = "all";
  std::string kernel_name;
  uint64_t launch_skip = 0;
  uint64_t launch_count = 0;
  bool no_timing = false;
  bool no_nvtx = false;
  std::string report;
  std::string progress = "auto";
  bool quiet = false;
};

int exit_code_for_error(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::kCapture: return kExitCorrupt;
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kIo: return kExitUsageOrIo;
    default: return kExitReplayFailed;
  }
}

std::string mib(uint64_t bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buffer;
}

void print_summary(const ReplayResult& r, const ReplayOptions& options) {
  std::printf("capture   %s (%s)\n", r.capture_path.c_str(), r.plan.integrity.c_str());
  std::printf("driver    %s (%s), version %d\n", r.target.driver_path.c_str(), r.target.driver_reason.c_str(),
              r.target.driver_version);
  std::printf("device    %d: %s (compute capability %d.%d)\n", r.target.device, r.target.device_name.c_str(), r.target.cc_major,
              r.target.cc_minor);
  std::printf("memory    %zu range(s), %s mapped, %s\n", r.memory_ranges, mib(r.mapped_bytes).c_str(),
              r.relocated_ranges == 0 ? "all at their captured addresses"
                                      : (std::to_string(r.relocated_ranges) + " RELOCATED").c_str());
  uint64_t skipped = 0;
  for (const auto& [kind, count] : r.plan.skipped) skipped += count;
  std::printf("replayed  %llu call(s), %zu launch(es); %llu record(s) not replayed\n",
              static_cast<unsigned long long>(r.actions_replayed), r.launches.size(),
              static_cast<unsigned long long>(skipped));
  if (options.verify == VerifyMode::kNone) {
    std::printf("verify    off\n");
  } else {
    std::printf("verify    %llu matched, %llu mismatched, %llu unverified: %s\n",
                static_cast<unsigned long long>(r.verification.matched),
                static_cast<unsigned long long>(r.verification.mismatched),
                static_cast<unsigned long long>(r.verification.unverified),
                r.matched() ? "MATCHED" : "MISMATCH");
    if (r.verification.first_mismatch) {
      std::printf("first mismatch: %s\n", describe_mismatch(*r.verification.first_mismatch).c_str());
    }
  }
  // Per kernel: timed launches and the median of their medians.
  struct KernelTimes {
    uint64_t launches = 0;
    std::vector<double> medians;
  };
  std::map<std::string, KernelTimes> kernels;
  for (const LaunchReport& l : r.launches) {
    if (l.time.samples == 0) continue;
    KernelTimes& k = kernels[l.kernel.empty() ? "?" : demangle(l.kernel)];
    ++k.launches;
    k.medians.push_back(l.time.median_ms);
  }
  if (!kernels.empty()) {
    std::printf("timing    (per kernel: timed launches, median / min / max of per-launch medians, ms)\n");
    for (auto& [name, k] : kernels) {
      TimeStats s = summarize_times(k.medians);
      std::printf("  %-40s %6llu  %.6f / %.6f / %.6f\n", name.c_str(), static_cast<unsigned long long>(k.launches),
                  s.median_ms, s.min_ms, s.max_ms);
    }
  }
  std::printf("wall      %.3f s\n", r.wall_seconds);
}

void run(const Options& o, int& exit_code) {
  ReplayOptions options;
  options.driver = o.driver;
  options.device = o.device;
  options.verify = o.verify == "none" ? VerifyMode::kNone : VerifyMode::kChecksum;
  options.address_mode = o.address_mode == "relocate" ? AddressMode::kRelocate : AddressMode::kSame;
  options.timing = !o.no_timing;
  options.repeat = o.repeat;
  options.warmup = o.warmup;
  options.cache_control = o.cache_control == "none" ? CacheControl::kNone : CacheControl::kAll;
  options.kernel_regex = o.kernel_name;
  options.launch_skip = o.launch_skip;
  options.launch_count = o.launch_count;
  options.nvtx = !o.no_nvtx;
  options.progress = o.progress == "on" || (o.progress == "auto" && ::isatty(STDERR_FILENO) == 1);
  options.on_message = [](MessageLevel level, const std::string& message) {
    if (level == MessageLevel::kWarning) {
      spdlog::warn("{}", message);
    } else {
      spdlog::info("{}", message);
    }
  };

  auto reader = open_capture(o.file);
  if (!reader) {
    exit_code = report_failure("replay", reader.status());
    return;
  }
  const format::IntegrityReport& recovery = reader.value()->recovery();
  if (recovery.state != format::Integrity::kWhole) {
    spdlog::warn("{}: {}; replaying what it holds", o.file, recovery.summary());
  }
  auto plan = build_plan(*reader.value());
  if (!plan) {
    spdlog::error("cusnap replay: {}", plan.error().to_string());
    exit_code = exit_code_for_error(plan.error());
    return;
  }
  auto result = replay_plan(*reader.value(), plan.value(), options);
  if (!result) {
    spdlog::error("cusnap replay: {}", result.error().to_string());
    exit_code = exit_code_for_error(result.error());
    return;
  }
  if (!o.quiet) print_summary(result.value(), options);
  if (!o.report.empty()) {
    if (auto e = write_report(o.report, result.value(), options)) {
      spdlog::error("cusnap replay: {}", e->to_string());
      exit_code = kExitUsageOrIo;
      return;
    }
  }
  exit_code = result.value().matched() ? kExitOk : kExitMismatch;
}

}  // namespace

void register_replay(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("replay", "Replay a capture on a driver, verify its results, time its launches");
  cmd->add_option("FILE", o->file, "Capture file")->required();
  cmd->add_option("--driver", o->driver, "auto | emulator | PATH to a libcuda.so.1")->capture_default_str();
  cmd->add_option("--device", o->device, "Device ordinal")->capture_default_str();
  cmd->add_option("--verify", o->verify, "checksum: compare device-to-host copies with the capture; none")
      ->check(CLI::IsMember({"checksum", "none"}))
      ->capture_default_str();
  cmd->add_option("--address-mode", o->address_mode,
                  "same: captured device addresses (relocate only what cannot be had); relocate: never")
      ->check(CLI::IsMember({"same", "relocate"}))
      ->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "Timed runs of each selected launch (inputs restored between runs)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed runs before them")->capture_default_str();
  cmd->add_option("--cache-control", o->cache_control, "all: flush L2 between repetitions; none")
      ->check(CLI::IsMember({"all", "none"}))
      ->capture_default_str();
  cmd->add_option("--kernel-name", o->kernel_name,
                  "Select launches of the kernel named NAME (its function name, exactly) or, with "
                  "regex:EXPR, whose name contains a match (Nsight Compute rules)");
  cmd->add_option("--launch-skip", o->launch_skip, "Matching launches to skip before selecting");
  cmd->add_option("--launch-count", o->launch_count, "Launches to select (0: all)");
  cmd->add_flag("--no-timing", o->no_timing, "Do not time launches (no events around them)");
  cmd->add_flag("--no-nvtx", o->no_nvtx, "Do not emit an NVTX range per launch");
  cmd->add_option("--report", o->report, "Write a JSON report (docs/replay.md) to this file");
  cmd->add_option("--progress", o->progress, "Progress line on stderr: auto (when a terminal) | on | off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", o->quiet, "Print no summary (the exit code and --report still tell)");
  cmd->footer(
      "Exit codes: 0 replayed, every verification matched; 5 a verification mismatched; 6 the target "
      "cannot run the capture or a replayed call failed; 1 usage or I/O; 2 truncated; 3 corrupt or "
      "inconsistent capture; 4 not a capture.");
  cmd->callback([o, &exit_code]() { run(*o, exit_code); });
}

}  // namespace cusnap::cli
