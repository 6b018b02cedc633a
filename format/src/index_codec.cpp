// CaptureIndex <-> IndexData, with the structural validation a reader needs before trusting it.
#include <capnp/serialize.h>

#include <algorithm>
#include <unordered_set>

#include "cusnap/format/capture.capnp.h"
#include "internal.h"

namespace cusnap::format::detail {

namespace {

void set_blob_id(schema::BlobId::Builder b, const BlobId& id) {
  b.setHigh(id.high);
  b.setLow(id.low);
}

// CallRecord union discriminants a reader accepts (the schema has about 40; it only grows).
constexpr uint16_t kMaxKinds = 4096;

Status malformed(std::string what) {
  return Status::error(ErrorCode::kMalformed, "index: " + std::move(what));
}

}  // namespace

std::vector<uint8_t> encode_index(const IndexData& index) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<schema::CaptureIndex>();
  auto frames = root.initFrames(static_cast<unsigned>(index.frames.size()));
  for (size_t i = 0; i < index.frames.size(); ++i) {
    const FrameInfo& f = index.frames[i];
    auto b = frames[static_cast<unsigned>(i)];
    b.setOffset(f.offset);
    b.setKind(static_cast<uint8_t>(f.kind));
    b.setStoredSize(f.stored_size);
    b.setRawSize(f.raw_size);
    b.setFirstSeq(f.first_seq);
    b.setLastSeq(f.last_seq);
  }
  auto blobs = root.initBlobs(static_cast<unsigned>(index.blobs.size()));
  for (size_t i = 0; i < index.blobs.size(); ++i) {
    const BlobInfo& blob = index.blobs[i];
    auto b = blobs[static_cast<unsigned>(i)];
    set_blob_id(b.initId(), blob.id);
    b.setSize(blob.size);
    auto chunks = b.initChunks(static_cast<unsigned>(blob.chunks.size()));
    for (size_t c = 0; c < blob.chunks.size(); ++c) {
      chunks[static_cast<unsigned>(c)].setFrame(blob.chunks[c].frame);
      chunks[static_cast<unsigned>(c)].setChunkOffset(blob.chunks[c].chunk_offset);
    }
  }
  auto launches = root.initLaunches(static_cast<unsigned>(index.launches.size()));
  for (size_t i = 0; i < index.launches.size(); ++i) {
    auto b = launches[static_cast<unsigned>(i)];
    b.setOrdinal(index.launches[i].ordinal);
    b.setSeq(index.launches[i].seq);
    b.setFrame(index.launches[i].frame);
  }
  root.setCallCount(index.call_count);
  size_t nonzero = std::count_if(index.kind_counts.begin(), index.kind_counts.end(),
                                 [](uint64_t c) { return c != 0; });
  auto kinds = root.initKindCounts(static_cast<unsigned>(nonzero));
  unsigned k = 0;
  for (size_t i = 0; i < index.kind_counts.size(); ++i) {
    if (index.kind_counts[i] == 0) continue;
    kinds[k].setKind(static_cast<uint16_t>(i));
    kinds[k].setCount(index.kind_counts[i]);
    ++k;
  }
  if (index.writer_stats) {
    const IndexStats& s = *index.writer_stats;
    auto b = root.initStats();
    b.setBlobPuts(s.blob_puts);
    b.setBlobBytesLogical(s.blob_bytes_logical);
    b.setBlobBytesUnique(s.blob_bytes_unique);
    b.setBlobBytesStored(s.blob_bytes_stored);
    b.setCallBytesRaw(s.call_bytes_raw);
    b.setCallBytesStored(s.call_bytes_stored);
  }
  std::vector<uint8_t> out;
  append_message(out, message);
  return out;
}

Result<IndexData> decode_index(std::span<const uint8_t> message_bytes, uint64_t file_size,
                               uint64_t index_offset, uint64_t traversal_limit_words,
                               int nesting_limit, uint64_t max_frame_raw_bytes) {
  if (message_bytes.size() % sizeof(capnp::word) != 0) {
    return malformed("message size is not a multiple of 8");
  }
  kj::ArrayPtr<const capnp::word> words(reinterpret_cast<const capnp::word*>(message_bytes.data()),
                                        message_bytes.size() / sizeof(capnp::word));
  IndexData out;
  try {
    capnp::ReaderOptions opts;
    opts.traversalLimitInWords = std::max<uint64_t>(traversal_limit_words, words.size() * 4);
    opts.nestingLimit = nesting_limit;
    capnp::FlatArrayMessageReader reader(words, opts);
    if (reader.getEnd() != words.end()) return malformed("trailing bytes after the message");
    auto root = reader.getRoot<schema::CaptureIndex>();

    auto frames = root.getFrames();
    if (frames.size() == 0) return malformed("no frames");
    // Each frame takes at least its 80-byte header between the file header and the index frame.
    uint64_t max_frames =
        index_offset > kFileHeaderSize ? (index_offset - kFileHeaderSize) / kFrameHeaderSize : 0;
    if (frames.size() > max_frames) {
      return malformed(std::to_string(frames.size()) + " frames listed, the file has room for " +
                       std::to_string(max_frames));
    }
    uint64_t expect_offset = kFileHeaderSize;
    uint64_t next_seq = 0;
    out.frames.reserve(frames.size());
    for (unsigned i = 0; i < frames.size(); ++i) {
      auto f = frames[i];
      FrameInfo info;
      info.offset = f.getOffset();
      uint8_t kind = f.getKind();
      if (!is_known_frame_kind(kind) || kind == static_cast<uint8_t>(FrameKind::kIndex)) {
        return malformed("frame " + std::to_string(i) + " has invalid kind " +
                         std::to_string(kind));
      }
      info.kind = static_cast<FrameKind>(kind);
      if ((i == 0) != (info.kind == FrameKind::kHeader)) {
        return malformed("the header frame must be frame 0 and only frame 0");
      }
      info.stored_size = f.getStoredSize();
      info.raw_size = f.getRawSize();
      if (info.offset != expect_offset) {
        return malformed("frame " + std::to_string(i) + " offset " + std::to_string(info.offset) +
                         " does not follow the previous frame (" + std::to_string(expect_offset) +
                         ")");
      }
      if (info.stored_size > file_size || info.offset > file_size - info.stored_size ||
          file_size - info.stored_size - info.offset < kFrameHeaderSize) {
        return malformed("frame " + std::to_string(i) + " extends past the end of the file");
      }
      expect_offset = info.end_offset();
      if (info.raw_size > max_frame_raw_bytes) {
        return malformed("frame " + std::to_string(i) + " raw size " +
                         std::to_string(info.raw_size) + " exceeds the reader's limit " +
                         std::to_string(max_frame_raw_bytes));
      }
      if (info.kind == FrameKind::kCalls) {
        info.first_seq = f.getFirstSeq();
        info.last_seq = f.getLastSeq();
        if (info.first_seq != next_seq || info.last_seq < info.first_seq) {
          return malformed("call frame " + std::to_string(i) + " seq range " +
                           std::to_string(info.first_seq) + ".." + std::to_string(info.last_seq) +
                           " does not continue at " + std::to_string(next_seq));
        }
        // A record is at least two words (segment table, root pointer).
        if (info.last_seq - info.first_seq >= info.raw_size / 16) {
          return malformed("call frame " + std::to_string(i) + " claims " +
                           std::to_string(info.last_seq - info.first_seq + 1) + " records in " +
                           std::to_string(info.raw_size) + " bytes");
        }
        next_seq = info.last_seq + 1;
      }
      out.frames.push_back(info);
    }
    if (expect_offset != index_offset) {
      return malformed("frames end at " + std::to_string(expect_offset) + ", index frame is at " +
                       std::to_string(index_offset));
    }
    out.call_count = root.getCallCount();
    if (out.call_count != next_seq) {
      return malformed("callCount " + std::to_string(out.call_count) + " but frames hold " +
                       std::to_string(next_seq) + " calls");
    }

    std::unordered_set<BlobId, BlobIdHash> seen;
    auto blobs = root.getBlobs();
    // Each blob has at least one chunk and each blob frame belongs to one blob.
    if (blobs.size() > out.frames.size()) return malformed("more blobs than frames");
    out.blobs.reserve(blobs.size());
    for (unsigned i = 0; i < blobs.size(); ++i) {
      auto b = blobs[i];
      BlobInfo blob;
      blob.id = BlobId{b.getId().getHigh(), b.getId().getLow()};
      blob.size = b.getSize();
      if (!seen.insert(blob.id).second) return malformed("blob listed twice: " + blob.id.to_hex());
      uint64_t covered = 0;
      auto chunks = b.getChunks();
      if (chunks.size() == 0) return malformed("blob without chunks: " + blob.id.to_hex());
      if (chunks.size() > out.frames.size()) {
        return malformed("blob " + blob.id.to_hex() + " has more chunks than the file has frames");
      }
      for (unsigned c = 0; c < chunks.size(); ++c) {
        uint32_t frame = chunks[c].getFrame();
        uint64_t chunk_offset = chunks[c].getChunkOffset();
        if (frame >= out.frames.size() || out.frames[frame].kind != FrameKind::kBlob) {
          return malformed("blob " + blob.id.to_hex() + " chunk refers to frame " +
                           std::to_string(frame) + " which is not a blob frame");
        }
        if (chunk_offset != covered || out.frames[frame].raw_size > blob.size - covered) {
          return malformed("blob " + blob.id.to_hex() + " chunks do not tile the blob");
        }
        covered += out.frames[frame].raw_size;
        blob.stored_bytes += out.frames[frame].stored_size;
        blob.chunks.push_back(BlobChunkRef{frame, chunk_offset});
      }
      if (covered != blob.size) return malformed("blob " + blob.id.to_hex() + " is incomplete");
      out.blobs.push_back(std::move(blob));
    }

    auto launches = root.getLaunches();
    if (launches.size() > out.call_count) return malformed("more launches than calls");
    out.launches.reserve(launches.size());
    uint64_t prev_seq = 0;
    for (unsigned i = 0; i < launches.size(); ++i) {
      LaunchInfo l{launches[i].getOrdinal(), launches[i].getSeq(), launches[i].getFrame()};
      if (l.ordinal != i) return malformed("launch ordinals are not 0..n-1");
      if (l.frame >= out.frames.size() || out.frames[l.frame].kind != FrameKind::kCalls ||
          l.seq < out.frames[l.frame].first_seq || l.seq > out.frames[l.frame].last_seq ||
          (i > 0 && l.seq <= prev_seq)) {
        return malformed("launch " + std::to_string(i) + " points outside its call frame");
      }
      prev_seq = l.seq;
      out.launches.push_back(l);
    }

    uint64_t kind_total = 0;
    if (root.getKindCounts().size() > kMaxKinds) return malformed("implausibly many kind counts");
    for (auto kc : root.getKindCounts()) {
      uint16_t kind = kc.getKind();
      if (kind >= kMaxKinds) return malformed("kind count for an implausible kind");
      if (kc.getCount() > out.call_count) return malformed("a kind count exceeds callCount");
      if (out.kind_counts.size() <= kind) out.kind_counts.resize(kind + 1, 0);
      out.kind_counts[kind] += kc.getCount();
      kind_total += kc.getCount();
    }
    if (kind_total != out.call_count) return malformed("kind counts do not add up to callCount");

    if (root.hasStats()) {
      auto s = root.getStats();
      IndexStats stats;
      stats.blob_puts = s.getBlobPuts();
      stats.blob_bytes_logical = s.getBlobBytesLogical();
      stats.blob_bytes_unique = s.getBlobBytesUnique();
      stats.blob_bytes_stored = s.getBlobBytesStored();
      stats.call_bytes_raw = s.getCallBytesRaw();
      stats.call_bytes_stored = s.getCallBytesStored();
      out.writer_stats = stats;
    }
  } catch (const kj::Exception& e) {
    return malformed(std::string("invalid Cap'n Proto message: ") + e.getDescription().cStr());
  }
  return out;
}

}  // namespace cusnap::format::detail
