// `cusnap replay CAPTURE [options]` (docs/replay.md).
#include "replay.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <system_error>

#include "common.h"
#include "cusnap/format/kernel_filter_summary.h"
#include "replayer/replay.h"
#include "replayer/report.h"

namespace cusnap::cli {
namespace {

using namespace cusnap::replayer;

// The watchdog ends the process itself with its code should a handler return.
static_assert(kExitTimeout == kTimeoutExitCode);

struct Options {
  std::string file;
  std::string driver = "auto";
  int device = 0;
  std::string verify = "checksum";
  std::string address_mode = "same";
  std::string repeat = "1";  // N or auto
  unsigned warmup = 0;
  std::string cache_control = "all";
  std::string timing_mode;  // cold | hot: --cache-control all | none, NVBench's names
  unsigned min_samples = 10;
  double max_noise_percent = 0.5;
  double min_time = 0;
  double max_time = 10;
  std::string save_outputs;
  bool cache_control_given = false;
  std::string kernel_name;
  std::string kernel_name_base = "function";
  uint64_t launch_skip = 0;
  uint64_t launch_count = 0;
  bool no_timing = false;
  bool no_nvtx = false;
  bool serialize = false;
  std::string graph_timing = "graph";
  std::string report;
  std::string progress = "auto";
  bool quiet = false;
  bool allow_corrupt = false;
  std::vector<std::string> tolerances;
  bool allow_unverified = false;
  double timeout_launch = 0;
  double timeout = 0;
};

int exit_code_for_error(const Error& e) {
  // The driver's own watchdog (the emulator's CUSNAP_EMU_TIMEOUT, a display watchdog) stopped a
  // launch: a timeout like the replayer's own.
  if (is_launch_timeout(e)) return kExitTimeout;
  switch (e.kind()) {
    case ErrorKind::kCapture:
      return kExitCorrupt;
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kIo:
      return kExitUsageOrIo;
    default:
      return kExitReplayFailed;
  }
}

// The replay ran to its end: what it proved decides (docs/cli.md, Exit codes). A mismatch
// outranks everything; a selection that selected nothing is a usage mistake the user must see
// even when the rest verified.
int exit_code_for_result(const ReplayResult& r, const ReplayOptions& options,
                         bool allow_unverified) {
  if (r.verdict() == Verdict::kMismatched) return kExitMismatch;
  if (r.selection_requested && r.selected_launches() == 0) return kExitNothingSelected;
  if (r.verdict() == Verdict::kNothingVerified && options.verify == VerifyMode::kChecksum &&
      !allow_unverified) {
    return kExitNothingVerified;
  }
  return kExitOk;
}

std::string mib(uint64_t bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buffer;
}

std::string hex(uint64_t v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(v));
  return buffer;
}

// "0x7f..0040 (allocation 0x7f..0000 + 0x40, device)" or just the address.
std::string where(uint64_t address, const std::optional<AllocationRef>& allocation) {
  if (!allocation) return hex(address);
  return hex(address) + " (" + allocation->kind + " " + hex(allocation->address) + " + " +
         hex(address - allocation->address) + ")";
}

void print_snapshots(const ReplayResult& r) {
  const PlanSummary& p = r.plan;
  const SnapshotResults& s = r.snapshots;
  if (p.extract) {
    std::printf("extracted launch #%llu of %s (call %llu of %s): %llu input byte(s) restored\n",
                static_cast<unsigned long long>(p.extract->source_launch_ordinal),
                demangle(p.extract->kernel).c_str(),
                static_cast<unsigned long long>(p.extract->source_launch_seq),
                p.extract->source_path.c_str(), static_cast<unsigned long long>(s.restored_bytes));
  }
  if (p.kernel_filter) {
    const KernelFilterSummary& k = *p.kernel_filter;
    std::string counts = k.counts ? format::kernel_filter_counts_text(*k.counts)
                                  : std::string("no closing summary (the capture ended early)");
    std::printf("kernel-filtered capture: %s; %s; each launch starts from its captured inputs\n",
                k.filter.c_str(), counts.c_str());
  }
  if (p.snapshots == 0 && p.skipped_snapshots.empty()) return;
  for (const SkippedSnapshot& k : p.skipped_snapshots) {
    std::printf("snapshot  launch #%llu (call %llu) %s not compared: %s\n",
                static_cast<unsigned long long>(k.launch_ordinal),
                static_cast<unsigned long long>(k.launch_seq), k.phase.c_str(), k.reason.c_str());
  }
  if (s.compared_chunks == 0) {
    std::printf("snapshots nothing compared (%llu snapshot record(s))\n",
                static_cast<unsigned long long>(p.snapshots));
    return;
  }
  std::string tolerated;
  if (s.within_tolerance_chunks > 0) {
    tolerated = " (" + std::to_string(s.within_tolerance_chunks) + " within the tolerance)";
  }
  if (s.ok()) {
    std::printf("snapshots %llu snapshot chunk(s) compared, all match%s\n",
                static_cast<unsigned long long>(s.compared_chunks), tolerated.c_str());
    return;
  }
  std::string order;
  if (s.order_dependent_checks > 0) {
    const auto failed = static_cast<uint64_t>(std::count_if(
        s.checks.begin(), s.checks.end(), [](const SnapshotCheck& c) { return !c.ok(); }));
    order = failed == s.order_dependent_checks
                ? " (order-dependent)"
                : " (" + std::to_string(s.order_dependent_checks) + " of " +
                      std::to_string(failed) + " snapshot(s) after an order-dependent kernel)";
  }
  std::printf("snapshots %llu snapshot chunk(s) compared, %llu MISMATCHED%s%s\n",
              static_cast<unsigned long long>(s.compared_chunks),
              static_cast<unsigned long long>(s.mismatched_chunks), tolerated.c_str(),
              order.c_str());
  for (const SnapshotCheck& c : s.checks) {
    for (const ChunkMismatch& m : c.mismatches) {
      if (m.within_tolerance) continue;
      std::printf("  mismatch: %s of launch #%llu %s (call %llu): chunk at %s, %llu bytes",
                  snapshot_phase_name(c.phase), static_cast<unsigned long long>(c.launch_ordinal),
                  demangle(c.kernel).c_str(), static_cast<unsigned long long>(c.launch_seq),
                  where(m.address, m.allocation).c_str(), static_cast<unsigned long long>(m.size));
      if (m.bytes_known) {
        std::printf("; %llu byte(s) differ, first at %s: expected 0x%02x, got 0x%02x\n",
                    static_cast<unsigned long long>(m.differing_bytes),
                    where(m.first_difference, m.allocation).c_str(), m.expected_byte,
                    m.actual_byte);
      } else {
        std::printf("; only its hash was captured (expected %s, got %s)\n",
                    m.expected.to_hex().c_str(), m.actual.to_hex().c_str());
      }
      if (!m.note.empty()) std::printf("    %s\n", m.note.c_str());
      if (&m == &c.mismatches.front() && !c.order_dependent.empty())
        std::printf("    %s\n", describe_order_dependence(c.order_dependent).substr(2).c_str());
      if (!m.tolerance_text.empty()) {
        std::printf("    tolerance %s: %llu of %llu element(s) outside it; worst:\n",
                    m.tolerance_text.c_str(), static_cast<unsigned long long>(m.elements.over),
                    static_cast<unsigned long long>(m.elements.elements));
        for (const ElementError& e : m.elements.worst) {
          if (e.within) break;
          std::printf("      [%llu] at %s: expected %.9g, got %.9g (error %.3g, %llu ulp)\n",
                      static_cast<unsigned long long>(e.index), hex(e.address).c_str(), e.expected,
                      e.actual, e.abs_error, static_cast<unsigned long long>(e.ulp));
        }
      }
    }
    if (c.mismatched_chunks > c.mismatches.size()) {
      std::printf("  ... and more in the snapshot of call %llu (see --report)\n",
                  static_cast<unsigned long long>(c.seq));
    }
  }
}

void print_summary(const ReplayResult& r, const ReplayOptions& options) {
  std::printf("capture   %s (%s)\n", r.capture_path.c_str(), r.plan.integrity.c_str());
  std::printf("driver    %s (%s), version %d\n", r.target.driver_path.c_str(),
              r.target.driver_reason.c_str(), r.target.driver_version);
  std::printf("device    %d: %s (compute capability %d.%d)\n", r.target.device,
              r.target.device_name.c_str(), r.target.cc_major, r.target.cc_minor);
  std::printf(
      "memory    %zu range(s), %s mapped, %s\n", r.memory_ranges, mib(r.mapped_bytes).c_str(),
      r.relocated_ranges == 0 ? "all at their captured addresses"
      : options.address_mode == AddressMode::kRelocate
          ? (std::to_string(r.relocated_ranges) + " relocated (--address-mode relocate)").c_str()
          : (std::to_string(r.relocated_ranges) + " RELOCATED").c_str());
  uint64_t skipped = 0;
  for (const auto& [kind, count] : r.plan.skipped) skipped += count;
  std::printf("replayed  %llu call(s), %zu launch(es); %llu record(s) not replayed\n",
              static_cast<unsigned long long>(r.actions_replayed), r.launches.size(),
              static_cast<unsigned long long>(skipped));
  if (options.verify == VerifyMode::kNone) {
    std::printf("verify    off\n");
  } else {
    const VerifySummary& v = r.verification;
    // A mismatch after a kernel whose results depend on its blocks' order (the emulator can
    // tell) is named so: it need not be a bug (docs/replay.md, "Order-dependent results").
    const std::string mismatch =
        v.order_dependent == 0 ? "MISMATCH"
        : v.order_dependent == v.mismatched
            ? "MISMATCH (order-dependent)"
            : "MISMATCH (" + std::to_string(v.order_dependent) + " of them order-dependent)";
    std::printf("verify    %llu matched, %llu mismatched, %llu unverified: %s\n",
                static_cast<unsigned long long>(v.matched),
                static_cast<unsigned long long>(v.mismatched),
                static_cast<unsigned long long>(v.unverified),
                !v.ok()                ? mismatch.c_str()
                : r.nothing_verified() ? "nothing verified"
                : v.matched == 0       ? "no copy checksum compared"
                                       : "MATCHED");
    if (r.verification.first_mismatch) {
      std::printf("first mismatch: %s\n",
                  describe_mismatch(*r.verification.first_mismatch).c_str());
    }
  }
  print_snapshots(r);
  if (r.expected_error) {
    const ExpectedErrorCheck& e = *r.expected_error;
    std::printf("outcome   the capture ended with %s at call %llu (%s): ", e.name.c_str(),
                static_cast<unsigned long long>(e.recorded.seq), e.recorded.api.c_str());
    if (e.reproduced) {
      std::printf("reproduced at call %llu", static_cast<unsigned long long>(e.observed_seq));
    } else {
      std::printf("NOT reproduced, the replay got %s", e.observed_name.c_str());
    }
    if (e.calls_not_replayed > 0) {
      std::printf("; %llu call(s) after it not replayed",
                  static_cast<unsigned long long>(e.calls_not_replayed));
    }
    if (e.recorded.later_successful_calls > 0) {
      std::printf("; %llu call(s) that succeeded after it at capture not replayed",
                  static_cast<unsigned long long>(e.recorded.later_successful_calls));
    }
    std::printf("\n");
  }
  if (r.selection_requested) {
    std::printf("selected  %llu launch(es)%s\n",
                static_cast<unsigned long long>(r.selected_launches()),
                r.selected_launches() == 0 ? ": the selection selected NOTHING" : "");
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
    std::printf(
        "timing    (per kernel: timed launches, median / min / max of per-launch medians, ms)\n");
    for (auto& [name, k] : kernels) {
      TimeStats s = summarize_times(k.medians);
      std::printf("  %-40s %6llu  %.6f / %.6f / %.6f\n", name.c_str(),
                  static_cast<unsigned long long>(k.launches), s.median_ms, s.min_ms, s.max_ms);
    }
  }
  if (options.sampling.adaptive) {
    uint64_t timed = 0, capped = 0, fewest = 0, most = 0;
    for (const LaunchReport& l : r.launches) {
      if (l.time.samples == 0) continue;
      fewest = timed == 0 ? l.time.samples : std::min<uint64_t>(fewest, l.time.samples);
      most = std::max<uint64_t>(most, l.time.samples);
      ++timed;
      if (l.time.cap_hit) ++capped;
    }
    std::printf(
        "sampling  --repeat auto: %llu launch(es), %llu to %llu sample(s) each; %llu "
        "stopped by --max-time before the noise reached %.2f%%\n",
        static_cast<unsigned long long>(timed), static_cast<unsigned long long>(fewest),
        static_cast<unsigned long long>(most), static_cast<unsigned long long>(capped),
        options.sampling.max_noise * 100);
  }
  if (!r.outputs_dir.empty()) {
    std::printf("outputs   %s: %llu file(s) written, %s\n", r.outputs_dir.c_str(),
                static_cast<unsigned long long>(r.outputs_written),
                mib(r.outputs_written_bytes).c_str());
  }
  std::printf("wall      %.3f s\n", r.wall_seconds);
}

// The integrity check of `path` on a thread of its own, through a second reader of the file.
// Not valid (the caller checks on its own reader) where the file cannot be opened twice.
std::future<format::IntegrityReport> verify_concurrently(const std::string& path) {
  auto second = format::Reader::open(path);
  if (!second) return {};
  try {
    return std::async(
        std::launch::async, [r = std::shared_ptr<format::Reader>(std::move(second.value()))]() {
          try {
            return r->verify();
          } catch (const std::exception& e) {  // out of memory, thread start
            format::IntegrityReport failed;
            failed.state = format::Integrity::kCorrupt;
            failed.detail =
                format::Status::error(format::ErrorCode::kIo, std::string("verify: ") + e.what());
            return failed;
          }
        });
  } catch (const std::system_error&) {  // no thread to be had: the caller checks serially
    return {};
  }
}

void run(const Options& o, int& exit_code) {
  ReplayOptions options;
  options.driver = o.driver;
  options.device = o.device;
  options.verify = o.verify == "none" ? VerifyMode::kNone : VerifyMode::kChecksum;
  options.address_mode = o.address_mode == "relocate" ? AddressMode::kRelocate : AddressMode::kSame;
  options.timing = !o.no_timing;
  if (o.repeat == "auto") {
    options.sampling.adaptive = true;
  } else {
    unsigned long n = 0;
    size_t used = 0;
    try {
      n = std::stoul(o.repeat, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != o.repeat.size() || n == 0 || n > 1000000) {
      spdlog::error("cusnap replay: --repeat {}: a number of runs (1 to 1000000) or auto",
                    o.repeat);
      exit_code = kExitUsageOrIo;
      return;
    }
    options.repeat = static_cast<unsigned>(n);
  }
  options.sampling.min_samples = o.min_samples;
  options.sampling.max_noise = o.max_noise_percent / 100;
  options.sampling.min_time_seconds = o.min_time;
  options.sampling.max_time_seconds = o.max_time;
  options.warmup = o.warmup;
  std::string cache_control = o.cache_control;
  if (!o.timing_mode.empty()) {
    std::string implied = o.timing_mode == "hot" ? "none" : "all";
    if (o.cache_control_given && cache_control != implied) {
      spdlog::error("cusnap replay: --timing-mode {} contradicts --cache-control {}", o.timing_mode,
                    cache_control);
      exit_code = kExitUsageOrIo;
      return;
    }
    cache_control = implied;
  }
  options.cache_control = cache_control == "none" ? CacheControl::kNone : CacheControl::kAll;
  options.save_outputs_dir = o.save_outputs;
  options.kernel_regex = o.kernel_name;
  // CLI::IsMember checked the spelling: parse_kernel_name_base cannot fail here.
  options.kernel_name_base = common::parse_kernel_name_base(o.kernel_name_base)
                                 .value_or(common::KernelNameBase::kFunction);
  options.launch_skip = o.launch_skip;
  options.launch_count = o.launch_count;
  options.nvtx = !o.no_nvtx;
  options.serialize = o.serialize;
  options.graph_timing = o.graph_timing == "nodes" ? GraphTiming::kNodes : GraphTiming::kGraph;
  options.timeout_launch_seconds = o.timeout_launch;
  options.timeout_seconds = o.timeout;
  options.on_timeout = [](const TimeoutEvent& event) {
    // On the watchdog thread, while the replay thread may be inside the driver for good: say
    // what hung and end the process now (no report: the result is still being written).
    std::fprintf(stderr, "\n");
    spdlog::error("cusnap replay: timeout: {}", event.message);
    spdlog::default_logger()->flush();
    std::fflush(stdout);
    std::_Exit(kExitTimeout);
  };
  for (const std::string& spec : o.tolerances) {
    auto t = parse_tolerance(spec);
    if (!t) {
      spdlog::error("cusnap replay: {}", t.error().to_string());
      exit_code = kExitUsageOrIo;
      return;
    }
    options.tolerances.push_back(std::move(t.value()));
  }
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
  // What `cusnap verify` calls corrupt is not replayed: checksums only say the bytes are the
  // ones written, and a replay of records that break the format's rules (seqs out of order,
  // records that do not decode, an index that disagrees with the frames) means nothing.
  // The check and the plan each read every record; they run at the same time, on a reader each,
  // and nothing is replayed before both are done (docs/performance.md, "Replay overhead").
  std::future<format::IntegrityReport> verifying = verify_concurrently(o.file);
  auto plan = build_plan(*reader.value());
  format::IntegrityReport checked = verifying.valid() ? verifying.get() : reader.value()->verify();
  if (checked.state == format::Integrity::kCorrupt) {
    if (!o.allow_corrupt) {
      spdlog::error(
          "cusnap replay: {}: {}; not replaying a corrupt capture (--allow-corrupt "
          "replays what it can anyway)",
          o.file, checked.detail.to_string());
      exit_code = kExitCorrupt;
      return;
    }
    spdlog::warn("{}: {}; replaying it anyway (--allow-corrupt)", o.file,
                 checked.detail.to_string());
  }
  const format::IntegrityReport& recovery = reader.value()->recovery();
  if (recovery.state != format::Integrity::kWhole) {
    spdlog::warn("{}: {}; replaying what it holds", o.file, recovery.summary());
  }
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
  exit_code = exit_code_for_result(result.value(), options, o.allow_unverified);
}

}  // namespace

void register_replay(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Replay a capture on a driver, verify its results, time its launches");
  cmd->add_option("FILE", o->file, "Capture file")->required();
  cmd->add_option("--driver", o->driver, "auto | emulator | PATH to a libcuda.so.1")
      ->capture_default_str();
  cmd->add_option("--device", o->device, "Device ordinal")->capture_default_str();
  cmd->add_option("--verify", o->verify,
                  "checksum: compare device-to-host copies with the capture; none")
      ->check(CLI::IsMember({"checksum", "none"}))
      ->capture_default_str();
  cmd->add_option(
         "--address-mode", o->address_mode,
         "same: captured device addresses (relocate only what cannot be had); relocate: never")
      ->check(CLI::IsMember({"same", "relocate"}))
      ->capture_default_str();
  cmd->add_option("--repeat", o->repeat,
                  "Timed runs of each selected launch (inputs restored between runs), or auto: "
                  "sample until --max-noise (NVBench's discipline, docs/replay.md)")
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed runs before them")->capture_default_str();
  CLI::Option* cache = cmd->add_option("--cache-control", o->cache_control,
                                       "all: flush L2 between repetitions; none")
                           ->check(CLI::IsMember({"all", "none"}))
                           ->capture_default_str();
  cmd->add_option("--timing-mode", o->timing_mode,
                  "cold: L2 flushed and inputs restored before every run (--cache-control all); "
                  "hot: inputs restored, L2 kept (--cache-control none)")
      ->check(CLI::IsMember({"cold", "hot"}));
  cmd->add_option("--min-samples", o->min_samples, "--repeat auto: at least this many samples")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-noise", o->max_noise_percent,
                  "--repeat auto: sample until the relative standard error of the mean is at "
                  "most this many percent")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--min-time", o->min_time,
                  "--repeat auto: at least this many seconds of samples (their times added up)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--max-time", o->max_time,
                  "--repeat auto: stop sampling a launch after this many wall-clock seconds (the "
                  "report says the cap was hit)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--save-outputs", o->save_outputs,
                  "Save the bytes of every verified device-to-host copy and afterLaunch snapshot "
                  "chunk in DIR, content-addressed, for `cusnap compare`");
  cmd->add_option("--kernel-name", o->kernel_name,
                  "Select launches of the kernel named NAME (its function name, exactly) or, with "
                  "regex:EXPR, whose name contains a match (Nsight Compute rules)");
  cmd->add_option("--kernel-name-base", o->kernel_name_base,
                  "Name --kernel-name compares: function (demangled, no parameters), demangled, "
                  "mangled")
      ->check(CLI::IsMember({"function", "demangled", "mangled"}))
      ->capture_default_str();
  cmd->add_option("--launch-skip", o->launch_skip, "Matching launches to skip before selecting");
  cmd->add_option("--launch-count", o->launch_count, "Launches to select (0: all)");
  cmd->add_flag("--no-timing", o->no_timing, "Do not time launches (no events around them)");
  cmd->add_flag("--no-nvtx", o->no_nvtx,
                "Emit no NVTX: neither a range per launch nor the captured application's");
  cmd->add_flag("--serialize", o->serialize,
                "Run all device work on one stream, in capture order (default: each captured "
                "stream on its own stream, ordered only by the captured dependencies)");
  cmd->add_option("--graph-timing", o->graph_timing,
                  "graph: graph launches run as graphs (kernel nodes listed, not timed one by "
                  "one); nodes: a graph launch with a selected kernel node runs node by node on "
                  "its stream, each kernel node timed like a launch (not the graph's own time)")
      ->check(CLI::IsMember({"graph", "nodes"}))
      ->capture_default_str();
  cmd->add_option("--report", o->report, "Write a JSON report (docs/replay.md) to this file");
  cmd->add_option("--progress", o->progress,
                  "Progress line on stderr: auto (when a terminal) | on | off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_option(
      "--tolerance", o->tolerances,
      "Compare snapshot chunks element-wise: [0xALLOC=]f64|f32|f16|bf16:ulp=N,rel=X,abs=X "
      "(repeatable; docs/replay.md)");
  cmd->add_flag("--allow-unverified", o->allow_unverified,
                "Exit 0, not 7, when nothing could be verified (no copy checksum, no snapshot)");
  cmd->add_option("--timeout-launch", o->timeout_launch,
                  "Seconds each launch may run (0: no limit); each launch is waited for. Past "
                  "it: exit 9 naming the launch, without waiting for the driver")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--timeout", o->timeout,
                  "Seconds the whole replay may take (0: no limit). Past it: exit 9 naming the "
                  "call being replayed, without waiting for the driver")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("-q,--quiet", o->quiet, "Print no summary (the exit code and --report still tell)");
  cmd->add_flag("--allow-corrupt", o->allow_corrupt,
                "Replay a capture that `cusnap verify` calls corrupt (normally refused, exit 3)");
  cmd->footer(
      "Exit codes (docs/cli.md): 0 replayed, every verification matched; 1 usage or I/O; 2 "
      "truncated; 3 corrupt or inconsistent capture; 4 not a capture; 5 a verification (copy "
      "checksum or snapshot chunk) mismatched; 6 the target cannot run the capture or a replayed "
      "call failed; 7 nothing was verified (--allow-unverified: 0); 8 the launch selection "
      "selected no launch; 9 a launch or the replay ran past --timeout-launch / --timeout, or "
      "the driver stopped a launch (CUDA_ERROR_LAUNCH_TIMEOUT).");
  cmd->callback([o, cache, &exit_code]() {
    o->cache_control_given = cache->count() > 0;
    run(*o, exit_code);
  });
}

}  // namespace cusnap::cli
