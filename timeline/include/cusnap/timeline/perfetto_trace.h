// A Perfetto trace (https://perfetto.dev/docs/reference/trace-packet-proto) built in memory and
// serialized as a `perfetto.protos.Trace` message with the wire encoder of proto_writer.h: track
// descriptors first (a process, its threads, named tracks under them), then track events (slice
// begin / end, instants) sorted by timestamp, all on one trusted packet sequence.
//
// Field numbers are those of the trace protos, checked against the descriptors of the PyPI
// `perfetto` package 0.59.1 (perfetto.protos.perfetto.trace.perfetto_trace_pb2); the test
// tests/timeline/check_perfetto.py decodes every trace this writes with that package.
//
// The caller keeps slices well nested per track (a slice ends before its enclosing one does);
// events of one track keep the order they were added in among equal timestamps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cusnap::timeline {

// One debug annotation (TrackEvent.debug_annotations): shown in the UI's slice details.
struct Annotation {
  std::string name;
  std::string text;                // string_value, when `number` is empty
  std::optional<uint64_t> number;  // uint_value
};

struct EventDetails {
  std::string category;                        // TrackEvent.categories (one)
  std::vector<uint64_t> flow_ids;              // flows that start here
  std::vector<uint64_t> terminating_flow_ids;  // flows that end here
  std::vector<Annotation> annotations;
};

class PerfettoTrace {
 public:
  // Tracks; each returns the new track's uuid. A process track, a thread track (ThreadDescriptor
  // pid/tid) under its process's track (as Perfetto's synthetic track event guide has it), and
  // a named track under `parent_uuid` (a process or thread track; 0: top level).
  uint64_t add_process_track(int32_t pid, const std::string& name);
  uint64_t add_thread_track(uint64_t process_uuid, int32_t pid, int64_t tid,
                            const std::string& name);
  uint64_t add_track(uint64_t parent_uuid, const std::string& name);

  void begin_slice(uint64_t track, int64_t ts, std::string name, EventDetails details = {});
  void end_slice(uint64_t track, int64_t ts);
  void instant(uint64_t track, int64_t ts, std::string name, EventDetails details = {});

  size_t track_count() const { return tracks_.size(); }
  size_t event_count() const { return events_.size(); }

  // The whole trace: a Trace message (repeated TracePacket packet = 1).
  std::string serialize() const;

 private:
  enum class Kind : uint8_t { kProcess, kThread, kNamed };
  struct Track {
    uint64_t uuid = 0;
    Kind kind = Kind::kNamed;
    uint64_t parent_uuid = 0;
    int32_t pid = 0;
    int64_t tid = 0;
    std::string name;
  };
  struct Event {
    uint64_t track = 0;
    int64_t ts = 0;
    uint8_t type = 0;  // TrackEvent.Type
    std::string name;
    EventDetails details;
  };

  uint64_t next_uuid_ = 1;
  std::vector<Track> tracks_;
  std::vector<Event> events_;
};

}  // namespace cusnap::timeline
