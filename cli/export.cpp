// `cusnap export --perfetto FILE.pftrace CAPTURE [--report REPLAY.json]` (docs/timeline.md): the
// capture as a Perfetto trace. Options and files only; the timeline is timeline/'s.
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "common.h"
#include "cusnap/compare/compare.h"
#include "cusnap/timeline/timeline.h"
#include "subcommands.h"

namespace cusnap::cli {
namespace {

struct Options {
  std::string capture;
  std::string perfetto;
  std::string report;
};

// Writes `bytes` to `path` through a temporary next to it, so that a failed export leaves no
// partial trace behind.
bool write_file(const std::string& path, const std::string& bytes) {
  std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      spdlog::error("cusnap export: cannot write {}: {}", temporary, std::strerror(errno));
      std::remove(temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    spdlog::error("cusnap export: cannot rename {} to {}: {}", temporary, path,
                  std::strerror(errno));
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

int run(const Options& o) {
  auto opened = open_capture(o.capture);
  if (!opened) return report_failure("export", opened.status());
  format::Reader& reader = *opened.value();
  const format::IntegrityReport& recovery = reader.recovery();
  if (recovery.state != format::Integrity::kWhole) {
    spdlog::warn("{}: {}; exporting the {} calls that were recovered", o.capture,
                 recovery.summary(), reader.call_count());
  }

  timeline::TimelineOptions options;
  std::optional<compare::Report> report;
  if (!o.report.empty()) {
    auto read = compare::read_report(o.report);
    if (!read) {
      spdlog::error("cusnap export: {}", read.error().message());
      return kExitUsageOrIo;
    }
    report = std::move(read.value());
    options.report = &*report;
    options.report_name = o.report;
  }
  timeline::TimelineSummary summary;
  auto trace = timeline::build_timeline(reader, options, &summary);
  if (!trace) {
    format::Status st = trace.status();
    if (st.file().empty() && st.code() != format::ErrorCode::kInvalidArgument) {
      st.in_file(o.capture);
    }
    return report_failure("export", st);
  }
  if (!write_file(o.perfetto, trace->serialize())) return kExitUsageOrIo;
  std::printf(
      "%s: %llu API calls on %llu threads, %llu device events on %llu streams (%llu with a "
      "replayed duration), %llu flows\n",
      o.perfetto.c_str(), static_cast<unsigned long long>(summary.api_slices),
      static_cast<unsigned long long>(summary.threads),
      static_cast<unsigned long long>(summary.device_slices + summary.device_instants),
      static_cast<unsigned long long>(summary.streams),
      static_cast<unsigned long long>(summary.device_slices),
      static_cast<unsigned long long>(summary.flows));
  std::fflush(stdout);
  return std::ferror(stdout) ? kExitUsageOrIo : kExitOk;
}

}  // namespace

void register_export(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a capture as a timeline: a Perfetto trace for ui.perfetto.dev");
  cmd->add_option("CAPTURE", o->capture, "Capture file")->required();
  cmd->add_option("--perfetto", o->perfetto,
                  "The Perfetto trace to write (protobuf, e.g. run.pftrace; docs/timeline.md)")
      ->required();
  cmd->add_option("--report", o->report,
                  "Replay report of this capture (cusnap replay --report): kernel durations");
  cmd->callback([o, &exit_code]() { exit_code = run(*o); });
}

}  // namespace cusnap::cli
