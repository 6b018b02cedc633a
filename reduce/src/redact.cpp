// `cusnap redact` (docs/redact.md): the capture read once into a table of ranges and payloads,
// then rewritten record by record with the payloads' bytes replaced; its expectations resealed
// by replaying the rewritten capture on the reference driver; with --verify, ddmin over the
// pieces of payload to bring back.
#include "cusnap/reduce/redact.h"

#include <capnp/message.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "code_images.h"
#include "cusnap/format/blob_id.h"
#include "cusnap/format/launch_params.h"
#include "cusnap/format/reader.h"
#include "cusnap/format/record_sizes.h"
#include "cusnap/format/snapshot_ranges.h"
#include "cusnap/format/writer.h"
#include "ranges.h"
#include "replayer/replay.h"

namespace cusnap::reduce {

using format::BlobId;
using format::ErrorCode;
using format::Result;
using format::Status;
using format::to_blob;
namespace schema = format::schema;

namespace {

// Pieces of payload --verify brings back at first, and the smallest it cuts them down to.
constexpr uint64_t kFirstUnitBytes = 4096;
constexpr uint64_t kMinUnitBytes = 8;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void set_blob(schema::BlobId::Builder b, const BlobId& id) {
  b.setHigh(id.high);
  b.setLow(id.low);
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The replacement of the byte at device address `a`: one mixed word per aligned 8 bytes.
uint8_t seeded_byte(uint64_t seed, uint64_t a) {
  uint64_t word = splitmix64(seed ^ splitmix64(a & ~uint64_t{7}));
  return static_cast<uint8_t>(word >> (8 * (a & 7)));
}

using detail::Range;
using detail::RangeTable;

enum class PayloadKind : uint8_t { kCopy, kDeferred, kChunk };

// One occurrence of payload bytes in a record.
struct Payload {
  uint64_t seq = 0;
  PayloadKind kind = PayloadKind::kCopy;
  uint32_t chunk = 0;  // kChunk: index in the snapshot's chunk list
  BlobId blob;
  uint64_t size = 0;
  uint64_t address = 0;                    // device address of byte 0
  std::optional<format::CopyShape> shape;  // 2-D/3-D copies: rows at their own addresses
  std::string what;

  // Device address of payload byte `offset`.
  uint64_t address_of(uint64_t offset) const {
    if (!shape || shape->dimensions == 1 || shape->width == 0) return address + offset;
    const uint64_t row = offset / shape->width, col = offset % shape->width;
    const uint64_t slice = row / shape->height, in_slice = row % shape->height;
    return address + shape->dst_offset + (slice * shape->dst_height + in_slice) * shape->dst_pitch +
           col;
  }
  // Bytes from `offset` on that are contiguous in device memory.
  uint64_t run_from(uint64_t offset) const {
    if (!shape || shape->dimensions == 1 || shape->width == 0) return size - offset;
    return std::min(size - offset, shape->width - offset % shape->width);
  }
};

struct SnapshotInfo {
  uint64_t seq = 0;
  uint64_t launch_seq = 0;
  bool after = false;
  bool skipped = false;
};

// What the capture holds, read once.
struct Scan {
  RangeTable ranges;
  std::vector<Payload> payloads;
  std::vector<SnapshotInfo> snapshots;
  std::map<std::pair<uint64_t, uint32_t>, size_t> payload_of;  // (seq, chunk) -> payloads[i]
  std::vector<std::pair<uint64_t, uint64_t>> kept;  // kept allocations (address, size), sorted
  std::vector<RedactedRange> kept_report;
  uint64_t chunk_bytes = 0;
  bool has_checksums = false;
  // --strip-ptx-comments / --hash-names: what the code images become, by original blob.
  detail::CodeRewrite code;
  bool rewrite_code = false;
  std::map<BlobId, std::vector<uint8_t>> images;
  unsigned cubin_entries_dropped = 0;
};

std::pair<uint64_t, uint32_t> payload_key(uint64_t seq, uint32_t chunk) { return {seq, chunk}; }

Status scan_capture(format::Reader& reader, const RedactOptions& options, Scan& scan) {
  std::unordered_map<uint64_t, std::pair<uint64_t, format::CopyShape>> copies;  // seq -> dst
  std::unordered_map<uint64_t, std::string> function_names;                     // handle -> name
  std::vector<std::pair<std::string, std::vector<uint64_t>>> launch_pointers;   // name, words
  scan.chunk_bytes = reader.header().getOptions().getSnapshotChunkBytes();
  Status bad_shape;
  Status st = reader.for_each_call([&](const format::CallRef& ref) {
    auto r = ref.get();
    const uint64_t seq = ref.seq();
    switch (r.which()) {
      case schema::CallRecord::MEM_ALLOC:
      case schema::CallRecord::GLOBAL_GET: {
        // The one rule of which records make ranges, applied to this record alone.
        format::SnapshotRanges one;
        one.apply(r);
        for (const auto& [a, s] : one.live()) scan.ranges.add(a, s, seq);
        for (const auto& [a, s] : one.unreadable()) scan.ranges.add(a, s, seq);
        if (r.isMemAlloc()) {
          auto m = r.getMemAlloc();
          if (m.getDevicePointer() != 0 && r.getResult() == 0)
            scan.ranges.add(m.getDevicePointer(), m.getSize(), seq);
        }
        break;
      }
      case schema::CallRecord::FUNCTION_GET:
        function_names[r.getFunctionGet().getHandle()] = r.getFunctionGet().getName().cStr();
        break;
      case schema::CallRecord::MEMCPY: {
        auto m = r.getMemcpy();
        auto shape = format::copy_shape(m);
        if (!shape) {
          bad_shape = shape.status();
          return false;
        }
        copies[seq] = {m.getDst(), *shape};
        if (m.getHasHostChecksum()) scan.has_checksums = true;
        BlobId id = to_blob(m.getPayload());
        if (id.is_null()) break;
        Payload p;
        p.seq = seq;
        p.kind = PayloadKind::kCopy;
        p.blob = id;
        p.size = shape->bytes;
        p.address = m.getDst();
        if (shape->dimensions > 1) p.shape = *shape;
        p.what = "memcpy call " + std::to_string(seq);
        scan.payloads.push_back(p);
        break;
      }
      case schema::CallRecord::DEFERRED_RESULT: {
        auto d = r.getDeferredResult();
        if (d.getHasHostChecksum()) scan.has_checksums = true;
        BlobId id = d.hasPayload() ? to_blob(d.getPayload()) : BlobId{};
        if (id.is_null()) break;
        auto it = copies.find(d.getCallSeq());
        if (it == copies.end()) break;  // verify() already judged what it can
        Payload p;
        p.seq = seq;
        p.kind = PayloadKind::kDeferred;
        p.blob = id;
        p.size = it->second.second.bytes;
        p.address = it->second.first;
        if (it->second.second.dimensions > 1) p.shape = it->second.second;
        p.what = "deferred payload of memcpy call " + std::to_string(d.getCallSeq());
        scan.payloads.push_back(p);
        break;
      }
      case schema::CallRecord::MEMORY_SNAPSHOT: {
        auto s = r.getMemorySnapshot();
        SnapshotInfo info;
        info.seq = seq;
        info.launch_seq = s.getLaunchSeq();
        info.after = s.getPhase() == schema::MemorySnapshot::Phase::AFTER_LAUNCH;
        info.skipped = s.hasSkippedReason() && s.getSkippedReason().size() > 0;
        if (s.getPhase() != schema::MemorySnapshot::Phase::ON_DEMAND)
          scan.snapshots.push_back(info);
        auto chunks = s.getChunks();
        for (uint32_t i = 0; i < chunks.size(); ++i) {
          auto c = chunks[i];
          if (c.getHashOnly() || to_blob(c.getBlob()).is_null()) continue;
          Payload p;
          p.seq = seq;
          p.kind = PayloadKind::kChunk;
          p.chunk = i;
          p.blob = to_blob(c.getBlob());
          p.size = c.getSize();
          p.address = c.getAddress();
          p.what = std::string(info.after ? "afterLaunch" : "beforeLaunch") +
                   " snapshot chunk (call " + std::to_string(seq) + ", launch call " +
                   std::to_string(info.launch_seq) + ")";
          scan.payloads.push_back(p);
        }
        break;
      }
      case schema::CallRecord::LAUNCH: {
        if (options.keep_kernel_inputs.empty() || r.getResult() != 0) break;
        auto l = r.getLaunch();
        std::string name = l.getKernelName().cStr();
        if (name.empty()) {
          auto it = function_names.find(l.getFunction());
          if (it != function_names.end()) name = it->second;
        }
        std::vector<uint64_t> words;
        auto params = l.getParams();
        format::for_each_word_slot(params.size(), l.getLayout(), true, [&](size_t offset) {
          uint64_t v = 0;
          std::memcpy(&v, params.begin() + offset, 8);
          words.push_back(v);
        });
        launch_pointers.emplace_back(std::move(name), std::move(words));
        break;
      }
      default:
        break;
    }
    return true;
  });
  if (!st) return st;
  if (!bad_shape) return bad_shape;
  scan.ranges.finish();
  for (size_t i = 0; i < scan.payloads.size(); ++i)
    scan.payload_of[payload_key(scan.payloads[i].seq, scan.payloads[i].chunk)] = i;

  // Kept allocations.
  std::set<std::pair<uint64_t, uint64_t>> kept;
  auto keep = [&](const Range& r, const std::string& why) {
    if (kept.insert({r.address, r.size}).second)
      scan.kept_report.push_back({r.address, r.size, r.address, r.seq, why});
  };
  for (uint64_t a : options.keep_alloc) {
    const Range* r = scan.ranges.find(a, false);
    if (r == nullptr)
      return Status::error(ErrorCode::kInvalidArgument,
                           "--keep-alloc " + hex(a) + ": no allocation of the capture holds it");
    keep(*r, "--keep-alloc " + hex(a));
  }
  if (!options.keep_kernel_inputs.empty()) {
    std::string error;
    auto filter =
        common::KernelFilter::create(options.keep_kernel_inputs, options.name_base, &error);
    if (!filter)
      return Status::error(ErrorCode::kInvalidArgument, "--keep-kernel-inputs: " + error);
    for (const auto& [name, words] : launch_pointers) {
      if (!filter->matches(name)) continue;
      for (uint64_t v : words)
        if (const Range* r = scan.ranges.find(v, false))
          keep(*r, "--keep-kernel-inputs: a parameter of " + name);
    }
  }
  scan.kept.assign(kept.begin(), kept.end());
  return Status::ok();
}

// Byte ranges of one payload (offset, size) kept original by --verify.
using Pieces = std::vector<std::pair<uint64_t, uint64_t>>;

struct Counts {
  uint64_t replaced = 0, pointers = 0, kept = 0, restored = 0;
};

// The payload's bytes after redaction (`bytes`: its original bytes).
std::vector<uint8_t> redact_payload(const Scan& scan, const Payload& p,
                                    std::span<const uint8_t> bytes, const Pieces* restored,
                                    uint64_t seed, Counts& counts) {
  enum : uint8_t { kReplace, kPointer, kKept, kRestored };
  std::vector<uint8_t> mask(bytes.size(), kReplace);
  // Pointer words: aligned at their device address, wholly inside a contiguous run. In a payload
  // that holds pointers, zero words are kept too, as null pointers (a list's end).
  bool pointers = false;
  std::vector<uint64_t> zeros;
  for (uint64_t off = 0; off < bytes.size();) {
    const uint64_t run = p.run_from(off);
    const uint64_t a = p.address_of(off);
    for (uint64_t w = (a + 7) & ~uint64_t{7}; w >= a && w - a + 8 <= run; w += 8) {
      uint64_t v = 0;
      std::memcpy(&v, bytes.data() + off + (w - a), 8);
      if (v == 0) {
        zeros.push_back(off + (w - a));
      } else if (scan.ranges.find(v, true) != nullptr) {
        std::fill_n(mask.begin() + static_cast<ptrdiff_t>(off + (w - a)), 8, kPointer);
        pointers = true;
      }
    }
    // Kept allocations overlapping [a, a + run).
    for (const auto& [ka, ks] : scan.kept) {
      const uint64_t lo = std::max(a, ka), hi = std::min(a + run, ka + ks);
      if (lo < hi)
        std::fill_n(mask.begin() + static_cast<ptrdiff_t>(off + (lo - a)), hi - lo, kKept);
    }
    off += run;
  }
  if (pointers)
    for (uint64_t z : zeros) std::fill_n(mask.begin() + static_cast<ptrdiff_t>(z), 8, kPointer);
  if (restored) {
    for (const auto& [o, s] : *restored) {
      const uint64_t hi = std::min<uint64_t>(o + s, bytes.size());
      if (o < hi) std::fill(mask.begin() + static_cast<ptrdiff_t>(o), mask.begin() + hi, kRestored);
    }
  }
  std::vector<uint8_t> out(bytes.begin(), bytes.end());
  for (uint64_t i = 0; i < out.size(); ++i) {
    switch (mask[i]) {
      case kReplace:
        out[i] = seeded_byte(seed, p.address_of(i));
        ++counts.replaced;
        break;
      case kPointer:
        ++counts.pointers;
        break;
      case kKept:
        ++counts.kept;
        break;
      default:
        ++counts.restored;
        break;
    }
  }
  return out;
}

// Expectations recomputed by the reference replay.
struct Expect {
  bool drop = false;
  std::string why;                                   // drop: the reference replay's error
  std::unordered_map<uint64_t, uint64_t> checksums;  // memcpy seq -> XXH3-64
  // (launch seq, after, address) -> the chunk's bytes there.
  std::map<std::tuple<uint64_t, bool, uint64_t>, std::vector<uint8_t>> chunks;
};

std::string salted(const std::optional<std::string>& salt, const std::string& value) {
  if (!salt || value.empty()) return std::string();
  std::string material = *salt;
  material.push_back('\0');
  material += value;
  return "salted:" +
         format::hash_blob({reinterpret_cast<const uint8_t*>(material.data()), material.size()})
             .to_hex();
}

struct Final {
  const Counts* counts = nullptr;
  const std::vector<RedactedRange>* restored = nullptr;
  const std::vector<RedactedRange>* kept = nullptr;
  Expectations expectations = Expectations::kOriginal;
};

void fill_range(schema::RedactedRange::Builder b, const RedactedRange& r) {
  b.setAddress(r.address);
  b.setSize(r.size);
  b.setAllocationAddress(r.allocation_address);
  b.setAllocationSeq(r.allocation_seq);
  b.setWhat(r.what);
}

void scrub_header(schema::CaptureHeader::Builder h, const RedactOptions& options, const Scan& scan,
                  const Final& final, int64_t source_time) {
  const auto& salt = options.salt;
  if (h.hasHostName()) h.setHostName(salted(salt, h.getHostName().cStr()));
  if (h.hasWorkingDirectory()) h.setWorkingDirectory(salted(salt, h.getWorkingDirectory().cStr()));
  if (h.hasDriverPath()) h.setDriverPath(salted(salt, h.getDriverPath().cStr()));
  {
    std::vector<std::string> argv;
    for (auto a : h.getCommandLine()) argv.push_back(salted(salt, a.cStr()));
    auto list = h.initCommandLine(salt ? static_cast<unsigned>(argv.size()) : 0);
    for (unsigned i = 0; i < list.size(); ++i) list.set(i, argv[i]);
  }
  for (auto kv : h.getEnvironment()) kv.setValue(salted(salt, kv.getValue().cStr()));
  for (auto kv : h.getOptions().getExtra()) kv.setValue(salted(salt, kv.getValue().cStr()));
  if (h.hasExtract()) {
    auto x = h.getExtract();
    x.setSourcePath(salted(salt, x.getSourcePath().cStr()));
    x.setSourceHostName(salted(salt, x.getSourceHostName().cStr()));
    x.setKernelName(detail::rewrite_text(x.getKernelName().cStr(), scan.code));
  }
  if (h.getOptions().hasKernelRegex())
    h.getOptions().setKernelRegex(
        detail::rewrite_text(h.getOptions().getKernelRegex().cStr(), scan.code));
  auto info = h.initRedact();
  info.setPtxCommentsStripped(scan.code.strip_comments);
  info.setNamesHashed(scan.code.hash_names);
  info.setCubinEntriesDropped(scan.cubin_entries_dropped);
  info.setSeed(options.seed);
  info.setHeaderSalted(salt.has_value());
  info.setSourceCreationTimeNs(source_time);
  info.setCondition(options.verify ? options.verify->text : std::string());
  info.setReferenceDriver(final.expectations == Expectations::kOriginal ? std::string()
                                                                        : options.reference_driver);
  switch (final.expectations) {
    case Expectations::kOriginal:
      info.setExpectations(schema::RedactInfo::Expectations::ORIGINAL);
      break;
    case Expectations::kResealed:
      info.setExpectations(schema::RedactInfo::Expectations::RESEALED);
      break;
    case Expectations::kDropped:
      info.setExpectations(schema::RedactInfo::Expectations::DROPPED);
      break;
  }
  if (final.counts) {
    info.setReplacedBytes(final.counts->replaced);
    info.setPointerBytes(final.counts->pointers);
    info.setKeptAllocationBytes(final.counts->kept);
    info.setRestoredBytes(final.counts->restored);
  }
  if (final.restored) {
    auto list = info.initRestored(static_cast<unsigned>(final.restored->size()));
    for (unsigned i = 0; i < list.size(); ++i) fill_range(list[i], (*final.restored)[i]);
  }
  if (final.kept) {
    auto list = info.initKeptAllocations(static_cast<unsigned>(final.kept->size()));
    for (unsigned i = 0; i < list.size(); ++i) fill_range(list[i], (*final.kept)[i]);
  }
}

void scrub_jit(capnp::List<schema::JitOption>::Builder list, const RedactOptions& options) {
  for (auto o : list)
    if (o.hasText()) o.setText(salted(options.salt, o.getText().cStr()));
}

// --hash-names: every record field that names a kernel or variable, and the free text that may
// (arguments, messages, reasons), with those names replaced.
void hash_record_names(schema::CallRecord::Builder r, const detail::CodeRewrite& code) {
  auto text = [&code](capnp::Text::Reader t) { return detail::rewrite_text(t.cStr(), code); };
  switch (r.which()) {
    case schema::CallRecord::FUNCTION_GET:
      r.getFunctionGet().setName(text(r.getFunctionGet().getName()));
      break;
    case schema::CallRecord::GLOBAL_GET:
      r.getGlobalGet().setName(text(r.getGlobalGet().getName()));
      break;
    case schema::CallRecord::LAUNCH:
      r.getLaunch().setKernelName(text(r.getLaunch().getKernelName()));
      break;
    case schema::CallRecord::GENERIC:
      r.getGeneric().setArgs(text(r.getGeneric().getArgs()));
      break;
    case schema::CallRecord::TOOL_EVENT:
      r.getToolEvent().setMessage(text(r.getToolEvent().getMessage()));
      break;
    case schema::CallRecord::MEMORY_SNAPSHOT:
      if (r.getMemorySnapshot().hasSkippedReason())
        r.getMemorySnapshot().setSkippedReason(text(r.getMemorySnapshot().getSkippedReason()));
      break;
    case schema::CallRecord::DEFERRED_RESULT:
      if (r.getDeferredResult().hasMissing())
        r.getDeferredResult().setMissing(text(r.getDeferredResult().getMissing()));
      break;
    default:
      break;
  }
}

// --strip-ptx-comments / --hash-names: the names every PTX image defines, then every image
// rewritten once (scan.images). An image that cannot be rewritten refuses the redaction.
Status prepare_code(format::Reader& reader, const RedactOptions& options, Scan& scan) {
  scan.rewrite_code = options.strip_ptx_comments || options.hash_names;
  if (!scan.rewrite_code) return Status::ok();
  scan.code.strip_comments = options.strip_ptx_comments;
  scan.code.hash_names = options.hash_names;
  scan.code.salt = options.salt ? *options.salt : "seed:" + hex(options.seed);
  std::vector<std::pair<BlobId, std::string>> images;  // blob, what
  Status st = reader.for_each_call([&](const format::CallRef& ref) {
    if (!ref.get().isModuleLoad()) return true;
    BlobId id = to_blob(ref.get().getModuleLoad().getImage());
    if (!id.is_null())
      images.emplace_back(id, "the code image of call " + std::to_string(ref.seq()) + " (" +
                                  ref.get().getApiName().cStr() + ")");
    return true;
  });
  if (!st) return st;
  std::map<BlobId, std::vector<uint8_t>> originals;
  for (const auto& [id, what] : images) {
    if (originals.count(id) != 0) continue;
    auto bytes = reader.read_blob(id);
    if (!bytes) return bytes.status();
    auto texts = detail::image_ptx(*bytes, what);
    if (!texts) return texts.status();
    for (const std::string& ptx : *texts)
      for (std::string& name : detail::ptx_defined_names(ptx)) scan.code.names.insert(name);
    originals.emplace(id, std::move(*bytes));
  }
  if (!options.hash_names) scan.code.names.clear();
  for (const auto& [id, what] : images) {
    if (scan.images.count(id) != 0) continue;
    unsigned dropped = 0;
    auto rewritten = detail::rewrite_image(originals.at(id), scan.code, what, &dropped);
    if (!rewritten) return rewritten.status();
    scan.cubin_entries_dropped += dropped;
    scan.images.emplace(id, std::move(*rewritten));
  }
  return Status::ok();
}

// One rewrite of the capture. `restored[i]`: pieces of payload i kept original; `expect`: the
// resealed expectations (null: keep the records' own, as a first candidate for resealing).
// `counts` gets what was replaced and kept.
Status write_candidate(format::Reader& reader, const Scan& scan, const RedactOptions& options,
                       const std::vector<Pieces>& restored, const Expect* expect,
                       const Final& final, const std::string& out, Counts& counts) {
  capnp::MallocMessageBuilder header;
  header.setRoot(reader.header());
  auto h = header.getRoot<schema::CaptureHeader>();
  scrub_header(h, options, scan, final, reader.header().getCreationTimeNs());
  auto created = format::Writer::create(out, header);
  if (!created) return created.status();
  format::Writer& w = **created;

  std::unordered_map<BlobId, std::vector<uint8_t>, format::BlobIdHash>
      cache;  // the source's blobs, read once
  auto original = [&](const BlobId& id) -> Result<const std::vector<uint8_t>*> {
    auto it = cache.find(id);
    if (it == cache.end()) {
      auto bytes = reader.read_blob(id);
      if (!bytes) return bytes.status();
      it = cache.emplace(id, std::move(bytes.value())).first;
    }
    return &it->second;
  };
  auto put = [&](std::span<const uint8_t> bytes) -> Result<BlobId> { return w.put_blob(bytes); };
  auto redacted = [&](uint64_t seq, uint32_t chunk) -> Result<BlobId> {
    const size_t i = scan.payload_of.at(payload_key(seq, chunk));
    const Payload& p = scan.payloads[i];
    auto bytes = original(p.blob);
    if (!bytes) return bytes.status();
    std::vector<uint8_t> out_bytes =
        redact_payload(scan, p, **bytes, &restored[i], options.seed, counts);
    return put(out_bytes);
  };
  Status failed;
  Status st = reader.for_each_call([&](const format::CallRef& ref) {
    capnp::MallocMessageBuilder b;
    b.setRoot(ref.get());
    auto r = b.getRoot<schema::CallRecord>();
    const uint64_t seq = ref.seq();
    auto fail = [&](Status s) {
      failed = std::move(s);
      return false;
    };
    switch (r.which()) {
      case schema::CallRecord::MEMCPY: {
        auto m = r.getMemcpy();
        if (!to_blob(m.getPayload()).is_null()) {
          auto id = redacted(seq, 0);
          if (!id) return fail(id.status());
          set_blob(m.getPayload(), *id);
        }
        if (expect && m.getHasHostChecksum()) {
          auto it = expect->checksums.find(seq);
          if (expect->drop || it == expect->checksums.end()) {
            m.setHasHostChecksum(false);
            m.setHostChecksum(0);
          } else {
            m.setHostChecksum(it->second);
          }
        }
        break;
      }
      case schema::CallRecord::DEFERRED_RESULT: {
        auto d = r.getDeferredResult();
        if (scan.payload_of.count(payload_key(seq, 0))) {
          auto id = redacted(seq, 0);
          if (!id) return fail(id.status());
          set_blob(d.getPayload(), *id);
        }
        if (expect && d.getHasHostChecksum()) {
          auto it = expect->checksums.find(d.getCallSeq());
          if (expect->drop || it == expect->checksums.end()) {
            d.setHasHostChecksum(false);
            d.setHostChecksum(0);
          } else {
            d.setHostChecksum(it->second);
          }
        }
        break;
      }
      case schema::CallRecord::MEMORY_SNAPSHOT: {
        auto s = r.getMemorySnapshot();
        const bool after = s.getPhase() == schema::MemorySnapshot::Phase::AFTER_LAUNCH;
        const bool onDemand = s.getPhase() == schema::MemorySnapshot::Phase::ON_DEMAND;
        // An extract's beforeLaunch snapshot is its input: redacted, never resealed.
        const bool input = !after && reader.header().hasExtract();
        const bool reseal = expect && !onDemand && !input;
        if (reseal && expect->drop) {
          s.initChunks(0);
          s.setSkippedReason(
              "cusnap redact: no expectations (the reference replay failed: " + expect->why + ")");
          break;
        }
        auto chunks = s.getChunks();
        for (uint32_t i = 0; i < chunks.size(); ++i) {
          auto c = chunks[i];
          if (reseal) {
            auto it = expect->chunks.find({s.getLaunchSeq(), after, c.getAddress()});
            if (it == expect->chunks.end() || it->second.size() != c.getSize())
              return fail(Status::error(ErrorCode::kInvalidArgument,
                                        "resealing: the reference replay did not read the "
                                        "snapshot chunk at " +
                                            hex(c.getAddress()) + " of call " +
                                            std::to_string(seq)));
            BlobId id = format::hash_blob(it->second);
            if (!c.getHashOnly()) {
              auto stored = put(it->second);
              if (!stored) return fail(stored.status());
            }
            set_blob(c.getBlob(), id);
            continue;
          }
          if (c.getHashOnly() || to_blob(c.getBlob()).is_null()) continue;
          auto id = redacted(seq, i);
          if (!id) return fail(id.status());
          set_blob(c.getBlob(), *id);
        }
        break;
      }
      case schema::CallRecord::MODULE_LOAD: {
        auto m = r.getModuleLoad();
        BlobId id = to_blob(m.getImage());
        if (auto image = scan.images.find(id); image != scan.images.end()) {
          auto stored = put(image->second);
          if (!stored) return fail(stored.status());
          set_blob(m.getImage(), *stored);
          m.setImageSize(image->second.size());
        } else if (!id.is_null()) {
          auto bytes = original(id);
          if (!bytes) return fail(bytes.status());
          auto stored = put(**bytes);
          if (!stored) return fail(stored.status());
        }
        if (m.hasPath()) m.setPath(salted(options.salt, m.getPath().cStr()));
        scrub_jit(m.getJitOptions(), options);
        scrub_jit(m.getLibraryOptions(), options);
        break;
      }
      default: {
        // Blobs of records this rewrite does not know: copied as they are.
        Status copied;
        format::for_each_blob_ref(ref.get(), [&](const BlobId& id) {
          if (!copied) return;
          auto bytes = original(id);
          if (!bytes) {
            copied = bytes.status();
            return;
          }
          auto stored = put(**bytes);
          if (!stored) copied = stored.status();
        });
        if (!copied) return fail(copied);
        break;
      }
    }
    if (scan.code.hash_names) hash_record_names(r, scan.code);
    auto appended = w.append_call(b);
    if (!appended) return fail(appended.status());
    return true;
  });
  if (!failed) st = failed;
  Status closed = w.close();
  if (!st) return st;
  return closed;
}

// Replays `path` on the reference driver and reads what the redacted data gives: every
// checksummed device-to-host copy, and (snapshot captures) the memory of every snapshot chunk.
Result<Expect> reseal(const Scan& scan, format::Reader& candidate, const std::string& path,
                      const std::string& driver) {
  Expect e;
  replayer::ReplayOptions options;
  options.driver = driver;
  options.timing = false;
  options.nvtx = false;
  auto replayed = replayer::replay_capture(path, options);
  auto give_up = [&](const replayer::Error& err) -> Result<Expect> {
    if (err.kind() == replayer::ErrorKind::kTarget || err.kind() == replayer::ErrorKind::kIo)
      return Status::error(ErrorCode::kInvalidArgument,
                           "the reference replay (--reference-driver " + driver +
                               ") could not run: " + err.to_string());
    e.drop = true;
    e.why = err.to_string();
    return e;
  };
  if (!replayed) return give_up(replayed.error());
  for (const replayer::CopyCheck& c : replayed->copies)
    if (c.state != replayer::VerifyState::kUnverified) e.checksums[c.seq] = c.actual;

  // The snapshots' chunks, read by the replay's tap at the same addresses.
  replayer::SnapshotTap tap;
  uint64_t chunk_bytes = 0;
  const bool extract = candidate.header().hasExtract();
  for (const SnapshotInfo& s : scan.snapshots) {
    if (s.skipped || (!s.after && extract)) continue;
    auto ref = candidate.call(s.seq);
    if (!ref) return ref.status();
    auto& ranges = tap.ranges[replayer::LaunchKey{s.launch_seq, 0}];
    for (auto c : ref->get().getMemorySnapshot().getChunks()) {
      ranges.emplace_back(c.getAddress(), c.getSize());
      chunk_bytes = std::max<uint64_t>(chunk_bytes, c.getSize());
    }
  }
  for (auto it = tap.ranges.begin(); it != tap.ranges.end();) {
    auto& v = it->second;
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    it = v.empty() ? tap.ranges.erase(it) : std::next(it);
  }
  if (tap.ranges.empty()) return e;
  tap.chunk_bytes = chunk_bytes;
  tap.on_snapshot = [&](const replayer::TakenSnapshot& taken) -> replayer::MaybeError {
    const bool after = taken.phase == replayer::SnapshotPhase::kAfterLaunch;
    for (const replayer::TakenChunk& c : taken.chunks)
      e.chunks[{taken.launch_seq, after, c.address}].assign(c.bytes.begin(), c.bytes.end());
    return std::nullopt;
  };
  options.tap = std::move(tap);
  auto tapped = replayer::replay_capture(path, options);
  if (!tapped) return give_up(tapped.error());
  return e;
}

Status corrupt_refusal(const std::string& in, const format::IntegrityReport& report) {
  return Status::error(ErrorCode::kCorrupt, in + ": " + report.summary() +
                                                " (cusnap verify calls it corrupt; not "
                                                "redacted)");
}

// A set of pieces to bring back: (payload, offset, size).
struct Unit {
  size_t payload = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  friend auto operator<=>(const Unit&, const Unit&) = default;
};

}  // namespace

const char* expectations_name(Expectations e) {
  switch (e) {
    case Expectations::kOriginal:
      return "original";
    case Expectations::kResealed:
      return "resealed";
    case Expectations::kDropped:
      return "dropped";
  }
  return "?";
}

Result<RedactReport> redact_capture(const std::string& in, const std::string& out,
                                    const RedactOptions& options) {
  std::error_code same_ec;
  if (in == out || std::filesystem::equivalent(in, out, same_ec))
    return Status::error(ErrorCode::kInvalidArgument,
                         out + ": the output must not be the capture being redacted");
  auto opened = format::Reader::open(in);
  if (!opened) return opened.status();
  format::Reader& reader = **opened;
  {
    format::IntegrityReport report = reader.verify();
    if (report.state == format::Integrity::kCorrupt) return corrupt_refusal(in, report);
  }
  Scan scan;
  if (Status st = scan_capture(reader, options, scan); !st) return st;
  if (Status st = prepare_code(reader, options, scan); !st) return st;

  RedactReport report;
  report.rewritten_images = static_cast<unsigned>(scan.images.size());
  report.cubin_entries_dropped = scan.cubin_entries_dropped;
  report.hashed_names = static_cast<unsigned>(scan.code.names.size());
  report.kept_allocations = scan.kept_report;
  const std::string base = out + ".redact-tmp";
  std::error_code ec;
  std::vector<std::string> temporaries{base + ".raw"};
  struct Cleanup {
    std::vector<std::string>& files;
    ~Cleanup() {
      std::error_code ignored;
      for (const auto& f : files) std::filesystem::remove(f, ignored);
    }
  } cleanup{temporaries};

  // Writes the candidate bringing back `units` to `path`, resealed: first with the records' own
  // expectations (what is replaced is counted there), then with what the reference replay of
  // that first file gives.
  auto build = [&](const std::set<Unit>& units, const std::string& path, const Final& final,
                   Counts& counts, Expectations& expectations, std::string& note) -> Status {
    std::vector<Pieces> restored(scan.payloads.size());
    for (const Unit& u : units) restored[u.payload].emplace_back(u.offset, u.size);
    const std::string raw = base + ".raw";
    counts = Counts{};
    Status st = write_candidate(reader, scan, options, restored, nullptr, Final{}, raw, counts);
    if (!st) return st;
    Final f = final;
    f.counts = &counts;
    Counts again;
    if (counts.replaced == 0) {
      // Nothing was replaced: the records' own expectations still hold.
      expectations = Expectations::kOriginal;
      f.expectations = expectations;
      return write_candidate(reader, scan, options, restored, nullptr, f, path, again);
    }
    auto cand = format::Reader::open(raw);
    if (!cand) return cand.status();
    auto expect = reseal(scan, **cand, raw, options.reference_driver);
    if (!expect) return expect.status();
    expectations = expect->drop ? Expectations::kDropped : Expectations::kResealed;
    note = expect->why;
    f.expectations = expectations;
    return write_candidate(reader, scan, options, restored, &*expect, f, path, again);
  };

  std::set<Unit> restored_units;
  if (options.verify) {
    std::map<std::set<Unit>, bool> seen;
    const std::string candidate = base + ".candidate";
    temporaries.push_back(candidate);
    auto test = [&](const std::set<Unit>& units) -> Result<bool> {
      if (auto it = seen.find(units); it != seen.end()) return it->second;
      if (report.evaluations >= options.max_evaluations) {
        report.budget_exhausted = true;
        return false;
      }
      ++report.evaluations;
      Counts counts;
      Expectations expectations;
      std::string note;
      if (Status st = build(units, candidate, Final{}, counts, expectations, note); !st) return st;
      auto evaluation = evaluate(*options.verify, candidate, options.condition);
      if (!evaluation) return evaluation.status();
      if (options.on_progress) {
        options.on_progress("evaluation " + std::to_string(report.evaluations) + ": " +
                            std::to_string(counts.restored) +
                            " bytes original: " + (evaluation->holds ? "holds" : "does not hold") +
                            " (" + evaluation->why + ")");
      }
      seen[units] = evaluation->holds;
      return evaluation->holds;
    };
    // Every payload original: the condition must hold there, or there is nothing to keep.
    std::vector<Unit> all;
    for (size_t i = 0; i < scan.payloads.size(); ++i)
      for (uint64_t o = 0; o < scan.payloads[i].size; o += kFirstUnitBytes)
        all.push_back({i, o, std::min(kFirstUnitBytes, scan.payloads[i].size - o)});
    auto none = test({});
    if (!none) return none.status();
    if (!*none) {
      auto whole = test(std::set<Unit>(all.begin(), all.end()));
      if (!whole) return whole.status();
      if (!*whole)
        return Status::error(ErrorCode::kInvalidArgument,
                             "--verify " + options.verify->text +
                                 ": the condition does not hold with every payload original "
                                 "either (nothing redaction could keep)");
      // ddmin (Zeller and Hildebrandt) over the pieces, then over halves of what it kept.
      std::vector<Unit> current = all;
      for (;;) {
        size_t n = 2;
        while (current.size() >= 2 && !report.budget_exhausted) {
          const size_t size = current.size();
          std::vector<std::vector<Unit>> parts(std::min(n, size));
          for (size_t i = 0; i < size; ++i) parts[i * parts.size() / size].push_back(current[i]);
          bool reduced = false;
          for (const auto& part : parts) {
            auto holds = test(std::set<Unit>(part.begin(), part.end()));
            if (!holds) return holds.status();
            if (*holds) {
              current = part;
              n = 2;
              reduced = true;
              break;
            }
          }
          if (!reduced && parts.size() > 2) {
            for (size_t k = 0; k < parts.size(); ++k) {
              std::vector<Unit> rest;
              for (size_t j = 0; j < parts.size(); ++j)
                if (j != k) rest.insert(rest.end(), parts[j].begin(), parts[j].end());
              auto holds = test(std::set<Unit>(rest.begin(), rest.end()));
              if (!holds) return holds.status();
              if (*holds) {
                current = rest;
                n = std::max<size_t>(n - 1, 2);
                reduced = true;
                break;
              }
            }
          }
          if (!reduced) {
            if (n >= size) break;
            n = std::min(2 * n, size);
          }
        }
        // Finer: halve every piece kept (8-byte aligned), and reduce again.
        std::vector<Unit> finer;
        bool split = false;
        for (const Unit& u : current) {
          if (u.size <= kMinUnitBytes) {
            finer.push_back(u);
            continue;
          }
          uint64_t half = (u.size / 2 + kMinUnitBytes - 1) / kMinUnitBytes * kMinUnitBytes;
          finer.push_back({u.payload, u.offset, half});
          if (u.size > half) finer.push_back({u.payload, u.offset + half, u.size - half});
          split = true;
        }
        if (!split || report.budget_exhausted) break;
        // The same bytes, cut finer: the condition holds for them as it did.
        seen[std::set<Unit>(finer.begin(), finer.end())] = true;
        current = std::move(finer);
      }
      restored_units.insert(current.begin(), current.end());
      // The set must hold as written (a budget cut may have stopped between tests).
      auto holds = test(restored_units);
      if (!holds) return holds.status();
      if (!*holds) restored_units = std::set<Unit>(all.begin(), all.end());
    }
  }

  // The restored ranges, merged per payload, named by allocation.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> per_payload(scan.payloads.size());
  for (const Unit& u : restored_units) per_payload[u.payload].emplace_back(u.offset, u.size);
  for (size_t i = 0; i < per_payload.size(); ++i) {
    auto& v = per_payload[i];
    std::sort(v.begin(), v.end());
    for (size_t k = 0; k < v.size();) {
      uint64_t o = v[k].first, end = v[k].first + v[k].second;
      size_t j = k + 1;
      for (; j < v.size() && v[j].first <= end; ++j) end = std::max(end, v[j].first + v[j].second);
      const Payload& p = scan.payloads[i];
      RedactedRange r;
      r.address = p.address_of(o);
      r.size = end - o;
      r.what = p.what + ", payload bytes " + std::to_string(o) + ".." + std::to_string(end);
      if (const Range* a = scan.ranges.find(r.address, false)) {
        r.allocation_address = a->address;
        r.allocation_seq = a->seq;
      }
      report.restored.push_back(r);
      k = j;
    }
  }

  // The output.
  Counts counts;
  Final final;
  final.restored = &report.restored;
  final.kept = &report.kept_allocations;
  if (Status st =
          build(restored_units, out, final, counts, report.expectations, report.expectations_note);
      !st) {
    std::filesystem::remove(out, ec);
    return st;
  }
  report.replaced_bytes = counts.replaced;
  report.pointer_bytes = counts.pointers;
  report.kept_allocation_bytes = counts.kept;
  report.restored_bytes = counts.restored;
  if (options.verify) {
    auto evaluation = evaluate(*options.verify, out, options.condition);
    if (!evaluation) return evaluation.status();
    report.condition_why = evaluation->why;
    if (!evaluation->holds)
      report.notes.push_back("the condition does not hold on the written capture (" +
                             evaluation->why + "): is it deterministic?");
  }
  return report;
}

}  // namespace cusnap::reduce
