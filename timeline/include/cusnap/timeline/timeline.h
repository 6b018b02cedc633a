// A capture as a timeline (`cusnap export --perfetto`, docs/timeline.md): one track per captured
// thread with its API calls, one track per stream with the device work the calls enqueued
// (copies, memsets, kernel launches, graph launches), and a flow from each call to its work.
//
// Timestamps are the capture's CLOCK_MONOTONIC nanoseconds. API calls are slices from the
// record's startNs to its endNs. A capture holds no device timings, so device work is placed at
// its API call's start, or at the end of the previous work on the same stream when that is later
// (a stream runs its work in order). Its duration comes from a replay report (`--report`: the
// median of the timed runs of that launch); without one, or for work the report did not time
// (copies, memsets, untimed launches), it is an instant event whose `timing` annotation says so:
// no duration is ever made up. A graph launch is a slice when the report timed every kernel node
// it ran (the nodes as child slices, one after another, the graph as long as their sum), else an
// instant with one instant per kernel node the report lists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cusnap/compare/compare.h"
#include "cusnap/format/reader.h"
#include "cusnap/format/status.h"
#include "cusnap/timeline/perfetto_trace.h"

namespace cusnap::timeline {

// An NVTX range or mark on a thread's "NVTX" track. build_timeline pairs the capture's own nvtx
// records (schema 6) into these: push/pop per thread and domain, start/end by range id, marks as
// instants, a range still open at the capture's end closed there and named so. A caller may add
// more through TimelineOptions::nvtx (ranges another tool recorded for the same run).
struct NvtxRange {
  uint64_t thread_id = 0;  // OS thread id, as CallRecord.threadId
  int64_t start_ns = 0;    // CLOCK_MONOTONIC, as CallRecord.startNs
  int64_t end_ns = 0;      // a mark: end_ns == start_ns and `mark`
  bool mark = false;       // nvtxMark: an instant
  std::string name;        // the message (registered strings resolved)
  std::string domain;      // empty: the default domain
  uint32_t category = 0;   // 0: none
  uint32_t color = 0;      // ARGB; 0: none
};

struct TimelineOptions {
  const compare::Report* report = nullptr;  // replay report of this capture: device durations
  std::string report_name;                  // how `timing` annotations name it
  std::vector<NvtxRange> nvtx;              // extra ranges, beside the capture's (NvtxRange)
};

struct TimelineSummary {
  uint64_t calls = 0;        // records read
  uint64_t api_slices = 0;   // API calls on thread tracks
  uint64_t tool_events = 0;  // cusnap's own records (apiName "cusnap"): instants
  uint64_t threads = 0;
  uint64_t streams = 0;
  uint64_t device_slices = 0;    // device work with a duration from the report
  uint64_t device_instants = 0;  // device work without one
  uint64_t graph_nodes = 0;      // kernel nodes of graph launches (children)
  uint64_t flows = 0;
  uint64_t overlap_tracks = 0;  // extra tracks for calls that overlap on one thread
  uint64_t nvtx_ranges = 0;
};

// Reads every call of `reader` (a truncated capture: the calls recovered) and builds the trace.
// Errors: a record that cannot be read (the reader's Status: file, frame, call); a report that
// is not of this capture (kInvalidArgument: call count, or a launch at a call that differs).
format::Result<PerfettoTrace> build_timeline(format::Reader& reader, const TimelineOptions& options,
                                             TimelineSummary* summary = nullptr);

}  // namespace cusnap::timeline
