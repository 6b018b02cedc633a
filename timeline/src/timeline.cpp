#include "cusnap/timeline/timeline.h"

#include <capnp/schema.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

namespace cusnap::timeline {
namespace {

namespace schema = format::schema;
using Which = schema::CallRecord::Which;

// Stream handles with a meaning of their own (cuda.h: CU_STREAM_LEGACY, CU_STREAM_PER_THREAD).
constexpr uint64_t kStreamLegacy = 1;
constexpr uint64_t kStreamPerThread = 2;
// apiName of the records cusnap writes itself (memory snapshots, deferred results, ...).
constexpr std::string_view kToolApiName = "cusnap";

constexpr const char* kCategoryApi = "api";
constexpr const char* kCategoryDevice = "device";
constexpr const char* kCategoryTool = "cusnap";
constexpr const char* kCategoryNvtx = "nvtx";

std::string hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

template <typename Enum>
std::string enumerant_name(Enum value) {
  auto enumerants = capnp::Schema::from<Enum>().getEnumerants();
  auto index = static_cast<uint16_t>(value);
  if (index < enumerants.size()) return enumerants[index].getProto().getName();
  return "kind(" + std::to_string(index) + ")";
}

// A stream as the timeline tells them apart: a created stream by its handle; the NULL and the
// legacy stream per context; the per-thread default stream per thread.
struct StreamKey {
  uint64_t handle = 0;
  uint64_t context = 0;
  uint64_t thread = 0;
  auto operator<=>(const StreamKey&) const = default;
};

StreamKey stream_key(schema::CallRecord::Reader record, uint64_t handle) {
  std::string_view api(record.getApiName().cStr(), record.getApiName().size());
  bool per_thread = handle == kStreamPerThread ||
                    (handle == 0 && (ends_with(api, "_ptsz") || ends_with(api, "_ptds")));
  if (per_thread) return {kStreamPerThread, 0, record.getThreadId()};
  if (handle == 0 || handle == kStreamLegacy) return {handle, record.getContext(), 0};
  return {handle, 0, 0};
}

std::string stream_name(const StreamKey& key) {
  if (key.handle == kStreamPerThread && key.thread != 0) {
    return "stream: per-thread default, thread " + std::to_string(key.thread);
  }
  if (key.handle == 0) return "stream: NULL (context " + hex(key.context) + ")";
  if (key.handle == kStreamLegacy) return "stream: legacy (context " + hex(key.context) + ")";
  return "stream " + hex(key.handle);
}

struct ApiCall {
  uint64_t seq = 0;
  int64_t start = 0;
  int64_t end = 0;
  std::string name;
  bool tool = false;
  int32_t result = 0;
  bool has_work = false;
};

struct ReportNode {
  std::string kernel;
  uint64_t node = 0;
  std::optional<int64_t> duration_ns;
};

struct DeviceWork {
  uint64_t seq = 0;
  int64_t call_start = 0;
  std::string name;
  std::vector<Annotation> annotations;
  std::optional<int64_t> duration_ns;  // from the report
  uint64_t timed_runs = 0;
  bool graph = false;
  std::vector<ReportNode> nodes;  // graph launch: its kernel nodes in the report
};

// What a report says about the launches of its capture, by call number.
struct ReportIndex {
  struct Launch {
    std::string kernel;
    std::optional<int64_t> duration_ns;
    uint64_t samples = 0;
    bool matched = false;
  };
  std::map<uint64_t, Launch> launches;                 // ordinary launches
  std::map<uint64_t, std::vector<ReportNode>> graphs;  // graph launches: kernel nodes
  std::map<uint64_t, bool> graph_matched;
};

std::optional<int64_t> median_ns(const std::optional<compare::ReportTime>& time) {
  if (!time || time->samples == 0 || !std::isfinite(time->median_ms) || time->median_ms < 0) {
    return std::nullopt;
  }
  return static_cast<int64_t>(std::llround(time->median_ms * 1e6));
}

// Slices on one thread normally nest (calls on a thread run one after another). Where they would
// not (a record whose interval crosses another's), the later one goes to an extra track under the
// thread's, so every track stays well nested and no call is dropped or shortened.
class Lanes {
 public:
  template <typename NewLane>
  uint64_t place(int64_t start, int64_t end, NewLane&& new_lane) {
    for (Lane& lane : lanes_) {
      while (!lane.open_ends.empty() && lane.open_ends.back() <= start) lane.open_ends.pop_back();
      if (lane.open_ends.empty() || end <= lane.open_ends.back()) {
        lane.open_ends.push_back(end);
        return lane.uuid;
      }
    }
    lanes_.push_back({new_lane(lanes_.size()), {end}});
    return lanes_.back().uuid;
  }
  void add_lane(uint64_t uuid) { lanes_.push_back({uuid, {}}); }

 private:
  struct Lane {
    uint64_t uuid;
    std::vector<int64_t> open_ends;  // ends of the slices still open, innermost last
  };
  std::vector<Lane> lanes_;
};

format::Result<ReportIndex> index_report(const compare::Report& report, uint64_t calls) {
  ReportIndex index;
  if (report.capture_calls != calls) {
    return format::Status::error(format::ErrorCode::kInvalidArgument,
                                 "the report " + report.path + " is of a capture with " +
                                     std::to_string(report.capture_calls) +
                                     " calls, this one has " + std::to_string(calls));
  }
  for (const compare::ReportLaunch& l : report.launches) {
    if (l.graph_launch) {
      index.graphs[l.call].push_back({l.kernel, l.graph_node.value_or(0), median_ns(l.time)});
      index.graph_matched[l.call] = false;
    } else {
      index.launches[l.call] = {l.kernel, median_ns(l.time), l.time ? l.time->samples : 0, false};
    }
  }
  return index;
}

format::Status report_mismatch(const compare::Report& report, uint64_t seq,
                               const std::string& what) {
  return format::Status::error(format::ErrorCode::kInvalidArgument,
                               "the report " + report.path + " is not of this capture: " + what)
      .at_call(seq);
}

// NVTX records (schema 6, NvtxEvent) paired into ranges: push/pop by thread and domain, a pop
// closing the newest open push (the nesting NVTX defines); start/end by range id, on the thread
// that started the range. A mark is an instant. A range still open when the capture ends runs to
// the capture's last timestamp and says so in its name.
class NvtxPairing {
 public:
  void add(schema::CallRecord::Reader r) {
    auto e = r.getNvtx();
    const uint64_t thread = r.getThreadId();
    const int64_t at = r.getStartNs();
    last_ns_ = std::max(last_ns_, std::max(at, r.getEndNs()));
    NvtxRange range;
    range.thread_id = thread;
    range.start_ns = range.end_ns = at;
    range.name = e.getMessage().cStr();
    range.domain = e.getDomain().cStr();
    range.category = e.getCategory();
    range.color = e.getHasColor() ? e.getColor() : 0;
    using Kind = schema::NvtxEvent::Kind;
    switch (e.getKind()) {
      case Kind::PUSH:
        pushed_[{thread, e.getDomainHandle()}].push_back(std::move(range));
        break;
      case Kind::POP: {
        auto& stack = pushed_[{thread, e.getDomainHandle()}];
        if (stack.empty()) break;  // a pop without its push (before the capture began)
        stack.back().end_ns = at;
        done_.push_back(std::move(stack.back()));
        stack.pop_back();
        break;
      }
      case Kind::START:
        started_[e.getRangeId()] = std::move(range);
        break;
      case Kind::END: {
        auto it = started_.find(e.getRangeId());
        if (it == started_.end()) break;
        it->second.end_ns = at;
        done_.push_back(std::move(it->second));
        started_.erase(it);
        break;
      }
      case Kind::MARK:
        range.mark = true;
        done_.push_back(std::move(range));
        break;
      default:  // a kind of a newer schema
        break;
    }
  }
  // Every range and mark, the open ones closed at the capture's end.
  std::vector<NvtxRange> finish() {
    auto close = [&](NvtxRange range) {
      range.end_ns = std::max(last_ns_, range.start_ns);
      range.name += " (not closed when the capture ended)";
      done_.push_back(std::move(range));
    };
    for (auto& [key, stack] : pushed_)
      for (NvtxRange& range : stack) close(std::move(range));
    for (auto& [id, range] : started_) close(std::move(range));
    return std::move(done_);
  }

 private:
  std::map<std::pair<uint64_t, uint64_t>, std::vector<NvtxRange>> pushed_;
  std::map<uint64_t, NvtxRange> started_;
  std::vector<NvtxRange> done_;
  int64_t last_ns_ = 0;
};

}  // namespace

format::Result<PerfettoTrace> build_timeline(format::Reader& reader, const TimelineOptions& options,
                                             TimelineSummary* summary_out) {
  TimelineSummary summary;
  std::optional<ReportIndex> report;
  if (options.report) {
    auto indexed = index_report(*options.report, reader.call_count());
    if (!indexed) return indexed.status();
    report = std::move(indexed.value());
  }
  const std::string report_name =
      options.report_name.empty() && options.report ? options.report->path : options.report_name;

  std::map<uint64_t, std::vector<ApiCall>> threads;  // by thread id
  std::vector<StreamKey> stream_order;               // first use
  std::map<StreamKey, std::vector<DeviceWork>> streams;
  format::Status mismatch = format::Status::ok();
  NvtxPairing nvtx_pairing;

  format::Status st = reader.for_each_call([&](const format::CallRef& call) {
    schema::CallRecord::Reader r = call.get();
    ++summary.calls;
    if (r.isNvtx()) nvtx_pairing.add(r);
    ApiCall api;
    api.seq = call.seq();
    api.start = r.getStartNs();
    api.end = r.getEndNs();
    api.name = r.getApiName().cStr();
    api.tool = api.name == kToolApiName;
    api.result = r.getResult();
    if (api.tool) api.name = format::call_kind_name(static_cast<uint16_t>(r.which()));

    std::optional<uint64_t> stream;
    DeviceWork work;
    work.seq = call.seq();
    work.call_start = api.start;
    work.annotations.push_back({"call", {}, call.seq()});
    work.annotations.push_back({"api", api.name, {}});
    if (!api.tool && api.result == 0) {
      switch (r.which()) {
        case Which::LAUNCH: {
          auto l = r.getLaunch();
          stream = l.getStream();
          work.name = l.getKernelName().size() > 0 ? std::string(l.getKernelName().cStr())
                                                   : "kernel " + hex(l.getFunction());
          work.annotations.push_back({"launch", {}, l.getOrdinal()});
          work.annotations.push_back({"grid",
                                      std::to_string(l.getGridX()) + "," +
                                          std::to_string(l.getGridY()) + "," +
                                          std::to_string(l.getGridZ()),
                                      {}});
          work.annotations.push_back({"block",
                                      std::to_string(l.getBlockX()) + "," +
                                          std::to_string(l.getBlockY()) + "," +
                                          std::to_string(l.getBlockZ()),
                                      {}});
          if (report) {
            auto it = report->launches.find(call.seq());
            if (it != report->launches.end()) {
              if (l.getKernelName().size() > 0 && it->second.kernel != work.name &&
                  mismatch.is_ok()) {
                mismatch =
                    report_mismatch(*options.report, call.seq(),
                                    "its launch at call " + std::to_string(call.seq()) + " is " +
                                        it->second.kernel + ", the capture's is " + work.name);
              }
              it->second.matched = true;
              work.duration_ns = it->second.duration_ns;
              work.timed_runs = it->second.samples;
            }
          }
          break;
        }
        case Which::MEMCPY: {
          auto m = r.getMemcpy();
          stream = m.getStream();
          work.name = "memcpy " + enumerant_name(m.getKind());
          work.annotations.push_back({"bytes", {}, m.getSize()});
          break;
        }
        case Which::MEMSET: {
          auto m = r.getMemset();
          stream = m.getStream();
          work.name = "memset";
          uint64_t rows = std::max<uint64_t>(m.getHeight(), 1);
          work.annotations.push_back({"bytes", {}, m.getWidth() * rows * m.getElementSize()});
          break;
        }
        case Which::GRAPH_EXEC: {
          auto g = r.getGraphExec();
          if (g.getOp() != schema::GraphExecCall::Op::LAUNCH) break;
          stream = g.getStream();
          work.graph = true;
          work.name = "graph launch " + hex(g.getExec());
          work.annotations.push_back({"graph launch", {}, g.getLaunchIndex()});
          if (report) {
            auto it = report->graphs.find(call.seq());
            if (it != report->graphs.end()) {
              work.nodes = it->second;
              report->graph_matched[call.seq()] = true;
            }
          }
          break;
        }
        default:
          break;
      }
    }
    if (stream) {
      StreamKey key = stream_key(r, *stream);
      auto [it, added] = streams.try_emplace(key);
      if (added) stream_order.push_back(key);
      it->second.push_back(std::move(work));
      api.has_work = true;
    }
    threads[r.getThreadId()].push_back(std::move(api));
    return true;
  });
  if (!st.is_ok()) return st;
  if (!mismatch.is_ok()) return mismatch;
  if (report) {
    for (const auto& [seq, launch] : report->launches) {
      if (!launch.matched) {
        return report_mismatch(*options.report, seq,
                               "it has a launch of " + launch.kernel + " at call " +
                                   std::to_string(seq) +
                                   ", the capture has no successful launch there");
      }
    }
    for (const auto& [seq, matched] : report->graph_matched) {
      if (!matched) {
        return report_mismatch(*options.report, seq,
                               "it has graph kernel nodes at call " + std::to_string(seq) +
                                   ", the capture has no successful graph launch there");
      }
    }
  }

  PerfettoTrace trace;
  schema::CaptureHeader::Reader header = reader.header();
  auto pid = static_cast<int32_t>(header.getPid());
  std::string process_name = "pid " + std::to_string(header.getPid());
  if (header.getCommandLine().size() > 0) {
    std::string argv0 = header.getCommandLine()[0].cStr();
    size_t slash = argv0.rfind('/');
    process_name = slash == std::string::npos ? argv0 : argv0.substr(slash + 1);
  }
  uint64_t process = trace.add_process_track(pid, process_name);

  // The capture's NVTX records, and what the caller gave.
  std::vector<NvtxRange> nvtx = nvtx_pairing.finish();
  nvtx.insert(nvtx.end(), options.nvtx.begin(), options.nvtx.end());
  // Threads that made calls, and threads that only have NVTX ranges.
  for (const NvtxRange& range : nvtx) threads.try_emplace(range.thread_id);
  std::map<uint64_t, uint64_t> thread_tracks;
  for (auto& [tid, calls] : threads) {
    std::string thread_name = "thread " + std::to_string(tid);
    uint64_t track = trace.add_thread_track(process, pid, static_cast<int64_t>(tid), thread_name);
    thread_tracks[tid] = track;
    ++summary.threads;
    std::stable_sort(calls.begin(), calls.end(), [](const ApiCall& a, const ApiCall& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    Lanes lanes;
    lanes.add_lane(track);
    for (const ApiCall& c : calls) {
      EventDetails details;
      details.annotations.push_back({"call", {}, c.seq});
      if (c.result != 0) details.annotations.push_back({"result", std::to_string(c.result), {}});
      if (c.tool || c.start < 0 || c.end < c.start) {
        // cusnap's own records mark a moment, not a call; a record whose times make no interval
        // is shown where it starts and says why.
        if (!c.tool) {
          details.annotations.push_back(
              {"timing", "the capture's endNs is before its startNs", {}});
        }
        details.category = c.tool ? kCategoryTool : kCategoryApi;
        if (c.has_work) details.flow_ids.push_back(c.seq + 1);
        trace.instant(track, std::max<int64_t>(c.start, 0), c.name, std::move(details));
        ++(c.tool ? summary.tool_events : summary.api_slices);
        continue;
      }
      uint64_t lane = lanes.place(c.start, c.end, [&](size_t n) {
        ++summary.overlap_tracks;
        return trace.add_track(track, thread_name + ": overlapping calls " + std::to_string(n));
      });
      details.category = kCategoryApi;
      if (c.has_work) details.flow_ids.push_back(c.seq + 1);
      trace.begin_slice(lane, c.start, c.name, std::move(details));
      trace.end_slice(lane, c.end);
      ++summary.api_slices;
    }
  }

  const std::string untimed = options.report
                                  ? "none: the report " + report_name + " has no time for it"
                                  : "none: a capture holds no device timings (give --report)";
  for (const StreamKey& key : stream_order) {
    uint64_t track = trace.add_track(process, stream_name(key));
    ++summary.streams;
    int64_t cursor = 0;  // end of the previous work on this stream
    for (DeviceWork& w : streams[key]) {
      int64_t start = std::max<int64_t>({w.call_start, cursor, 0});
      EventDetails details;
      details.category = kCategoryDevice;
      details.terminating_flow_ids.push_back(w.seq + 1);
      details.annotations = std::move(w.annotations);
      ++summary.flows;
      bool nodes_timed = w.graph && !w.nodes.empty() &&
                         std::all_of(w.nodes.begin(), w.nodes.end(),
                                     [](const ReportNode& n) { return n.duration_ns.has_value(); });
      if (w.graph && nodes_timed) {
        int64_t total = 0;
        for (const ReportNode& n : w.nodes) total += *n.duration_ns;
        details.annotations.push_back({"timing",
                                       "sum of its kernel nodes' replay medians (" + report_name +
                                           "), nodes shown one after another",
                                       {}});
        trace.begin_slice(track, start, w.name, std::move(details));
        int64_t t = start;
        for (const ReportNode& n : w.nodes) {
          EventDetails node;
          node.category = kCategoryDevice;
          node.annotations.push_back({"graph node", hex(n.node), {}});
          node.annotations.push_back({"timing", "replay median (" + report_name + ")", {}});
          trace.begin_slice(track, t, n.kernel, std::move(node));
          t += *n.duration_ns;
          trace.end_slice(track, t);
          ++summary.graph_nodes;
        }
        trace.end_slice(track, start + total);
        cursor = start + total;
        ++summary.device_slices;
      } else if (w.duration_ns) {
        details.annotations.push_back({"timing",
                                       "replay median of " + std::to_string(w.timed_runs) +
                                           " timed run(s) (" + report_name + ")",
                                       {}});
        trace.begin_slice(track, start, w.name, std::move(details));
        trace.end_slice(track, start + *w.duration_ns);
        cursor = start + *w.duration_ns;
        ++summary.device_slices;
      } else {
        details.annotations.push_back({"timing", untimed, {}});
        trace.instant(track, start, w.name, std::move(details));
        ++summary.device_instants;
        for (const ReportNode& n : w.nodes) {
          EventDetails node;
          node.category = kCategoryDevice;
          node.annotations.push_back({"graph node", hex(n.node), {}});
          node.annotations.push_back({"graph launch call", {}, w.seq});
          node.annotations.push_back({"timing", untimed, {}});
          trace.instant(track, start, n.kernel, std::move(node));
          ++summary.graph_nodes;
        }
      }
    }
  }

  // NVTX ranges: an "NVTX" track under each thread's track.
  std::map<uint64_t, std::vector<const NvtxRange*>> nvtx_by_thread;
  for (const NvtxRange& range : nvtx) nvtx_by_thread[range.thread_id].push_back(&range);
  for (auto& [tid, ranges] : nvtx_by_thread) {
    std::stable_sort(ranges.begin(), ranges.end(), [](const NvtxRange* a, const NvtxRange* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    std::string base = "thread " + std::to_string(tid) + ": NVTX";
    uint64_t thread_track = thread_tracks[tid];  // (clang 14 lambdas cannot name `tid`)
    uint64_t track = trace.add_track(thread_track, base);
    Lanes lanes;
    lanes.add_lane(track);
    for (const NvtxRange* range : ranges) {
      EventDetails details;
      details.category = kCategoryNvtx;
      if (!range->domain.empty()) details.annotations.push_back({"domain", range->domain, {}});
      if (range->category != 0) details.annotations.push_back({"category", {}, range->category});
      if (range->color != 0) details.annotations.push_back({"color", hex(range->color), {}});
      ++summary.nvtx_ranges;
      if (range->mark || range->end_ns < range->start_ns || range->start_ns < 0) {
        trace.instant(track, std::max<int64_t>(range->start_ns, 0), range->name,
                      std::move(details));
        continue;
      }
      uint64_t lane = lanes.place(range->start_ns, range->end_ns, [&](size_t n) {
        ++summary.overlap_tracks;
        return trace.add_track(thread_track, base + " " + std::to_string(n));
      });
      trace.begin_slice(lane, range->start_ns, range->name, std::move(details));
      trace.end_slice(lane, range->end_ns);
    }
  }

  if (summary_out) *summary_out = summary;
  return trace;
}

}  // namespace cusnap::timeline
