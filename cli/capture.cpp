// `cusnap capture`: sets up the environment the interceptor reads (docs/capture.md), runs the
// application (fork + exec + waitpid, forwarding SIGINT/SIGTERM), then summarises the capture.
// The application's stdout stays the application's: everything cusnap says goes to stderr.
#include "capture.h"

#include <capnp/message.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "cusnap/capture/config.h"  // the capture configuration and output-name patterns
#include "cusnap/common/driver_search.h"
#include "cusnap/common/kernel_filter.h"
#include "info_collect.h"
#include "table.h"

namespace cusnap::cli {
namespace {

namespace fs = std::filesystem;

struct CaptureArgs {
  std::string output;
  std::string driver = "auto";
  bool force_overwrite = false;
  int compress_level = 3;
  // Memory snapshots (docs/capture.md, "Memory snapshots"); none unless snapshot_kernels is set.
  std::string snapshot_kernels;
  // Kernel-filtered capture (docs/capture.md, "Kernel filters"); off unless kernel_name is set.
  std::string kernel_name;
  std::string kernel_name_base = "function";
  uint64_t launch_skip = 0;
  uint64_t launch_count = 0;
  bool snapshot_outputs = false;
  uint64_t snapshot_chunk = capture::CaptureConfig::kDefaultSnapshotChunkBytes;
  std::string snapshot_hash;  // empty: CUSNAP_SNAPSHOT_HASH as the environment has it
  // Capture ranges (docs/capture.md, "Capture ranges").
  std::string capture_range = "none";
  std::string capture_range_end = "stop";
  std::string nvtx_capture;
  std::vector<std::string> command;
};

bool is_file(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Default output: <app>.cusnap, or <app>.<n>.cusnap when that exists (never overwrites).
std::string default_output(const std::string& app) {
  std::string stem = fs::path(app).filename().string();
  if (stem.empty()) stem = "capture";
  for (int n = 0; n < 10000; ++n) {
    std::string name = n == 0 ? stem + ".cusnap" : stem + "." + std::to_string(n) + ".cusnap";
    if (!fs::exists(name)) return name;
  }
  return stem + ".cusnap";
}

volatile sig_atomic_t g_child = 0;

void forward_signal(int signal) {
  if (g_child > 0) ::kill(g_child, signal);
}

void prepend_env(const char* name, const std::string& value, char separator) {
  const char* old = std::getenv(name);
  std::string joined = value;
  if (old != nullptr && *old != '\0') joined += separator + std::string(old);
  ::setenv(name, joined.c_str(), 1);
}

void summarise(const std::string& file) {
  auto opened = open_capture(file);
  if (!opened) {
    std::cerr << "cusnap capture: no capture summary: " << opened.status().to_string() << "\n";
    return;
  }
  capnp::MallocMessageBuilder message;
  auto info = message.initRoot<schema::InfoReport>();
  format::Status status = collect_info(*opened.value(), file, info);
  if (!status) {
    std::cerr << "cusnap capture: " << file << ": " << status.to_string() << "\n";
    return;
  }
  auto counts = info.getCounts();
  auto bytes = info.getBytes();
  std::cerr << "cusnap capture: " << counts.getCalls() << " calls, " << counts.getLaunches()
            << " launches, " << counts.getKernels() << " kernels, "
            << human_bytes(bytes.getBlobUnique()) << " of unique payload, "
            << human_bytes(info.getFileBytes()) << " file -> " << file;
  if (info.getIntegrity().getState() != schema::Integrity::State::WHOLE) {
    std::cerr << " [" << info.getIntegrity().getSummary().cStr() << "]";
  }
  std::cerr << "\n";
}

// Files written by the application's own child processes: <stem>.<pid><ext>.
std::vector<std::string> child_captures(const std::string& root) {
  std::vector<std::string> found;
  fs::path path(root);
  std::string stem = path.stem().string(), ext = path.extension().string();
  fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() <= stem.size() + ext.size() + 1 ||
        name.compare(0, stem.size() + 1, stem + ".") != 0 ||
        name.compare(name.size() - ext.size(), ext.size(), ext) != 0) {
      continue;
    }
    std::string middle = name.substr(stem.size() + 1, name.size() - stem.size() - 1 - ext.size());
    if (!middle.empty() && middle.find_first_not_of("0123456789") == std::string::npos) {
      found.push_back((dir / name).string());
    }
  }
  return found;
}

fs::file_time_type write_time(const std::string& path) {
  std::error_code ignored;
  return fs::last_write_time(path, ignored);
}

int run_capture(const CaptureArgs& args) {
  // The interceptor of this cusnap's own tree (build or installed: driver_search.h).
  common::DriverSearch shim = common::find_interceptor(common::executable_path());
  if (!shim.ok()) {
    std::cerr << "cusnap capture: " << shim.error << "\n";
    return kExitUsageOrIo;
  }
  std::string shim_dir = fs::path(shim.path).parent_path().string();
  // The one driver lookup (cusnap/common/driver_search.h): what `cusnap replay` and the shim
  // itself would pick for the same request on this machine.
  common::DriverSearch found = common::find_driver_for_executable(args.driver);
  if (!found.ok()) {
    std::cerr << "cusnap capture: " << found.error << "\n";
    return kExitUsageOrIo;
  }
  if (found.role == common::LibraryRole::kEmulator &&
      found.reason.rfind("auto: no usable system driver", 0) == 0) {
    spdlog::warn("cusnap capture: no NVIDIA driver found; running on the cusnap emulator {}",
                 found.path);
  } else {
    spdlog::info("cusnap capture: driver {} ({})", found.path, found.reason);
  }
  std::string pattern = args.output.empty() ? default_output(args.command.front()) : args.output;
  bool has_pid = pattern.find("%p") != std::string::npos;
  if (!has_pid && !args.force_overwrite && fs::exists(capture::expand_output_pattern(pattern, 0))) {
    std::cerr << "cusnap capture: " << capture::expand_output_pattern(pattern, 0)
              << " exists (use --force-overwrite, or %p in the name)\n";
    return kExitUsageOrIo;
  }

  if (!has_pid && args.force_overwrite) {
    // Removed now, so that a file left by an earlier run is never mistaken for this run's capture.
    std::error_code ignored;
    fs::remove(capture::expand_output_pattern(pattern, 0), ignored);
  }

  // Capture ranges: checked by the one parser the shim uses (cusnap/capture/config.h).
  capture::CaptureConfig range_config;
  range_config.capture_range = args.capture_range;
  range_config.capture_range_end = args.capture_range_end;
  range_config.nvtx_capture = args.nvtx_capture;
  capture::RangeSettings ranges;
  if (std::string error; !capture::parse_range_settings(range_config, ranges, error)) {
    std::cerr << "cusnap capture: " << error << "\n";
    return kExitUsageOrIo;
  }
  if (!args.kernel_name.empty() && ranges.active()) {
    std::cerr << "cusnap capture: --kernel-name cannot be combined with --capture-range (a "
                 "kernel-filtered capture is one file of the selected launches and the state "
                 "they need; filter the range's file with `cusnap extract` instead)\n";
    return kExitUsageOrIo;
  }
  if (!args.kernel_name.empty() && !args.snapshot_kernels.empty()) {
    std::cerr << "cusnap capture: --kernel-name and --snapshot-kernels are exclusive (a "
                 "kernel-filtered capture snapshots every launch it records)\n";
    return kExitUsageOrIo;
  }
  if (ranges.active()) {
    ::setenv("CUSNAP_CAPTURE_RANGE", args.capture_range.c_str(), 1);
    ::setenv("CUSNAP_CAPTURE_RANGE_END", args.capture_range_end.c_str(), 1);
    ::setenv("CUSNAP_NVTX_CAPTURE", args.nvtx_capture.c_str(), 1);
    ::setenv("CUSNAP_SNAPSHOT_CHUNK", std::to_string(args.snapshot_chunk).c_str(), 1);
    if (!args.snapshot_hash.empty())
      ::setenv("CUSNAP_SNAPSHOT_HASH", args.snapshot_hash.c_str(), 1);
  } else {
    ::unsetenv("CUSNAP_CAPTURE_RANGE");
    ::unsetenv("CUSNAP_CAPTURE_RANGE_END");
    ::unsetenv("CUSNAP_NVTX_CAPTURE");
  }
  ::setenv("CUSNAP_CAPTURE_OUTPUT", pattern.c_str(), 1);
  ::setenv(common::kRealDriverVariable, found.path.c_str(), 1);
  ::setenv("CUSNAP_COMPRESS_LEVEL", std::to_string(args.compress_level).c_str(), 1);
  ::setenv("CUSNAP_FORCE_OVERWRITE", args.force_overwrite ? "1" : "0", 1);
  const bool filtered = !args.kernel_name.empty();
  if (!args.snapshot_kernels.empty() || filtered) {
    std::string error;
    const std::string& filter = filtered ? args.kernel_name : args.snapshot_kernels;
    auto base = common::parse_kernel_name_base(args.kernel_name_base);
    if (!base || !common::KernelFilter::create(filter, *base, &error)) {
      std::cerr << "cusnap capture: " << (filtered ? "--kernel-name " : "--snapshot-kernels ")
                << error << "\n";
      return kExitUsageOrIo;
    }
    if (filtered) {
      ::setenv("CUSNAP_KERNEL_NAME", args.kernel_name.c_str(), 1);
      ::unsetenv("CUSNAP_SNAPSHOT_KERNELS");
    } else {
      ::setenv("CUSNAP_SNAPSHOT_KERNELS", args.snapshot_kernels.c_str(), 1);
      ::unsetenv("CUSNAP_KERNEL_NAME");
    }
    ::setenv("CUSNAP_SNAPSHOT_KERNEL_BASE", args.kernel_name_base.c_str(), 1);
    ::setenv("CUSNAP_LAUNCH_SKIP", std::to_string(args.launch_skip).c_str(), 1);
    ::setenv("CUSNAP_LAUNCH_COUNT", std::to_string(args.launch_count).c_str(), 1);
    ::setenv("CUSNAP_SNAPSHOT_OUTPUTS", args.snapshot_outputs ? "1" : "0", 1);
    ::setenv("CUSNAP_SNAPSHOT_CHUNK", std::to_string(args.snapshot_chunk).c_str(), 1);
    if (!args.snapshot_hash.empty())
      ::setenv("CUSNAP_SNAPSHOT_HASH", args.snapshot_hash.c_str(), 1);
  } else {
    ::unsetenv("CUSNAP_SNAPSHOT_KERNELS");
    ::unsetenv("CUSNAP_KERNEL_NAME");
  }
  const std::string shim_path = fs::absolute(shim_dir + "/libcuda.so.1").string();
  ::setenv("CUSNAP_SHIM_PATH", shim_path.c_str(), 1);
  // NVTX reaches the shim as its injection library (docs/capture.md, "NVTX"), unless another
  // tool (Nsight Systems under which cusnap runs, say) already holds the slot.
  if (const char* injection = std::getenv("NVTX_INJECTION64_PATH");
      injection != nullptr && *injection != 0 && shim_path != injection) {
    spdlog::warn("cusnap capture: NVTX_INJECTION64_PATH is {}: NVTX ranges are not recorded",
                 injection);
  } else {
    ::setenv("NVTX_INJECTION64_PATH", shim_path.c_str(), 1);
  }
  prepend_env("LD_LIBRARY_PATH", shim_dir, ':');
  if (is_file(shim_dir + "/libcusnap_audit.so"))
    prepend_env("LD_AUDIT", shim_dir + "/libcusnap_audit.so", ':');

  // The child captures already there, so that only those this run writes count as its capture.
  std::map<std::string, fs::file_time_type> earlier;
  if (!has_pid) {
    for (const std::string& child : child_captures(capture::expand_output_pattern(pattern, 0)))
      earlier[child] = write_time(child);
  }

  std::vector<char*> argv;
  for (const std::string& arg : args.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  std::cout.flush();
  pid_t pid = ::fork();
  if (pid < 0) {
    std::cerr << "cusnap capture: fork failed: " << std::strerror(errno) << "\n";
    return kExitUsageOrIo;
  }
  if (pid == 0) {
    ::setenv("CUSNAP_CAPTURE_ROOT_PID", std::to_string(::getpid()).c_str(), 1);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "cusnap capture: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  g_child = pid;
  struct sigaction forward {
  }, old_int{}, old_term{};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  ::sigaction(SIGINT, &forward, &old_int);
  ::sigaction(SIGTERM, &forward, &old_term);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  g_child = 0;
  int app_rc = WIFEXITED(status)     ? WEXITSTATUS(status)
               : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                     : 1;

  std::string file = capture::expand_output_pattern(pattern, pid);
  if (ranges.active()) {
    // One file per range (1, 2, ... until one is missing), or the empty file of range 0.
    capture::CaptureConfig named;
    named.output_pattern = pattern;
    std::vector<std::string> files;
    for (uint32_t n = 0;; ++n) {
      std::string name = capture::range_output_name(named, ranges, pid, n);
      if (fs::exists(name) && (files.empty() || files.back() != name)) {
        files.push_back(name);
      } else if (n > 0) {
        break;
      }
    }
    if (!files.empty()) {
      for (const std::string& f : files) summarise(f);
      return app_rc;
    }
  }
  std::vector<std::string> children;
  if (!has_pid) {
    for (const std::string& child : child_captures(file)) {
      if (!earlier.contains(child) || earlier[child] != write_time(child))
        children.push_back(child);
    }
  }
  if (fs::exists(file) || !children.empty()) {
    if (fs::exists(file)) summarise(file);
    for (const std::string& child : children) summarise(child);
    return app_rc;
  }
  // Without this the caller could not tell "recorded, the application exited N" from "nothing
  // was recorded at all" (the shim never loaded: a static binary, libcuda opened by absolute
  // path, no CUDA).
  std::cerr << "cusnap capture: no capture was written (" << file
            << "): the application never reached the cusnap interceptor (statically linked, "
               "libcuda opened by absolute path, or no CUDA use); its exit code was "
            << app_rc << "; exiting " << kExitNoCapture << "\n";
  return kExitNoCapture;
}

}  // namespace

void register_capture(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CaptureArgs>();
  CLI::App* sub =
      app.add_subcommand("capture", "Run an application and record its CUDA driver calls");
  sub->add_option("-o,--output", args->output,
                  "Capture file; %p pid, %h host, %q{VAR} environment (default: <app>.cusnap, "
                  "never overwritten)");
  sub->add_option("--driver", args->driver,
                  "Real driver: auto (NVIDIA if it has a device, else the emulator), "
                  "emulator, or a path to a libcuda.so.1")
      ->capture_default_str();
  sub->add_flag("--force-overwrite", args->force_overwrite, "Overwrite an existing capture file");
  sub->add_option("--compress-level", args->compress_level,
                  "zstd level for payloads, 0 (none) to 19 (call records: at most 1)")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  sub->add_option("--snapshot-kernels", args->snapshot_kernels,
                  "Snapshot device memory around launches of these kernels (Nsight Compute filter: "
                  "NAME exact, regex:EXPR searched)");
  sub->add_option("--kernel-name", args->kernel_name,
                  "Kernel-filtered capture: record in full only the launches of these kernels "
                  "(same filter rules), with the state and memory their replay needs; other calls "
                  "pass through unrecorded");
  sub->add_option("--kernel-name-base", args->kernel_name_base,
                  "Name --snapshot-kernels / --kernel-name compares: function (demangled, no "
                  "parameters), demangled, mangled")
      ->check(CLI::IsMember({"function", "demangled", "mangled"}))
      ->capture_default_str();
  sub->add_option("--launch-skip", args->launch_skip,
                  "Matching launches to pass over before the first snapshot (or recorded launch)")
      ->capture_default_str();
  sub->add_option("--launch-count", args->launch_count,
                  "Matching launches to snapshot (or record; 0: all the rest)")
      ->capture_default_str();
  sub->add_flag(
      "--snapshot-outputs", args->snapshot_outputs,
      "Also store the contents of chunks a snapshotted launch changed (default: their hashes)");
  sub->add_option("--snapshot-chunk", args->snapshot_chunk, "Snapshot chunk size in bytes")
      ->check(CLI::Range(capture::CaptureConfig::kMinSnapshotChunkBytes,
                         capture::CaptureConfig::kMaxSnapshotChunkBytes))
      ->capture_default_str();
  sub->add_option("--snapshot-hash", args->snapshot_hash,
                  "Where snapshot chunks are hashed: device (a kernel of the interceptor's; only "
                  "changed chunks are copied back; the default) or host (every chunk copied)")
      ->check(CLI::IsMember({"device", "host"}));
  sub->add_option("--capture-range", args->capture_range,
                  "Record only inside capture ranges (Nsight Systems' names): none, "
                  "cudaProfilerApi (cuProfilerStart..Stop), nvtx (--nvtx-capture's range), "
                  "signal (SIGUSR1 toggles)")
      ->check(CLI::IsMember({"none", "cudaProfilerApi", "nvtx", "signal"}))
      ->capture_default_str();
  sub->add_option("--capture-range-end", args->capture_range_end,
                  "After a range: stop (record nothing more) or repeat[:N] (a file per range, "
                  "at most N; %n in -o is the range number, else .<n> before the extension)")
      ->capture_default_str();
  sub->add_option("--nvtx-capture", args->nvtx_capture,
                  "nvtx range trigger: MESSAGE[@DOMAIN] of the push/start that starts a range "
                  "(no @DOMAIN: the default domain)");
  sub->add_option("command", args->command, "-- APP [ARGS...]")->required();
  sub->footer(
      "Environment equivalents for launchers that cannot use the wrapper: see docs/capture.md.");
  sub->callback([args, &exit_code] { exit_code = run_capture(*args); });
}

}  // namespace cusnap::cli
