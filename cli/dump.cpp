// `cusnap dump FILE [--json] [--calls A:B]`: the call stream, one call per line.
#include "dump.h"

#include <spdlog/spdlog.h>

#include <iostream>

#include "call_range.h"
#include "common.h"
#include "record_json.h"
#include "record_text.h"
#include "subcommands.h"

namespace cusnap::cli {

format::Status write_calls(format::Reader& reader, CallRange range, const RecordJson* json,
                           std::ostream& out, uint64_t& printed,
                           const std::function<void(const format::Status&)>& on_bad) {
  if (range.begin >= range.end) return format::Status::ok();
  format::Status bad_record = format::Status::ok();
  format::Status st = reader.for_each_call(
      [&](const format::CallRef& call) {
        if (call.seq() >= range.end) return false;
        try {
          out << (json ? json->dump_line(call) : record_text(call.get())) << '\n';
          ++printed;
        } catch (const kj::Exception& e) {
          // The reader checked the record once; a second look can still exceed the traversal
          // limit (aliased pointers). Say which record, and go on if the caller can.
          format::Status why =
              format::Status::error(format::ErrorCode::kMalformed,
                                    std::string("unreadable record: ") + e.getDescription().cStr())
                  .in_file(reader.path())
                  .in_frame(call.frame())
                  .at_call(call.seq());
          if (!on_bad) {
            bad_record = why;
            return false;
          }
          out.flush();
          on_bad(why);
        }
        // Stop at the last selected call: the next one may sit in a frame (damaged or not)
        // that the selection does not need.
        return call.seq() + 1 < range.end;
      },
      range.begin,
      on_bad ? std::function<bool(const format::Status&)>([&](const format::Status& why) {
        // A record that does not decode is reported and skipped; the rest still print.
        if (why.call() && *why.call() >= range.end) return false;
        out.flush();
        on_bad(why);
        return true;
      })
             : std::function<bool(const format::Status&)>());
  return st.is_ok() ? bad_record : st;
}

void register_dump(CLI::App& app, int& exit_code) {
  struct Options {
    std::string file;
    bool json = false;
    std::string calls;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("dump", "Print the call stream, one call per line");
  cmd->add_option("FILE", options->file, "Capture file")->required();
  cmd->add_flag("--json", options->json,
                "JSON Lines: one object per call, the record encoded by Cap'n Proto's JSON codec "
                "(schema in docs/cli.md)");
  cmd->add_option("--calls", options->calls,
                  "Only calls A..B-1 (half-open A:B; also A:, :B, or N for one call)");
  cmd->callback([options, &exit_code]() {
    auto opened = open_capture(options->file);
    if (!opened) {
      exit_code = report_failure("dump", opened.status());
      return;
    }
    format::Reader& reader = *opened.value();
    uint64_t count = reader.call_count();
    CallRange range{0, count};
    if (!options->calls.empty()) {
      auto parsed = parse_call_range(options->calls, count);
      if (!parsed) {
        exit_code = report_failure("dump", parsed.status());
        return;
      }
      range = parsed.value();
    }
    const format::IntegrityReport& recovery = reader.recovery();
    if (recovery.state != format::Integrity::kWhole) {
      spdlog::warn("{}: {}; dumping the {} calls that were recovered", options->file,
                   recovery.summary(), count);
    }

    std::unique_ptr<RecordJson> json;
    if (options->json) json = std::make_unique<RecordJson>();
    uint64_t printed = 0;
    uint64_t bad = 0;
    format::Status st =
        write_calls(reader, range, json.get(), std::cout, printed, [&](const format::Status& why) {
          report_failure("dump", why);
          ++bad;
        });
    std::cout.flush();
    if (!st.is_ok()) {
      exit_code = report_failure("dump", st);
      return;
    }
    if (bad > 0) {
      spdlog::error("cusnap dump: {} record(s) or frame(s) could not be decoded", bad);
      exit_code = kExitCorrupt;
      return;
    }
    if (printed != range.end - range.begin) {
      spdlog::error("cusnap dump: expected {} calls in {}..{}, read {}", range.end - range.begin,
                    range.begin, range.end, printed);
      exit_code = kExitCorrupt;
      return;
    }
    exit_code = std::cout.good() ? kExitOk : kExitUsageOrIo;
  });
}

}  // namespace cusnap::cli
