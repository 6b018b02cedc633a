// `cusnap minimize` (docs/minimize.md): the capture read once into units of removal and their
// dependencies, candidates written record by record without the units left out, ddmin over the
// units (then over an extract's input chunks), every round's candidates decided by evaluate_all.
#include "cusnap/reduce/minimize.h"

#include <capnp/message.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/reader.h"
#include "cusnap/format/record_sizes.h"
#include "cusnap/format/snapshot_ranges.h"
#include "cusnap/format/writer.h"
#include "ranges.h"

namespace cusnap::reduce {

using format::BlobId;
using format::ErrorCode;
using format::Result;
using format::Status;
using format::to_blob;
namespace schema = format::schema;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kAlwaysKept = -1;

void set_blob(schema::BlobId::Builder b, const BlobId& id) {
  b.setHigh(id.high);
  b.setLow(id.low);
}

enum class UnitKind : uint8_t { kLaunch, kCopy, kAllocation };

struct Unit {
  UnitKind kind = UnitKind::kLaunch;
  uint64_t seq = 0;           // its first record
  std::vector<size_t> needs;  // allocation units it uses (launches, copies)
  std::string what;           // "launch call 7 (scale)"
};

struct Scan {
  std::vector<Unit> units;
  std::vector<int64_t> owner;  // per seq: the unit the record belongs to, or kAlwaysKept
  uint64_t calls = 0;
  bool graphs = false;
  // An extract's input snapshot and the chunks of it that hold bytes (candidates for zeroing).
  std::optional<uint64_t> input_seq;
  std::vector<uint32_t> input_chunks;
};

bool removable_allocation(schema::MemAlloc::Kind k) {
  using K = schema::MemAlloc::Kind;
  return k == K::DEVICE || k == K::PITCH || k == K::ASYNC || k == K::FROM_POOL || k == K::MANAGED;
}

// Every aligned 8-byte word of `bytes` that points into (or at the end of) an allocation unit.
void pointer_needs(std::span<const uint8_t> bytes, const detail::RangeTable& ranges,
                   const std::unordered_map<uint64_t, size_t>& unit_of_seq,
                   std::vector<size_t>& needs) {
  for (size_t off = 0; off + 8 <= bytes.size(); off += 8) {
    uint64_t v = 0;
    std::memcpy(&v, bytes.data() + off, 8);
    if (v == 0) continue;
    if (const detail::Range* r = ranges.find(v, true)) {
      auto it = unit_of_seq.find(r->seq);
      if (it != unit_of_seq.end()) needs.push_back(it->second);
    }
  }
}

Status scan_capture(format::Reader& reader, Scan& scan) {
  scan.calls = reader.call_count();
  scan.owner.assign(scan.calls, kAlwaysKept);
  // First the ranges every record made (to recognise pointers), and whether graphs are used.
  detail::RangeTable ranges;
  Status st = reader.for_each_call([&](const format::CallRef& ref) {
    auto r = ref.get();
    if (r.isGraph() || r.isGraphNode() || r.isGraphExec() || r.isStreamCapture())
      scan.graphs = true;
    if (r.isMemAlloc() || r.isGlobalGet()) {
      format::SnapshotRanges one;
      one.apply(r);
      for (const auto& [a, s] : one.live()) ranges.add(a, s, ref.seq());
    }
    return true;
  });
  if (!st) return st;
  ranges.finish();

  std::unordered_map<uint64_t, size_t> unit_of_seq;  // allocation record seq -> unit
  std::map<uint64_t, size_t> live_allocation;        // address -> unit (for the frees)
  std::unordered_map<uint64_t, size_t> copy_unit;    // memcpy seq -> unit
  std::unordered_map<uint64_t, size_t> launch_unit;  // launch seq -> unit
  std::unordered_map<uint64_t, std::string> names;   // function handle -> name
  const bool extract = reader.header().hasExtract();
  auto needs_of = [&](uint64_t address, std::vector<size_t>& needs) {
    if (const detail::Range* r = ranges.find(address, false)) {
      auto it = unit_of_seq.find(r->seq);
      if (it != unit_of_seq.end()) needs.push_back(it->second);
    }
  };
  Status failed;
  st = reader.for_each_call([&](const format::CallRef& ref) {
    auto r = ref.get();
    const uint64_t seq = ref.seq();
    if (seq >= scan.calls) return true;
    auto add = [&](UnitKind kind, std::string what) {
      scan.units.push_back({kind, seq, {}, std::move(what)});
      scan.owner[seq] = static_cast<int64_t>(scan.units.size() - 1);
      return scan.units.size() - 1;
    };
    switch (r.which()) {
      case schema::CallRecord::FUNCTION_GET:
        names[r.getFunctionGet().getHandle()] = r.getFunctionGet().getName().cStr();
        break;
      case schema::CallRecord::MEM_ALLOC: {
        auto m = r.getMemAlloc();
        if (scan.graphs || r.getResult() != 0 || m.getAddress() == 0 ||
            !removable_allocation(m.getKind()))
          break;
        format::SnapshotRanges one;
        one.apply(r);
        uint64_t size = 0;
        for (const auto& range : one.live()) size += range.second;
        const size_t u = add(UnitKind::kAllocation, "allocation call " + std::to_string(seq) +
                                                        " (" + std::to_string(size) + " bytes)");
        unit_of_seq[seq] = u;
        live_allocation[m.getAddress()] = u;
        break;
      }
      case schema::CallRecord::MEM_FREE: {
        auto f = r.getMemFree();
        if (f.getKind() != schema::MemFree::Kind::DEVICE &&
            f.getKind() != schema::MemFree::Kind::ASYNC)
          break;
        auto it = live_allocation.find(f.getAddress());
        if (it == live_allocation.end()) break;
        scan.owner[seq] = static_cast<int64_t>(it->second);
        live_allocation.erase(it);
        break;
      }
      case schema::CallRecord::LAUNCH: {
        auto l = r.getLaunch();
        std::string name = l.getKernelName().cStr();
        if (name.empty()) {
          auto it = names.find(l.getFunction());
          if (it != names.end()) name = it->second;
        }
        const size_t u = add(UnitKind::kLaunch, "launch call " + std::to_string(seq) + " (" +
                                                    (name.empty() ? "?" : name) + ")");
        launch_unit[seq] = u;
        auto params = l.getParams();
        pointer_needs({params.begin(), params.size()}, ranges, unit_of_seq, scan.units[u].needs);
        break;
      }
      case schema::CallRecord::MEMCPY: {
        auto m = r.getMemcpy();
        const size_t u = add(UnitKind::kCopy, "copy call " + std::to_string(seq));
        copy_unit[seq] = u;
        using K = schema::Memcpy::Kind;
        if (m.getKind() != K::HOST_TO_DEVICE) needs_of(m.getSrc(), scan.units[u].needs);
        if (m.getKind() != K::DEVICE_TO_HOST) needs_of(m.getDst(), scan.units[u].needs);
        BlobId id = to_blob(m.getPayload());
        if (!id.is_null()) {
          auto bytes = reader.read_blob(id);
          if (!bytes) {
            failed = bytes.status();
            return false;
          }
          pointer_needs(*bytes, ranges, unit_of_seq, scan.units[u].needs);
        }
        break;
      }
      case schema::CallRecord::MEMSET: {
        const size_t u = add(UnitKind::kCopy, "memset call " + std::to_string(seq));
        needs_of(r.getMemset().getAddress(), scan.units[u].needs);
        break;
      }
      case schema::CallRecord::DEFERRED_RESULT: {
        auto it = copy_unit.find(r.getDeferredResult().getCallSeq());
        if (it != copy_unit.end()) {
          scan.owner[seq] = static_cast<int64_t>(it->second);
          auto d = r.getDeferredResult();
          if (d.hasPayload() && !to_blob(d.getPayload()).is_null()) {
            auto bytes = reader.read_blob(to_blob(d.getPayload()));
            if (!bytes) {
              failed = bytes.status();
              return false;
            }
            pointer_needs(*bytes, ranges, unit_of_seq, scan.units[it->second].needs);
          }
        }
        break;
      }
      case schema::CallRecord::MEMORY_SNAPSHOT: {
        auto s = r.getMemorySnapshot();
        auto it = launch_unit.find(s.getLaunchSeq());
        if (s.getPhase() != schema::MemorySnapshot::Phase::ON_DEMAND && it != launch_unit.end())
          scan.owner[seq] = static_cast<int64_t>(it->second);
        if (extract && s.getPhase() == schema::MemorySnapshot::Phase::BEFORE_LAUNCH &&
            !scan.input_seq) {
          scan.input_seq = seq;
          auto chunks = s.getChunks();
          for (uint32_t i = 0; i < chunks.size(); ++i)
            if (!chunks[i].getHashOnly() && !to_blob(chunks[i].getBlob()).is_null())
              scan.input_chunks.push_back(i);
        }
        break;
      }
      default:
        break;
    }
    return true;
  });
  if (!failed) return failed;
  if (!st) return st;
  for (Unit& u : scan.units) {
    std::sort(u.needs.begin(), u.needs.end());
    u.needs.erase(std::unique(u.needs.begin(), u.needs.end()), u.needs.end());
  }
  return Status::ok();
}

// A candidate: the units chosen and the input chunks kept original (the others zeroed).
struct Config {
  std::vector<size_t> units;   // indices into scan.units, ascending
  std::vector<size_t> chunks;  // indices into scan.input_chunks, ascending
};

// What a candidate keeps after the closure: chosen units whose needs are all chosen.
std::vector<bool> closure(const Scan& scan, const std::vector<size_t>& chosen) {
  std::vector<bool> keep(scan.units.size(), false);
  for (size_t u : chosen) keep[u] = true;
  std::vector<bool> out = keep;
  for (size_t u : chosen) {
    for (size_t n : scan.units[u].needs)
      if (!keep[n]) out[u] = false;
  }
  return out;
}

std::string key_of(const std::vector<bool>& units, const Config& config, size_t chunks) {
  std::string key;
  key.reserve(units.size() + chunks + 1);
  for (bool b : units) key.push_back(b ? '1' : '0');
  key.push_back('|');
  std::vector<bool> c(chunks, false);
  for (size_t i : config.chunks) c[i] = true;
  for (bool b : c) key.push_back(b ? '1' : '0');
  return key;
}

struct Written {
  uint64_t calls = 0;
  uint64_t data_bytes = 0;
};

// Writes the capture of `keep` (per unit, after the closure) with the input chunks of
// `original_chunks` as they were and the others zeroed. References between records (deferred
// results, snapshots, layouts, tool events) follow the seqs the writer gives.
Result<Written> write_candidate(format::Reader& reader, const Scan& scan,
                                const std::vector<bool>& keep,
                                const std::vector<size_t>& original_chunks, const std::string& path,
                                const schema::MinimizeInfo::Reader* info = nullptr) {
  capnp::MallocMessageBuilder header;
  header.setRoot(reader.header());
  if (info) header.getRoot<schema::CaptureHeader>().setMinimize(*info);
  auto created = format::Writer::create(path, header);
  if (!created) return created.status();
  format::Writer& w = **created;
  std::unordered_map<uint64_t, uint64_t> new_seq;
  std::unordered_map<uint64_t, uint64_t> new_ordinal;  // launch ordinal (old -> new)
  uint64_t launches = 0;
  std::unordered_set<BlobId, format::BlobIdHash> stored;
  std::set<uint32_t> zeroed;
  for (size_t i = 0; i < scan.input_chunks.size(); ++i) zeroed.insert(scan.input_chunks[i]);
  for (size_t i : original_chunks) zeroed.erase(scan.input_chunks[i]);
  Written written;
  auto put = [&](std::span<const uint8_t> bytes) -> Result<BlobId> {
    auto id = w.put_blob(bytes);
    if (id && stored.insert(*id).second) written.data_bytes += bytes.size();
    return id;
  };
  Status failed;
  Status st = reader.for_each_call([&](const format::CallRef& ref) {
    const uint64_t seq = ref.seq();
    if (seq < scan.owner.size() && scan.owner[seq] != kAlwaysKept &&
        !keep[static_cast<size_t>(scan.owner[seq])])
      return true;
    auto fail = [&](Status s) {
      failed = std::move(s);
      return false;
    };
    capnp::MallocMessageBuilder b;
    b.setRoot(ref.get());
    auto r = b.getRoot<schema::CallRecord>();
    switch (r.which()) {
      case schema::CallRecord::DEFERRED_RESULT: {
        auto d = r.getDeferredResult();
        auto it = new_seq.find(d.getCallSeq());
        if (it != new_seq.end()) d.setCallSeq(it->second);
        break;
      }
      case schema::CallRecord::LAUNCH: {
        auto l = r.getLaunch();
        auto it = new_seq.find(l.getLayoutSeq());
        if (it != new_seq.end()) l.setLayoutSeq(it->second);
        new_ordinal[l.getOrdinal()] = launches++;
        break;
      }
      case schema::CallRecord::MEMORY_SNAPSHOT: {
        auto s = r.getMemorySnapshot();
        auto it = new_seq.find(s.getLaunchSeq());
        if (it != new_seq.end()) s.setLaunchSeq(it->second);
        auto o = new_ordinal.find(s.getLaunchOrdinal());
        if (o != new_ordinal.end()) s.setLaunchOrdinal(o->second);
        if (scan.input_seq && seq == *scan.input_seq) {
          auto chunks = s.getChunks();
          for (uint32_t i : zeroed) {
            std::vector<uint8_t> zeros(chunks[i].getSize(), 0);
            auto id = put(zeros);
            if (!id) return fail(id.status());
            set_blob(chunks[i].getBlob(), *id);
          }
        }
        break;
      }
      case schema::CallRecord::TOOL_EVENT: {
        auto t = r.getToolEvent();
        if (t.getHasRelatedSeq()) {
          auto it = new_seq.find(t.getRelatedSeq());
          if (it != new_seq.end()) {
            t.setRelatedSeq(it->second);
          } else {
            t.setHasRelatedSeq(false);
            t.setRelatedSeq(0);
          }
        }
        break;
      }
      default:
        break;
    }
    Status copied;
    format::for_each_blob_ref(r.asReader(), [&](const BlobId& id) {
      if (!copied || stored.count(id)) return;
      auto bytes = reader.read_blob(id);
      if (!bytes) {
        copied = bytes.status();
        return;
      }
      auto put_id = put(*bytes);
      if (!put_id) copied = put_id.status();
    });
    if (!copied) return fail(copied);
    auto appended = w.append_call(b);
    if (!appended) return fail(appended.status());
    new_seq[seq] = *appended;
    ++written.calls;
    return true;
  });
  if (!failed) st = failed;
  Status closed = w.close();
  if (!st) return st;
  if (!closed) return closed;
  return written;
}

// ddmin's candidates for one round over `current` cut into `n` parts: the parts, then (n > 2)
// their complements, in the order sequential ddmin tests them.
std::vector<std::vector<size_t>> round_candidates(const std::vector<size_t>& current, size_t n) {
  const size_t size = current.size();
  std::vector<std::vector<size_t>> parts(std::min(n, size));
  for (size_t i = 0; i < size; ++i) parts[i * parts.size() / size].push_back(current[i]);
  std::vector<std::vector<size_t>> out = parts;
  if (parts.size() > 2) {
    for (size_t k = 0; k < parts.size(); ++k) {
      std::vector<size_t> rest;
      for (size_t j = 0; j < parts.size(); ++j)
        if (j != k) rest.insert(rest.end(), parts[j].begin(), parts[j].end());
      out.push_back(std::move(rest));
    }
  }
  return out;
}

Status corrupt_refusal(const std::string& in, const format::IntegrityReport& report) {
  return Status::error(ErrorCode::kCorrupt, in + ": " + report.summary() +
                                                " (cusnap verify calls it corrupt; not "
                                                "minimized)");
}

}  // namespace

Result<MinimizeReport> minimize_capture(const std::string& in, const std::string& out,
                                        const MinimizeOptions& options) {
  std::error_code ec;
  if (in == out || fs::equivalent(in, out, ec))
    return Status::error(ErrorCode::kInvalidArgument,
                         out + ": the output must not be the capture being minimized");
  if (options.until.kind == ConditionKind::kMismatch)
    return Status::error(
        ErrorCode::kInvalidArgument,
        "--until mismatch: on one driver a reduced capture's recorded expectations describe the "
        "original run, so almost any removal would 'mismatch'; compare two drivers with "
        "mismatch:A,B (docs/minimize.md, \"Expectations\")");
  const std::string& work = options.condition.work_dir;
  if (work.empty())
    return Status::error(ErrorCode::kInvalidArgument, "minimize needs a work directory");
  fs::create_directories(work, ec);
  if (ec)
    return Status::error(ErrorCode::kIo,
                         work + ": cannot create the work directory: " + ec.message());
  auto opened = format::Reader::open(in);
  if (!opened) return opened.status();
  format::Reader& reader = **opened;
  {
    format::IntegrityReport report = reader.verify();
    if (report.state == format::Integrity::kCorrupt) return corrupt_refusal(in, report);
  }
  Scan scan;
  if (Status st = scan_capture(reader, scan); !st) return st;

  MinimizeReport report;
  report.calls_before = scan.calls;
  report.file_bytes_before = reader.file_size();
  report.units_before = scan.units.size();
  report.chunks_before = scan.input_chunks.size();
  if (scan.graphs)
    report.notes.push_back(
        "allocations are kept: the capture has graph records (graph nodes "
        "name device memory this minimizer does not follow)");
  const unsigned replays_per = options.until.between_drivers()                 ? 2
                               : options.until.kind == ConditionKind::kCommand ? 0
                                                                               : 1;

  std::map<std::string, bool> cache;
  unsigned next_file = 0;
  std::vector<std::string> temporaries;
  struct Cleanup {
    std::vector<std::string>& files;
    ~Cleanup() {
      std::error_code ignored;
      for (const auto& f : files) fs::remove(f, ignored);
    }
  } cleanup{temporaries};

  // Decides every config of `configs` in order, in batches of the parallelism, stopping after
  // the batch where one holds; returns the index of the first that holds.
  const size_t batch = std::max(1u, options.condition.jobs);
  auto first_holding = [&](const std::vector<Config>& configs) -> Result<std::optional<size_t>> {
    for (size_t first = 0; first < configs.size(); first += batch) {
      const size_t last = std::min(configs.size(), first + batch);
      std::vector<std::string> keys(last - first);
      std::vector<std::string> paths;
      std::vector<std::string> path_keys;
      for (size_t i = first; i < last; ++i) {
        std::vector<bool> keep = closure(scan, configs[i].units);
        keys[i - first] = key_of(keep, configs[i], scan.input_chunks.size());
        const std::string& key = keys[i - first];
        if (cache.count(key) ||
            std::find(path_keys.begin(), path_keys.end(), key) != path_keys.end()) {
          ++report.cache_hits;
          continue;
        }
        if (report.evaluations + paths.size() >= options.max_evaluations) {
          report.budget_exhausted = true;
          continue;
        }
        const std::string path = work + "/candidate-" + std::to_string(next_file++) + ".cusnap";
        temporaries.push_back(path);
        auto written = write_candidate(reader, scan, keep, configs[i].chunks, path);
        if (!written) return written.status();
        paths.push_back(path);
        path_keys.push_back(key);
      }
      if (!paths.empty()) {
        auto decided = evaluate_all(options.until, paths, options.condition);
        if (!decided) return decided.status();
        report.evaluations += static_cast<unsigned>(paths.size());
        report.replays += replays_per * static_cast<unsigned>(paths.size());
        for (size_t k = 0; k < paths.size(); ++k) {
          cache[path_keys[k]] = (*decided)[k].holds;
          fs::remove(paths[k], ec);
        }
      }
      for (size_t i = first; i < last; ++i) {
        auto it = cache.find(keys[i - first]);
        if (it != cache.end() && it->second) return std::optional<size_t>(i);
      }
      if (report.budget_exhausted) break;
    }
    return std::optional<size_t>();
  };

  Config current;
  for (size_t u = 0; u < scan.units.size(); ++u) current.units.push_back(u);
  for (size_t c = 0; c < scan.input_chunks.size(); ++c) current.chunks.push_back(c);
  {
    auto whole = first_holding({current});
    if (!whole) return whole.status();
    if (!*whole) {
      report.outcome = MinimizeOutcome::kInputDoesNotHold;
      return report;
    }
  }

  // ddmin with complements over one list of the config (units, then chunks).
  auto ddmin = [&](std::vector<size_t> Config::*list) -> Status {
    size_t n = 2;
    unsigned round = 0;
    while ((current.*list).size() >= 1 && !report.budget_exhausted) {
      const std::vector<size_t>& items = current.*list;
      std::vector<std::vector<size_t>> subsets;
      if (items.size() == 1) {
        subsets.push_back({});  // can the last one go too?
      } else {
        subsets = round_candidates(items, n);
      }
      std::vector<Config> configs;
      for (auto& s : subsets) {
        Config c = current;
        c.*list = s;
        configs.push_back(std::move(c));
      }
      auto found = first_holding(configs);
      if (!found) return found.status();
      ++round;
      if (options.on_progress) {
        options.on_progress("round " + std::to_string(round) + ": " + std::to_string(items.size()) +
                            " kept, " + std::to_string(configs.size()) + " candidates, " +
                            (*found ? "reduced" : "none holds") + " (" +
                            std::to_string(report.evaluations) + " evaluated, " +
                            std::to_string(report.cache_hits) + " cached)");
      }
      if (*found) {
        const size_t parts = std::min(n, items.size());
        current = configs[**found];
        // A part: start again at 2; a complement: one part fewer.
        n = **found < parts ? 2 : std::max<size_t>(n - 1, 2);
        continue;
      }
      if (items.size() == 1 || n >= items.size()) break;
      n = std::min(2 * n, items.size());
    }
    return Status::ok();
  };
  if (Status st = ddmin(&Config::units); !st) return st;
  if (options.chunks && !scan.input_chunks.empty())
    if (Status st = ddmin(&Config::chunks); !st) return st;

  // The output, decided once more.
  std::vector<bool> keep = closure(scan, current.units);
  for (const auto& b : reader.blobs())  // the input's distinct blob bytes, as the writer counts
    report.data_bytes_before += b.size;
  auto written = write_candidate(reader, scan, keep, current.chunks, out);
  if (written) {
    // Once more, with what was kept in the header (the records are the same).
    capnp::MallocMessageBuilder message;
    auto info = message.initRoot<schema::MinimizeInfo>();
    info.setCondition(options.until.text);
    info.setSourceCreationTimeNs(reader.header().getCreationTimeNs());
    info.setCallsBefore(report.calls_before);
    info.setCallsAfter(written->calls);
    info.setUnitsBefore(static_cast<uint32_t>(scan.units.size()));
    info.setUnitsAfter(static_cast<uint32_t>(std::count(keep.begin(), keep.end(), true)));
    info.setInputChunksBefore(static_cast<uint32_t>(scan.input_chunks.size()));
    info.setInputChunksKept(static_cast<uint32_t>(current.chunks.size()));
    info.setDataBytesBefore(report.data_bytes_before);
    info.setDataBytesAfter(written->data_bytes);
    info.setEvaluations(report.evaluations);
    info.setReplays(report.replays + replays_per);
    info.setMinimal(!report.budget_exhausted);
    auto kept = info.initKept(static_cast<unsigned>(info.getUnitsAfter()));
    for (size_t u = 0, k = 0; u < scan.units.size(); ++u)
      if (keep[u]) kept.set(static_cast<unsigned>(k++), scan.units[u].what);
    auto reader_info = info.asReader();
    written = write_candidate(reader, scan, keep, current.chunks, out, &reader_info);
  }
  if (!written) {
    fs::remove(out, ec);
    return written.status();
  }
  auto final_check = evaluate_all(options.until, {out}, options.condition);
  if (!final_check) return final_check.status();
  report.replays += replays_per;
  report.evidence = final_check->front().why;
  if (!final_check->front().holds) report.outcome = MinimizeOutcome::kOutputDoesNotHold;
  report.calls_after = written->calls;
  report.data_bytes_after = written->data_bytes;
  report.file_bytes_after = fs::file_size(out, ec);
  for (size_t u = 0; u < scan.units.size(); ++u) {
    if (!keep[u]) continue;
    ++report.units_after;
    report.kept.push_back(scan.units[u].what);
  }
  report.chunks_after = current.chunks.size();
  if (report.budget_exhausted)
    report.notes.push_back("stopped at --max-evaluations: the result is not minimal");
  return report;
}

}  // namespace cusnap::reduce
