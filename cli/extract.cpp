// `cusnap extract FILE (--kernel-name NAME [--kernel-name-base B] [--launch-skip N]
//  [--launch-count M] | --call N) -o OUT [--emit-cpp DIR] [--route auto|snapshots|replay]
//  [--driver auto|emulator|PATH] [--snapshot-chunk B] [--allow-diverged] [--minimize |
//  --keep-all]`:
// one standalone capture per selected launch (docs/extract.md); the work is cusnap::extract's.
#include "cusnap/extract/extract.h"

#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>

#include "common.h"
#include "subcommands.h"

namespace cusnap::cli {

namespace {

struct ExtractArgs {
  std::string file;
  std::string kernel_name;
  std::string kernel_name_base = "function";
  uint64_t launch_skip = 0;
  uint64_t launch_count = 0;
  uint64_t call = 0;
  std::string out;
  std::string emit_cpp;
  std::string route = "auto";
  std::string driver = "auto";
  uint64_t snapshot_chunk = 0;
  bool allow_diverged = false;
  bool minimize = false;  // --minimize (--keep-all, the default, keeps every snapshot byte)
  bool keep_all = false;
};

// --emit-cpp DIR for launch `seq` of `selected`: DIR itself for one launch, DIR/call-<seq> for
// several, "%n" replaced by the seq.
std::string emit_dir(const std::string& dir, const extract::LaunchPlan& plan, size_t selected) {
  const std::string label = extract::launch_label(plan);
  std::string path = dir;
  if (path.find("%n") != std::string::npos) {
    for (size_t pos; (pos = path.find("%n")) != std::string::npos;) path.replace(pos, 2, label);
    return path;
  }
  return selected == 1 ? path : path + "/call-" + label;
}

int run_extract(const ExtractArgs& args, bool by_call) {
  auto opened = open_capture(args.file);
  if (!opened) return report_failure("extract", opened.status());
  format::Reader& source = *opened.value();
  extract::Selection selection;
  if (by_call) selection.call_seq = args.call;
  selection.kernel_regex = args.kernel_name;
  selection.launch_skip = args.launch_skip;
  selection.launch_count = args.launch_count;
  // CLI::IsMember checked both spellings.
  selection.name_base = common::parse_kernel_name_base(args.kernel_name_base)
                            .value_or(common::KernelNameBase::kFunction);
  extract::ExtractOptions options;
  options.route = extract::parse_route(args.route).value_or(extract::Route::kAuto);
  options.driver = args.driver;
  options.chunk_bytes = args.snapshot_chunk;
  options.allow_diverged = args.allow_diverged;
  options.on_warning = [](const std::string& message) {
    spdlog::warn("cusnap extract: prefix replay: {}", message);
  };
  auto plans = extract::plan_extraction(source, selection, options);
  if (!plans) return report_failure("extract", plans.status());
  std::vector<std::string> paths;
  for (const auto& plan : *plans) {
    auto path = extract::output_path(args.out, plan, plans->size());
    if (!path) return report_failure("extract", path.status());
    paths.push_back(*path);
  }
  int rc = kExitOk;
  auto done = [&](const extract::LaunchPlan& plan,
                  format::Result<extract::ExtractedLaunch> written) {
    if (written && args.minimize) {
      auto minimized = extract::minimize_extracted(written->output_path);
      if (minimized) minimized->plan.notes = written->plan.notes;
      written = std::move(minimized);
    }
    if (!written) {
      rc = report_failure("extract", written.status());
      return;
    }
    std::cout << "call " << plan.launch_seq;
    if (plan.graph_node != 0)
      std::cout << " kernel node " << plan.graph_kernel_index << " (graph launch "
                << plan.launch_ordinal << ", " << plan.kernel_name << "): ";
    else
      std::cout << " (launch " << plan.launch_ordinal << ", " << plan.kernel_name << "): ";
    std::cout << written->output_path << ", " << written->input_bytes << " bytes of input, "
              << written->expected_bytes << " bytes expected"
              << (plan.route == extract::Route::kReplay ? " (route replay)" : "") << "\n";
    if (written->minimized) {
      std::cout << "  minimized: " << written->dropped_input_bytes << " bytes of input and "
                << written->dropped_expected_bytes << " bytes expected left out (never touched), "
                << written->dropped_ranges << " allocation(s) or variable(s) dropped\n";
    }
    for (const auto& note : written->plan.notes) std::cout << "  note: " << note << '\n';
    if (!args.emit_cpp.empty()) {
      auto extracted = open_capture(written->output_path);
      if (!extracted) {
        rc = report_failure("extract", extracted.status());
        return;
      }
      std::string dir = emit_dir(args.emit_cpp, plan, plans->size());
      format::Status st = extract::emit_cpp(*extracted.value(), dir);
      if (!st) {
        rc = report_failure("extract", st);
        return;
      }
      std::cout << "  reproducer: " << dir << " (README.md says how to build and run it)\n";
    }
  };
  format::Status st = extract::extract_launches(source, args.file, *plans, paths, options, done);
  if (!st) rc = report_failure("extract", st);
  return rc;
}

}  // namespace

void register_extract(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ExtractArgs>();
  CLI::App* cmd = app.add_subcommand(
      "extract",
      "Write one standalone capture per selected launch (its code image, function, launch, and "
      "the memory before and after it), from the capture's memory snapshots or by replaying it "
      "up to the launch; "
      "--emit-cpp also writes a C++ driver-API reproducer that needs only the CUDA toolkit");
  cmd->add_option("FILE", args->file, "A capture (with or without memory snapshots)")->required();
  auto* name =
      cmd->add_option("--kernel-name", args->kernel_name,
                      "Launches of the kernel named NAME (function name, exactly) or, "
                      "with regex:EXPR, whose name contains a match (Nsight Compute rules)");
  auto* base = cmd->add_option("--kernel-name-base", args->kernel_name_base,
                               "Name --kernel-name compares: function (demangled, no "
                               "parameters), demangled, mangled")
                   ->check(CLI::IsMember({"function", "demangled", "mangled"}))
                   ->capture_default_str();
  auto* skip =
      cmd->add_option("--launch-skip", args->launch_skip, "Matching launches to pass over first");
  auto* count = cmd->add_option("--launch-count", args->launch_count,
                                "Matching launches to extract (0: all the rest)");
  auto* call = cmd->add_option("--call", args->call,
                               "The launch record with this seq, or the graph launch with this seq "
                               "(each kernel node it runs)");
  call->excludes(name)->excludes(skip)->excludes(count)->excludes(base);
  cmd->add_option("-o,--output", args->out,
                  "Output: a file for one launch, a directory (call-<seq>.cusnap inside) or a "
                  "pattern with %n (the launch's seq) for several")
      ->required();
  cmd->add_option("--emit-cpp", args->emit_cpp,
                  "Also write a C++ reproducer directory per launch (DIR for one launch, "
                  "DIR/call-<seq> for several, %n replaced by the seq)");
  cmd->add_option("--route", args->route,
                  "auto: a launch's snapshots where the capture has them, else replay; "
                  "snapshots: only from snapshots; replay: replay the capture up to each launch")
      ->check(CLI::IsMember({"auto", "snapshots", "replay"}))
      ->capture_default_str();
  cmd->add_option("--driver", args->driver,
                  "Driver the replay route runs on: auto | emulator | PATH to a libcuda.so.1")
      ->capture_default_str();
  cmd->add_option("--snapshot-chunk", args->snapshot_chunk,
                  "Replay route: chunk size in bytes (default: the capture's)")
      ->check(CLI::PositiveNumber);
  auto* minimize = cmd->add_flag(
      "--minimize", args->minimize,
      "Keep only the memory the launch reads (as input) and writes (as expected output), found "
      "by running it once on the cusnap emulator with access tracking");
  cmd->add_flag("--keep-all", args->keep_all, "Keep every byte the snapshots hold (the default)")
      ->excludes(minimize);
  cmd->add_flag("--allow-diverged", args->allow_diverged,
                "Replay route: write a launch even when the replay diverged from the capture "
                "before it (a copy or snapshot did not match)");
  cmd->callback([args, call, name, &exit_code]() {
    bool by_call = call->count() > 0;
    if (!by_call && name->count() == 0) {
      std::cerr << "cusnap extract: give --kernel-name NAME or --call N\n";
      exit_code = kExitUsageOrIo;
      return;
    }
    exit_code = run_extract(*args, by_call);
  });
}

}  // namespace cusnap::cli
