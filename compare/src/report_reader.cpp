// read_report(): the replay report (replayer/report.cpp writes it; every field in
// docs/schemas/replay-report.md) read back with cusnap's one JSON reader. Only the fields a
// comparison needs are read; unknown fields are ignored (fields are only ever added).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cusnap/common/json_reader.h"
#include "cusnap/compare/compare.h"

namespace cusnap::compare {
namespace {

using common::JsonValue;

// The newest report schema this reader knows (replayer/report.h's kReportSchemaVersion).
constexpr int kNewestReportSchema = 2;

// Field access that remembers the first problem and names the field's path in the document.
class Fields {
 public:
  explicit Fields(std::string origin) : origin_(std::move(origin)) {}

  const JsonValue* member(const JsonValue& object, const char* name, const std::string& path,
                          bool required = true) {
    const JsonValue* v = object.find(name);
    if (!v && required) fail(path + "." + name, "missing");
    return v;
  }
  uint64_t uint(const JsonValue& object, const char* name, const std::string& path) {
    const JsonValue* v = member(object, name, path);
    if (!v) return 0;
    std::optional<uint64_t> n = v->as_uint();
    if (!n) fail(path + "." + name, "not an unsigned integer");
    return n.value_or(0);
  }
  int64_t integer(const JsonValue& object, const char* name, const std::string& path) {
    const JsonValue* v = member(object, name, path);
    if (!v) return 0;
    std::optional<int64_t> n = v->as_int();
    if (!n) fail(path + "." + name, "not an integer");
    return n.value_or(0);
  }
  double real(const JsonValue& object, const char* name, const std::string& path) {
    const JsonValue* v = member(object, name, path);
    if (!v) return 0;
    std::optional<double> d = v->as_double();
    if (!d) fail(path + "." + name, "not a number");
    return d.value_or(0);
  }
  std::string text(const JsonValue& object, const char* name, const std::string& path,
                   bool required = true) {
    const JsonValue* v = member(object, name, path, required);
    if (!v) return {};
    if (v->is_null() && !required) return {};
    if (!v->is_string()) fail(path + "." + name, "not a string");
    return v->is_string() ? *v->as_string() : std::string();
  }
  bool flag(const JsonValue& object, const char* name, const std::string& path,
            bool required = true) {
    const JsonValue* v = member(object, name, path, required);
    if (!v) return false;
    if (!v->is_bool()) fail(path + "." + name, "not true or false");
    return v->as_bool().value_or(false);
  }
  // "0x..." → value; none for null. The report writes addresses as strings.
  std::optional<uint64_t> address(const JsonValue& v, const std::string& path) {
    if (v.is_null()) return std::nullopt;
    const std::string* s = v.as_string();
    if (!s || s->size() < 3 || s->compare(0, 2, "0x") != 0) {
      fail(path, "not an address string \"0x...\"");
      return std::nullopt;
    }
    char* end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(s->c_str() + 2, &end, 16);
    if (errno != 0 || *end != '\0') {
      fail(path, "not an address string \"0x...\"");
      return std::nullopt;
    }
    return value;
  }
  const JsonValue* array(const JsonValue& object, const char* name, const std::string& path,
                         bool required = true) {
    const JsonValue* v = member(object, name, path, required);
    if (v && !v->is_array()) {
      fail(path + "." + name, "not an array");
      return nullptr;
    }
    return v;
  }
  const JsonValue* object(const JsonValue& parent, const char* name, const std::string& path,
                          bool required = true) {
    const JsonValue* v = member(parent, name, path, required);
    if (v && !v->is_object()) {
      if (!required && v->is_null()) return nullptr;
      fail(path + "." + name, "not an object");
      return nullptr;
    }
    return v;
  }

  void fail(const std::string& path, const std::string& what) {
    if (!error_) error_ = origin_ + ": " + path + ": " + what;
  }
  const std::optional<std::string>& error() const { return error_; }

 private:
  std::string origin_;
  std::optional<std::string> error_;
};

std::optional<uint64_t> allocation_base(Fields& f, const JsonValue& owner,
                                        const std::string& path) {
  const JsonValue* a = f.object(owner, "allocation", path, false);
  if (!a) return std::nullopt;
  const JsonValue* address = f.member(*a, "address", path + ".allocation");
  return address ? f.address(*address, path + ".allocation.address") : std::nullopt;
}

ReportCopy read_copy(Fields& f, const JsonValue& c, const std::string& path) {
  ReportCopy copy;
  copy.call = f.uint(c, "call", path);
  if (const JsonValue* a = f.member(c, "address", path)) {
    copy.address = f.address(*a, path + ".address").value_or(0);
  }
  copy.bytes = f.uint(c, "bytes", path);
  copy.state = f.text(c, "state", path);
  copy.expected_checksum = f.text(c, "expected_checksum", path);
  copy.actual_checksum = f.text(c, "actual_checksum", path);
  copy.launches_before = f.uint(c, "launches_before", path);
  copy.allocation_address = allocation_base(f, c, path);
  copy.output = f.text(c, "output", path, false);
  return copy;
}

ReportChunk read_chunk(Fields& f, const JsonValue& m, const std::string& path) {
  ReportChunk chunk;
  if (const JsonValue* a = f.member(m, "address", path)) {
    chunk.address = f.address(*a, path + ".address").value_or(0);
  }
  chunk.bytes = f.uint(m, "bytes", path);
  chunk.allocation_address = allocation_base(f, m, path);
  chunk.actual_hash = f.text(m, "actual_hash", path, false);
  chunk.output = f.text(m, "output", path, false);
  return chunk;
}

std::optional<ReportTime> read_time(Fields& f, const JsonValue& l, const std::string& path) {
  const JsonValue* t = f.object(l, "time_ms", path, false);
  if (!t) return std::nullopt;
  std::string p = path + ".time_ms";
  ReportTime time;
  time.samples = f.uint(*t, "samples", p);
  time.min_ms = f.real(*t, "min", p);
  time.median_ms = f.real(*t, "median", p);
  time.mean_ms = f.real(*t, "mean", p);
  time.max_ms = f.real(*t, "max", p);
  time.stddev_ms = f.real(*t, "stddev", p);
  if (const JsonValue* values = f.array(*t, "values", p, false)) {
    for (size_t i = 0; i < values->elements().size(); ++i) {
      std::optional<double> v = values->elements()[i].as_double();
      if (!v) f.fail(p + ".values[" + std::to_string(i) + "]", "not a number");
      time.values_ms.push_back(v.value_or(0));
    }
    if (time.values_ms.size() != time.samples) f.fail(p + ".values", "length is not `samples`");
  }
  if (const JsonValue* noise = f.member(*t, "noise", p, false); noise && !noise->is_null()) {
    time.noise = f.real(*t, "noise", p);
  }
  time.cap_hit = f.flag(*t, "cap_hit", p, false);
  time.mode = f.text(*t, "mode", p, false);
  return time;
}

}  // namespace

Expected<Report> parse_report(std::string_view json, const std::string& origin) {
  std::string parse_error;
  std::optional<JsonValue> doc = JsonValue::parse(json, &parse_error);
  if (!doc) return Error(ErrorKind::kInvalidArgument, origin + ": not JSON: " + parse_error);
  if (!doc->is_object()) return Error(ErrorKind::kInvalidArgument, origin + ": not an object");
  const JsonValue* schema = doc->find("schema");
  if (!schema || !schema->as_string() || *schema->as_string() != "cusnap-replay-report") {
    return Error(ErrorKind::kInvalidArgument,
                 origin + ": not a cusnap replay report (no \"schema\": \"cusnap-replay-report\")");
  }
  Fields f(origin);
  Report r;
  r.path = origin;
  r.schema_version = static_cast<int>(f.integer(*doc, "schema_version", "$"));
  if (f.error()) return Error(ErrorKind::kInvalidArgument, *f.error());
  if (r.schema_version < 1 || r.schema_version > kNewestReportSchema) {
    return Error(ErrorKind::kInvalidArgument,
                 origin + ": report schema version " + std::to_string(r.schema_version) +
                     " (this cusnap reads 1 to " + std::to_string(kNewestReportSchema) + ")");
  }
  if (const JsonValue* c = f.object(*doc, "capture", "$")) {
    r.capture_path = f.text(*c, "path", "$.capture");
    r.capture_calls = f.uint(*c, "calls", "$.capture");
    r.capture_launches = f.uint(*c, "launches", "$.capture");
  }
  if (const JsonValue* d = f.object(*doc, "driver", "$")) {
    r.driver_path = f.text(*d, "path", "$.driver");
    r.driver_version = f.integer(*d, "version", "$.driver");
  }
  if (const JsonValue* d = f.object(*doc, "device", "$")) {
    r.device_name = f.text(*d, "name", "$.device");
  }
  if (const JsonValue* v = f.object(*doc, "verification", "$")) {
    r.verification = f.text(*v, "result", "$.verification");
    if (const JsonValue* copies = f.array(*v, "copies", "$.verification")) {
      for (size_t i = 0; i < copies->elements().size(); ++i) {
        r.copies.push_back(read_copy(f, copies->elements()[i],
                                     "$.verification.copies[" + std::to_string(i) + "]"));
      }
    }
  }
  if (const JsonValue* s = f.object(*doc, "snapshots", "$")) {
    if (const JsonValue* checks = f.array(*s, "checks", "$.snapshots")) {
      for (size_t i = 0; i < checks->elements().size(); ++i) {
        const JsonValue& c = checks->elements()[i];
        std::string p = "$.snapshots.checks[" + std::to_string(i) + "]";
        ReportSnapshotCheck check;
        check.call = f.uint(c, "call", p);
        check.launch_call = f.uint(c, "launch_call", p);
        check.launch_ordinal = f.uint(c, "launch_ordinal", p);
        check.kernel = f.text(c, "kernel", p);
        check.phase = f.text(c, "phase", p);
        check.chunks = f.uint(c, "chunks", p);
        check.matched_chunks = f.uint(c, "matched_chunks", p);
        check.within_tolerance_chunks = f.uint(c, "within_tolerance_chunks", p);
        check.mismatched_chunks = f.uint(c, "mismatched_chunks", p);
        if (const JsonValue* ms = f.array(c, "mismatches", p)) {
          for (size_t k = 0; k < ms->elements().size(); ++k) {
            check.mismatches.push_back(
                read_chunk(f, ms->elements()[k], p + ".mismatches[" + std::to_string(k) + "]"));
          }
        }
        if (const JsonValue* saved = f.array(c, "saved", p, false)) {
          for (size_t k = 0; k < saved->elements().size(); ++k) {
            check.saved.push_back(
                read_chunk(f, saved->elements()[k], p + ".saved[" + std::to_string(k) + "]"));
          }
        }
        r.snapshot_checks.push_back(std::move(check));
      }
    }
  }
  if (const JsonValue* launches = f.array(*doc, "launches", "$")) {
    for (size_t i = 0; i < launches->elements().size(); ++i) {
      const JsonValue& l = launches->elements()[i];
      std::string p = "$.launches[" + std::to_string(i) + "]";
      ReportLaunch launch;
      launch.call = f.uint(l, "call", p);
      launch.ordinal = f.uint(l, "ordinal", p);
      launch.kernel = f.text(l, "kernel", p);
      launch.selected = f.flag(l, "selected", p);
      launch.verification = f.text(l, "verification", p);
      launch.time = read_time(f, l, p);
      if (const JsonValue* g = f.member(l, "graph_launch", p, false); g && !g->is_null()) {
        launch.graph_launch = f.uint(l, "graph_launch", p);
        if (const JsonValue* node = f.member(l, "graph_node", p)) {
          launch.graph_node = f.address(*node, p + ".graph_node");
        }
      }
      r.launches.push_back(std::move(launch));
    }
  }
  if (const JsonValue* o = f.object(*doc, "outputs", "$", false)) {
    r.outputs_dir = f.text(*o, "dir", "$.outputs");
  }
  if (f.error()) return Error(ErrorKind::kInvalidArgument, *f.error());
  return r;
}

Expected<Report> read_report(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(ErrorKind::kIo, "cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return Error(ErrorKind::kIo, "reading " + path + " failed");
  return parse_report(text.str(), path);
}

}  // namespace cusnap::compare
