#include "replayer/replay.h"

#include <chrono>
#include <filesystem>
#include <new>
#include <set>
#include <stdexcept>

#include "replayer/driver.h"
#include "replayer/execute.h"

namespace cusnap::replayer {
namespace {

void forward_plan_warnings(const Plan& plan, const ReplayOptions& options, ReplayResult& result) {
  for (const PlanWarning& w : plan.warnings) {
    std::string message =
        w.seq != 0 ? "call " + std::to_string(w.seq) + ": " + w.message : w.message;
    result.messages.push_back(message);
    if (options.on_message) options.on_message(MessageLevel::kWarning, message);
  }
}

// "--kernel-name NAME --launch-skip N" as the user gave the selection.
std::string selection_text(const ReplayOptions& options) {
  std::vector<std::string> parts;
  if (!options.kernel_regex.empty()) parts.push_back("--kernel-name " + options.kernel_regex);
  if (options.launch_skip != 0)
    parts.push_back("--launch-skip " + std::to_string(options.launch_skip));
  if (options.launch_count != 0)
    parts.push_back("--launch-count " + std::to_string(options.launch_count));
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += ' ';
    out += p;
  }
  return out;
}

// A selection that selected no launch is almost always a typo or an off-by-one: say what the
// capture has instead, so the user can correct it.
void check_selection(const ReplayOptions& options, ReplayResult& result) {
  if (!result.selection_requested || result.selected_launches() != 0) return;
  std::set<std::string> kernels;
  for (const LaunchReport& l : result.launches) kernels.insert(l.kernel);
  std::string message = selection_text(options) + " selected none of the capture's " +
                        std::to_string(result.launches.size()) + " launch(es)";
  if (!kernels.empty()) {
    message += "; its kernels:";
    size_t shown = 0;
    for (const std::string& k : kernels) {
      if (shown++ == 8) {
        message += " ...";
        break;
      }
      message += " " + (k.empty() ? std::string("?") : k);
    }
  }
  result.messages.push_back(message);
  if (options.on_message) options.on_message(MessageLevel::kWarning, message);
}

}  // namespace

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kMatched:
      return "matched";
    case Verdict::kMismatched:
      return "mismatched";
    case Verdict::kNothingVerified:
      return "nothing verified";
  }
  return "?";
}

const char* graph_timing_name(GraphTiming timing) {
  return timing == GraphTiming::kNodes ? "nodes" : "graph";
}

bool is_launch_timeout(const Error& e) {
  return e.result() && *e.result() == CUDA_ERROR_LAUNCH_TIMEOUT;
}

uint64_t ReplayResult::selected_launches() const {
  uint64_t n = 0;
  for (const LaunchReport& l : launches) n += l.selected ? 1 : 0;
  return n;
}

Expected<ReplayResult> replay_plan(format::Reader& reader, const Plan& plan,
                                   const ReplayOptions& options) {
  auto started = std::chrono::steady_clock::now();
  if (options.repeat == 0) return Error(ErrorKind::kInvalidArgument, "--repeat must be at least 1");
  const SamplingPolicy& sampling = options.sampling;
  if (sampling.adaptive &&
      (sampling.min_samples == 0 || !(sampling.max_noise >= 0) ||
       !(sampling.min_time_seconds >= 0) || !(sampling.max_time_seconds > 0))) {
    return Error(ErrorKind::kInvalidArgument,
                 "--repeat auto needs --min-samples >= 1, --max-noise >= 0, --min-time >= 0 and "
                 "--max-time > 0");
  }
  std::string outputs_dir;
  if (!options.save_outputs_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.save_outputs_dir, ec);
    std::filesystem::path dir = std::filesystem::absolute(options.save_outputs_dir, ec);
    if (ec || !std::filesystem::is_directory(dir)) {
      return Error(ErrorKind::kIo, "--save-outputs " + options.save_outputs_dir +
                                       ": not a directory that can be created");
    }
    outputs_dir = dir.lexically_normal().string();
  }
  auto choice = resolve_driver(options.driver);
  if (!choice) return choice.error();
  auto driver = Driver::open(choice->path);
  if (!driver) return driver.error();

  ReplayResult result;
  result.capture_path = reader.path();
  result.outputs_dir = outputs_dir;
  result.selection_requested =
      !options.kernel_regex.empty() || options.launch_skip != 0 || options.launch_count != 0;
  result.target.driver_path = choice->path;
  result.target.driver_reason = choice->reason;
  result.target.driver_version = driver.value()->version();
  if (options.on_message) {
    options.on_message(MessageLevel::kInfo, "driver " + choice->path + " (" + choice->reason +
                                                "), version " +
                                                std::to_string(driver.value()->version()));
    for (const std::string& missing : driver.value()->missing()) {
      options.on_message(MessageLevel::kInfo, "optional entry point missing: " + missing);
    }
  }
  forward_plan_warnings(plan, options, result);
  if (options.timeout_launch_seconds < 0 || options.timeout_seconds < 0) {
    return Error(ErrorKind::kInvalidArgument, "a timeout cannot be negative");
  }
  // Destroyed after the executor, so the final synchronisations are watched too.
  Watchdog watchdog(options.timeout_launch_seconds, options.timeout_seconds, plan,
                    options.on_timeout);
  try {
    Executor executor(*driver.value(), reader, plan, options, result, watchdog);
    if (auto e = executor.prepare()) return *e;
    if (auto e = executor.run()) return *e;
  } catch (const std::bad_alloc&) {
    // A capture can ask for host buffers as large as the device memory it maps.
    return Error(ErrorKind::kTarget, "out of host memory while replaying");
  } catch (const std::exception& e) {
    return Error(ErrorKind::kCapture, std::string("replay aborted: ") + e.what());
  }
  result.verification = summarize_checks(result.copies);
  check_selection(options, result);
  result.plan = plan;  // the summary part: the report needs no actions
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // The driver stays loaded (Driver's contract); the unique_ptr only frees the table.
  return result;
}

Expected<ReplayResult> replay_capture(const std::string& path, const ReplayOptions& options) {
  auto reader = format::Reader::open(path);
  if (!reader) {
    return Error(ErrorKind::kCapture, reader.status().to_string());
  }
  if (reader.value()->recovery().state != format::Integrity::kWhole && options.on_message) {
    options.on_message(MessageLevel::kWarning,
                       "capture is not whole: " + reader.value()->recovery().summary() +
                           "; replaying what it holds");
  }
  auto plan = build_plan(*reader.value());
  if (!plan) return plan.error();
  return replay_plan(*reader.value(), plan.value(), options);
}

}  // namespace cusnap::replayer
