#include "info_collect.h"

#include <capnp/dynamic.h>
#include <capnp/schema.h>
#include <kj/exception.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common.h"
#include "cusnap/format/kernel_filter_summary.h"
#include "cusnap/format/writer.h"
#include "table.h"

namespace cusnap::cli {

namespace fs = format::schema;

namespace {

struct Shape {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;
  auto key() const {
    return std::tie(grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes);
  }
  friend bool operator<(const Shape& a, const Shape& b) { return a.key() < b.key(); }
};

struct KernelStats {
  uint64_t launches = 0;
  std::map<Shape, uint64_t> shapes;
};

struct BlobRefs {
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t missing = 0;
};

// Counts every non-null BlobId reachable from `s` (found by type, so record kinds added to the
// schema later are covered without changes here).
void count_blob_refs(format::Reader& reader, fs::CallRecord::Reader record, BlobRefs& refs) {
  format::for_each_blob_ref(record, [&](const format::BlobId& id) {
    ++refs.count;
    if (const format::BlobInfo* blob = reader.find_blob(id)) {
      refs.bytes += blob->size;
    } else {
      ++refs.missing;
    }
  });
}

// The text schema-1 interceptors put in GenericCall.args before affectsDeviceState existed.
constexpr std::string_view kLegacyUnmodelledText = "unmodelled: may affect device state";

// A successful generic record of a call that may have changed device state.
bool unmodelled_state_change(fs::CallRecord::Reader record) {
  if (!record.isGeneric() || record.getResult() != 0) return false;
  auto generic = record.getGeneric();
  if (generic.getAffectsDeviceState()) return true;
  auto args = generic.getArgs();
  return std::string_view(args.cStr(), args.size()) == kLegacyUnmodelledText;
}

void set_dim3(schema::Dim3::Builder out, const uint32_t (&v)[3]) {
  out.setX(v[0]);
  out.setY(v[1]);
  out.setZ(v[2]);
}

format::Status collect_records(format::Reader& reader, const std::string& display_path,
                               schema::InfoReport::Builder out,
                               const std::function<void(const format::Status&)>& on_bad) {
  out.setInfoVersion(schema::INFO_VERSION);
  out.setFile(display_path);
  out.setFileBytes(reader.file_size());
  const auto& fh = reader.file_header();
  out.setContainerVersion(std::to_string(fh.version_major) + "." +
                          std::to_string(fh.version_minor));
  out.setHeader(reader.header());
  // A kernel-filtered capture: its summary (a toolEvent the interceptor writes last) is looked for.
  const bool filtered = reader.header().getOptions().getKernelFiltered();
  if (filtered) out.initKernelFilter().setSummarized(false);

  const format::IntegrityReport& recovery = reader.recovery();
  auto integrity = out.initIntegrity();
  switch (recovery.state) {
    case format::Integrity::kWhole:
      integrity.setState(schema::Integrity::State::WHOLE);
      break;
    case format::Integrity::kTruncated:
      integrity.setState(schema::Integrity::State::TRUNCATED);
      break;
    case format::Integrity::kCorrupt:
      integrity.setState(schema::Integrity::State::CORRUPT);
      break;
  }
  integrity.setIndexSource(recovery.footer_used ? schema::Integrity::IndexSource::FOOTER
                                                : schema::Integrity::IndexSource::SCAN);
  integrity.setSummary(recovery.summary());
  if (recovery.last_good_seq) {
    integrity.setLastGoodSeq(*recovery.last_good_seq);
    integrity.setHasLastGoodSeq(true);
  }
  integrity.setDeepChecked(recovery.deep_checked);
  // The interceptor's note when it could not finish the file (disk full, RLIMIT_FSIZE, ...).
  if (std::ifstream note(format::incomplete_note_path(display_path)); note) {
    std::string reason;
    std::getline(note, reason);
    integrity.setIncomplete(reason.empty() ? "the writer stopped early" : reason);
  }

  // One pass over the records.
  std::vector<uint64_t> kind_counts(format::call_kind_count(), 0);
  std::set<uint64_t> threads;
  std::unordered_map<uint64_t, std::string> function_names;  // handle -> entry name, latest wins
  std::map<std::string, KernelStats> kernels;
  std::map<std::string, uint64_t> unmodelled;  // apiName -> successful calls
  BlobRefs refs;
  uint64_t calls = 0;
  uint64_t launches = 0;
  int64_t first_start = 0;
  int64_t last_end = 0;

  struct Skipped {
    uint64_t seq, launch_seq, launch_ordinal;
    std::string kernel, phase, reason;
  };
  std::vector<Skipped> skipped_snapshots;
  std::unordered_map<uint64_t, std::string> launch_kernels;  // launch seq -> kernel
  std::set<uint64_t> snapshot_launches;
  uint64_t snapshot_records = 0, snapshot_chunks = 0, snapshot_bytes = 0, hash_only_chunks = 0;
  std::array<uint64_t, 5> nvtx_kinds{};  // by NvtxEvent::Kind
  uint64_t nvtx_records = 0;
  std::set<uint64_t> nvtx_threads;
  std::map<std::string, std::pair<uint64_t, uint64_t>> nvtx_domains;  // name -> ranges, marks

  auto visit = [&](const format::CallRef& ref) {
    fs::CallRecord::Reader record = ref.get();
    auto which = static_cast<size_t>(record.which());
    if (which >= kind_counts.size()) kind_counts.resize(which + 1, 0);
    ++kind_counts[which];
    threads.insert(record.getThreadId());
    if (calls == 0) first_start = record.getStartNs();
    last_end = std::max(last_end, record.getEndNs());
    ++calls;

    if (record.isToolEvent() && filtered) {
      auto text = record.getToolEvent().getMessage();
      if (auto counts =
              format::parse_kernel_filter_summary(std::string_view(text.cStr(), text.size()))) {
        auto k = out.initKernelFilter();
        k.setSummarized(true);
        k.setLaunchesSeen(counts->seen);
        k.setLaunchesMatched(counts->matched);
        k.setLaunchesRecorded(counts->recorded);
      }
    }
    if (record.isFunctionGet()) {
      auto get = record.getFunctionGet();
      std::string name = get.getName().cStr();
      if (get.getHandle() != 0) function_names[get.getHandle()] = name;
      if (get.getKernel() != 0 && !function_names.count(get.getKernel())) {
        function_names[get.getKernel()] = name;
      }
    } else if (record.isLaunch()) {
      auto launch = record.getLaunch();
      ++launches;
      std::string name;
      if (launch.hasKernelName() && launch.getKernelName().size() > 0) {
        name = launch.getKernelName().cStr();
      } else if (auto it = function_names.find(launch.getFunction()); it != function_names.end()) {
        name = it->second;
      } else {
        name = "<function " + hex(launch.getFunction()) + ">";
      }
      launch_kernels[ref.seq()] = name;
      KernelStats& k = kernels[name];
      ++k.launches;
      Shape shape{{launch.getGridX(), launch.getGridY(), launch.getGridZ()},
                  {launch.getBlockX(), launch.getBlockY(), launch.getBlockZ()},
                  launch.getSharedBytes()};
      ++k.shapes[shape];
    }
    if (record.isNvtx()) {
      auto event = record.getNvtx();
      auto kind = static_cast<size_t>(event.getKind());
      ++nvtx_records;
      if (kind < nvtx_kinds.size()) ++nvtx_kinds[kind];
      nvtx_threads.insert(record.getThreadId());
      auto& domain = nvtx_domains[event.getDomain().cStr()];
      if (event.getKind() == fs::NvtxEvent::Kind::PUSH ||
          event.getKind() == fs::NvtxEvent::Kind::START) {
        ++domain.first;
      } else if (event.getKind() == fs::NvtxEvent::Kind::MARK) {
        ++domain.second;
      }
    }
    if (record.isMemorySnapshot()) {
      auto snap = record.getMemorySnapshot();
      auto phase = snap.getPhase();
      const bool range_start = phase == fs::MemorySnapshot::Phase::RANGE_START;
      std::string phase_name = phase == fs::MemorySnapshot::Phase::BEFORE_LAUNCH  ? "beforeLaunch"
                               : phase == fs::MemorySnapshot::Phase::AFTER_LAUNCH ? "afterLaunch"
                               : range_start                                      ? "rangeStart"
                                                                                  : "onDemand";
      if (snap.hasSkippedReason() && snap.getSkippedReason().size() > 0) {
        auto k = launch_kernels.find(snap.getLaunchSeq());
        skipped_snapshots.push_back({ref.seq(), snap.getLaunchSeq(), snap.getLaunchOrdinal(),
                                     k == launch_kernels.end() ? std::string() : k->second,
                                     phase_name, snap.getSkippedReason().cStr()});
      } else {
        ++snapshot_records;
        if (!range_start) snapshot_launches.insert(snap.getLaunchSeq());
        for (auto chunk : snap.getChunks()) {
          ++snapshot_chunks;
          snapshot_bytes += chunk.getSize();
          if (chunk.getHashOnly()) ++hash_only_chunks;
        }
      }
    }
    if (unmodelled_state_change(record)) ++unmodelled[record.getApiName().cStr()];
    count_blob_refs(reader, record, refs);
    return true;
  };
  std::function<bool(const format::Status&)> skip_bad;
  if (on_bad) {
    skip_bad = [&](const format::Status& why) {
      on_bad(why);
      return true;
    };
  }
  format::Status walk = reader.for_each_call(
      [&](const format::CallRef& ref) {
        try {
          return visit(ref);
        } catch (const kj::Exception& e) {
          // The reader checked the record; this is the last line of defence, not the plan.
          format::Status why = format::Status::error(
                                   format::ErrorCode::kMalformed,
                                   std::string("invalid call record: ") + e.getDescription().cStr())
                                   .in_frame(ref.frame())
                                   .at_call(ref.seq());
          if (!on_bad) throw;
          on_bad(why);
          return true;
        }
      },
      0, skip_bad);
  if (!walk.is_ok()) return walk;

  format::CaptureStats stats = reader.stats();
  auto counts = out.initCounts();
  counts.setCalls(calls);
  counts.setLaunches(launches);
  counts.setFrames(stats.frames);
  counts.setCallFrames(stats.call_frames);
  counts.setBlobFrames(stats.blob_frames);
  counts.setBlobs(stats.blobs);
  counts.setKernels(kernels.size());
  counts.setThreads(threads.size());
  out.setCallSpanNs(calls > 0 ? last_end - first_start : 0);

  std::vector<std::pair<uint16_t, uint64_t>> kinds;
  for (size_t i = 0; i < kind_counts.size(); ++i) {
    if (kind_counts[i] > 0) kinds.emplace_back(static_cast<uint16_t>(i), kind_counts[i]);
  }
  std::stable_sort(kinds.begin(), kinds.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  auto kind_list = out.initCallKinds(static_cast<unsigned>(kinds.size()));
  for (size_t i = 0; i < kinds.size(); ++i) {
    kind_list[i].setKind(format::call_kind_name(kinds[i].first));
    kind_list[i].setCount(kinds[i].second);
  }

  std::vector<std::pair<std::string, const KernelStats*>> sorted;
  for (const auto& [name, k] : kernels) sorted.emplace_back(name, &k);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second->launches > b.second->launches;
  });
  auto kernel_list = out.initKernels(static_cast<unsigned>(sorted.size()));
  for (size_t i = 0; i < sorted.size(); ++i) {
    kernel_list[i].setName(sorted[i].first);
    kernel_list[i].setLaunches(sorted[i].second->launches);
    std::vector<std::pair<Shape, uint64_t>> shapes(sorted[i].second->shapes.begin(),
                                                   sorted[i].second->shapes.end());
    std::stable_sort(shapes.begin(), shapes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    auto shape_list = kernel_list[i].initShapes(static_cast<unsigned>(shapes.size()));
    for (size_t j = 0; j < shapes.size(); ++j) {
      set_dim3(shape_list[j].initGrid(), shapes[j].first.grid);
      set_dim3(shape_list[j].initBlock(), shapes[j].first.block);
      shape_list[j].setSharedBytes(shapes[j].first.shared_bytes);
      shape_list[j].setLaunches(shapes[j].second);
    }
  }

  std::vector<std::pair<std::string, uint64_t>> apis(unmodelled.begin(), unmodelled.end());
  std::stable_sort(apis.begin(), apis.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  out.setReplayMayDiverge(!apis.empty());
  auto api_list = out.initUnmodelledCalls(static_cast<unsigned>(apis.size()));
  for (size_t i = 0; i < apis.size(); ++i) {
    api_list[i].setApi(apis[i].first);
    api_list[i].setCount(apis[i].second);
  }

  auto snapshots = out.initSnapshots();
  snapshots.setRecords(snapshot_records);
  snapshots.setLaunches(snapshot_launches.size());
  snapshots.setChunks(snapshot_chunks);
  snapshots.setBytes(snapshot_bytes);
  snapshots.setHashOnlyChunks(hash_only_chunks);
  snapshots.setChunkBytes(reader.header().getOptions().getSnapshotChunkBytes());
  auto nvtx = out.initNvtx();
  nvtx.setRecords(nvtx_records);
  nvtx.setPushes(nvtx_kinds[static_cast<size_t>(fs::NvtxEvent::Kind::PUSH)]);
  nvtx.setPops(nvtx_kinds[static_cast<size_t>(fs::NvtxEvent::Kind::POP)]);
  nvtx.setStarts(nvtx_kinds[static_cast<size_t>(fs::NvtxEvent::Kind::START)]);
  nvtx.setEnds(nvtx_kinds[static_cast<size_t>(fs::NvtxEvent::Kind::END)]);
  nvtx.setMarks(nvtx_kinds[static_cast<size_t>(fs::NvtxEvent::Kind::MARK)]);
  nvtx.setThreads(nvtx_threads.size());
  auto domains = nvtx.initDomains(static_cast<unsigned>(nvtx_domains.size()));
  unsigned domain_index = 0;
  for (const auto& [name, count] : nvtx_domains) {
    domains[domain_index].setName(name);
    domains[domain_index].setRanges(count.first);
    domains[domain_index].setMarks(count.second);
    ++domain_index;
  }
  auto skipped_list = snapshots.initSkipped(static_cast<unsigned>(skipped_snapshots.size()));
  for (size_t i = 0; i < skipped_snapshots.size(); ++i) {
    const Skipped& k = skipped_snapshots[i];
    skipped_list[i].setSeq(k.seq);
    skipped_list[i].setLaunchSeq(k.launch_seq);
    skipped_list[i].setLaunchOrdinal(k.launch_ordinal);
    skipped_list[i].setKernel(k.kernel);
    skipped_list[i].setPhase(k.phase);
    skipped_list[i].setReason(k.reason);
  }

  auto bytes = out.initBytes();
  bytes.setCallRaw(stats.call_bytes_raw);
  bytes.setCallStored(stats.call_bytes_stored);
  bytes.setBlobUnique(stats.blob_bytes_unique);
  bytes.setBlobStored(stats.blob_bytes_stored);
  bytes.setBlobReferenced(refs.bytes);
  bytes.setBlobReferences(refs.count);
  bytes.setBlobReferencesMissing(refs.missing);
  bytes.setDedupSaved(refs.bytes > stats.blob_bytes_unique ? refs.bytes - stats.blob_bytes_unique
                                                           : 0);
  uint64_t logical = stats.call_bytes_raw + refs.bytes;
  bytes.setLogical(logical);
  bytes.setRatio(reader.file_size() > 0
                     ? static_cast<double>(logical) / static_cast<double>(reader.file_size())
                     : 0.0);
  if (stats.blob_puts && stats.blob_bytes_logical) {
    bytes.setHasWriterStats(true);
    bytes.setWriterBlobPuts(*stats.blob_puts);
    bytes.setWriterBlobBytesLogical(*stats.blob_bytes_logical);
  }
  return format::Status::ok();
}

}  // namespace

format::Status collect_info(format::Reader& reader, const std::string& display_path,
                            schema::InfoReport::Builder out,
                            const std::function<void(const format::Status&)>& on_bad) {
  try {
    return collect_records(reader, display_path, out, on_bad);
  } catch (const kj::Exception& e) {
    // A record Cap'n Proto cannot read a second time (damaged or hostile, its checksums intact;
    // the reader checked it once).
    return format::Status::error(format::ErrorCode::kMalformed,
                                 std::string("unreadable record: ") + e.getDescription().cStr())
        .in_file(reader.path());
  }
}

}  // namespace cusnap::cli
