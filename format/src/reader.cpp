// Reader access paths: calls, launches, blobs, stats.
#include <capnp/any.h>
#include <capnp/dynamic.h>
#include <capnp/schema.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "reader_impl.h"

namespace cusnap::format {

// ---- small public helpers -----------------------------------------------------------------------

const char* integrity_name(Integrity integrity) {
  switch (integrity) {
    case Integrity::kWhole:
      return "whole";
    case Integrity::kTruncated:
      return "truncated";
    case Integrity::kCorrupt:
      return "corrupt";
  }
  return "unknown";
}

std::string IntegrityReport::summary() const {
  std::string calls = last_good_seq ? "call " + std::to_string(*last_good_seq) : "no calls";
  switch (state) {
    case Integrity::kWhole:
      return "whole (" + std::to_string(last_good_seq ? *last_good_seq + 1 : 0) + " calls)";
    case Integrity::kTruncated:
      return "truncated: capture ends after " + calls + " (byte offset " +
             std::to_string(end_offset) + ")";
    case Integrity::kCorrupt: {
      std::string where = bad_frame ? "frame " + std::to_string(*bad_frame) + " at offset " +
                                          std::to_string(end_offset)
                                    : "byte offset " + std::to_string(end_offset);
      return "corrupt: " + where + " failed: " + detail.to_string() + "; last good " + calls;
    }
  }
  return "unknown";
}

std::string call_kind_name(uint16_t which) {
  auto fields = capnp::Schema::from<schema::CallRecord>().getUnionFields();
  for (auto field : fields) {
    if (field.getProto().getDiscriminantValue() == which) {
      return field.getProto().getName();
    }
  }
  return "unknown(" + std::to_string(which) + ")";
}

uint16_t call_kind_count() {
  return static_cast<uint16_t>(capnp::Schema::from<schema::CallRecord>().getUnionFields().size());
}

void walk_all_fields(capnp::DynamicStruct::Reader reader);

namespace {

// The walk reads every pointer a struct type can hold, through the same checks its generated
// readers make (a struct, text, data or list of the declared element size, in bounds), so that a
// malformed record fails here. What to read is worked out from the schema once per struct type:
// pointer slots, which union member each belongs to, groups (which share their parent's
// sections) and, for lists, the element type. Primitive fields cannot be malformed (a value past
// the end of a short data section reads as its default) and are not visited. The walk itself
// reads through AnyStruct: reflection per field read (Field::getType, interpretType) was most of
// `cusnap verify`'s time.

constexpr uint16_t kNoDiscriminant = capnp::schema::Field::NO_DISCRIMINANT;

struct WalkPlan;

struct WalkStep {
  enum class Kind : uint8_t { kText, kData, kStruct, kList, kGroup };
  Kind kind = Kind::kText;
  uint16_t discriminant = kNoDiscriminant;  // the union member this step belongs to, if any
  uint32_t pointer = 0;                     // the pointer slot (not for groups)
  const WalkPlan* nested = nullptr;         // kStruct, kGroup; kList of structs: the elements'
  capnp::ListSchema list;                   // kList
  bool elements_are_pointers = false;       // kList: elements need a visit of their own
};

struct WalkPlan {
  bool has_union = false;
  uint32_t discriminant_byte = 0;  // where the union's tag lives in the data section
  std::vector<WalkStep> steps;
};

bool is_pointer_type(capnp::Type type) {
  return type.isStruct() || type.isList() || type.isText() || type.isData() ||
         type.isAnyPointer() || type.isInterface();
}

const WalkPlan& walk_plan(capnp::StructSchema schema);

// Makes `step` read a list of `list`'s type (its slot and union member are the caller's).
void set_list(WalkStep& step, capnp::ListSchema list) {
  step.kind = WalkStep::Kind::kList;
  step.list = list;
  capnp::Type element = list.getElementType();
  step.elements_are_pointers = is_pointer_type(element);
  if (element.isStruct()) step.nested = &walk_plan(element.asStruct());
}

void add_steps(WalkPlan& plan, capnp::StructSchema schema) {
  for (auto field : schema.getFields()) {
    auto proto = field.getProto();
    WalkStep step;
    step.discriminant = proto.getDiscriminantValue();
    if (proto.isGroup()) {
      step.kind = WalkStep::Kind::kGroup;
      step.nested = &walk_plan(field.getType().asStruct());
      plan.steps.push_back(step);
      continue;
    }
    capnp::Type type = field.getType();
    if (!is_pointer_type(type)) continue;
    step.pointer = proto.getSlot().getOffset();
    if (type.isText()) {
      step.kind = WalkStep::Kind::kText;
    } else if (type.isData()) {
      step.kind = WalkStep::Kind::kData;
    } else if (type.isStruct()) {
      step.kind = WalkStep::Kind::kStruct;
      step.nested = &walk_plan(type.asStruct());
    } else if (type.isList()) {
      set_list(step, type.asList());
    } else {
      continue;  // AnyPointer and capabilities: a capture holds none
    }
    plan.steps.push_back(step);
  }
}

const WalkPlan& walk_plan(capnp::StructSchema schema) {
  // Node-based: a plan's address is stable while plans of the types it holds are added, and a
  // recursive type finds its own (still incomplete) plan instead of recursing for ever.
  thread_local std::unordered_map<uint64_t, WalkPlan> plans;
  const uint64_t id = schema.getProto().getId();
  auto [it, inserted] = plans.try_emplace(id);
  if (!inserted) return it->second;
  WalkPlan plan;
  auto node = schema.getProto().getStruct();
  plan.has_union = node.getDiscriminantCount() > 0;
  plan.discriminant_byte = node.getDiscriminantOffset() * 2;
  add_steps(plan, schema);
  auto& slot = plans[id];
  slot = std::move(plan);
  return slot;
}

void walk_struct(capnp::AnyStruct::Reader s, const WalkPlan& plan);

void walk_list_elements(capnp::DynamicList::Reader list, const WalkStep& step) {
  capnp::Type element = step.list.getElementType();
  if (element.isStruct()) {
    for (auto item : list) {
      walk_struct(capnp::AnyStruct::Reader(item.as<capnp::DynamicStruct>()), *step.nested);
    }
  } else if (element.isText()) {
    for (auto item : list) (void)item.as<capnp::Text>().size();
  } else if (element.isData()) {
    for (auto item : list) (void)item.as<capnp::Data>().size();
  } else if (element.isList()) {
    WalkStep inner;
    set_list(inner, element.asList());
    for (auto item : list) {
      auto sub = item.as<capnp::DynamicList>();
      if (inner.elements_are_pointers) walk_list_elements(sub, inner);
    }
  }
}

void walk_struct(capnp::AnyStruct::Reader s, const WalkPlan& plan) {
  uint16_t active = 0;
  if (plan.has_union) {
    auto data = s.getDataSection();
    if (plan.discriminant_byte + 2 <= data.size()) {
      active = static_cast<uint16_t>(data[plan.discriminant_byte] |
                                     (data[plan.discriminant_byte + 1] << 8));
    }
  }
  auto pointers = s.getPointerSection();
  for (const WalkStep& step : plan.steps) {
    if (step.discriminant != kNoDiscriminant && step.discriminant != active) continue;
    if (step.kind == WalkStep::Kind::kGroup) {
      walk_struct(s, *step.nested);
      continue;
    }
    if (step.pointer >= pointers.size()) continue;
    capnp::AnyPointer::Reader pointer = pointers[step.pointer];
    if (pointer.isNull()) continue;
    switch (step.kind) {
      case WalkStep::Kind::kText:
        (void)pointer.getAs<capnp::Text>().size();
        break;
      case WalkStep::Kind::kData:
        (void)pointer.getAs<capnp::Data>().size();
        break;
      case WalkStep::Kind::kStruct:
        walk_struct(pointer.getAs<capnp::AnyStruct>(), *step.nested);
        break;
      case WalkStep::Kind::kList: {
        // Reading the list checks its bounds and that its element size is the declared one;
        // only elements that are pointers themselves need a visit.
        auto list = pointer.getAs<capnp::DynamicList>(step.list);
        if (step.elements_are_pointers) walk_list_elements(list, step);
        break;
      }
      case WalkStep::Kind::kGroup:
        break;
    }
  }
}

}  // namespace

void walk_all_fields(capnp::DynamicStruct::Reader reader) {
  walk_struct(capnp::AnyStruct::Reader(reader), walk_plan(reader.getSchema()));
}

namespace {

void blob_refs_in(capnp::DynamicStruct::Reader s, const std::function<void(const BlobId&)>& fn);
bool may_hold_blobs(capnp::Type type);

void blob_refs_in_value(capnp::DynamicValue::Reader value, capnp::Type type,
                        const std::function<void(const BlobId&)>& fn) {
  if (type.isStruct()) {
    auto inner = value.as<capnp::DynamicStruct>();
    // A hash-only snapshot chunk names the hash of bytes the file deliberately does not hold.
    if (type.asStruct().getProto().getId() == capnp::typeId<schema::MemoryChunk>() &&
        inner.get("hashOnly").as<bool>()) {
      return;
    }
    if (type.asStruct().getProto().getId() == capnp::typeId<schema::BlobId>()) {
      BlobId id{inner.get("high").as<uint64_t>(), inner.get("low").as<uint64_t>()};
      if (!id.is_null()) fn(id);
      return;
    }
    blob_refs_in(inner, fn);
  } else if (type.isList()) {
    auto element = type.asList().getElementType();
    if (!may_hold_blobs(element)) return;
    for (auto item : value.as<capnp::DynamicList>()) blob_refs_in_value(item, element, fn);
  }
}

// may_hold_blobs(type): whether a value of a struct or list type can hold a BlobId somewhere
// inside, worked out from the schema once per struct type (most fields of a record cannot: a walk
// skips them unread).

struct BlobPlan {
  std::vector<capnp::StructSchema::Field> fields;  // non-union fields that may hold blob refs
  std::vector<bool> member;                        // by union member index
};

// A struct type whose plan is being made (a recursive type meets itself): assumed to hold blobs,
// so the walk visits such fields rather than risk missing a reference.
thread_local std::unordered_set<uint64_t> blob_plans_in_progress;

const BlobPlan& blob_plan(capnp::StructSchema schema) {
  thread_local std::unordered_map<uint64_t, BlobPlan> plans;
  const uint64_t id = schema.getProto().getId();
  auto it = plans.find(id);
  if (it != plans.end()) return it->second;
  blob_plans_in_progress.insert(id);
  BlobPlan plan;
  for (auto field : schema.getNonUnionFields()) {
    if (may_hold_blobs(field.getType())) plan.fields.push_back(field);
  }
  for (auto field : schema.getUnionFields()) {
    if (plan.member.size() <= field.getIndex()) plan.member.resize(field.getIndex() + 1);
    plan.member[field.getIndex()] = may_hold_blobs(field.getType());
  }
  blob_plans_in_progress.erase(id);
  return plans.emplace(id, std::move(plan)).first->second;
}

bool may_hold_blobs(capnp::Type type) {
  if (type.isList()) return may_hold_blobs(type.asList().getElementType());
  if (!type.isStruct()) return false;
  auto schema = type.asStruct();
  const uint64_t id = schema.getProto().getId();
  if (id == capnp::typeId<schema::BlobId>() || blob_plans_in_progress.count(id) != 0) return true;
  const BlobPlan& plan = blob_plan(schema);
  return !plan.fields.empty() ||
         std::find(plan.member.begin(), plan.member.end(), true) != plan.member.end();
}

void blob_refs_in(capnp::DynamicStruct::Reader s, const std::function<void(const BlobId&)>& fn) {
  const BlobPlan& plan = blob_plan(s.getSchema());
  auto visit = [&](capnp::StructSchema::Field field) {
    if (!field.getProto().isGroup() && !s.has(field)) return;
    blob_refs_in_value(s.get(field), field.getType(), fn);
  };
  for (const auto& field : plan.fields) visit(field);
  KJ_IF_MAYBE (active, s.which()) {
    const uint16_t index = active->getIndex();
    if (index < plan.member.size() && plan.member[index]) visit(*active);
  }
}

}  // namespace

void for_each_blob_ref(schema::CallRecord::Reader record,
                       const std::function<void(const BlobId&)>& fn) {
  blob_refs_in(capnp::toDynamic(record), fn);
}

// ---- CallRef ------------------------------------------------------------------------------------

CallRef::CallRef(std::unique_ptr<State> state, uint64_t seq, uint32_t frame)
    : state_(std::move(state)), seq_(seq), frame_(frame) {}
CallRef::CallRef(CallRef&&) noexcept = default;
CallRef& CallRef::operator=(CallRef&&) noexcept = default;
CallRef::~CallRef() = default;

schema::CallRecord::Reader CallRef::get() const {
  return state_->reader->getRoot<schema::CallRecord>();
}

std::span<const uint8_t> CallRef::message_bytes() const {
  return {reinterpret_cast<const uint8_t*>(state_->message.begin()),
          state_->message.size() * sizeof(capnp::word)};
}

// ---- Reader::Impl access ------------------------------------------------------------------------

Result<FrameHeader> Reader::Impl::checked_header(uint32_t index_pos) const {
  if (index_pos >= index.frames.size()) {
    return Status::error(ErrorCode::kNotFound, "no such frame").in_frame(index_pos);
  }
  const FrameInfo& info = index.frames[index_pos];
  auto h = read_frame_header(info.offset, index_pos);
  if (!h) return h.status();
  const FrameHeader& fh = h.value();
  if (fh.kind != info.kind || fh.stored_size != info.stored_size || fh.raw_size != info.raw_size ||
      (fh.kind == FrameKind::kCalls &&
       (fh.first_seq != info.first_seq || fh.last_seq != info.last_seq))) {
    return Status::error(ErrorCode::kCorrupt, "frame header disagrees with the index")
        .in_file(src->name())
        .in_frame(index_pos)
        .at_offset(info.offset);
  }
  return h;
}

Result<std::shared_ptr<const DecodedCallFrame>> Reader::Impl::decode_call_frame(uint32_t pos) {
  if (pos == cached_index && cached) return cached;
  auto h = checked_header(pos);
  if (!h) return h.status();
  if (h.value().kind != FrameKind::kCalls) {
    return Status::error(ErrorCode::kInvalidArgument, "not a call frame").in_frame(pos);
  }
  auto payload = read_payload(h.value(), index.frames[pos].offset, pos);
  if (!payload) return payload.status();
  auto frame = std::make_shared<DecodedCallFrame>();
  frame->payload = std::move(payload.value());
  frame->first_seq = h.value().first_seq;
  frame->offset = index.frames[pos].offset;
  frame->payload_checksum = h.value().payload_checksum;
  Status st =
      split_calls(h.value(), frame->payload, capnp_options(), frame->starts, nullptr, false);
  if (!st.is_ok()) return st.in_file(src->name()).in_frame(pos).at_offset(index.frames[pos].offset);
  cached = frame;
  cached_index = pos;
  return std::shared_ptr<const DecodedCallFrame>(std::move(frame));
}

Result<CallRef> Reader::Impl::make_call_ref(std::shared_ptr<const DecodedCallFrame> frame,
                                            uint32_t frame_index, uint64_t seq) const {
  size_t i = static_cast<size_t>(seq - frame->first_seq);
  if (seq < frame->first_seq || i + 1 >= frame->starts.size()) {
    return Status::error(ErrorCode::kNotFound, "call not in frame").at_call(seq);
  }
  auto state = std::make_unique<CallRef::State>();
  state->message = frame->payload.words.asPtr().slice(frame->starts[i], frame->starts[i + 1]);
  state->frame = std::move(frame);
  try {
    // Checksums prove nothing about the contents (XXH3 is not a MAC): walk every field once, on
    // a reader of its own so the walk does not spend the consumer's traversal budget, so that a
    // text without its NUL, a list whose tag lies, an out-of-bounds or wrongly typed pointer or
    // a list amplified past the traversal limit is an error here and not a kj::Exception thrown
    // at whoever reads the field later.
    // A frame verify() walked already is not walked again when its stored bytes are the ones
    // walked (the payload checksum was checked against the header again when it was decoded).
    auto walked = walked_frames.find(state->frame->offset);
    const bool known_good = detail::checksums_verified() && walked != walked_frames.end() &&
                            walked->second == state->frame->payload_checksum;
    if (!known_good) {
      capnp::FlatArrayMessageReader check(state->message, capnp_options());
      walk_all_fields(capnp::toDynamic(check.getRoot<schema::CallRecord>()));
    }
    state->reader =
        std::make_unique<capnp::FlatArrayMessageReader>(state->message, capnp_options());
  } catch (const kj::Exception& e) {
    return Status::error(ErrorCode::kMalformed,
                         std::string("invalid call record: ") + e.getDescription().cStr())
        .in_file(src->name())
        .in_frame(frame_index)
        .at_offset(index.frames[frame_index].offset)
        .at_call(seq);
  }
  return CallRef(std::move(state), seq, frame_index);
}

// ---- Reader -------------------------------------------------------------------------------------

Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;

const FileHeader& Reader::file_header() const { return impl_->file_header; }
schema::CaptureHeader::Reader Reader::header() const {
  return impl_->header_reader->getRoot<schema::CaptureHeader>();
}
uint64_t Reader::file_size() const { return impl_->src->size(); }
const std::string& Reader::path() const { return impl_->src->name(); }
const IntegrityReport& Reader::recovery() const { return impl_->recovery; }
const std::vector<FrameInfo>& Reader::frames() const { return impl_->index.frames; }
const std::vector<BlobInfo>& Reader::blobs() const { return impl_->index.blobs; }
const std::vector<LaunchInfo>& Reader::launches() const { return impl_->index.launches; }
uint64_t Reader::call_count() const { return impl_->index.call_count; }
const std::vector<uint64_t>& Reader::kind_counts() const { return impl_->index.kind_counts; }

const BlobInfo* Reader::find_blob(const BlobId& id) const {
  auto it = impl_->blob_pos.find(id);
  return it == impl_->blob_pos.end() ? nullptr : &impl_->index.blobs[it->second];
}

CaptureStats Reader::stats() const {
  CaptureStats s;
  s.file_bytes = file_size();
  s.frames = impl_->index.frames.size();
  for (const FrameInfo& f : impl_->index.frames) {
    if (f.kind == FrameKind::kCalls) {
      ++s.call_frames;
      s.call_bytes_raw += f.raw_size;
      s.call_bytes_stored += f.stored_size;
    } else if (f.kind == FrameKind::kBlob) {
      ++s.blob_frames;
    }
  }
  s.calls = impl_->index.call_count;
  s.launches = impl_->index.launches.size();
  s.blobs = impl_->index.blobs.size();
  for (const BlobInfo& b : impl_->index.blobs) {
    s.blob_bytes_unique += b.size;
    s.blob_bytes_stored += b.stored_bytes;
  }
  if (impl_->index.writer_stats) {
    s.blob_puts = impl_->index.writer_stats->blob_puts;
    s.blob_bytes_logical = impl_->index.writer_stats->blob_bytes_logical;
  }
  return s;
}

Result<CallRef> Reader::call(uint64_t seq) {
  if (seq >= impl_->index.call_count) {
    return Status::error(ErrorCode::kNotFound, "no such call")
        .in_file(path())
        .at_call(seq)
        .expected_found("< " + std::to_string(impl_->index.call_count), std::to_string(seq));
  }
  const auto& frames = impl_->index.frames;
  auto& calls = impl_->call_frames;
  // First call frame whose last_seq >= seq.
  auto it = std::lower_bound(calls.begin(), calls.end(), seq,
                             [&](uint32_t f, uint64_t s) { return frames[f].last_seq < s; });
  if (it == calls.end() || frames[*it].first_seq > seq) {
    return Status::error(ErrorCode::kNotFound, "no frame holds this call").at_call(seq);
  }
  auto frame = impl_->decode_call_frame(*it);
  if (!frame) return frame.status().at_call(seq);
  return impl_->make_call_ref(std::move(frame.value()), *it, seq);
}

Result<CallRef> Reader::launch(uint64_t ordinal) {
  if (ordinal >= impl_->index.launches.size()) {
    return Status::error(ErrorCode::kNotFound, "no such launch")
        .in_file(path())
        .expected_found("< " + std::to_string(impl_->index.launches.size()),
                        std::to_string(ordinal));
  }
  const LaunchInfo& l = impl_->index.launches[ordinal];
  auto frame = impl_->decode_call_frame(l.frame);
  if (!frame) return frame.status().at_call(l.seq);
  auto ref = impl_->make_call_ref(std::move(frame.value()), l.frame, l.seq);
  if (!ref) return ref;
  try {
    auto rec = ref.value().get();
    if (!rec.isLaunch() || rec.getLaunch().getOrdinal() != ordinal) {
      return Status::error(ErrorCode::kCorrupt, "launch table points at a different record")
          .at_call(l.seq);
    }
  } catch (const kj::Exception& e) {
    return Status::error(ErrorCode::kMalformed, e.getDescription().cStr()).at_call(l.seq);
  }
  return ref;
}

Status Reader::for_each_call(const std::function<bool(const CallRef&)>& fn, uint64_t first_seq,
                             const std::function<bool(const Status&)>& on_bad) {
  for (uint32_t f : impl_->call_frames) {
    const FrameInfo& info = impl_->index.frames[f];
    if (info.last_seq < first_seq) continue;
    auto frame = impl_->decode_call_frame(f);
    if (!frame) {
      Status st = frame.status();
      if (st.call() == std::nullopt) st.at_call(std::max(first_seq, info.first_seq));
      if (!on_bad || !on_bad(st)) return st;
      continue;  // the whole frame is unreadable: its calls are lost, the next frame may not be
    }
    for (uint64_t seq = std::max(first_seq, info.first_seq); seq <= info.last_seq; ++seq) {
      auto ref = impl_->make_call_ref(frame.value(), f, seq);
      if (!ref) {
        if (!on_bad || !on_bad(ref.status())) return ref.status();
        continue;
      }
      if (!fn(ref.value())) return Status::ok();
    }
  }
  return Status::ok();
}

Status Reader::read_blob_chunks(
    const BlobId& id, const std::function<Status(uint64_t, std::span<const uint8_t>)>& sink) {
  const BlobInfo* blob = find_blob(id);
  if (blob == nullptr) {
    return Status::error(ErrorCode::kNotFound, "no such blob: " + id.to_hex()).in_file(path());
  }
  BlobHasher hasher;
  for (const BlobChunkRef& c : blob->chunks) {
    auto h = impl_->checked_header(c.frame);
    if (!h) return h.status();
    const FrameHeader& fh = h.value();
    if (fh.kind != FrameKind::kBlob || fh.blob_id != id || fh.chunk_offset != c.chunk_offset ||
        fh.blob_size != blob->size) {
      return Status::error(ErrorCode::kCorrupt, "blob frame does not belong to this blob")
          .in_file(path())
          .in_frame(c.frame)
          .at_offset(impl_->index.frames[c.frame].offset);
    }
    auto payload = impl_->read_payload(fh, impl_->index.frames[c.frame].offset, c.frame);
    if (!payload) return payload.status();
    hasher.update(payload.value().bytes());
    Status st = sink(c.chunk_offset, payload.value().bytes());
    if (!st.is_ok()) return st;
  }
  BlobId actual = hasher.finish();
  if (detail::checksums_verified() && actual != id) {
    return Status::error(ErrorCode::kCorrupt, "blob content does not match its id")
        .in_file(path())
        .expected_found(id.to_hex(), actual.to_hex());
  }
  return Status::ok();
}

Result<std::vector<uint8_t>> Reader::read_blob(const BlobId& id) {
  const BlobInfo* blob = find_blob(id);
  if (blob == nullptr) {
    return Status::error(ErrorCode::kNotFound, "no such blob: " + id.to_hex()).in_file(path());
  }
  // The size comes from the file: bound it before allocating (read_blob_chunks streams any size).
  if (blob->size > impl_->options.max_blob_bytes) {
    return Status::error(ErrorCode::kLimitExceeded, "blob larger than the reader's limit")
        .in_file(path())
        .expected_found("<= " + std::to_string(impl_->options.max_blob_bytes),
                        std::to_string(blob->size) + " bytes in blob " + id.to_hex());
  }
  std::vector<uint8_t> out;
  // At most one frame's worth up front: the recorded size may be forged (a fuzzer found one
  // near 2^60), and the chunks, each checked as it is read, are what fills the vector.
  out.reserve(static_cast<size_t>(std::min(blob->size, impl_->options.max_frame_raw_bytes)));
  Status st = read_blob_chunks(id, [&](uint64_t, std::span<const uint8_t> bytes) {
    out.insert(out.end(), bytes.begin(), bytes.end());
    return Status::ok();
  });
  if (!st.is_ok()) return st;
  return out;
}

Result<std::vector<uint8_t>> Reader::frame_payload(uint32_t index) {
  auto h = impl_->checked_header(index);
  if (!h) return h.status();
  auto payload = impl_->read_payload(h.value(), impl_->index.frames[index].offset, index);
  if (!payload) return payload.status();
  auto bytes = payload.value().bytes();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

IntegrityReport Reader::verify(const std::function<void(uint64_t, uint64_t)>& progress) {
  ScanResult result = impl_->scan(true, progress);
  return std::move(result.report);
}

}  // namespace cusnap::format
