// Replay reports for the compare tests, built here and not by replayer/report.cpp: the tests
// fix the document (docs/schemas/replay-report.md) independently of the code that writes it.
// Only the fields read_report() needs, as `cusnap replay --report` names them (schema 2).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cusnap/common/json_writer.h"

namespace cusnap::test {

struct BuiltLaunch {
  uint64_t call = 0;
  std::string kernel;
  std::vector<double> times_ms;  // empty: untimed (time_ms null)
  bool cap_hit = false;
};

// A kernel node run by the graph launch at `call` (a launches[] entry with graph_launch set).
struct BuiltGraphNode {
  uint64_t call = 0;
  std::string kernel;
  uint64_t launch_index = 0;
  uint64_t node = 0;
  std::vector<double> times_ms;  // empty: untimed
};

struct BuiltCopy {
  uint64_t call = 0;
  uint64_t address = 0x7f0000000000;
  uint64_t bytes = 16;
  uint64_t checksum = 0;
  uint64_t launches_before = 0;
  std::string output;    // saved output file name, or empty
  bool verified = true;  // false: the capture had no checksum, the replay hashed nothing
};

// An afterLaunch snapshot check: chunks at base + i * chunk_bytes.
struct BuiltCheck {
  uint64_t launch_call = 0;
  uint64_t chunks = 0;
  uint64_t mismatched_chunks = 0;                            // may exceed the list (truncated)
  std::vector<std::pair<uint64_t, std::string>> mismatches;  // address, actual hash
  std::vector<std::pair<uint64_t, std::string>> saved;       // address, output file
};

struct BuiltReport {
  uint64_t calls = 100;
  std::vector<BuiltLaunch> launches;
  std::vector<BuiltGraphNode> graph_nodes;  // written after `launches`
  std::vector<BuiltCopy> copies;
  std::vector<BuiltCheck> checks;
  std::string outputs_dir;

  std::string json() const {
    auto hex = [](uint64_t v) {
      char b[32];
      std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
      return std::string(b);
    };
    common::JsonWriter j(1);
    j.begin_object();
    j.key("schema").str("cusnap-replay-report").key("schema_version").num(2);
    j.key("capture").begin_object();
    j.key("path").str("app.cusnap").key("calls").num(calls).key("launches").num(launches.size());
    j.end_object();
    j.key("driver").begin_object().key("path").str("/x/libcuda.so.1").key("version").num(13000);
    j.end_object();
    j.key("device").begin_object().key("name").str("test device").end_object();
    j.key("verification").begin_object().key("result").str("matched").key("copies");
    j.begin_array();
    for (const BuiltCopy& c : copies) {
      j.begin_object();
      j.key("call").num(c.call).key("address").str(hex(c.address)).key("bytes").num(c.bytes);
      // An unverified copy: the replayer writes its (never computed) checksums as 0x0.
      j.key("state").str(c.verified ? "matched" : "unverified");
      j.key("expected_checksum").str(hex(c.verified ? c.checksum : 0));
      j.key("actual_checksum").str(hex(c.verified ? c.checksum : 0));
      j.key("launches_before").num(c.launches_before).key("recent_launches").begin_array();
      j.end_array();
      j.key("allocation").begin_object().key("call").num(1).key("address").str(hex(c.address));
      j.key("bytes").num(c.bytes).key("kind").str("device").end_object();
      j.key("output");
      if (c.output.empty()) {
        j.null();
      } else {
        j.str(c.output);
      }
      j.end_object();
    }
    j.end_array().end_object();
    j.key("snapshots").begin_object().key("checks").begin_array();
    for (size_t i = 0; i < checks.size(); ++i) {
      const BuiltCheck& c = checks[i];
      j.begin_object();
      j.key("call").num(c.launch_call + 1).key("launch_call").num(c.launch_call);
      j.key("launch_ordinal").num(i).key("kernel").str("k").key("phase").str("afterLaunch");
      j.key("chunks").num(c.chunks).key("matched_chunks").num(c.chunks - c.mismatched_chunks);
      j.key("within_tolerance_chunks").num(0).key("mismatched_chunks").num(c.mismatched_chunks);
      j.key("mismatches").begin_array();
      for (const auto& [address, hash] : c.mismatches) {
        j.begin_object().key("address").str(hex(address)).key("bytes").num(64);
        j.key("allocation").null().key("actual_hash").str(hash).end_object();
      }
      j.end_array().key("saved").begin_array();
      for (const auto& [address, name] : c.saved) {
        j.begin_object().key("address").str(hex(address)).key("bytes").num(64);
        j.key("output").str(name).end_object();
      }
      j.end_array().end_object();
    }
    j.end_array().end_object();
    j.key("launches").begin_array();
    // One launches[] entry; `graph`: a kernel node run by a graph launch (its launch index and
    // node handle), none for an ordinary launch.
    auto launch = [&](uint64_t call, uint64_t ordinal, const std::string& kernel,
                      const std::vector<double>& times_ms, bool cap_hit,
                      const BuiltGraphNode* graph) {
      j.begin_object();
      j.key("call").num(call).key("ordinal").num(ordinal).key("kernel").str(kernel);
      j.key("selected").boolean(!times_ms.empty()).key("verification").str("matched");
      j.key("graph_launch");
      graph ? j.num(graph->launch_index) : j.null();
      j.key("graph_node");
      graph ? j.str(hex(graph->node)) : j.null();
      j.key("time_ms");
      if (times_ms.empty()) {
        j.null();
      } else {
        j.begin_object().key("samples").num(times_ms.size());
        std::vector<double> sorted = times_ms;
        std::sort(sorted.begin(), sorted.end());
        size_t n = sorted.size();
        double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        j.key("min").real(sorted.front()).key("median").real(median);
        for (const char* k : {"mean", "max", "stddev"}) j.key(k).real(0);
        j.key("values").begin_array();
        for (double t : times_ms) j.real(t);
        j.end_array();
        j.key("noise").real(0).key("cap_hit").boolean(cap_hit).key("mode").str("cold");
        j.end_object();
      }
      j.end_object();
    };
    for (size_t i = 0; i < launches.size(); ++i) {
      const BuiltLaunch& l = launches[i];
      launch(l.call, i, l.kernel, l.times_ms, l.cap_hit, nullptr);
    }
    for (const BuiltGraphNode& g : graph_nodes) {
      launch(g.call, g.launch_index, g.kernel, g.times_ms, false, &g);
    }
    j.end_array();
    j.key("outputs");
    if (outputs_dir.empty()) {
      j.null();
    } else {
      j.begin_object().key("dir").str(outputs_dir).end_object();
    }
    j.end_object();
    return j.take() + "\n";
  }

  void write(const std::string& path) const {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << json();
  }
};

}  // namespace cusnap::test
