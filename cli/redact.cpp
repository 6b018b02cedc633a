// `cusnap redact IN -o OUT [--seed N] [--salt S] [--keep-alloc ADDR]...
//  [--keep-kernel-inputs FILTER [--kernel-name-base B]] [--verify CONDITION [--driver D]]
//  [--drivers LIST] [--reference-driver D] [--max-evaluations N] [--strip-ptx-comments]
//  [--hash-names]` (docs/redact.md).
#include "redact.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "common.h"
#include "cusnap/common/driver_search.h"
#include "cusnap/reduce/redact.h"
#include "result_names.h"

namespace cusnap::cli {

namespace {

struct RedactArgs {
  std::string file;
  std::string out;
  uint64_t seed = reduce::kDefaultRedactSeed;
  std::string salt;
  std::vector<std::string> keep_alloc;
  std::string keep_kernel_inputs;
  std::string kernel_name_base = "function";
  std::string verify;
  std::string driver = "emulator";
  std::string drivers;
  std::string reference_driver = "emulator";
  unsigned max_evaluations = 200;
  bool progress = false;
  bool strip_ptx_comments = false;
  bool hash_names = false;
};

void print_range(const reduce::RedactedRange& r) {
  std::cout << "  " << hex(r.address) << " +" << r.size;
  if (r.allocation_address != 0)
    std::cout << " (offset " << (r.address - r.allocation_address) << " of the range at "
              << hex(r.allocation_address) << ", call " << r.allocation_seq << ")";
  std::cout << ": " << r.what << "\n";
}

int run_redact(const RedactArgs& args, bool salted) {
  reduce::RedactOptions options;
  options.seed = args.seed;
  if (salted) options.salt = args.salt;
  for (const std::string& a : args.keep_alloc) {
    try {
      size_t used = 0;
      options.keep_alloc.push_back(std::stoull(a, &used, 0));
      if (used != a.size()) throw std::invalid_argument(a);
    } catch (const std::exception&) {
      spdlog::error("cusnap redact: --keep-alloc '{}': not an address", a);
      return kExitUsageOrIo;
    }
  }
  options.keep_kernel_inputs = args.keep_kernel_inputs;
  options.name_base = common::parse_kernel_name_base(args.kernel_name_base)
                          .value_or(common::KernelNameBase::kFunction);
  if (!args.verify.empty()) {
    auto condition = reduce::parse_condition(
        args.verify,
        [](const std::string& name) -> std::optional<int32_t> { return result_value(name); });
    if (!condition) return report_failure("redact", condition.status());
    options.verify = *condition;
  }
  options.condition.driver = args.driver;
  // Two-driver conditions replay through a local runner, one replay at a time; their reports and
  // logs go next to the output.
  std::optional<runner::DriverList> list;
  std::unique_ptr<runner::Runner> run;
  if (options.verify && options.verify->between_drivers()) {
    std::string error;
    if (!args.drivers.empty()) {
      list = runner::read_driver_list(args.drivers, &error);
      if (!list) {
        spdlog::error("cusnap redact: --drivers {}", error);
        return kExitUsageOrIo;
      }
    }
    runner::RunnerOptions ro;
    ro.cusnap = common::executable_path();
    ro.work_dir = std::filesystem::absolute(args.out + ".redact-work").lexically_normal().string();
    std::error_code ec;
    std::filesystem::create_directories(ro.work_dir, ec);
    run = runner::make_runner(ro, &error);
    if (!run) {
      spdlog::error("cusnap redact: {}", error);
      return kExitUsageOrIo;
    }
    options.condition.drivers = list ? &*list : nullptr;
    options.condition.runner = run.get();
    options.condition.work_dir = ro.work_dir;
  }
  options.reference_driver = args.reference_driver;
  options.max_evaluations = args.max_evaluations;
  options.strip_ptx_comments = args.strip_ptx_comments;
  options.hash_names = args.hash_names;
  if (args.progress)
    options.on_progress = [](const std::string& line) { std::cerr << "redact: " << line << "\n"; };
  auto done = reduce::redact_capture(args.file, args.out, options);
  if (!done) return report_failure("redact", done.status());
  const reduce::RedactReport& r = *done;
  std::cout << args.out << ": " << r.replaced_bytes << " payload bytes replaced (seed "
            << hex(options.seed) << "), " << r.pointer_bytes << " kept as device pointers, "
            << r.kept_allocation_bytes << " kept in kept allocations, " << r.restored_bytes
            << " brought back by --verify\n";
  std::cout << "expectations: " << reduce::expectations_name(r.expectations);
  if (r.expectations == reduce::Expectations::kResealed)
    std::cout << " (recomputed on " << options.reference_driver << ")";
  if (r.expectations == reduce::Expectations::kDropped)
    std::cout << " (the reference replay failed: " << r.expectations_note << ")";
  std::cout << "\n";
  if (options.strip_ptx_comments || options.hash_names) {
    std::cout << "code images: " << r.rewritten_images << " rewritten"
              << (options.strip_ptx_comments ? ", PTX comments and .file/.loc stripped" : "");
    if (options.hash_names)
      std::cout << ", " << r.hashed_names << " kernel and variable names hashed ("
                << (salted ? "salted" : "with the seed: give --salt to make them unguessable")
                << ")";
    std::cout << ", " << r.cubin_entries_dropped << " cubin entries left out\n";
  }
  if (!r.kept_allocations.empty()) {
    std::cout << "kept allocations:\n";
    for (const auto& k : r.kept_allocations) print_range(k);
  }
  if (options.verify) {
    std::cout << "--verify " << options.verify->text << ": holds (" << r.condition_why << "), "
              << r.evaluations << " evaluation(s)"
              << (r.budget_exhausted ? ", stopped at --max-evaluations (not minimal)" : "") << "\n";
    std::cout << "original bytes kept for it: " << r.restored.size() << " range(s), "
              << r.restored_bytes << " bytes" << (r.restored.empty() ? "\n" : ":\n");
    for (const auto& k : r.restored) print_range(k);
  }
  for (const auto& note : r.notes) std::cout << "note: " << note << "\n";
  return kExitOk;
}

}  // namespace

void register_redact(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RedactArgs>();
  CLI::App* cmd = app.add_subcommand(
      "redact",
      "Write a copy of a capture whose data (host-to-device copies, snapshot chunks) is replaced "
      "by seeded data of the same size, keeping device pointers, code images and what you keep; "
      "its header scrubbed; its expectations recomputed on the reference driver");
  cmd->add_option("FILE", args->file, "The capture to redact")->required();
  cmd->add_option("-o,--output", args->out, "The redacted capture")->required();
  cmd->add_option("--seed", args->seed, "Seed of the replacement data (same seed, same file)")
      ->capture_default_str();
  auto* salt = cmd->add_option(
      "--salt", args->salt,
      "Keep scrubbed header fields as salted hashes (to correlate captures), not blank");
  cmd->add_option("--keep-alloc", args->keep_alloc,
                  "Keep the allocation holding this address original (repeatable)");
  cmd->add_option("--keep-kernel-inputs", args->keep_kernel_inputs,
                  "Keep original every allocation a launch of this kernel (NAME, or regex:EXPR) "
                  "gets a pointer to in its parameters");
  cmd->add_option("--kernel-name-base", args->kernel_name_base,
                  "Name --keep-kernel-inputs compares: function, demangled, mangled")
      ->check(CLI::IsMember({"function", "demangled", "mangled"}))
      ->capture_default_str();
  cmd->add_option("--verify", args->verify,
                  "After redacting, check CONDITION still holds, bringing original bytes back "
                  "until it does: mismatch, mismatch:A,B, memcheck, error:CUDA_ERROR_..., "
                  "slower:FACTOR[:A,B], command:'...'");
  cmd->add_option("--driver", args->driver,
                  "--verify mismatch/error: the driver candidates replay on (auto, emulator, "
                  "PATH)")
      ->capture_default_str();
  cmd->add_option("--drivers", args->drivers,
                  "--verify mismatch:A,B / slower:: the LIST file (docs/bisect.md) A and B name "
                  "entries of");
  cmd->add_option("--reference-driver", args->reference_driver,
                  "The driver whose replay of the redacted capture gives its expectations")
      ->capture_default_str();
  cmd->add_option("--max-evaluations", args->max_evaluations,
                  "--verify: evaluations of the condition at most")
      ->capture_default_str();
  cmd->add_flag("--progress", args->progress, "--verify: one line per evaluation on stderr");
  cmd->add_flag("--strip-ptx-comments", args->strip_ptx_comments,
                "Remove comments and .file/.loc directives from PTX images (cubins are left out "
                "of fatbins; an image with no PTX is refused)");
  cmd->add_flag("--hash-names", args->hash_names,
                "Replace kernel and variable names by salted hashes in PTX images and in every "
                "record that names them (cubins are left out of fatbins)");
  cmd->callback([args, salt, &exit_code] { exit_code = run_redact(*args, salt->count() > 0); });
}

}  // namespace cusnap::cli
