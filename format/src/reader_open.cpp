// Opening a capture: file header, header frame, footer index or scan-and-rebuild.
#include <algorithm>
#include <cstring>

#include "reader_impl.h"

namespace cusnap::format {

namespace {

// Start of the run of zero bytes that ends the file (== size when the last byte is not zero).
// Some filesystems leave a killed writer's unwritten tail zero-filled rather than short.
uint64_t trailing_zero_start(const detail::ByteSource& src) {
  uint8_t buf[4096];
  uint64_t end = src.size();
  while (end > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof buf, end));
    if (!src.read(end - n, {buf, n}).is_ok()) return end;
    for (size_t i = n; i > 0; --i) {
      if (buf[i - 1] != 0) return end - n + i;
    }
    end -= n;
  }
  return 0;
}

Status disagrees(std::string what, const std::string& in_index, const std::string& in_frames) {
  return Status::error(ErrorCode::kMalformed, "index frame disagrees with the frames: " + what)
      .expected_found(in_frames, in_index);
}

std::string frame_text(const FrameInfo& f) {
  std::string s = "offset " + std::to_string(f.offset) + " kind " +
                  std::to_string(static_cast<int>(f.kind)) + " stored " +
                  std::to_string(f.stored_size) + " raw " + std::to_string(f.raw_size);
  if (f.kind == FrameKind::kCalls) {
    s += " seqs " + std::to_string(f.first_seq) + ".." + std::to_string(f.last_seq);
  }
  return s;
}

// Everything the footer index says, compared with what the scan found (verify): a reader that
// takes the footer's word must get the same answers a scan would.
Status compare_index(const detail::IndexData& file, const detail::IndexData& scan,
                     const std::vector<BlobInfo>& scan_blobs) {
  if (file.frames.size() != scan.frames.size()) {
    return disagrees("frame count", std::to_string(file.frames.size()),
                     std::to_string(scan.frames.size()));
  }
  for (size_t i = 0; i < file.frames.size(); ++i) {
    const FrameInfo& a = file.frames[i];
    const FrameInfo& b = scan.frames[i];
    bool calls = b.kind == FrameKind::kCalls;
    if (a.offset != b.offset || a.kind != b.kind || a.stored_size != b.stored_size ||
        a.raw_size != b.raw_size ||
        (calls && (a.first_seq != b.first_seq || a.last_seq != b.last_seq))) {
      return disagrees("frame " + std::to_string(i), frame_text(a), frame_text(b));
    }
  }
  if (file.call_count != scan.call_count) {
    return disagrees("call count", std::to_string(file.call_count),
                     std::to_string(scan.call_count));
  }
  if (file.launches.size() != scan.launches.size()) {
    return disagrees("launch count", std::to_string(file.launches.size()),
                     std::to_string(scan.launches.size()));
  }
  for (size_t i = 0; i < file.launches.size(); ++i) {
    const LaunchInfo& a = file.launches[i];
    const LaunchInfo& b = scan.launches[i];
    if (a.ordinal != b.ordinal || a.seq != b.seq || a.frame != b.frame) {
      auto text = [](const LaunchInfo& l) {
        return "seq " + std::to_string(l.seq) + " in frame " + std::to_string(l.frame);
      };
      return disagrees("launch " + std::to_string(i), text(a), text(b));
    }
  }
  size_t kinds = std::max(file.kind_counts.size(), scan.kind_counts.size());
  for (size_t k = 0; k < kinds; ++k) {
    uint64_t a = k < file.kind_counts.size() ? file.kind_counts[k] : 0;
    uint64_t b = k < scan.kind_counts.size() ? scan.kind_counts[k] : 0;
    if (a != b) {
      return disagrees("count of " + call_kind_name(static_cast<uint16_t>(k)) + " records",
                       std::to_string(a), std::to_string(b));
    }
  }
  // Blobs: the same set (the order is the writer's business), each with the same chunks.
  std::unordered_map<BlobId, const BlobInfo*, BlobIdHash> found;
  for (const BlobInfo& b : scan_blobs) found.emplace(b.id, &b);
  if (file.blobs.size() != found.size()) {
    return disagrees("blob count", std::to_string(file.blobs.size()), std::to_string(found.size()));
  }
  for (const BlobInfo& a : file.blobs) {
    auto it = found.find(a.id);
    if (it == found.end()) return disagrees("blob " + a.id.to_hex(), "listed", "not in the file");
    const BlobInfo& b = *it->second;
    bool same = a.size == b.size && a.chunks.size() == b.chunks.size();
    for (size_t c = 0; same && c < a.chunks.size(); ++c) {
      same = a.chunks[c].frame == b.chunks[c].frame &&
             a.chunks[c].chunk_offset == b.chunks[c].chunk_offset;
    }
    if (!same) {
      return disagrees(
          "blob " + a.id.to_hex(),
          std::to_string(a.size) + " bytes in " + std::to_string(a.chunks.size()) + " chunk(s)",
          std::to_string(b.size) + " bytes in " + std::to_string(b.chunks.size()) + " chunk(s)");
    }
  }
  // The writer's statistics that are facts about the frames (the others count put_blob calls).
  if (file.writer_stats) {
    uint64_t raw = 0, stored = 0;
    for (const FrameInfo& f : scan.frames) {
      if (f.kind != FrameKind::kCalls) continue;
      raw += f.raw_size;
      stored += f.stored_size;
    }
    if (file.writer_stats->call_bytes_raw != raw ||
        file.writer_stats->call_bytes_stored != stored) {
      return disagrees("call frame bytes (raw/stored)",
                       std::to_string(file.writer_stats->call_bytes_raw) + "/" +
                           std::to_string(file.writer_stats->call_bytes_stored),
                       std::to_string(raw) + "/" + std::to_string(stored));
    }
  }
  return Status::ok();
}

}  // namespace

Result<FrameHeader> Reader::Impl::read_frame_header(uint64_t offset,
                                                    uint64_t expected_index) const {
  uint8_t buf[kFrameHeaderSize];
  Status st = src->read(offset, {buf, kFrameHeaderSize});
  if (!st.is_ok()) return st.in_frame(expected_index);
  auto decoded =
      FrameHeader::decode(std::span<const uint8_t, kFrameHeaderSize>(buf, kFrameHeaderSize));
  if (!decoded) {
    return decoded.status().in_file(src->name()).in_frame(expected_index).at_offset(offset);
  }
  const FrameHeader& h = decoded.value();
  if (h.frame_index != expected_index) {
    return Status::error(ErrorCode::kCorrupt, "frame index out of sequence")
        .in_file(src->name())
        .in_frame(expected_index)
        .at_offset(offset)
        .expected_found(std::to_string(expected_index), std::to_string(h.frame_index));
  }
  uint64_t after = offset + kFrameHeaderSize;  // offset + header fits: the read succeeded
  if (h.stored_size > src->size() - after) {
    return Status::error(ErrorCode::kTruncated, "frame payload extends past the end of the file")
        .in_file(src->name())
        .in_frame(expected_index)
        .at_offset(offset)
        .expected_found(std::to_string(h.stored_size) + " payload bytes",
                        std::to_string(src->size() - after));
  }
  if (h.raw_size > options.max_frame_raw_bytes ||
      h.stored_size > options.max_frame_raw_bytes + (1u << 20)) {
    return Status::error(ErrorCode::kLimitExceeded, "frame larger than the reader's limit")
        .in_file(src->name())
        .in_frame(expected_index)
        .at_offset(offset)
        .expected_found("<= " + std::to_string(options.max_frame_raw_bytes),
                        std::to_string(h.raw_size));
  }
  return h;
}

Result<Payload> Reader::Impl::read_payload(const FrameHeader& h, uint64_t offset,
                                           uint64_t frame_index, bool decompress) const {
  auto context = [&](Status s) {
    return s.in_file(src->name()).in_frame(frame_index).at_offset(offset);
  };
  Payload out;
  if (!decompress && h.codec != Codec::kNone) {
    out.size = static_cast<size_t>(h.stored_size);
    out.words = kj::heapArray<capnp::word>((out.size + 7) / 8);
    std::span<uint8_t> dst(out.words.asBytes().begin(), out.size);
    Status st = src->read(offset + kFrameHeaderSize, dst);
    if (!st.is_ok()) return context(st);
    uint64_t actual = checksum64(dst);
    if (detail::checksums_verified() && actual != h.payload_checksum) {
      return context(
          Status::error(ErrorCode::kCorrupt, "payload checksum mismatch")
              .expected_found(std::to_string(h.payload_checksum), std::to_string(actual)));
    }
    return out;
  }
  out.size = static_cast<size_t>(h.raw_size);
  out.words = kj::heapArray<capnp::word>((out.size + 7) / 8);
  if (out.words.size() > 0)
    std::memset(out.words.begin(), 0, out.words.size() * sizeof(capnp::word));
  uint8_t* dst = out.words.asBytes().begin();
  std::vector<uint8_t> stored;
  std::span<uint8_t> stored_span;
  if (h.codec == Codec::kNone) {
    stored_span = {dst, out.size};
  } else {
    stored.resize(static_cast<size_t>(h.stored_size));
    stored_span = stored;
  }
  Status st = src->read(offset + kFrameHeaderSize, stored_span);
  if (!st.is_ok()) return context(st);
  uint64_t actual = checksum64(stored_span);
  if (detail::checksums_verified() && actual != h.payload_checksum) {
    return context(Status::error(ErrorCode::kCorrupt, "payload checksum mismatch")
                       .expected_found(std::to_string(h.payload_checksum), std::to_string(actual)));
  }
  if (h.codec == Codec::kZstd) {
    st = detail::zstd_decompress(stored, {dst, out.size});
    if (!st.is_ok()) return context(st);
  }
  return out;
}

Status Reader::Impl::split_calls(const FrameHeader& h, const Payload& payload,
                                 const capnp::ReaderOptions& opts, std::vector<size_t>& starts,
                                 std::vector<RecordFacts>* facts, bool deep, HandleChecker* handles,
                                 RecordSizeChecker* sizes) {
  if (payload.size % sizeof(capnp::word) != 0) {
    return Status::error(ErrorCode::kMalformed, "call frame size is not a multiple of 8");
  }
  kj::ArrayPtr<const capnp::word> words = payload.words.asPtr();
  starts.clear();
  // record_count comes from the file: a message takes at least two words (segment table and
  // root pointer), so the payload bounds how many there can be.
  starts.reserve(std::min<size_t>(h.record_count, words.size() / 2) + 1);
  size_t pos = 0;
  uint64_t expect = h.first_seq;
  try {
    while (pos < words.size()) {
      if (starts.size() == h.record_count) {
        return Status::error(ErrorCode::kMalformed,
                             "more records in the frame than its header says")
            .at_call(expect);
      }
      capnp::FlatArrayMessageReader reader(words.slice(pos, words.size()), opts);
      auto root = reader.getRoot<schema::CallRecord>();
      uint64_t seq = root.getSeq();
      if (seq != expect) {
        return Status::error(ErrorCode::kMalformed, "record seq out of order")
            .at_call(expect)
            .expected_found(std::to_string(expect), std::to_string(seq));
      }
      if (deep) walk_all_fields(capnp::toDynamic(root));
      if (facts != nullptr) {
        RecordFacts f;
        f.seq = seq;
        f.which = static_cast<uint16_t>(root.which());
        if (root.isLaunch()) {
          f.is_launch = true;
          f.launch_ordinal = root.getLaunch().getOrdinal();
        }
        if (deep) {
          for_each_blob_ref(root, [&](const BlobId& id) { f.blob_refs.push_back(id); });
          f.size_problem = sizes != nullptr ? sizes->check(root, f.size_claims)
                                            : check_record_sizes(root, f.size_claims);
          if (handles != nullptr) f.handle_problem = handles->check(root);
        }
        facts->push_back(std::move(f));
      }
      starts.push_back(pos);
      size_t next = static_cast<size_t>(reader.getEnd() - words.begin());
      if (next <= pos) return Status::error(ErrorCode::kMalformed, "empty message");
      pos = next;
      ++expect;
    }
  } catch (const kj::Exception& e) {
    return Status::error(ErrorCode::kMalformed,
                         std::string("invalid call record: ") + e.getDescription().cStr())
        .at_call(expect);
  }
  if (starts.size() != h.record_count) {
    return Status::error(ErrorCode::kMalformed, "fewer records in the frame than its header says")
        .expected_found(std::to_string(h.record_count), std::to_string(starts.size()));
  }
  starts.push_back(pos);
  return Status::ok();
}

void Reader::Impl::adopt_index(detail::IndexData data) {
  index = std::move(data);
  blob_pos.clear();
  for (size_t i = 0; i < index.blobs.size(); ++i) blob_pos.emplace(index.blobs[i].id, i);
  call_frames.clear();
  for (size_t i = 0; i < index.frames.size(); ++i) {
    if (index.frames[i].kind == FrameKind::kCalls) call_frames.push_back(static_cast<uint32_t>(i));
  }
  uint16_t kinds = call_kind_count();
  if (index.kind_counts.size() < kinds) index.kind_counts.resize(kinds, 0);
  cached.reset();
  cached_index = UINT32_MAX;
}

Status Reader::Impl::load_footer() {
  uint64_t size = src->size();
  if (size < kFileHeaderSize + 2 * kFrameHeaderSize + kTrailerSize) {
    return Status::error(ErrorCode::kNotFound, "file too small for a footer");
  }
  uint8_t buf[kTrailerSize];
  Status st = src->read(size - kTrailerSize, {buf, kTrailerSize});
  if (!st.is_ok()) return st;
  auto trailer = Trailer::decode(std::span<const uint8_t, kTrailerSize>(buf, kTrailerSize));
  if (!trailer) return trailer.status();
  const Trailer& t = trailer.value();
  if (t.trailer_offset != size - kTrailerSize ||
      t.index_offset < kFileHeaderSize + kFrameHeaderSize ||
      t.index_offset > t.trailer_offset - kFrameHeaderSize) {
    return Status::error(ErrorCode::kMalformed, "trailer offsets do not fit the file");
  }
  // The frame index of the index frame is not known yet: read the header raw first.
  uint8_t hbuf[kFrameHeaderSize];
  st = src->read(t.index_offset, {hbuf, kFrameHeaderSize});
  if (!st.is_ok()) return st;
  auto raw_header =
      FrameHeader::decode(std::span<const uint8_t, kFrameHeaderSize>(hbuf, kFrameHeaderSize));
  if (!raw_header) return raw_header.status();
  auto header = read_frame_header(t.index_offset, raw_header.value().frame_index);
  if (!header) return header.status();
  const FrameHeader& h = header.value();
  if (h.kind != FrameKind::kIndex ||
      t.index_offset + kFrameHeaderSize + h.stored_size != t.trailer_offset) {
    return Status::error(ErrorCode::kMalformed, "trailer does not point at an index frame");
  }
  auto payload = read_payload(h, t.index_offset, h.frame_index);
  if (!payload) return payload.status();
  auto data = detail::decode_index(payload.value().bytes(), size, t.index_offset,
                                   options.traversal_limit_words, options.nesting_limit,
                                   options.max_frame_raw_bytes);
  if (!data) return data.status();
  if (data.value().frames.size() != h.frame_index) {
    return Status::error(ErrorCode::kMalformed,
                         "index frame number disagrees with the frame count");
  }
  adopt_index(std::move(data.value()));
  recovery = IntegrityReport{};
  recovery.state = Integrity::kWhole;
  recovery.footer_used = true;
  recovery.good_frames = index.frames.size() + 1;
  if (index.call_count > 0) recovery.last_good_seq = index.call_count - 1;
  recovery.end_offset = size;
  return Status::ok();
}

ScanResult Reader::Impl::scan(bool deep,
                              const std::function<void(uint64_t, uint64_t)>& progress) const {
  ScanResult out;
  detail::IndexData& idx = out.index;
  IntegrityReport& rep = out.report;
  rep.deep_checked = deep;
  const uint64_t size = src->size();
  uint64_t offset = kFileHeaderSize;
  uint64_t frame_index = 0;
  uint64_t next_seq = 0;
  uint64_t next_launch = 0;
  idx.kind_counts.assign(call_kind_count(), 0);
  std::unordered_map<BlobId, size_t, BlobIdHash> blob_at;    // complete or in progress
  std::unordered_map<BlobId, uint64_t, BlobIdHash> covered;  // in-progress blobs: bytes so far
  std::unordered_map<BlobId, std::unique_ptr<BlobHasher>, BlobIdHash> hashers;
  std::vector<BlobInfo> blobs;
  std::vector<RecordFacts> facts;
  std::vector<size_t> starts;
  HandleChecker handles;
  RecordSizeChecker sizes;
  capnp::ReaderOptions opts = capnp_options();

  auto stop = [&](Integrity state, Status why) {
    rep.state = state;
    rep.end_offset = offset;
    if (state == Integrity::kCorrupt) rep.bad_frame = frame_index;
    rep.detail = std::move(why);
  };

  for (;;) {
    if (progress) progress(offset, size);
    if (offset == size) {
      stop(Integrity::kTruncated,
           Status::error(ErrorCode::kTruncated, "file ends before the index frame")
               .in_file(src->name())
               .at_offset(offset));
      break;
    }
    if (size - offset < kFrameHeaderSize) {
      stop(Integrity::kTruncated,
           Status::error(ErrorCode::kTruncated, "file ends inside a frame header")
               .in_file(src->name())
               .in_frame(frame_index)
               .at_offset(offset));
      break;
    }
    auto header = read_frame_header(offset, frame_index);
    if (!header) {
      Status s = header.status();
      if (s.code() == ErrorCode::kTruncated ||
          (s.code() == ErrorCode::kCorrupt &&
           trailing_zero_start(*src) < offset + kFrameHeaderSize)) {
        stop(Integrity::kTruncated, s);
      } else {
        stop(Integrity::kCorrupt, s);
      }
      break;
    }
    const FrameHeader& h = header.value();
    if ((frame_index == 0) != (h.kind == FrameKind::kHeader)) {
      stop(Integrity::kCorrupt,
           Status::error(ErrorCode::kMalformed, "header frame must be frame 0 and only frame 0")
               .in_file(src->name())
               .in_frame(frame_index)
               .at_offset(offset));
      break;
    }
    // Blob contents only matter to a deep scan; otherwise their checksum is enough.
    auto payload = read_payload(h, offset, frame_index, deep || h.kind != FrameKind::kBlob);
    if (!payload) {
      ErrorCode code = payload.status().code();
      bool zero_tail = code == ErrorCode::kCorrupt &&
                       trailing_zero_start(*src) < offset + kFrameHeaderSize + h.stored_size;
      stop(code == ErrorCode::kTruncated || zero_tail ? Integrity::kTruncated : Integrity::kCorrupt,
           payload.status());
      break;
    }
    Status problem;
    FrameInfo info;
    info.offset = offset;
    info.kind = h.kind;
    info.stored_size = h.stored_size;
    info.raw_size = h.raw_size;
    auto frame_pos = static_cast<uint32_t>(idx.frames.size());
    if (h.kind == FrameKind::kCalls) {
      info.first_seq = h.first_seq;
      info.last_seq = h.last_seq;
      facts.clear();
      if (h.first_seq != next_seq) {
        problem = Status::error(ErrorCode::kMalformed, "call frame does not continue the seq")
                      .expected_found(std::to_string(next_seq), std::to_string(h.first_seq));
      } else {
        problem = split_calls(h, payload.value(), opts, starts, &facts, deep,
                              deep ? &handles : nullptr, deep ? &sizes : nullptr);
        if (deep && problem.is_ok()) walked_frames[offset] = h.payload_checksum;
      }
      for (size_t i = 0; problem.is_ok() && i < facts.size(); ++i) {
        // All frames of a blob come before any record that refers to it (docs/format.md); a
        // writer that could not store a blob records the null id instead.
        for (const BlobId& id : facts[i].blob_refs) {
          if (blob_at.count(id) == 0 || covered.count(id) != 0) {
            problem = Status::error(ErrorCode::kMalformed,
                                    "record names a blob that is not stored before it")
                          .at_call(facts[i].seq)
                          .expected_found("blob " + id.to_hex() + " stored", "none");
            break;
          }
        }
        if (!problem.is_ok()) break;
        // Sizes fit their payloads (format/record_sizes.h, the rule the replay plan follows).
        if (!facts[i].size_problem.is_ok()) {
          problem = Status(facts[i].size_problem).at_call(facts[i].seq);
          break;
        }
        // Handles replay cannot resolve (format/record_handles.h).
        if (!facts[i].handle_problem.is_ok()) {
          problem = facts[i].handle_problem;
          break;
        }
        for (const BlobSizeClaim& claim : facts[i].size_claims) {
          const BlobInfo& b = blobs[blob_at.at(claim.id)];
          if (b.size != claim.bytes) {
            problem =
                Status::error(ErrorCode::kMalformed,
                              std::string(claim.what) + " size disagrees with its blob")
                    .at_call(facts[i].seq)
                    .expected_found(std::to_string(claim.bytes) + " bytes",
                                    std::to_string(b.size) + " bytes in blob " + claim.id.to_hex());
            break;
          }
        }
        if (!problem.is_ok()) break;
        if (facts[i].is_launch && facts[i].launch_ordinal != next_launch) {
          problem = Status::error(ErrorCode::kMalformed, "launch ordinal out of sequence")
                        .at_call(facts[i].seq)
                        .expected_found(std::to_string(next_launch),
                                        std::to_string(facts[i].launch_ordinal));
        } else if (facts[i].is_launch) {
          ++next_launch;
        }
      }
      if (problem.is_ok()) {
        for (const RecordFacts& f : facts) {
          if (f.is_launch) idx.launches.push_back(LaunchInfo{f.launch_ordinal, f.seq, frame_pos});
          if (idx.kind_counts.size() <= f.which) idx.kind_counts.resize(f.which + 1u, 0);
          ++idx.kind_counts[f.which];
        }
        next_seq = h.last_seq + 1;
      }
    } else if (h.kind == FrameKind::kBlob) {
      auto [it, fresh] = blob_at.try_emplace(h.blob_id, blobs.size());
      if (fresh) {
        BlobInfo b;
        b.id = h.blob_id;
        b.size = h.blob_size;
        blobs.push_back(std::move(b));
        covered[h.blob_id] = 0;
        if (deep) hashers[h.blob_id] = std::make_unique<BlobHasher>();
      }
      BlobInfo& b = blobs[it->second];
      auto cov = covered.find(h.blob_id);
      if (cov == covered.end() || b.size != h.blob_size || cov->second != h.chunk_offset) {
        problem =
            Status::error(ErrorCode::kMalformed, "blob chunk out of order or duplicated")
                .expected_found(cov == covered.end() ? "no further chunk"
                                                     : "chunk at " + std::to_string(cov->second),
                                "chunk at " + std::to_string(h.chunk_offset));
      } else {
        b.chunks.push_back(BlobChunkRef{frame_pos, h.chunk_offset});
        b.stored_bytes += h.stored_size;
        cov->second += h.raw_size;
        if (deep) hashers[h.blob_id]->update(payload.value().bytes());
        if (cov->second == b.size) {
          covered.erase(cov);
          if (deep) {
            BlobId actual = hashers[h.blob_id]->finish();
            hashers.erase(h.blob_id);
            if (detail::checksums_verified() && actual != h.blob_id) {
              problem = Status::error(ErrorCode::kCorrupt, "blob content does not match its id")
                            .expected_found(h.blob_id.to_hex(), actual.to_hex());
            }
          }
        }
      }
    } else if (h.kind == FrameKind::kIndex) {
      uint64_t end = offset + kFrameHeaderSize + h.stored_size;
      if (deep) {
        auto data = detail::decode_index(payload.value().bytes(), size, offset,
                                         options.traversal_limit_words, options.nesting_limit,
                                         options.max_frame_raw_bytes);
        if (!data) {
          problem = data.status();
        } else {
          std::vector<BlobInfo> complete;
          for (const BlobInfo& b : blobs) {
            if (covered.count(b.id) == 0) complete.push_back(b);
          }
          idx.call_count = next_seq;
          problem = compare_index(data.value(), idx, complete);
          if (problem.is_ok()) out.index.writer_stats = data.value().writer_stats;
        }
      }
      if (!problem.is_ok()) {
        stop(Integrity::kCorrupt,
             problem.in_file(src->name()).in_frame(frame_index).at_offset(offset));
        break;
      }
      // A clean file ends with exactly the trailer after the index frame.
      if (size - end < kTrailerSize) {
        offset = end;
        ++frame_index;
        stop(Integrity::kTruncated,
             Status::error(ErrorCode::kTruncated, "file ends inside the trailer")
                 .in_file(src->name())
                 .at_offset(end));
        break;
      }
      uint8_t tbuf[kTrailerSize];
      Status rs = src->read(end, {tbuf, kTrailerSize});
      auto trailer =
          rs.is_ok() ? Trailer::decode(std::span<const uint8_t, kTrailerSize>(tbuf, kTrailerSize))
                     : Result<Trailer>(rs);
      Status bad;
      if (!trailer) {
        bad = trailer.status();
      } else if (trailer.value().index_offset != offset || trailer.value().trailer_offset != end ||
                 size - end != kTrailerSize) {
        bad = Status::error(ErrorCode::kCorrupt, "trailer does not match the index frame");
      }
      if (!bad.is_ok()) {
        offset = end;
        ++frame_index;
        stop(Integrity::kCorrupt,
             Status::error(ErrorCode::kCorrupt, "bad trailer: " + bad.message())
                 .in_file(src->name())
                 .at_offset(end));
        rep.bad_frame.reset();
        break;
      }
      ++frame_index;
      rep.state = Integrity::kWhole;
      rep.end_offset = size;
      break;
    }
    if (!problem.is_ok()) {
      stop(Integrity::kCorrupt,
           problem.in_file(src->name()).in_frame(frame_index).at_offset(offset));
      break;
    }
    idx.frames.push_back(info);
    offset += kFrameHeaderSize + h.stored_size;
    ++frame_index;
  }

  // Only complete blobs are usable; chunks of an unfinished one stay listed as frames only.
  for (BlobInfo& b : blobs) {
    if (covered.count(b.id) == 0) idx.blobs.push_back(std::move(b));
  }
  idx.call_count = next_seq;
  rep.good_frames = idx.frames.size();
  if (next_seq > 0) rep.last_good_seq = next_seq - 1;
  if (deep) rep.handles = handles.report();
  if (progress) progress(size, size);
  return out;
}

Result<std::unique_ptr<Reader>> Reader::open(const std::string& path,
                                             const ReaderOptions& options) {
  auto src = detail::open_file_source(path);
  if (!src) return src.status();
  auto impl = std::make_unique<Impl>();
  impl->src = std::move(src.value());
  impl->options = options;
  return open_impl(std::move(impl));
}

Result<std::unique_ptr<Reader>> Reader::open_memory(std::span<const uint8_t> bytes,
                                                    const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->src = detail::memory_source(bytes);
  impl->options = options;
  return open_impl(std::move(impl));
}

Result<std::unique_ptr<Reader>> Reader::open_impl(std::unique_ptr<Impl> impl) {
  detail::ByteSource& src = *impl->src;
  const std::string& name = src.name();
  if (src.size() == 0) {
    return Status::error(ErrorCode::kTruncated, "empty file").in_file(name);
  }
  uint8_t fh[kFileHeaderSize] = {};
  size_t have = static_cast<size_t>(std::min<uint64_t>(src.size(), kFileHeaderSize));
  Status st = src.read(0, {fh, have});
  if (!st.is_ok()) return st;
  if (!std::equal(fh, fh + std::min<size_t>(have, kFileMagic.size()), kFileMagic.begin())) {
    return Status::error(ErrorCode::kNotACapture, "file magic missing").in_file(name).at_offset(0);
  }
  if (have < kFileHeaderSize) {
    return Status::error(ErrorCode::kTruncated, "file ends inside the file header").in_file(name);
  }
  auto header = FileHeader::decode(std::span<const uint8_t, kFileHeaderSize>(fh, kFileHeaderSize));
  if (!header) return header.status().in_file(name);
  impl->file_header = header.value();

  // The header frame must be intact whatever else happened to the file.
  auto h0 = impl->read_frame_header(kFileHeaderSize, 0);
  if (!h0) return h0.status();
  if (h0.value().kind != FrameKind::kHeader) {
    return Status::error(ErrorCode::kMalformed, "frame 0 is not the header frame")
        .in_file(name)
        .in_frame(0)
        .at_offset(kFileHeaderSize);
  }
  auto p0 = impl->read_payload(h0.value(), kFileHeaderSize, 0);
  if (!p0) return p0.status();
  impl->header_payload = std::move(p0.value());
  try {
    if (impl->header_payload.size % sizeof(capnp::word) != 0) {
      return Status::error(ErrorCode::kMalformed, "header frame size is not a multiple of 8")
          .in_file(name)
          .in_frame(0);
    }
    impl->header_reader = std::make_unique<capnp::FlatArrayMessageReader>(
        impl->header_payload.words.asPtr(), impl->capnp_options());
    walk_all_fields(capnp::toDynamic(impl->header_reader->getRoot<schema::CaptureHeader>()));
  } catch (const kj::Exception& e) {
    return Status::error(ErrorCode::kMalformed,
                         std::string("invalid header message: ") + e.getDescription().cStr())
        .in_file(name)
        .in_frame(0);
  }
  // walk_all_fields consumed traversal budget; give the header a fresh reader for its users.
  impl->header_reader = std::make_unique<capnp::FlatArrayMessageReader>(
      impl->header_payload.words.asPtr(), impl->capnp_options());

  Status footer = impl->options.use_footer ? impl->load_footer()
                                           : Status::error(ErrorCode::kNotFound, "footer not used");
  if (!footer.is_ok()) {
    ScanResult scanned = impl->scan(false, {});
    impl->adopt_index(std::move(scanned.index));
    impl->recovery = std::move(scanned.report);
  }
  return std::unique_ptr<Reader>(new Reader(std::move(impl)));
}

}  // namespace cusnap::format
