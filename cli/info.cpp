// `cusnap info FILE [--json]`: what a capture holds, at a glance.
#include <capnp/message.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <iostream>
#include <string>
#include <string_view>

#include "common.h"
#include "cusnap/format/header_info.h"
#include "cusnap/format/kernel_filter_summary.h"
#include "info_collect.h"
#include "record_json.h"
#include "subcommands.h"
#include "table.h"

namespace cusnap::cli {

namespace {

std::string utc_time(int64_t ns_since_epoch) {
  if (ns_since_epoch <= 0) return "unknown";
  std::time_t seconds = static_cast<std::time_t>(ns_since_epoch / 1000000000);
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) return "unknown";
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string driver_text(int32_t version) {
  if (version <= 0) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10) + " (" +
         std::to_string(version) + ")";
}

std::string duration_text(int64_t ns) {
  char buf[32];
  if (ns < 1000) {
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  } else if (ns < 1000000) {
    std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  } else if (ns < 1000000000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  }
  return buf;
}

// Why a call the capture passed through cannot be replayed, by API family.
std::string unmodelled_reason(std::string_view api) {
  struct Family {
    std::string_view prefix, why;
  };
  static constexpr Family kFamilies[] = {
      {"cuIpc", "IPC handles name another process's memory or events: not replayable"},
      {"cuImportExternal", "external memory/semaphores belong to another API: not replayable"},
      {"cuExternal", "external memory/semaphores belong to another API: not replayable"},
      {"cuSignalExternal", "external semaphores belong to another API: not replayable"},
      {"cuWaitExternal", "external semaphores belong to another API: not replayable"},
      {"cuDestroyExternal", "external memory/semaphores belong to another API: not replayable"},
      // Typed since schema 8: only an older capture holds these as generic records.
      {"cuTexRef", "texture reference recorded without its state (capture older than schema 8)"},
      {"cuSurfRef", "surface reference recorded without its state (capture older than schema 8)"},
      {"cuModuleGetTexRef", "texture reference look-up not typed (capture older than schema 8)"},
      {"cuModuleGetSurfRef", "surface reference look-up not typed (capture older than schema 8)"},
      {"cuParamSetTexRef", "texture reference binding not typed (capture older than schema 8)"},
      {"cuGraph", "graph call not typed yet (docs/capture.md)"},
      {"cuMemPoolExport", "pool IPC: shared with another process, not replayable"},
      {"cuMemPoolImport", "pool IPC: memory of another process, not replayable"},
      {"cuMemPool",
       "memory pool call recorded without its arguments (capture older than schema 8)"},
      {"cuDeviceSetMemPool",
       "memory pool call recorded without its arguments (capture older than schema 8)"},
      {"cuMemSetMemPool", "the pool of a memory location (cuMemSetMemPool) is not modelled"},
      {"cuGL", "graphics interop: not replayable"},
      {"cuEGL", "graphics interop: not replayable"},
      {"cuVDPAU", "graphics interop: not replayable"},
  };
  for (const Family& f : kFamilies) {
    if (api.starts_with(f.prefix)) return std::string(f.why);
  }
  return "passed through without being modelled";
}

std::string dim3_text(schema::Dim3::Reader d) {
  return "(" + std::to_string(d.getX()) + "," + std::to_string(d.getY()) + "," +
         std::to_string(d.getZ()) + ")";
}

void print_field(std::ostream& out, const std::string& name, const std::string& value) {
  std::string padded = name;
  padded.resize(std::max<size_t>(name.size() + 1, 14), ' ');
  out << "  " << padded << value << '\n';
}

}  // namespace

void print_info_text(std::ostream& out, schema::InfoReport::Reader info) {
  auto header = info.getHeader();
  auto integrity = info.getIntegrity();
  auto counts = info.getCounts();
  auto bytes = info.getBytes();

  out << "Capture " << info.getFile().cStr() << '\n';
  print_field(out, "file",
              human_bytes(info.getFileBytes()) + " (" + std::to_string(info.getFileBytes()) +
                  " bytes), container " + info.getContainerVersion().cStr() + ", schema " +
                  std::to_string(header.getSchemaVersion()));
  std::string integrity_line = std::string(integrity.getSummary().cStr()) + "; index from " +
                               (integrity.getIndexSource() == schema::Integrity::IndexSource::FOOTER
                                    ? "footer"
                                    : "scan (no valid footer)");
  if (!integrity.getDeepChecked()) integrity_line += "; run `cusnap verify` for a full check";
  print_field(out, "integrity", integrity_line);
  if (integrity.hasIncomplete() && integrity.getIncomplete().size() != 0) {
    print_field(out, "incomplete",
                std::string("the capture was not finished: ") + integrity.getIncomplete().cStr());
  }
  print_field(out, "tool",
              std::string(header.getToolName().cStr()) + " " + header.getToolVersion().cStr());
  print_field(out, "created", utc_time(header.getCreationTimeNs()));
  print_field(
      out, "host",
      std::string(header.getHostName().cStr()) + ", pid " + std::to_string(header.getPid()));
  std::string command;
  for (auto arg : header.getCommandLine()) {
    if (!command.empty()) command += ' ';
    command += arg.cStr();
  }
  print_field(out, "command", command.empty() ? "-" : command);
  if (header.hasWorkingDirectory())
    print_field(out, "directory", header.getWorkingDirectory().cStr());
  std::string driver = driver_text(header.getDriverVersion());
  if (header.hasDriverPath() && header.getDriverPath().size() > 0) {
    driver += ", " + std::string(header.getDriverPath().cStr());
  }
  print_field(out, "driver", driver);
  if (header.hasOptions()) {
    auto options = header.getOptions();
    std::string mode = options.getMode() == format::schema::CaptureOptions::CaptureMode::SNAPSHOT
                           ? "snapshot"
                           : "stream";
    if (options.hasKernelRegex() && options.getKernelRegex().size() > 0) {
      mode += ", kernels /" + std::string(options.getKernelRegex().cStr()) + "/";
    }
    if (options.getLaunchSkip() > 0) mode += ", skip " + std::to_string(options.getLaunchSkip());
    if (options.getLaunchCount() > 0) mode += ", count " + std::to_string(options.getLaunchCount());
    mode += ", zstd level " + std::to_string(options.getCompressionLevel());
    print_field(out, "mode", mode);
  }
  if (info.hasKernelFilter()) {
    // A kernel-filtered capture (docs/capture.md, "Kernel filters").
    auto k = info.getKernelFilter();
    auto options = header.getOptions();
    std::string line = "only launches of " + std::string(options.getKernelRegex().cStr());
    if (options.getLaunchSkip() > 0)
      line += " after skipping " + std::to_string(options.getLaunchSkip());
    if (options.getLaunchCount() > 0)
      line += ", at most " + std::to_string(options.getLaunchCount());
    line += " are recorded, each with its inputs; ";
    if (!k.getSummarized()) {
      line += "no closing summary (the capture ended early)";
    } else if (k.getLaunchesRecorded() == 0) {
      line += "the filter selected no launch (" + std::to_string(k.getLaunchesMatched()) +
              " matching of " + std::to_string(k.getLaunchesSeen()) + " seen)";
    } else {
      line += format::kernel_filter_counts_text(
          {k.getLaunchesSeen(), k.getLaunchesMatched(), k.getLaunchesRecorded()});
    }
    print_field(out, "filtered", line);
  }
  if (header.hasExtract()) {
    // One line saying what an extracted capture is (docs/replay.md, "Extracted captures").
    auto x = header.getExtract();
    std::string route = x.getRoute() == format::schema::ExtractInfo::Route::REPLAY
                            ? std::string("replay on ") + x.getRouteDriver().cStr()
                            : std::string("snapshot");
    print_field(out, "extracted",
                "one launch of " + std::string(x.getKernelName().cStr()) + ": launch #" +
                    std::to_string(x.getLaunchOrdinal()) + " (" + format::extracted_launch_text(x) +
                    ") of " + x.getSourcePath().cStr() + " (host " + x.getSourceHostName().cStr() +
                    ", pid " + std::to_string(x.getSourcePid()) + "), route " + route + "; input " +
                    human_bytes(x.getInputBytes()) + ", expected " +
                    human_bytes(x.getExpectedBytes()));
    if (x.getMinimized()) {
      // --minimize (docs/extract.md, "Minimized extracts"): what was left out.
      print_field(out, "minimized",
                  "only memory the launch touches: " + human_bytes(x.getDroppedInputBytes()) +
                      " of input and " + human_bytes(x.getDroppedExpectedBytes()) +
                      " expected dropped, " + std::to_string(x.getDroppedRanges()) +
                      " allocation(s)/variable(s) left out");
    }
  }
  if (header.hasMinimize()) {
    // `cusnap minimize` (docs/minimize.md): what the search kept of its input.
    auto m = header.getMinimize();
    std::string line =
        "until " + std::string(m.getCondition().cStr()) + ": " + std::to_string(m.getUnitsAfter()) +
        " of " + std::to_string(m.getUnitsBefore()) + " units kept, " +
        std::to_string(m.getCallsAfter()) + " of " + std::to_string(m.getCallsBefore()) +
        " calls, " + human_bytes(m.getDataBytesAfter()) + " of " +
        human_bytes(m.getDataBytesBefore()) + " data";
    if (m.getInputChunksBefore() > 0)
      line += ", " + std::to_string(m.getInputChunksKept()) + " of " +
              std::to_string(m.getInputChunksBefore()) + " input chunks";
    line += "; " + std::to_string(m.getEvaluations()) + " candidates, " +
            std::to_string(m.getReplays()) + " replays" +
            (m.getMinimal() ? "" : "; not minimal (--max-evaluations)");
    print_field(out, "minimized", line);
  }
  if (header.hasRange()) {
    // A capture of one capture range (docs/capture.md, "Capture ranges").
    auto r = header.getRange();
    std::string trigger;
    switch (r.getTrigger()) {
      case format::schema::RangeInfo::Trigger::NVTX:
        trigger = std::string("nvtx ") + r.getNvtxCapture().cStr();
        break;
      case format::schema::RangeInfo::Trigger::SIGNAL:
        trigger = "signal (SIGUSR1)";
        break;
      default:
        trigger = "cudaProfilerApi";
        break;
    }
    std::string end = std::string(", end ") + r.getEndMode().cStr();
    print_field(out, "range",
                r.getNumber() == 0
                    ? trigger + end + ": the capture range never started (the file holds no call)"
                    : trigger + " range " + std::to_string(r.getNumber()) + end +
                          "; starts mid-run: state records and a rangeStart snapshot, then the "
                          "range's calls");
  }
  if (header.hasRedact()) {
    // `cusnap redact` (docs/redact.md): what was replaced, what was kept and why.
    auto r = header.getRedact();
    std::string expectations;
    switch (r.getExpectations()) {
      case format::schema::RedactInfo::Expectations::ORIGINAL:
        expectations = "the capture's own (no byte was replaced)";
        break;
      case format::schema::RedactInfo::Expectations::RESEALED:
        expectations =
            std::string("resealed: recomputed by a replay on ") + r.getReferenceDriver().cStr();
        break;
      case format::schema::RedactInfo::Expectations::DROPPED:
        expectations = std::string("dropped: the replay on ") + r.getReferenceDriver().cStr() +
                       " failed, the capture verifies nothing";
        break;
    }
    print_field(out, "redacted",
                human_bytes(r.getReplacedBytes()) + " of payload replaced (seed " +
                    hex(r.getSeed()) + "); kept: " + human_bytes(r.getPointerBytes()) +
                    " device pointers, " + human_bytes(r.getKeptAllocationBytes()) +
                    " in kept allocations, " + human_bytes(r.getRestoredBytes()) + " for --verify" +
                    (r.getCondition().size() > 0 ? std::string(" ") + r.getCondition().cStr()
                                                 : std::string()) +
                    "; header " + (r.getHeaderSalted() ? "salted hashes" : "scrubbed") +
                    "; expectations " + expectations);
    if (r.getPtxCommentsStripped() || r.getNamesHashed()) {
      std::string what = r.getPtxCommentsStripped() ? "PTX comments and .file/.loc stripped" : "";
      if (r.getNamesHashed())
        what += std::string(what.empty() ? "" : ", ") + "kernel and variable names hashed";
      print_field(out, "code",
                  what + ", " + std::to_string(r.getCubinEntriesDropped()) +
                      " cubin entries left out of fatbins");
    }
    auto range_text = [](format::schema::RedactedRange::Reader k) {
      std::string t = hex(k.getAddress()) + " +" + std::to_string(k.getSize());
      if (k.getAllocationAddress() != 0)
        t += " (offset " + std::to_string(k.getAddress() - k.getAllocationAddress()) +
             " of the range at " + hex(k.getAllocationAddress()) + ", call " +
             std::to_string(k.getAllocationSeq()) + ")";
      return t + ": " + k.getWhat().cStr();
    };
    for (auto k : r.getKeptAllocations()) print_field(out, "kept", range_text(k));
    for (auto k : r.getRestored()) print_field(out, "original", range_text(k));
  }
  for (auto kv : header.getEnvironment()) {
    print_field(out, "env", std::string(kv.getKey().cStr()) + "=" + kv.getValue().cStr());
  }

  out << "\nDevices (" << header.getDevices().size() << ")\n";
  if (header.getDevices().size() > 0) {
    Table devices({{"#", true}, {"name"}, {"cc"}, {"SMs", true}, {"memory", true}, {"pci"}});
    for (auto d : header.getDevices()) {
      devices.add_row({std::to_string(d.getOrdinal()), d.getName().cStr(),
                       std::to_string(d.getComputeCapabilityMajor()) + "." +
                           std::to_string(d.getComputeCapabilityMinor()),
                       std::to_string(d.getMultiprocessorCount()),
                       human_bytes(d.getTotalMemoryBytes()), d.getPciBusId().cStr()});
    }
    devices.print(out);
  }

  out << "\nCalls: " << counts.getCalls() << " in " << counts.getCallFrames() << " frames, "
      << counts.getThreads() << " threads, span " << duration_text(info.getCallSpanNs()) << '\n';
  if (info.getCallKinds().size() > 0) {
    Table kinds({{"kind"}, {"count", true}});
    for (auto k : info.getCallKinds())
      kinds.add_row({k.getKind().cStr(), std::to_string(k.getCount())});
    kinds.print(out);
  }

  auto unmodelled = info.getUnmodelledCalls();
  if (info.getReplayMayDiverge()) {
    uint64_t total = 0;
    for (auto a : unmodelled) total += a.getCount();
    out << "\nReplay may diverge: " << total << " successful call" << (total == 1 ? "" : "s")
        << " the capture does not model may have changed device state\n";
    Table apis({{"calls", true}, {"unmodelled api"}, {"why"}});
    for (auto a : unmodelled) {
      apis.add_row(
          {std::to_string(a.getCount()), a.getApi().cStr(), unmodelled_reason(a.getApi().cStr())});
    }
    apis.print(out);
  } else {
    out << "\nReplay: every successful call that may change device state is modelled\n";
  }

  out << "\nKernels: " << counts.getKernels() << " distinct, " << counts.getLaunches()
      << " launches\n";
  if (info.getKernels().size() > 0) {
    Table kernels(
        {{"launches", true}, {"grid"}, {"block"}, {"shared", true}, {"shapes", true}, {"kernel"}});
    for (auto k : info.getKernels()) {
      auto shapes = k.getShapes();
      if (shapes.size() == 0) continue;
      auto top = shapes[0];  // the most frequent shape
      kernels.add_row({std::to_string(k.getLaunches()), dim3_text(top.getGrid()),
                       dim3_text(top.getBlock()), std::to_string(top.getSharedBytes()),
                       std::to_string(shapes.size()), k.getName().cStr()});
    }
    kernels.print(out);
    out << "  (grid/block/shared: the kernel's most frequent shape; shapes: distinct shapes)\n";
  }

  auto snapshots = info.getSnapshots();
  if (snapshots.getRecords() > 0 || snapshots.getSkipped().size() > 0) {
    out << "\nSnapshots: " << snapshots.getRecords() << " record(s) for " << snapshots.getLaunches()
        << " launch" << (snapshots.getLaunches() == 1 ? "" : "es") << ", " << snapshots.getChunks()
        << " chunks covering " << human_bytes(snapshots.getBytes()) << " (chunk "
        << human_bytes(snapshots.getChunkBytes()) << ", " << snapshots.getHashOnlyChunks()
        << " by hash only)\n";
    auto skipped = snapshots.getSkipped();
    if (skipped.size() > 0) out << "  skipped: " << skipped.size() << '\n';
    for (auto k : skipped) {
      out << "    launch #" << k.getLaunchOrdinal() << " (call " << k.getLaunchSeq() << ")";
      if (k.getKernel().size() > 0) out << " " << k.getKernel().cStr();
      out << ", " << k.getPhase().cStr() << ": " << k.getReason().cStr() << '\n';
    }
  }

  auto nvtx = info.getNvtx();
  if (nvtx.getRecords() > 0) {
    out << "\nNVTX: " << nvtx.getRecords() << " record(s) from " << nvtx.getThreads()
        << " thread(s): " << nvtx.getPushes() << " push, " << nvtx.getPops() << " pop, "
        << nvtx.getStarts() << " start, " << nvtx.getEnds() << " end, " << nvtx.getMarks()
        << " mark\n";
    Table domains({{"domain"}, {"ranges", true}, {"marks", true}});
    for (auto d : nvtx.getDomains()) {
      domains.add_row({d.getName().size() > 0 ? std::string(d.getName().cStr()) : "(default)",
                       std::to_string(d.getRanges()), std::to_string(d.getMarks())});
    }
    domains.print(out);
  }

  out << "\nBytes\n";
  Table table({{"what"}, {"raw", true}, {"stored", true}, {"ratio", true}});
  table.add_row({"call records", human_bytes(bytes.getCallRaw()),
                 human_bytes(bytes.getCallStored()),
                 ratio_text(bytes.getCallRaw(), bytes.getCallStored())});
  table.add_row({"blobs (distinct)", human_bytes(bytes.getBlobUnique()),
                 human_bytes(bytes.getBlobStored()),
                 ratio_text(bytes.getBlobUnique(), bytes.getBlobStored())});
  table.add_row({"whole file (logical)", human_bytes(bytes.getLogical()),
                 human_bytes(info.getFileBytes()),
                 ratio_text(bytes.getLogical(), info.getFileBytes())});
  table.print(out);
  out << "  dedup: " << bytes.getBlobReferences() << " blob references to " << counts.getBlobs()
      << " blobs; " << human_bytes(bytes.getBlobReferenced()) << " referenced, "
      << human_bytes(bytes.getBlobUnique()) << " distinct, saved "
      << human_bytes(bytes.getDedupSaved()) << '\n';
  if (bytes.getHasWriterStats()) {
    out << "  writer: " << bytes.getWriterBlobPuts() << " put_blob calls, "
        << human_bytes(bytes.getWriterBlobBytesLogical()) << " uploaded\n";
  }
  if (bytes.getBlobReferencesMissing() > 0) {
    out << "  WARNING: " << bytes.getBlobReferencesMissing()
        << " references to blobs that are not in the file\n";
  }
}

void register_info(CLI::App& app, int& exit_code) {
  struct Options {
    std::string file;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "info", "Summarize a capture: header, devices, calls per kind, kernels, sizes, integrity");
  cmd->add_option("FILE", options->file, "Capture file")->required();
  cmd->add_flag("--json", options->json,
                "Print one JSON object (schema: cli/schema/info.capnp, see docs/cli.md)");
  cmd->callback([options, &exit_code]() {
    auto reader = open_capture(options->file);
    if (!reader) {
      exit_code = report_failure("info", reader.status());
      return;
    }
    capnp::MallocMessageBuilder message;
    auto report = message.initRoot<schema::InfoReport>();
    uint64_t bad = 0;
    format::Status st =
        collect_info(*reader.value(), options->file, report, [&](const format::Status& why) {
          report_failure("info", why);
          ++bad;
        });
    if (!st.is_ok()) {
      exit_code = report_failure("info", st);
      return;
    }
    const format::IntegrityReport& recovery = reader.value()->recovery();
    if (recovery.state != format::Integrity::kWhole) {
      spdlog::warn("{}: {}", options->file, recovery.summary());
    }
    if (options->json) {
      // Streamed: a header with very many devices or attributes must not cost a JSON tree.
      RecordJson json;
      json.stream(std::cout, report.asReader(), capnp::Type::from<schema::InfoReport>());
      std::cout << '\n';
    } else {
      print_info_text(std::cout, report.asReader());
    }
    std::cout.flush();
    if (bad > 0) {
      // What could be read was summarized; the file is still damaged.
      spdlog::error(
          "cusnap info: {} record(s) or frame(s) could not be decoded and are not counted", bad);
      exit_code = kExitCorrupt;
      return;
    }
    exit_code = std::cout.good() ? kExitOk : kExitUsageOrIo;
  });
}

}  // namespace cusnap::cli
