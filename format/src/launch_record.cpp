// Launch records from plain fields: the one encoding (build_launch_record) and the flat entries
// the writer defers it with (launch_entry.h).
#include <capnp/message.h>
#include <capnp/schema.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "internal.h"
#include "launch_entry.h"

namespace cusnap::format {

namespace {
// `value` need not be NUL-terminated (capnp::Text::Reader requires it): init, then copy.
void copy_text(capnp::Text::Builder text, std::string_view value) {
  if (!value.empty()) std::memcpy(text.begin(), value.data(), value.size());
}
}  // namespace

void build_launch_record(const LaunchFields& f, schema::CallRecord::Builder record) {
  record.setThreadId(f.thread_id);
  record.setStartNs(f.start_ns);
  record.setEndNs(f.end_ns);
  record.setResult(f.result);
  copy_text(record.initApiName(static_cast<unsigned>(f.api_name.size())), f.api_name);
  record.setContext(f.context);
  build_launch(f, record.initLaunch());
}

void build_launch(const LaunchFields& f, schema::Launch::Builder launch) {
  launch.setKind(f.kind);
  launch.setFunction(f.function);
  launch.setGridX(f.grid[0]);
  launch.setGridY(f.grid[1]);
  launch.setGridZ(f.grid[2]);
  launch.setBlockX(f.block[0]);
  launch.setBlockY(f.block[1]);
  launch.setBlockZ(f.block[2]);
  launch.setSharedBytes(f.shared_bytes);
  launch.setStream(f.stream);
  launch.setCooperative(f.cooperative);
  copy_text(launch.initKernelName(static_cast<unsigned>(f.kernel_name.size())), f.kernel_name);
  if (f.layout_seq != LaunchFields::kNoLayoutSeq) launch.setLayoutSeq(f.layout_seq);
  launch.setViaExtra(f.via_extra);
  if (f.has_params) launch.setParams(capnp::Data::Reader(f.params.data(), f.params.size()));
  if (f.has_layout) {
    auto slots = launch.initLayout(static_cast<unsigned>(f.layout.size()));
    for (size_t i = 0; i < f.layout.size(); ++i) {
      slots[i].setOffset(f.layout[i].offset);
      slots[i].setSize(f.layout[i].size);
    }
  }
  if (!f.attributes.empty()) {
    auto list = launch.initAttributes(static_cast<unsigned>(f.attributes.size()));
    for (size_t i = 0; i < f.attributes.size(); ++i) {
      list[i].setId(f.attributes[i].id);
      list[i].setValue(
          capnp::Data::Reader(f.attributes[i].value.data(), f.attributes[i].value.size()));
    }
  }
}

namespace detail {
namespace {

// The fixed part of a launch entry; the variable parts follow in this order: layout slots,
// attributes (id, size, value bytes each), params, api name, kernel name; padded to 8 bytes.
struct EntryHead {
  uint32_t marker;
  uint32_t size;  // the whole entry, a multiple of 8
  uint64_t seq;
  uint64_t ordinal;
  uint64_t thread_id;
  int64_t start_ns;
  int64_t end_ns;
  uint64_t context;
  uint64_t function;
  uint64_t stream;
  uint64_t layout_seq;
  int32_t result;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;
  uint16_t kind;
  uint8_t flags;
  uint8_t unused;
  uint32_t api_len;
  uint32_t name_len;
  uint32_t layout_count;
  uint32_t attribute_count;
  uint32_t attribute_bytes;  // the attributes' bytes including their (id, size) words
  uint32_t params_size;
};
static_assert(sizeof(EntryHead) % 8 == 0);

enum : uint8_t { kCooperative = 1, kViaExtra = 2, kHasLayout = 4, kHasParams = 8 };

size_t attribute_bytes(const LaunchFields& f) {
  size_t n = 0;
  for (const auto& a : f.attributes) n += 8 + a.value.size();
  return n;
}

size_t unpadded_size(const LaunchFields& f) {
  return sizeof(EntryHead) + f.layout.size() * sizeof(LaunchParamSlot) + attribute_bytes(f) +
         f.params.size() + f.api_name.size() + f.kernel_name.size();
}

// The size of the framed message at `p` (at most `available` bytes), 0 when it does not fit.
size_t framed_message_size(const uint8_t* p, size_t available) {
  if (available < 8) return 0;
  uint32_t last;
  std::memcpy(&last, p, 4);
  uint64_t segments = uint64_t{last} + 1;
  uint64_t table = ((segments + 2) / 2) * 8;
  if (table > available) return 0;
  uint64_t total = table;
  for (uint64_t i = 0; i < segments; ++i) {
    uint32_t words;
    std::memcpy(&words, p + 4 * (i + 1), 4);
    total += uint64_t{words} * 8;
  }
  return total <= available ? static_cast<size_t>(total) : 0;
}

// Makes room for `more` bytes at the end of `out`.
void reserve_out(BufferPool& pool, ByteBuffer& out, size_t more) {
  size_t used = out.size();
  if (used + more <= out.capacity()) return;
  ByteBuffer bigger = pool.acquire(std::max(out.capacity() * 2, used + more));
  if (used != 0) std::memcpy(bigger.data(), out.data(), used);
  bigger.set_size(used);
  pool.release(std::move(out));
  out = std::move(bigger);
}

// ---- Writing a launch record's wire form directly.
//
// build_launch_record through a MallocMessageBuilder costs more than everything else the writer
// does for a launch, so the worker writes the same bytes itself: one segment, objects in the
// order build_launch_record allocates them, every offset taken from the compiled-in schema
// (capnp::Schema), so a schema change cannot silently misplace a field. Records that would not
// fit the builder's first segment (kFirstSegmentWords) go through the builder, so the bytes are
// always those build_launch_record + write_framed produce (tests/format/test_launch_record.cpp
// compares them).

constexpr size_t kFirstSegmentWords = 1024;  // the worker builder's scratch segment

struct StructShape {
  uint32_t data_words = 0;
  uint32_t pointers = 0;
  uint32_t words() const { return data_words + pointers; }
};

struct WireLayout {
  StructShape record, launch, slot, attribute;
  // CallRecord: byte offsets in its data section, pointer indexes, the union tag.
  uint32_t seq, thread_id, start_ns, end_ns, result, context, which;
  uint16_t launch_tag;
  uint32_t api_name, launch_ptr;
  // Launch.
  uint32_t kind, function, grid[3], block[3], shared_bytes, stream, layout_seq, ordinal;
  uint32_t via_extra_bit, cooperative_bit;
  uint32_t params, layout, attributes, kernel_name;
  // ParamSlot, LaunchAttribute.
  uint32_t slot_offset, slot_size, attribute_id, attribute_value;
};

StructShape shape_of(capnp::StructSchema schema) {
  auto s = schema.getProto().getStruct();
  return {s.getDataWordCount(), s.getPointerCount()};
}

uint32_t slot_of(capnp::StructSchema schema, const char* name) {
  return schema.getFieldByName(name).getProto().getSlot().getOffset();
}

WireLayout make_wire_layout() {
  WireLayout w{};
  auto record = capnp::Schema::from<schema::CallRecord>();
  auto launch = capnp::Schema::from<schema::Launch>();
  auto slot = capnp::Schema::from<schema::ParamSlot>();
  auto attribute = capnp::Schema::from<schema::LaunchAttribute>();
  w.record = shape_of(record);
  w.launch = shape_of(launch);
  w.slot = shape_of(slot);
  w.attribute = shape_of(attribute);
  // Slot offsets count in units of the field's own size.
  w.seq = slot_of(record, "seq") * 8;
  w.thread_id = slot_of(record, "threadId") * 8;
  w.start_ns = slot_of(record, "startNs") * 8;
  w.end_ns = slot_of(record, "endNs") * 8;
  w.result = slot_of(record, "result") * 4;
  w.context = slot_of(record, "context") * 8;
  w.which = record.getProto().getStruct().getDiscriminantOffset() * 2;
  w.launch_tag = record.getFieldByName("launch").getProto().getDiscriminantValue();
  w.api_name = slot_of(record, "apiName");
  w.launch_ptr = slot_of(record, "launch");
  w.kind = slot_of(launch, "kind") * 2;
  w.function = slot_of(launch, "function") * 8;
  const char* grid[3] = {"gridX", "gridY", "gridZ"};
  const char* block[3] = {"blockX", "blockY", "blockZ"};
  for (int i = 0; i < 3; ++i) {
    w.grid[i] = slot_of(launch, grid[i]) * 4;
    w.block[i] = slot_of(launch, block[i]) * 4;
  }
  w.shared_bytes = slot_of(launch, "sharedBytes") * 4;
  w.stream = slot_of(launch, "stream") * 8;
  w.layout_seq = slot_of(launch, "layoutSeq") * 8;
  w.ordinal = slot_of(launch, "ordinal") * 8;
  w.via_extra_bit = slot_of(launch, "viaExtra");
  w.cooperative_bit = slot_of(launch, "cooperative");
  w.params = slot_of(launch, "params");
  w.layout = slot_of(launch, "layout");
  w.attributes = slot_of(launch, "attributes");
  w.kernel_name = slot_of(launch, "kernelName");
  w.slot_offset = slot_of(slot, "offset") * 4;
  w.slot_size = slot_of(slot, "size") * 4;
  w.attribute_id = slot_of(attribute, "id") * 4;
  w.attribute_value = slot_of(attribute, "value");
  return w;
}

const WireLayout& wire_layout() {
  static const WireLayout layout = make_wire_layout();
  return layout;
}

uint64_t bytes_to_words(uint64_t bytes) { return (bytes + 7) / 8; }

// The segment being written: `words` zeroed words, objects allocated front to back.
class SegmentWriter {
 public:
  explicit SegmentWriter(uint8_t* words) : base_(words) {}
  uint32_t allocate(uint64_t words) {
    auto at = static_cast<uint32_t>(used_);
    used_ += words;
    return at;
  }
  uint64_t used() const { return used_; }
  template <class T>
  void put(uint32_t word, uint32_t byte, T value) {
    std::memcpy(base_ + word * 8 + byte, &value, sizeof value);
  }
  void put_bit(uint32_t word, uint32_t bit, bool value) {
    if (value) base_[word * 8 + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
  }
  void put_bytes(uint32_t word, const void* data, size_t n) {
    if (n != 0) std::memcpy(base_ + word * 8, data, n);
  }
  // A struct pointer at word `at` to a struct at word `target`.
  void struct_pointer(uint32_t at, uint32_t target, StructShape shape) {
    auto offset = static_cast<int32_t>(target) - static_cast<int32_t>(at) - 1;
    put<uint32_t>(at, 0, static_cast<uint32_t>(offset) << 2);
    put<uint32_t>(at, 4, shape.data_words | (shape.pointers << 16));
  }
  // A list pointer at `at` to `target` with element size code `size_code` and `count`.
  void list_pointer(uint32_t at, uint32_t target, uint32_t size_code, uint32_t count) {
    auto offset = static_cast<int32_t>(target) - static_cast<int32_t>(at) - 1;
    put<uint32_t>(at, 0, (static_cast<uint32_t>(offset) << 2) | 1u);
    put<uint32_t>(at, 4, size_code | (count << 3));
  }
  // Text or Data: allocated after everything so far, then pointed to from `at`.
  void blob(uint32_t at, const void* data, size_t size, bool text) {
    size_t bytes = size + (text ? 1 : 0);
    uint32_t target = allocate(bytes_to_words(bytes));
    put_bytes(target, data, size);
    list_pointer(at, target, 2 /* BYTE */, static_cast<uint32_t>(bytes));
  }
  // A list of `count` structs of `shape` (tag word first); returns the first element's word.
  uint32_t struct_list(uint32_t at, StructShape shape, uint32_t count) {
    uint32_t tag = allocate(1 + uint64_t{shape.words()} * count);
    list_pointer(at, tag, 7 /* INLINE_COMPOSITE */, shape.words() * count);
    put<uint32_t>(tag, 0, count << 2);
    put<uint32_t>(tag, 4, shape.data_words | (shape.pointers << 16));
    return tag + 1;
  }

 private:
  uint8_t* base_;
  uint64_t used_ = 0;
};

uint64_t direct_words(const LaunchFields& f, const WireLayout& w) {
  uint64_t words = 1 + w.record.words() + bytes_to_words(f.api_name.size() + 1) + w.launch.words() +
                   bytes_to_words(f.kernel_name.size() + 1);
  if (f.has_params) words += bytes_to_words(f.params.size());
  if (f.has_layout) words += 1 + uint64_t{w.slot.words()} * f.layout.size();
  if (!f.attributes.empty()) {
    words += 1 + uint64_t{w.attribute.words()} * f.attributes.size();
    for (const auto& a : f.attributes) words += bytes_to_words(a.value.size());
  }
  return words;
}

// Writes the framed one-segment message for `f` at `out` (8 + 8 * words bytes, which the caller
// has zeroed), allocating as build_launch_record does.
void write_direct(const LaunchFields& f, uint64_t seq, uint64_t ordinal, uint64_t words,
                  const WireLayout& w, uint8_t* out) {
  uint32_t table[2] = {0, static_cast<uint32_t>(words)};
  std::memcpy(out, table, sizeof table);
  SegmentWriter seg(out + 8);
  uint32_t root = seg.allocate(1);
  uint32_t rec = seg.allocate(w.record.words());
  seg.struct_pointer(root, rec, w.record);
  uint32_t rec_ptrs = rec + w.record.data_words;
  seg.put<uint64_t>(rec, w.seq, seq);
  seg.put<uint64_t>(rec, w.thread_id, f.thread_id);
  seg.put<int64_t>(rec, w.start_ns, f.start_ns);
  seg.put<int64_t>(rec, w.end_ns, f.end_ns);
  seg.put<int32_t>(rec, w.result, f.result);
  seg.blob(rec_ptrs + w.api_name, f.api_name.data(), f.api_name.size(), true);
  seg.put<uint64_t>(rec, w.context, f.context);
  seg.put<uint16_t>(rec, w.which, w.launch_tag);
  uint32_t launch = seg.allocate(w.launch.words());
  seg.struct_pointer(rec_ptrs + w.launch_ptr, launch, w.launch);
  uint32_t launch_ptrs = launch + w.launch.data_words;
  seg.put<uint16_t>(launch, w.kind, static_cast<uint16_t>(f.kind));
  seg.put<uint64_t>(launch, w.function, f.function);
  for (int i = 0; i < 3; ++i) {
    seg.put<uint32_t>(launch, w.grid[i], f.grid[i]);
    seg.put<uint32_t>(launch, w.block[i], f.block[i]);
  }
  seg.put<uint32_t>(launch, w.shared_bytes, f.shared_bytes);
  seg.put<uint64_t>(launch, w.stream, f.stream);
  seg.put_bit(launch, w.cooperative_bit, f.cooperative);
  seg.blob(launch_ptrs + w.kernel_name, f.kernel_name.data(), f.kernel_name.size(), true);
  if (f.layout_seq != LaunchFields::kNoLayoutSeq)
    seg.put<uint64_t>(launch, w.layout_seq, f.layout_seq);
  seg.put_bit(launch, w.via_extra_bit, f.via_extra);
  seg.put<uint64_t>(launch, w.ordinal, ordinal);
  if (f.has_params) seg.blob(launch_ptrs + w.params, f.params.data(), f.params.size(), false);
  if (f.has_layout) {
    uint32_t element =
        seg.struct_list(launch_ptrs + w.layout, w.slot, static_cast<uint32_t>(f.layout.size()));
    for (const auto& slot : f.layout) {
      seg.put<uint32_t>(element, w.slot_offset, slot.offset);
      seg.put<uint32_t>(element, w.slot_size, slot.size);
      element += w.slot.words();
    }
  }
  if (!f.attributes.empty()) {
    uint32_t element = seg.struct_list(launch_ptrs + w.attributes, w.attribute,
                                       static_cast<uint32_t>(f.attributes.size()));
    for (const auto& a : f.attributes) {
      seg.put<uint32_t>(element, w.attribute_id, a.id);
      seg.blob(element + w.attribute.data_words + w.attribute_value, a.value.data(), a.value.size(),
               false);
      element += w.attribute.words();
    }
  }
}

}  // namespace

size_t launch_entry_size(const LaunchFields& f) { return (unpadded_size(f) + 7) & ~size_t{7}; }

void write_launch_entry(const LaunchFields& f, uint64_t seq, uint64_t ordinal, uint8_t* out) {
  EntryHead h{};
  h.marker = kLaunchEntryMarker;
  h.size = static_cast<uint32_t>(launch_entry_size(f));
  h.seq = seq;
  h.ordinal = ordinal;
  h.thread_id = f.thread_id;
  h.start_ns = f.start_ns;
  h.end_ns = f.end_ns;
  h.context = f.context;
  h.function = f.function;
  h.stream = f.stream;
  h.layout_seq = f.layout_seq;
  h.result = f.result;
  std::memcpy(h.grid, f.grid, sizeof h.grid);
  std::memcpy(h.block, f.block, sizeof h.block);
  h.shared_bytes = f.shared_bytes;
  h.kind = static_cast<uint16_t>(f.kind);
  h.flags =
      static_cast<uint8_t>((f.cooperative ? kCooperative : 0) | (f.via_extra ? kViaExtra : 0) |
                           (f.has_layout ? kHasLayout : 0) | (f.has_params ? kHasParams : 0));
  h.api_len = static_cast<uint32_t>(f.api_name.size());
  h.name_len = static_cast<uint32_t>(f.kernel_name.size());
  h.layout_count = static_cast<uint32_t>(f.layout.size());
  h.attribute_count = static_cast<uint32_t>(f.attributes.size());
  h.attribute_bytes = static_cast<uint32_t>(attribute_bytes(f));
  h.params_size = static_cast<uint32_t>(f.params.size());
  std::memcpy(out, &h, sizeof h);
  uint8_t* p = out + sizeof h;
  auto put = [&p](const void* data, size_t n) {
    if (n != 0) std::memcpy(p, data, n);
    p += n;
  };
  put(f.layout.data(), f.layout.size() * sizeof(LaunchParamSlot));
  for (const auto& a : f.attributes) {
    uint32_t words[2] = {a.id, static_cast<uint32_t>(a.value.size())};
    put(words, sizeof words);
    put(a.value.data(), a.value.size());
  }
  put(f.params.data(), f.params.size());
  put(f.api_name.data(), f.api_name.size());
  put(f.kernel_name.data(), f.kernel_name.size());
  std::memset(p, 0, static_cast<size_t>(out + h.size - p));
}

namespace {

// A launch entry read back (write_launch_entry's mirror): `fields` views the entry's bytes and
// `layout`/`attributes`, which the caller reuses from entry to entry.
struct ReadEntry {
  LaunchFields fields;
  uint64_t seq = 0;
  uint64_t ordinal = 0;
  uint32_t size = 0;  // bytes the entry takes in the call buffer
};

Status read_launch_entry(const uint8_t* p, size_t left, size_t at,
                         std::vector<LaunchParamSlot>& layout,
                         std::vector<LaunchAttributeFields>& attributes, ReadEntry& entry) {
  EntryHead h;
  if (left < sizeof h) {
    return Status::error(ErrorCode::kMalformed,
                         "call buffer: truncated launch entry at byte " + std::to_string(at));
  }
  std::memcpy(&h, p, sizeof h);
  if (h.size > left || h.size < sizeof h ||
      sizeof h + uint64_t{h.layout_count} * sizeof(LaunchParamSlot) + h.attribute_bytes +
              h.params_size + h.api_len + h.name_len >
          h.size) {
    return Status::error(ErrorCode::kMalformed,
                         "call buffer: launch entry sizes wrong at byte " + std::to_string(at));
  }
  const uint8_t* q = p + sizeof h;
  layout.resize(h.layout_count);
  if (h.layout_count != 0) std::memcpy(layout.data(), q, h.layout_count * sizeof(LaunchParamSlot));
  q += h.layout_count * sizeof(LaunchParamSlot);
  attributes.resize(h.attribute_count);
  const uint8_t* attr_end = q + h.attribute_bytes;
  for (auto& a : attributes) {
    uint32_t words[2];
    if (attr_end - q < 8)
      return Status::error(ErrorCode::kMalformed,
                           "call buffer: bad launch attributes at byte " + std::to_string(at));
    std::memcpy(words, q, sizeof words);
    q += 8;
    if (static_cast<size_t>(attr_end - q) < words[1]) {
      return Status::error(ErrorCode::kMalformed,
                           "call buffer: bad launch attributes at byte " + std::to_string(at));
    }
    a.id = words[0];
    a.value = std::span<const uint8_t>(q, words[1]);
    q += words[1];
  }
  q = attr_end;
  LaunchFields& f = entry.fields;
  f.thread_id = h.thread_id;
  f.start_ns = h.start_ns;
  f.end_ns = h.end_ns;
  f.result = h.result;
  f.context = h.context;
  f.kind = static_cast<schema::Launch::Kind>(h.kind);
  f.function = h.function;
  std::memcpy(f.grid, h.grid, sizeof f.grid);
  std::memcpy(f.block, h.block, sizeof f.block);
  f.shared_bytes = h.shared_bytes;
  f.stream = h.stream;
  f.cooperative = (h.flags & kCooperative) != 0;
  f.via_extra = (h.flags & kViaExtra) != 0;
  f.has_layout = (h.flags & kHasLayout) != 0;
  f.has_params = (h.flags & kHasParams) != 0;
  f.layout_seq = h.layout_seq;
  f.layout = layout;
  f.attributes = attributes;
  f.params = std::span<const uint8_t>(q, h.params_size);
  q += h.params_size;
  f.api_name = std::string_view(reinterpret_cast<const char*>(q), h.api_len);
  q += h.api_len;
  f.kernel_name = std::string_view(reinterpret_cast<const char*>(q), h.name_len);
  entry.seq = h.seq;
  entry.ordinal = h.ordinal;
  entry.size = h.size;
  return Status::ok();
}

// Appends the framed record of `entry` to `out`: written directly when it fits one builder
// segment, else through the builder over `scratch` (zeroed on first use, zeroed again by each
// builder's destructor).
Status append_launch_record(const ReadEntry& entry, BufferPool& pool, ByteBuffer& out,
                            std::unique_ptr<capnp::word[]>& scratch) {
  const LaunchFields& f = entry.fields;
  const WireLayout& wire = wire_layout();
  if (uint64_t words = direct_words(f, wire); words <= kFirstSegmentWords) {
    size_t n = 8 + words * 8;
    reserve_out(pool, out, n);
    std::memset(out.data() + out.size(), 0, n);
    write_direct(f, entry.seq, entry.ordinal, words, wire, out.data() + out.size());
    out.set_size(out.size() + n);
    return Status::ok();
  }
  try {
    if (!scratch)
      scratch = std::make_unique<capnp::word[]>(kFirstSegmentWords);  // value-initialised: zero
    capnp::MallocMessageBuilder message(kj::arrayPtr(scratch.get(), kFirstSegmentWords));
    auto record = message.initRoot<schema::CallRecord>();
    build_launch_record(f, record);
    record.setSeq(entry.seq);
    record.getLaunch().setOrdinal(entry.ordinal);
    Segments segments = message.getSegmentsForOutput();
    size_t n = framed_size(segments);
    reserve_out(pool, out, n);
    write_framed(segments, out.data() + out.size());
    out.set_size(out.size() + n);
  } catch (const kj::Exception& e) {
    return Status::error(ErrorCode::kMalformed,
                         std::string("launch record: ") + e.getDescription().cStr())
        .at_call(entry.seq);
  }
  return Status::ok();
}

}  // namespace

Status expand_launch_entries(std::span<const uint8_t> in, BufferPool& pool, ByteBuffer& out) {
  out = pool.acquire(in.size() + in.size() / 2 + 4096);  // records are ~1.3x their entries
  std::unique_ptr<capnp::word[]>
      scratch;  // the builder's first segment, only for oversized records
  std::vector<LaunchParamSlot> layout;
  std::vector<LaunchAttributeFields> attributes;
  ReadEntry entry;
  size_t at = 0;
  while (at < in.size()) {
    const uint8_t* p = in.data() + at;
    size_t left = in.size() - at;
    uint32_t first = 0;
    if (left >= 4) std::memcpy(&first, p, 4);
    if (first != kLaunchEntryMarker) {
      size_t n = framed_message_size(p, left);
      if (n == 0) {
        return Status::error(ErrorCode::kMalformed,
                             "call buffer: malformed message at byte " + std::to_string(at));
      }
      reserve_out(pool, out, n);
      std::memcpy(out.data() + out.size(), p, n);
      out.set_size(out.size() + n);
      at += n;
      continue;
    }
    Status st = read_launch_entry(p, left, at, layout, attributes, entry);
    if (st.is_ok()) st = append_launch_record(entry, pool, out, scratch);
    if (!st.is_ok()) return st;
    at += entry.size;
  }
  return Status::ok();
}

}  // namespace detail
}  // namespace cusnap::format
