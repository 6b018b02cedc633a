#include "replayer/report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "cusnap/common/hex.h"
#include "cusnap/common/json_writer.h"

namespace cusnap::replayer {
namespace {

// The one JSON writer of cusnap's own documents (schema: docs/schemas/replay-report.md).
using Json = common::JsonWriter;

using common::hex;

void dims(Json& j, const std::array<uint32_t, 3>& d) {
  j.begin_array().num(d[0]).num(d[1]).num(d[2]).end_array();
}

// The names of the order-dependent kernels that ran before a check (their details are in the
// report's order_dependent_kernels).
void order_dependent_names(Json& j, const std::vector<OrderDependentKernel>& kernels) {
  j.key("order_dependent").begin_array();
  for (const OrderDependentKernel& k : kernels) j.str(k.kernel);
  j.end_array();
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
    j.begin_object()
        .key("call")
        .num(l.seq)
        .key("ordinal")
        .num(l.ordinal)
        .key("kernel")
        .str(l.kernel)
        .end_object();
  }
  j.end_array();
  order_dependent_names(j, c.order_dependent);
  j.key("allocation");
  if (c.allocation) {
    j.begin_object()
        .key("call")
        .num(c.allocation->seq)
        .key("address")
        .str(hex(c.allocation->address))
        .key("bytes")
        .num(c.allocation->size)
        .key("kind")
        .str(c.allocation->kind)
        .end_object();
  } else {
    j.null();
  }
  j.key("output");
  if (c.output.empty()) {
    j.null();
  } else {
    j.str(c.output);
  }
  j.end_object();
}

void allocation_object(Json& j, const std::optional<AllocationRef>& a) {
  if (!a) {
    j.null();
    return;
  }
  j.begin_object()
      .key("call")
      .num(a->seq)
      .key("address")
      .str(hex(a->address))
      .key("bytes")
      .num(a->size)
      .key("kind")
      .str(a->kind)
      .end_object();
}

void chunk_mismatch(Json& j, const ChunkMismatch& m) {
  j.begin_object();
  j.key("address").str(hex(m.address));
  j.key("bytes").num(m.size);
  j.key("allocation");
  allocation_object(j, m.allocation);
  j.key("offset");
  if (m.allocation)
    j.num(m.address - m.allocation->address);
  else
    j.null();
  j.key("expected_hash").str(m.expected.to_hex());
  j.key("actual_hash").str(m.actual.to_hex());
  j.key("bytes_known").boolean(m.bytes_known);
  j.key("differing_bytes");
  if (m.bytes_known)
    j.num(m.differing_bytes);
  else
    j.null();
  j.key("first_difference");
  if (m.bytes_known && m.differing_bytes > 0) {
    j.begin_object();
    j.key("address").str(hex(m.first_difference));
    j.key("offset");
    if (m.allocation)
      j.num(m.first_difference - m.allocation->address);
    else
      j.null();
    j.key("expected").num(static_cast<uint64_t>(m.expected_byte));
    j.key("actual").num(static_cast<uint64_t>(m.actual_byte));
    j.end_object();
  } else {
    j.null();
  }
  j.key("tolerance");
  if (!m.tolerance_text.empty()) {
    write_element_comparison(j, m.tolerance_text, m.within_tolerance, m.elements, "expected",
                             "actual");
  } else {
    j.null();
  }
  j.key("note").str(m.note);
  j.end_object();
}

void snapshots_object(Json& j, const ReplayResult& r, const ReplayOptions& options) {
  const PlanSummary& p = r.plan;
  const SnapshotResults& s = r.snapshots;
  j.begin_object();
  j.key("extracted").boolean(p.extracted());
  j.key("extract");
  if (p.extract) {
    const ExtractSummary& x = *p.extract;
    j.begin_object();
    j.key("source_path").str(x.source_path);
    j.key("source_host").str(x.source_host);
    j.key("source_pid").num(static_cast<uint64_t>(x.source_pid));
    j.key("launch_call").num(x.source_launch_seq);
    j.key("launch_ordinal").num(x.source_launch_ordinal);
    j.key("kernel").str(x.kernel);
    j.key("route").str(x.route);
    j.key("input_bytes").num(x.input_bytes);
    j.key("expected_bytes").num(x.expected_bytes);
    j.end_object();
  } else {
    j.null();
  }
  j.key("kernel_filter");
  if (p.kernel_filter) {
    const KernelFilterSummary& k = *p.kernel_filter;
    j.begin_object();
    j.key("filter").str(k.filter);
    j.key("launch_skip").num(k.launch_skip);
    j.key("launch_count").num(k.launch_count);
    if (k.counts) {
      j.key("launches_seen").num(k.counts->seen);
      j.key("launches_matched").num(k.counts->matched);
      j.key("launches_recorded").num(k.counts->recorded);
    }
    j.end_object();
  } else {
    j.null();
  }
  j.key("chunk_bytes").num(p.snapshot_chunk_bytes);
  j.key("records").num(p.snapshots);
  const char* result = s.compared_chunks == 0 ? "nothing compared"
                       : s.ok()               ? "matched"
                                              : "mismatched";
  j.key("result").str(result);
  j.key("restored_chunks").num(s.restored_chunks);
  j.key("restored_bytes").num(s.restored_bytes);
  j.key("compared_chunks").num(s.compared_chunks);
  j.key("compared_bytes").num(s.compared_bytes);
  j.key("matched_chunks").num(s.matched_chunks);
  j.key("within_tolerance_chunks").num(s.within_tolerance_chunks);
  j.key("mismatched_chunks").num(s.mismatched_chunks);
  j.key("order_dependent_checks").num(s.order_dependent_checks);
  j.key("tolerances").begin_array();
  for (const Tolerance& t : options.tolerances) j.str(t.text);
  j.end_array();
  j.key("checks").begin_array();
  for (const SnapshotCheck& c : s.checks) {
    j.begin_object();
    j.key("call").num(c.seq);
    j.key("launch_call").num(c.launch_seq);
    j.key("launch_ordinal").num(c.launch_ordinal);
    j.key("kernel").str(c.kernel);
    j.key("phase").str(snapshot_phase_name(c.phase));
    j.key("chunks").num(c.chunks);
    j.key("bytes").num(c.bytes);
    j.key("matched_chunks").num(c.matched_chunks);
    j.key("within_tolerance_chunks").num(c.within_tolerance_chunks);
    j.key("mismatched_chunks").num(c.mismatched_chunks);
    j.key("tolerances").begin_array();
    for (const std::string& t : c.tolerances) j.str(t);
    j.end_array();
    order_dependent_names(j, c.order_dependent);
    j.key("mismatches").begin_array();
    for (const ChunkMismatch& m : c.mismatches) chunk_mismatch(j, m);
    j.end_array();
    j.key("saved").begin_array();
    for (const SnapshotCheck::Saved& s : c.saved) {
      j.begin_object()
          .key("address")
          .str(hex(s.address))
          .key("bytes")
          .num(s.size)
          .key("output")
          .str(s.output)
          .end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("skipped").begin_array();
  for (const SkippedSnapshot& k : p.skipped_snapshots) {
    j.begin_object()
        .key("call")
        .num(k.seq)
        .key("launch_call")
        .num(k.launch_seq)
        .key("launch_ordinal")
        .num(k.launch_ordinal)
        .key("kernel")
        .str(k.kernel)
        .key("phase")
        .str(k.phase)
        .key("reason")
        .str(k.reason)
        .end_object();
  }
  j.end_array();
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
        .key("name")
        .str(d.name)
        .key("compute_capability")
        .str(std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor))
        .key("total_memory_bytes")
        .num(d.total_memory)
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
  j.key("compute_capability")
      .str(std::to_string(r.target.cc_major) + "." + std::to_string(r.target.cc_minor));
  j.key("total_memory_bytes").num(r.target.total_memory);
  j.end_object();

  j.key("options").begin_object();
  j.key("verify").str(options.verify == VerifyMode::kChecksum ? "checksum" : "none");
  j.key("address_mode").str(options.address_mode == AddressMode::kSame ? "same" : "relocate");
  j.key("timing").boolean(options.timing);
  j.key("serialize").boolean(options.serialize);
  j.key("graph_timing").str(graph_timing_name(options.graph_timing));
  j.key("repeat").num(options.sampling.adaptive ? 0u : options.repeat);
  j.key("warmup").num(options.warmup);
  j.key("sampling").str(options.sampling.adaptive ? "adaptive" : "fixed");
  j.key("min_samples").num(options.sampling.min_samples);
  j.key("max_noise").real(options.sampling.max_noise);
  j.key("min_time_seconds").real(options.sampling.min_time_seconds);
  j.key("max_time_seconds").real(options.sampling.max_time_seconds);
  j.key("cache_control").str(options.cache_control == CacheControl::kAll ? "all" : "none");
  j.key("kernel_name").str(options.kernel_regex);
  j.key("launch_skip").num(options.launch_skip);
  j.key("launch_count").num(options.launch_count);
  j.key("timeout_launch_seconds").real(options.timeout_launch_seconds);
  j.key("timeout_seconds").real(options.timeout_seconds);
  j.end_object();

  j.key("selection").begin_object();
  j.key("requested").boolean(r.selection_requested);
  j.key("selected_launches").num(r.selected_launches());
  j.end_object();

  j.key("memory").begin_object();
  j.key("ranges").num(static_cast<uint64_t>(r.memory_ranges));
  j.key("relocated_ranges").num(static_cast<uint64_t>(r.relocated_ranges));
  j.key("mapped_bytes").num(r.mapped_bytes);
  j.end_object();

  j.key("verification").begin_object();
  j.key("result").str(verdict_name(r.verdict()));
  j.key("matched").num(r.verification.matched);
  j.key("mismatched").num(r.verification.mismatched);
  j.key("unverified").num(r.verification.unverified);
  j.key("order_dependent").num(r.verification.order_dependent);
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

  j.key("snapshots");
  snapshots_object(j, r, options);

  j.key("order_dependent_kernels").begin_array();
  for (const OrderDependentKernel& k : r.order_dependent_kernels) {
    j.begin_object()
        .key("kernel")
        .str(k.kernel)
        .key("first_call")
        .num(k.first_seq)
        .key("reason")
        .str(k.reason)
        .end_object();
  }
  j.end_array();

  j.key("expected_error");
  if (r.expected_error) {
    const ExpectedErrorCheck& e = *r.expected_error;
    j.begin_object();
    j.key("call").num(e.recorded.seq);
    j.key("api").str(e.recorded.api);
    j.key("result").num(static_cast<int64_t>(e.recorded.result));
    j.key("name").str(e.name);
    j.key("last_launch_call").num(e.recorded.last_launch_seq);
    j.key("reproduced").boolean(e.reproduced);
    j.key("observed_call");
    if (e.observed)
      j.num(e.observed_seq);
    else
      j.null();
    j.key("observed_result").num(static_cast<int64_t>(e.observed_result));
    j.key("observed_name").str(e.observed_name);
    j.key("calls_not_replayed").num(e.calls_not_replayed);
    j.key("later_successful_calls").num(e.recorded.later_successful_calls);
    j.end_object();
  } else {
    j.null();
  }

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
    // After the fields older readers match in order ("ordinal", then "kernel").
    j.key("graph_launch");
    if (l.graph_node != 0)
      j.num(l.ordinal);
    else
      j.null();
    j.key("graph_node");
    if (l.graph_node != 0)
      j.str(hex(l.graph_node));
    else
      j.null();
    j.key("time_ms");
    if (l.time.samples == 0) {
      j.null();
    } else {
      j.begin_object()
          .key("samples")
          .num(l.time.samples)
          .key("min")
          .real(l.time.min_ms)
          .key("median")
          .real(l.time.median_ms)
          .key("mean")
          .real(l.time.mean_ms)
          .key("max")
          .real(l.time.max_ms)
          .key("stddev")
          .real(l.time.stddev_ms);
      j.key("values").begin_array();
      for (double v : l.time.values_ms) j.real(v);
      j.end_array();
      j.key("noise").real(l.time.noise);
      j.key("cap_hit").boolean(l.time.cap_hit);
      j.key("mode").str(l.time.mode);
      j.end_object();
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
  j.key("outputs");
  if (r.outputs_dir.empty()) {
    j.null();
  } else {
    j.begin_object()
        .key("dir")
        .str(r.outputs_dir)
        .key("files_written")
        .num(r.outputs_written)
        .key("bytes_written")
        .num(r.outputs_written_bytes)
        .end_object();
  }
  j.key("wall_seconds").real(r.wall_seconds);
  j.end_object();
  return j.take() + "\n";
}

MaybeError write_report(const std::string& path, const ReplayResult& result,
                        const ReplayOptions& options) {
  std::string text = report_json(result, options);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error(ErrorKind::kIo, "cannot write " + path + ": " + std::strerror(errno));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return Error(ErrorKind::kIo, "writing " + path + " failed");
  return std::nullopt;
}

void write_element_comparison(common::JsonWriter& j, const std::string& rule, bool within,
                              const ElementComparison& c, const char* first_key,
                              const char* second_key) {
  j.begin_object();
  j.key("rule").str(rule);
  j.key("within").boolean(within);
  j.key("elements").num(c.elements);
  j.key("differing").num(c.differing);
  j.key("over").num(c.over);
  j.key("worst").begin_array();
  for (const ElementError& e : c.worst) {
    j.begin_object();
    j.key("address").str(hex(e.address));
    j.key("index").num(e.index);
    j.key(first_key).real(e.expected);
    j.key(second_key).real(e.actual);
    j.key("abs_error").real(e.abs_error);
    j.key("ulp").num(e.ulp);
    j.key("within").boolean(e.within);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

}  // namespace cusnap::replayer
