// What a call record's size fields say about the bytes it carries, and whether they agree.
//
// One home for that rule: `Reader::verify()` calls a record whose sizes disagree with its
// payload corrupt, and the replayer's plan (replayer/plan.cpp) takes the copy geometry it
// replays from copy_shape(), so the two can never disagree about what a record means.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/capture.capnp.h"  // generated from format/schema/capture.capnp
#include "cusnap/format/status.h"

namespace cusnap::format {

// One allocation or copy; a real capture stays far below it, a forged one must not make a
// reader or replayer compute past 64 bits.
inline constexpr uint64_t kMaxRecordRangeBytes = uint64_t{1} << 44;

// A memcpy's layout as its record states it. 1-D: width == bytes, height == depth == 1.
struct CopyShape {
  uint32_t dimensions = 1;
  uint64_t width = 0;      // bytes per row
  uint64_t height = 1;     // rows per slice
  uint64_t depth = 1;      // slices
  uint64_t src_pitch = 0;  // 2-D/3-D: bytes between rows on each side
  uint64_t dst_pitch = 0;
  uint64_t src_height = 1;  // 2-D/3-D: rows between slices on each side (>= height)
  uint64_t dst_height = 1;
  uint64_t src_offset = 0;  // 2-D/3-D: the x/y/z offsets of each side, in bytes
  uint64_t dst_offset = 0;
  uint64_t bytes = 0;  // width * height * depth: what a host-side (packed) payload holds
};

// The shape of a copy, or kMalformed naming what is out of limits (dimensions above 3, a
// geometry or extent past kMaxRecordRangeBytes, offsets that overflow).
Result<CopyShape> copy_shape(schema::Memcpy::Reader r);

// The bytes of a CUDA array an array record creates (create, create3d), packed: rows of
// width_bytes, `height` rows per slice, `depth` slices (an absent dimension counts 1). Layered
// and cubemap arrays hold their layers (faces) as slices.
struct ArrayExtent {
  uint64_t width_bytes = 0;
  uint64_t height = 1;
  uint64_t depth = 1;
  uint64_t bytes = 0;
};

// The extent of the array an array record creates, or kInvalidArgument for an element format whose
// size this does not know (block-compressed, planar video formats) and kMalformed for a record
// out of limits (no channels, more than 4, or bytes past kMaxRecordRangeBytes).
Result<ArrayExtent> array_extent(schema::ArrayCall::Reader r);

// A launch's parameter layout against its parameter bytes: kMalformed naming the first slot
// that reaches past them.
Status check_param_layout(schema::Launch::Reader r);

// A blob a record names together with the byte count its size fields give it.
struct BlobSizeClaim {
  BlobId id;
  uint64_t bytes = 0;
  const char* what = "";  // which field, for messages ("memcpy payload", "module image", ...)
};

// The size rules of one record: appends what each named blob must hold to `claims` (the caller
// knows the blobs' sizes) and returns kMalformed for a record that contradicts itself (a copy
// geometry out of limits, a parameter slot past the parameter bytes). Records without size
// fields pass.
Status check_record_sizes(schema::CallRecord::Reader r, std::vector<BlobSizeClaim>& claims);

// check_record_sizes() over records in seq order, adding the rule that spans two records: a
// deferredResult payload (the bytes a copy from pinned memory really read) holds what the copy
// it completes moves.
class RecordSizeChecker {
 public:
  Status check(schema::CallRecord::Reader r, std::vector<BlobSizeClaim>& claims);

 private:
  std::unordered_map<uint64_t, uint64_t> payload_bytes_;  // memcpy with a payload: seq -> bytes
};

}  // namespace cusnap::format
