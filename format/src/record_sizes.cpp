#include "cusnap/format/record_sizes.h"

#include <algorithm>
#include <optional>
#include <string>

#include "cusnap/format/reader.h"

namespace cusnap::format {

namespace {

constexpr uint64_t kMax = kMaxRecordRangeBytes;

Status malformed(std::string message) {
  return Status::error(ErrorCode::kMalformed, std::move(message));
}

// Row y of slice z starts (z * height + y) * pitch bytes in (height: rows per slice).
std::optional<uint64_t> side_offset(uint64_t x, uint64_t y, uint64_t z, uint64_t height,
                                    uint64_t pitch) {
  if (x > kMax || y > kMax || z > kMax || height > kMax) return std::nullopt;
  if (height != 0 && z > kMax / height) return std::nullopt;
  uint64_t row = z * height + y;
  if (row > kMax || (pitch != 0 && row > kMax / pitch)) return std::nullopt;
  return row * pitch + x;
}

}  // namespace

Result<ArrayExtent> array_extent(schema::ArrayCall::Reader r) {
  uint64_t element = 0;  // CUarray_format's classic element sizes (cuda.h)
  switch (r.getFormat()) {
    case 0x01:  // UNSIGNED_INT8
    case 0x08:  // SIGNED_INT8
      element = 1;
      break;
    case 0x02:  // UNSIGNED_INT16
    case 0x09:  // SIGNED_INT16
    case 0x10:  // HALF
      element = 2;
      break;
    case 0x03:  // UNSIGNED_INT32
    case 0x0a:  // SIGNED_INT32
    case 0x20:  // FLOAT
      element = 4;
      break;
    default:
      return Status::error(ErrorCode::kInvalidArgument,
                           "array format " + std::to_string(r.getFormat()) +
                               " (its element size is not known here)");
  }
  const uint32_t channels = r.getChannels();
  if (channels == 0 || channels > 4)
    return Status::error(ErrorCode::kMalformed,
                         "array with " + std::to_string(channels) + " channels");
  ArrayExtent e;
  if (r.getWidth() > kMax) return Status::error(ErrorCode::kMalformed, "array width out of limits");
  e.width_bytes = r.getWidth() * element * channels;
  e.height = r.getHeight() == 0 ? 1 : r.getHeight();
  e.depth = r.getDepth() == 0 ? 1 : r.getDepth();
  if (e.width_bytes > kMax || e.height > kMax || e.depth > kMax ||
      (e.width_bytes != 0 && e.height > kMax / e.width_bytes) ||
      (e.width_bytes * e.height != 0 && e.depth > kMax / (e.width_bytes * e.height)))
    return Status::error(ErrorCode::kMalformed, "array extent out of limits");
  e.bytes = e.width_bytes * e.height * e.depth;
  return e;
}

Result<CopyShape> copy_shape(schema::Memcpy::Reader r) {
  CopyShape s;
  s.dimensions = std::max<uint32_t>(r.getDimensions(), 1);
  if (s.dimensions > 3)
    return malformed("copy with " + std::to_string(s.dimensions) + " dimensions");
  if (s.dimensions == 1) {
    s.width = r.getSize();
    s.bytes = s.width;
    if (s.bytes > kMax) return malformed("copy size out of limits");
    return s;
  }
  auto g = r.getGeometry();
  s.width = g.getWidthInBytes();
  s.height = std::max<uint64_t>(g.getHeight(), 1);
  s.depth = std::max<uint64_t>(g.getDepth(), 1);
  s.src_pitch = g.getSrcPitch();
  s.dst_pitch = g.getDstPitch();
  s.src_height = std::max<uint64_t>(g.getSrcHeight(), s.height);
  s.dst_height = std::max<uint64_t>(g.getDstHeight(), s.height);
  constexpr uint64_t kMaxDim = uint64_t{1} << 24;  // rows or slices
  if (s.width > kMax || s.height > kMaxDim || s.depth > kMaxDim || s.src_height > kMaxDim ||
      s.dst_height > kMaxDim || s.height * s.depth > kMax / std::max<uint64_t>(s.width, 1) ||
      s.src_pitch > kMax / kMaxDim || s.dst_pitch > kMax / kMaxDim) {
    return malformed("2D/3D copy geometry out of limits");
  }
  for (auto [pitch, rows_per_slice] :
       {std::pair{s.src_pitch, s.src_height}, std::pair{s.dst_pitch, s.dst_height}}) {
    uint64_t rows = (s.depth - 1) * rows_per_slice + s.height;  // < 2^49: no overflow
    if (pitch != 0 && rows > kMax / pitch) return malformed("2D/3D copy extent out of limits");
  }
  auto dst =
      side_offset(g.getDstXInBytes(), g.getDstY(), g.getDstZ(), g.getDstHeight(), s.dst_pitch);
  auto src =
      side_offset(g.getSrcXInBytes(), g.getSrcY(), g.getSrcZ(), g.getSrcHeight(), s.src_pitch);
  if (!dst || !src) return malformed("2D copy offsets out of limits");
  s.dst_offset = *dst;
  s.src_offset = *src;
  s.bytes = s.width * s.height * s.depth;
  return s;
}

Status check_param_layout(schema::Launch::Reader r) {
  uint64_t params = r.getParams().size();
  for (auto slot : r.getLayout()) {
    uint64_t end = uint64_t{slot.getOffset()} + slot.getSize();
    if (end > params) {
      return malformed("parameter slot [" + std::to_string(slot.getOffset()) + ", " +
                       std::to_string(end) + ") outside the " + std::to_string(params) +
                       "-byte parameter block");
    }
  }
  return Status::ok();
}

Status check_record_sizes(schema::CallRecord::Reader r, std::vector<BlobSizeClaim>& claims) {
  switch (r.which()) {
    case schema::CallRecord::MEMCPY: {
      auto m = r.getMemcpy();
      if (!m.hasPayload() || to_blob(m.getPayload()).is_null()) return Status::ok();
      // A payload is the host side's bytes, packed: the copy's shape says how many.
      auto shape = copy_shape(m);
      if (!shape) return shape.status();
      claims.push_back({to_blob(m.getPayload()), shape.value().bytes, "memcpy payload"});
      return Status::ok();
    }
    case schema::CallRecord::MODULE_LOAD: {
      auto l = r.getModuleLoad();
      if (!l.hasImage() || to_blob(l.getImage()).is_null()) return Status::ok();
      claims.push_back({to_blob(l.getImage()), l.getImageSize(), "module image"});
      return Status::ok();
    }
    case schema::CallRecord::LAUNCH:
      return check_param_layout(r.getLaunch());
    case schema::CallRecord::GRAPH_NODE: {
      // A graph node's kernel and copy follow the rules of a launch and of a copy record.
      auto n = r.getGraphNode();
      if (n.getKind() == schema::GraphNode::Kind::KERNEL) return check_param_layout(n.getKernel());
      if (n.getKind() != schema::GraphNode::Kind::MEMCPY) return Status::ok();
      auto m = n.getMemcpy();
      if (!m.hasPayload() || to_blob(m.getPayload()).is_null()) return Status::ok();
      auto shape = copy_shape(m);
      if (!shape) return shape.status();
      claims.push_back({to_blob(m.getPayload()), shape.value().bytes, "graph memcpy node payload"});
      return Status::ok();
    }
    case schema::CallRecord::MEMORY_SNAPSHOT:
      for (auto c : r.getMemorySnapshot().getChunks()) {
        if (c.getHashOnly() || !c.hasBlob() || to_blob(c.getBlob()).is_null()) continue;
        claims.push_back({to_blob(c.getBlob()), c.getSize(), "snapshot chunk"});
      }
      return Status::ok();
    default:
      return Status::ok();
  }
}

Status RecordSizeChecker::check(schema::CallRecord::Reader r, std::vector<BlobSizeClaim>& claims) {
  size_t before = claims.size();
  Status st = check_record_sizes(r, claims);
  if (!st.is_ok()) return st;
  if (r.isMemcpy() && claims.size() > before) {
    payload_bytes_[r.getSeq()] = claims.back().bytes;
  } else if (r.isDeferredResult()) {
    auto d = r.getDeferredResult();
    if (d.hasPayload() && !to_blob(d.getPayload()).is_null()) {
      // A payload for a copy that had none (or no such copy) is not applied by a replay.
      auto it = payload_bytes_.find(d.getCallSeq());
      if (it != payload_bytes_.end()) {
        claims.push_back({to_blob(d.getPayload()), it->second, "deferred memcpy payload"});
      }
    }
  }
  return Status::ok();
}

}  // namespace cusnap::format
