#include "replayer/report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "cusnap/common/json_writer.h"

namespace cusnap::replayer {
namespace {

// The one JSON writer of cusnap's own documents (schema: docs/schemas/replay-report.md).
using Json = common::JsonWriter;

std::string hex(uint64_t v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(v));
  return buffer;
}

void dims(Json& j, const std::array<uint32_t, 3>& d) {
  j.begin_array().num(d[0]).num(d[1]).num(d[2]).end_array();
}

void copy_check(Json& j, const CopyCheck& c) {
  j.begin_object();
  j.key("call").num(c.seq);
  j.key("address").str(hex(c.address));
  j.key("bytes").num(c.size);
  j.key("state").str(verify_state_name(c.state));
  j.key("expected_checksum").str(hex(c.expected));
  j.key("actual_checksum").str(hex(c.actual));
  j.key("launches_before").num(c.launches_before);
  j.key("recent_launches").begin_array();
  for (const LaunchRef& l : c.recent_launches) {
    j.begin_object().key("call").num(l.seq).key("ordinal").num(l.ordinal).key("kernel").str(l.kernel).end_object();
  }
  j.end_array();
  j.key("allocation");
  if (c.allocation) {
    j.begin_object()
        .key("call").num(c.allocation->seq)
        .key("address").str(hex(c.allocation->address))
        .key("bytes").num(c.allocation->size)
        .key("kind").str(c.allocation->kind)
        .end_object();
  } else {
    j.null();
  }
  j.end_object();
}

}  // namespace

std::string report_json(const ReplayResult& r, const ReplayOptions& options) {
  Json j;
  j.begin_object();
  j.key("schema").str("cusnap-replay-report");
  j.key("schema_version").num(kReportSchemaVersion);

  j.key("capture").begin_object();
  j.key("path").str(r.capture_path);
  j.key("tool_version").str(r.plan.tool_version);
  j.key("integrity").str(r.plan.integrity);
  j.key("calls").num(r.plan.call_count);
  j.key("launches").num(r.plan.launch_count);
  j.key("driver_version").num(static_cast<int64_t>(r.plan.captured_driver_version));
  j.key("command_line").begin_array();
  for (const std::string& arg : r.plan.command_line) j.str(arg);
  j.end_array();
  j.key("devices").begin_array();
  for (const CapturedDevice& d : r.plan.devices) {
    j.begin_object()
        .key("name").str(d.name)
        .key("compute_capability").str(std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor))
        .key("total_memory_bytes").num(d.total_memory)
        .end_object();
  }
  j.end_array();
  j.end_object();

  j.key("driver").begin_object();
  j.key("path").str(r.target.driver_path);
  j.key("chosen").str(r.target.driver_reason);
  j.key("version").num(r.target.driver_version);
  j.end_object();

  j.key("device").begin_object();
  j.key("ordinal").num(r.target.device);
  j.key("name").str(r.target.device_name);
  j.key("compute_capability").str(std::to_string(r.target.cc_major) + "." + std::to_string(r.target.cc_minor));
  j.key("total_memory_bytes").num(r.target.total_memory);
  j.end_object();

  j.key("options").begin_object();
  j.key("verify").str(options.verify == VerifyMode::kChecksum ? "checksum" : "none");
  j.key("address_mode").str(options.address_mode == AddressMode::kSame ? "same" : "relocate");
  j.key("timing").boolean(options.timing);
  j.key("repeat").num(options.repeat);
  j.key("warmup").num(options.warmup);
  j.key("cache_control").str(options.cache_control == CacheControl::kAll ? "all" : "none");
  j.key("kernel_name").str(options.kernel_regex);
  j.key("launch_skip").num(options.launch_skip);
  j.key("launch_count").num(options.launch_count);
  j.end_object();

  j.key("memory").begin_object();
  j.key("ranges").num(static_cast<uint64_t>(r.memory_ranges));
  j.key("relocated_ranges").num(static_cast<uint64_t>(r.relocated_ranges));
  j.key("mapped_bytes").num(r.mapped_bytes);
  j.end_object();

  j.key("verification").begin_object();
  j.key("result").str(r.verification.ok() ? "matched" : "mismatched");
  j.key("matched").num(r.verification.matched);
  j.key("mismatched").num(r.verification.mismatched);
  j.key("unverified").num(r.verification.unverified);
  j.key("first_mismatch");
  if (r.verification.first_mismatch) {
    copy_check(j, *r.verification.first_mismatch);
  } else {
    j.null();
  }
  j.key("copies").begin_array();
  for (const CopyCheck& c : r.copies) copy_check(j, c);
  j.end_array();
  j.end_object();

  j.key("launches").begin_array();
  for (const LaunchReport& l : r.launches) {
    j.begin_object();
    j.key("call").num(l.seq);
    j.key("ordinal").num(l.ordinal);
    j.key("kernel").str(l.kernel);
    j.key("grid");
    dims(j, l.grid);
    j.key("block");
    dims(j, l.block);
    j.key("shared_bytes").num(l.shared_bytes);
    j.key("selected").boolean(l.selected);
    j.key("verification").str(verify_state_name(l.verification));
    j.key("pointers_rewritten").num(l.pointers_rewritten);
    j.key("time_ms");
    if (l.time.samples == 0) {
      j.null();
    } else {
      j.begin_object()
          .key("samples").num(l.time.samples)
          .key("min").real(l.time.min_ms)
          .key("median").real(l.time.median_ms)
          .key("mean").real(l.time.mean_ms)
          .key("max").real(l.time.max_ms)
          .key("stddev").real(l.time.stddev_ms)
          .end_object();
    }
    j.end_object();
  }
  j.end_array();

  j.key("skipped").begin_object();
  for (const auto& [what, count] : r.plan.skipped) j.key(what).num(count);
  j.end_object();
  j.key("warnings").begin_array();
  for (const std::string& m : r.messages) j.str(m);
  j.end_array();
  j.key("wall_seconds").real(r.wall_seconds);
  j.end_object();
  return j.take() + "\n";
}

MaybeError write_report(const std::string& path, const ReplayResult& result, const ReplayOptions& options) {
  std::string text = report_json(result, options);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error(ErrorKind::kIo, "cannot write " + path + ": " + std::strerror(errno));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return Error(ErrorKind::kIo, "writing " + path + " failed");
  return std::nullopt;
}

}  // namespace cusnap::replayer
