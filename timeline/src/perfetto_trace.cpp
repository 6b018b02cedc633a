#include "cusnap/timeline/perfetto_trace.h"

#include <algorithm>

#include "cusnap/timeline/proto_writer.h"

namespace cusnap::timeline {
namespace {

// perfetto.protos field numbers (perfetto_trace_pb2 of the PyPI `perfetto` package 0.59.1).
namespace trace {
constexpr uint32_t kPacket = 1;  // Trace.packet, repeated TracePacket
}
namespace packet {
constexpr uint32_t kTimestamp = 8;                 // uint64
constexpr uint32_t kTrustedPacketSequenceId = 10;  // uint32
constexpr uint32_t kTrackEvent = 11;               // TrackEvent
constexpr uint32_t kSequenceFlags = 13;            // uint32, SequenceFlags
constexpr uint32_t kTrackDescriptor = 60;          // TrackDescriptor
constexpr uint64_t kSeqIncrementalStateCleared = 1;
}  // namespace packet
namespace track_descriptor {
constexpr uint32_t kUuid = 1;        // uint64
constexpr uint32_t kName = 2;        // string
constexpr uint32_t kProcess = 3;     // ProcessDescriptor
constexpr uint32_t kThread = 4;      // ThreadDescriptor
constexpr uint32_t kParentUuid = 5;  // uint64
}  // namespace track_descriptor
namespace process_descriptor {
constexpr uint32_t kPid = 1;          // int32
constexpr uint32_t kProcessName = 6;  // string
}  // namespace process_descriptor
namespace thread_descriptor {
constexpr uint32_t kPid = 1;         // int32
constexpr uint32_t kTid = 2;         // int64
constexpr uint32_t kThreadName = 5;  // string
}  // namespace thread_descriptor
namespace track_event {
constexpr uint32_t kDebugAnnotations = 4;     // repeated DebugAnnotation
constexpr uint32_t kType = 9;                 // Type
constexpr uint32_t kTrackUuid = 11;           // uint64
constexpr uint32_t kCategories = 22;          // repeated string
constexpr uint32_t kName = 23;                // string
constexpr uint32_t kFlowIds = 47;             // repeated fixed64
constexpr uint32_t kTerminatingFlowIds = 48;  // repeated fixed64
constexpr uint8_t kTypeSliceBegin = 1;
constexpr uint8_t kTypeSliceEnd = 2;
constexpr uint8_t kTypeInstant = 3;
}  // namespace track_event
namespace debug_annotation {
constexpr uint32_t kUintValue = 3;    // uint64
constexpr uint32_t kStringValue = 6;  // string
constexpr uint32_t kName = 10;        // string
}  // namespace debug_annotation

// The one sequence every packet of this writer is on (any non-zero id).
constexpr uint64_t kSequenceId = 1;

}  // namespace

uint64_t PerfettoTrace::add_process_track(int32_t pid, const std::string& name) {
  tracks_.push_back({next_uuid_, Kind::kProcess, 0, pid, 0, name});
  return next_uuid_++;
}

uint64_t PerfettoTrace::add_thread_track(uint64_t process_uuid, int32_t pid, int64_t tid,
                                         const std::string& name) {
  tracks_.push_back({next_uuid_, Kind::kThread, process_uuid, pid, tid, name});
  return next_uuid_++;
}

uint64_t PerfettoTrace::add_track(uint64_t parent_uuid, const std::string& name) {
  tracks_.push_back({next_uuid_, Kind::kNamed, parent_uuid, 0, 0, name});
  return next_uuid_++;
}

void PerfettoTrace::begin_slice(uint64_t track, int64_t ts, std::string name,
                                EventDetails details) {
  events_.push_back({track, ts, track_event::kTypeSliceBegin, std::move(name), std::move(details)});
}

void PerfettoTrace::end_slice(uint64_t track, int64_t ts) {
  events_.push_back({track, ts, track_event::kTypeSliceEnd, {}, {}});
}

void PerfettoTrace::instant(uint64_t track, int64_t ts, std::string name, EventDetails details) {
  events_.push_back({track, ts, track_event::kTypeInstant, std::move(name), std::move(details)});
}

std::string PerfettoTrace::serialize() const {
  std::string out;
  bool first = true;
  auto add_packet = [&](ProtoWriter& packet) {
    packet.varint(packet::kTrustedPacketSequenceId, kSequenceId);
    if (first) packet.varint(packet::kSequenceFlags, packet::kSeqIncrementalStateCleared);
    first = false;
    ProtoWriter::append_key(out, trace::kPacket, ProtoWriter::kLengthDelimited);
    ProtoWriter::append_varint(out, packet.data().size());
    out += packet.data();
  };

  for (const Track& track : tracks_) {
    ProtoWriter descriptor;
    descriptor.varint(track_descriptor::kUuid, track.uuid);
    if (track.parent_uuid != 0) descriptor.varint(track_descriptor::kParentUuid, track.parent_uuid);
    if (track.kind == Kind::kProcess) {
      ProtoWriter process;
      process.signed_varint(process_descriptor::kPid, track.pid);
      process.bytes(process_descriptor::kProcessName, track.name);
      descriptor.message(track_descriptor::kProcess, process);
    } else if (track.kind == Kind::kThread) {
      ProtoWriter thread;
      thread.signed_varint(thread_descriptor::kPid, track.pid);
      thread.signed_varint(thread_descriptor::kTid, track.tid);
      thread.bytes(thread_descriptor::kThreadName, track.name);
      descriptor.message(track_descriptor::kThread, thread);
    } else {
      descriptor.bytes(track_descriptor::kName, track.name);
    }
    ProtoWriter packet;
    packet.message(packet::kTrackDescriptor, descriptor);
    add_packet(packet);
  }

  // Time order across tracks; a stable sort keeps each track's own order among equal times
  // (a zero-length slice's begin before its end, a slice's end before the next one's begin).
  std::vector<const Event*> order;
  order.reserve(events_.size());
  for (const Event& e : events_) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [](const Event* a, const Event* b) { return a->ts < b->ts; });
  for (const Event* e : order) {
    ProtoWriter event;
    event.varint(track_event::kType, e->type);
    event.varint(track_event::kTrackUuid, e->track);
    if (e->type != track_event::kTypeSliceEnd) {
      event.bytes(track_event::kName, e->name);
      if (!e->details.category.empty()) {
        event.bytes(track_event::kCategories, e->details.category);
      }
    }
    for (uint64_t id : e->details.flow_ids) event.fixed64(track_event::kFlowIds, id);
    for (uint64_t id : e->details.terminating_flow_ids) {
      event.fixed64(track_event::kTerminatingFlowIds, id);
    }
    for (const Annotation& a : e->details.annotations) {
      ProtoWriter annotation;
      annotation.bytes(debug_annotation::kName, a.name);
      if (a.number) {
        annotation.varint(debug_annotation::kUintValue, *a.number);
      } else {
        annotation.bytes(debug_annotation::kStringValue, a.text);
      }
      event.message(track_event::kDebugAnnotations, annotation);
    }
    ProtoWriter packet;
    packet.varint(packet::kTimestamp, static_cast<uint64_t>(e->ts));
    packet.message(packet::kTrackEvent, event);
    add_packet(packet);
  }
  return out;
}

}  // namespace cusnap::timeline
