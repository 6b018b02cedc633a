// `cusnap extract FILE (--kernel-name NAME [--launch-skip N] [--launch-count M] | --call N)
//  -o OUT [--emit-cpp DIR] [--minimize | --keep-all]`: one standalone capture per selected
// launch, cut out of a capture with memory snapshots (docs/extract.md); the work is
// cusnap::extract's.
#include "cusnap/extract/extract.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "common.h"
#include "subcommands.h"

namespace cusnap::cli {

namespace {

struct ExtractArgs {
  std::string file;
  std::string kernel_name;
  uint64_t launch_skip = 0;
  uint64_t launch_count = 0;
  uint64_t call = 0;
  std::string out;
  std::string emit_cpp;
  bool minimize = false;  // --minimize (--keep-all, the default, keeps every snapshot byte)
  bool keep_all = false;
};

// --minimize: the full extract at `path` is replayed once on the emulator with access tracking,
// then written again, keeping only what the launch touched (through a temporary file, so that a
// failure leaves no half-written extract; it leaves none at all, as an unextractable launch).
format::Result<extract::ExtractedLaunch> minimize(format::Reader& source, const ExtractArgs& args,
                                                  const extract::LaunchPlan& plan,
                                                  const std::string& path) {
  std::error_code ec;
  auto touched = extract::track_extracted(path);
  if (!touched) {
    std::filesystem::remove(path, ec);
    return touched.status();
  }
  const std::string temporary = path + ".minimizing";
  auto done = extract::write_extracted(source, args.file, plan, temporary, &*touched);
  if (done) {
    std::filesystem::rename(temporary, path, ec);
    if (ec) {
      done = format::Status::error(format::ErrorCode::kIo, "cannot rename " + temporary + " to " +
                                                               path + ": " + ec.message());
    } else {
      done->output_path = path;
    }
  }
  if (!done) {
    std::filesystem::remove(temporary, ec);
    std::filesystem::remove(path, ec);
  }
  return done;
}

// --emit-cpp DIR for launch `seq` of `selected`: DIR itself for one launch, DIR/call-<seq> for
// several, "%n" replaced by the seq.
std::string emit_dir(const std::string& dir, uint64_t seq, size_t selected) {
  std::string path = dir;
  if (path.find("%n") != std::string::npos) {
    for (size_t pos; (pos = path.find("%n")) != std::string::npos;)
      path.replace(pos, 2, std::to_string(seq));
    return path;
  }
  return selected == 1 ? path : path + "/call-" + std::to_string(seq);
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
  auto plans = extract::plan_extraction(source, selection);
  if (!plans) return report_failure("extract", plans.status());
  int rc = kExitOk;
  for (const auto& plan : *plans) {
    auto path = extract::output_path(args.out, plan, plans->size());
    if (!path) return report_failure("extract", path.status());
    auto done = extract::write_extracted(source, args.file, plan, *path);
    if (done && args.minimize) done = minimize(source, args, plan, *path);
    if (!done) {
      rc = report_failure("extract", done.status());
      continue;
    }
    std::cout << "call " << plan.launch_seq << " (launch " << plan.launch_ordinal << ", "
              << plan.kernel_name << "): " << *path << ", " << done->input_bytes
              << " bytes of input, " << done->expected_bytes << " bytes expected\n";
    if (done->minimized) {
      std::cout << "  minimized: " << done->dropped_input_bytes << " bytes of input and "
                << done->dropped_expected_bytes << " bytes expected left out (never touched), "
                << done->dropped_ranges << " allocation(s) or variable(s) dropped\n";
    }
    for (const auto& note : plan.notes) std::cout << "  note: " << note << '\n';
    if (!args.emit_cpp.empty()) {
      auto extracted = open_capture(*path);
      if (!extracted) {
        rc = report_failure("extract", extracted.status());
        continue;
      }
      std::string dir = emit_dir(args.emit_cpp, plan.launch_seq, plans->size());
      format::Status st = extract::emit_cpp(*extracted.value(), dir);
      if (!st) {
        rc = report_failure("extract", st);
        continue;
      }
      std::cout << "  reproducer: " << dir << " (README.md says how to build and run it)\n";
    }
  }
  return rc;
}

}  // namespace

void register_extract(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ExtractArgs>();
  CLI::App* cmd = app.add_subcommand(
      "extract",
      "Write one standalone capture per selected launch (its code image, function, launch, and "
      "the memory before and after it) from a capture taken with --snapshot-kernels; "
      "--emit-cpp also writes a C++ driver-API reproducer that needs only the CUDA toolkit");
  cmd->add_option("FILE", args->file, "Capture with memory snapshots")->required();
  auto* name =
      cmd->add_option("--kernel-name", args->kernel_name,
                      "Launches of the kernel named NAME (function name, exactly) or, "
                      "with regex:EXPR, whose name contains a match (Nsight Compute rules)");
  auto* skip =
      cmd->add_option("--launch-skip", args->launch_skip, "Matching launches to pass over first");
  auto* count = cmd->add_option("--launch-count", args->launch_count,
                                "Matching launches to extract (0: all the rest)");
  auto* call = cmd->add_option("--call", args->call, "The launch record with this seq");
  call->excludes(name)->excludes(skip)->excludes(count);
  cmd->add_option("-o,--output", args->out,
                  "Output: a file for one launch, a directory (call-<seq>.cusnap inside) or a "
                  "pattern with %n (the launch's seq) for several")
      ->required();
  cmd->add_option("--emit-cpp", args->emit_cpp,
                  "Also write a C++ reproducer directory per launch (DIR for one launch, "
                  "DIR/call-<seq> for several, %n replaced by the seq)");
  auto* minimize = cmd->add_flag(
      "--minimize", args->minimize,
      "Keep only the memory the launch reads (as input) and writes (as expected output), found "
      "by running it once on the cusnap emulator with access tracking");
  cmd->add_flag("--keep-all", args->keep_all, "Keep every byte the snapshots hold (the default)")
      ->excludes(minimize);
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
