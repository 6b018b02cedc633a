// What the two routes of extract.cpp and replay_route.cpp share: the writer of one extracted
// capture, given the chunks of its two snapshots (internal to extract/).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cusnap/extract/extract.h"
#include "cusnap/format/writer.h"
#include "replayer/replay.h"

namespace cusnap::extract::detail {

struct Chunk {
  uint64_t address = 0;
  uint64_t size = 0;
  format::BlobId blob;
  bool hash_only = false;
  std::span<const uint8_t> bytes;  // replay route: the bytes read (empty: the source's blob)
};

// A CUDA array's contents the replay route read (LaunchPlan::arrays).
struct ArrayContents {
  uint64_t array = 0;  // captured handle
  std::span<const uint8_t> bytes;
};

// One snapshot of the extracted capture: its kept chunks, in address order, and the arrays.
struct PhaseContents {
  std::optional<uint64_t> record_seq;  // snapshot route: the source record it is copied from
  std::vector<Chunk> chunks;
  std::vector<ArrayContents> arrays;  // replay route (the snapshot route copies fill/check_seq)
};

// True when the chunk lies in an allocation or variable the extract keeps (plan.kept_ranges).
bool kept(const LaunchPlan& plan, uint64_t address, uint64_t size);

// The replay tap's name of a planned launch (replayer::LaunchKey): its record, or 1 + its place
// among its graph launch's kernel nodes.
replayer::LaunchKey launch_key(const LaunchPlan& plan);

// Stores `bytes` as a blob whose id must be `id`.
format::Status put_blob(format::Writer& writer, std::span<const uint8_t> bytes,
                        const format::BlobId& id, const std::string& what);

// --minimize: what write_extracted left out (ExtractInfo.minimized and dropped*).
struct Dropped {
  uint64_t input_bytes = 0;
  uint64_t expected_bytes = 0;
  uint32_t ranges = 0;
};

// Writes the extracted capture of `plan` (docs/format.md, "CaptureHeader.extract"); its route
// is plan.route (route_driver: the driver the replay route ran on). A source that is itself an
// extract keeps its ExtractInfo provenance (source, call, route). `dropped`: it is minimized.
format::Result<ExtractedLaunch> write_capture(
    format::Reader& source, const std::string& source_path, const LaunchPlan& plan,
    const std::string& out_path, const PhaseContents& before, const PhaseContents& after,
    const std::string& route_driver, const std::optional<Dropped>& dropped = std::nullopt);

}  // namespace cusnap::extract::detail
