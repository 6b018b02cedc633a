// `cusnap verify FILE`: checks every frame and blob; the exit code says whole (0), truncated (2),
// corrupt (3), not a capture (4) or could not check (1).
#include <cstdio>
#include <iostream>

#include "common.h"
#include "subcommands.h"

namespace cusnap::cli {

namespace {

std::string last_good_text(std::optional<uint64_t> seq) {
  return seq ? "last good call " + std::to_string(*seq) : "no good call";
}

// Verdict for a file the reader could not even open (file header or header frame damaged).
std::string open_failure_text(const format::Status& st) {
  std::string where;
  if (st.frame()) where += "frame " + std::to_string(*st.frame());
  if (st.offset())
    where +=
        (where.empty() ? "" : " ") + std::string("at byte offset ") + std::to_string(*st.offset());
  if (where.empty()) where = "the file header";
  switch (exit_code_for(st)) {
    case kExitTruncated:
      return "truncated: the file ends inside " + where + " before any call: " + st.message();
    case kExitCorrupt:
      return "corrupt: " + where + " failed: " + st.message() + "; no good call";
    case kExitNotACapture:
      return "not a capture: " + st.message();
    default:
      return "error: " + st.message();
  }
}

std::string verdict_text(const format::IntegrityReport& report, const format::CaptureStats& stats) {
  switch (report.state) {
    case format::Integrity::kWhole:
      return "whole: " + std::to_string(stats.calls) + " calls, " + std::to_string(stats.launches) +
             " launches, " + std::to_string(stats.frames) + " frames, " +
             std::to_string(stats.blobs) +
             " blobs; every frame checksum, record and blob hash verified";
    case format::Integrity::kTruncated: {
      std::string ends = report.last_good_seq
                             ? "capture ends after call " + std::to_string(*report.last_good_seq)
                             : "capture ends before the first call";
      return "truncated: " + ends + "; complete frames end at byte offset " +
             std::to_string(report.end_offset) + " (" + report.detail.message() + ")";
    }
    case format::Integrity::kCorrupt: {
      std::string where = report.bad_frame ? "frame " + std::to_string(*report.bad_frame)
                                           : std::string("the trailer");
      return "corrupt: " + where + " at byte offset " + std::to_string(report.end_offset) +
             " failed: " + report.detail.message() + "; " + last_good_text(report.last_good_seq);
    }
  }
  return "unknown";
}

std::string hex(uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(v));
  return buffer;
}

// One line per handle kind with findings: not corruption (replay copes), but worth knowing.
void print_handle_findings(const format::HandleReport& h) {
  auto line = [](format::HandleKind kind, const format::HandleFinding& f, const char* what,
                 const char* by, const char* hint) {
    if (f.calls == 0) return;
    std::string name = format::handle_kind_name(kind);
    std::cout << "  handles: " << f.handles << ' ' << name << (f.handles == 1 ? " " : "s ") << what
              << ", " << by << ' ' << f.calls << (f.calls == 1 ? " call" : " calls")
              << " (first: call " << f.first_seq << ' ' << f.first_api << ", " << name << ' '
              << hex(f.first_handle) << "); " << hint << '\n';
  };
  for (size_t k = 0; k < format::kHandleKinds; ++k) {
    line(static_cast<format::HandleKind>(k), h.never_created[k], "that no earlier record created",
         "used by", "capture started late?");
  }
  for (size_t k = 0; k < format::kHandleKinds; ++k) {
    line(static_cast<format::HandleKind>(k), h.created_twice[k],
         "created again while live (no destroy between)", "by", "suspicious");
  }
}

}  // namespace

void register_verify(CLI::App& app, int& exit_code) {
  auto file = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Check every frame checksum, call record and blob hash. Exit codes: 0 whole, 1 usage or "
      "I/O error, 2 truncated, 3 corrupt, 4 not a cusnap capture");
  cmd->add_option("FILE", *file, "Capture file")->required();
  cmd->callback([file, &exit_code]() {
    auto opened = open_capture(*file);
    if (!opened) {
      const format::Status& st = opened.status();
      std::cout << open_failure_text(st) << "\n  file: " << *file
                << "\n  detail: " << st.to_string() << '\n';
      exit_code = exit_code_for(st);
      return;
    }
    format::Reader& reader = *opened.value();
    format::IntegrityReport report = reader.verify();
    // Counts of what the scan found (verify() rebuilds the index independently of the footer).
    format::CaptureStats stats = reader.stats();
    if (report.state == format::Integrity::kWhole) {
      stats.calls = report.last_good_seq ? *report.last_good_seq + 1 : 0;
    }
    std::cout << verdict_text(report, stats) << "\n  file: " << *file << '\n';
    if (!report.detail.is_ok()) std::cout << "  detail: " << report.detail.to_string() << '\n';
    print_handle_findings(report.handles);
    std::cout.flush();
    switch (report.state) {
      case format::Integrity::kWhole:
        exit_code = kExitOk;
        break;
      case format::Integrity::kTruncated:
        exit_code = kExitTruncated;
        break;
      case format::Integrity::kCorrupt:
        exit_code = kExitCorrupt;
        break;
    }
  });
}

}  // namespace cusnap::cli
