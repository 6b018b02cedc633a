#include "compare.h"

#include <capnp/dynamic.h>
#include <capnp/schema.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <vector>

namespace cusnap::extract::test {

namespace schema = format::schema;

namespace {

// tensorMap.hostAddress: where the application kept its CUtensorMap (its stack, in two runs
// somewhere else), said for the reader only.
const std::set<std::string> kIgnored = {"seq", "threadId", "startNs", "endNs", "hostAddress"};
// Fields that hold a record's seq (translated when records of the first are left out).
const std::set<std::string> kSeqFields = {"launchSeq", "layoutSeq", "callSeq", "relatedSeq"};
// Fields that hold device addresses (translated through the allocation map).
const std::set<std::string> kAddressFields = {"address", "dst", "src", "hostPointer",
                                              "globalAddress"};
// Fields that hold handles (mapped one to one); JitOption.value may be a host pointer.
const std::set<std::string> kHandleFields = {
    "handle", "module", "function", "stream",   "context", "kernel",    "pool", "event",
    "value",  "array",  "srcArray", "dstArray", "object",  "mipmapped", "ref"};

struct Ranges {
  struct Pair {
    uint64_t a = 0, b = 0, size = 0;
  };
  std::vector<Pair> pairs;
  std::map<uint64_t, uint64_t> handles, handles_back;

  // True when `va` lies in a known range of a; `*vb` is then its counterpart in b.
  bool translate(uint64_t va, uint64_t* vb) const {
    for (const Pair& p : pairs) {
      if (va >= p.a && va - p.a < p.size) {
        *vb = p.b + (va - p.a);
        return true;
      }
    }
    return false;
  }
  bool same_address(uint64_t va, uint64_t vb) const {
    uint64_t t = 0;
    if (translate(va, &t)) return t == vb;
    return va == vb;
  }
  bool same_handle(uint64_t va, uint64_t vb) {
    auto it = handles.find(va);
    if (it != handles.end()) return it->second == vb;
    auto back = handles_back.find(vb);
    if (back != handles_back.end()) return false;
    handles[va] = vb;
    handles_back[vb] = va;
    return true;
  }
};

class Comparer {
 public:
  Comparer(bool map_values, format::Reader& a, format::Reader& b)
      : map_(map_values), reader_a_(&a), reader_b_(&b) {}
  Ranges ranges;

  std::string value(capnp::DynamicValue::Reader a, capnp::DynamicValue::Reader b,
                    const std::string& path, const std::string& field) {
    using T = capnp::DynamicValue::Type;
    if (a.getType() != b.getType()) return path + ": different types";
    switch (a.getType()) {
      case T::STRUCT:
        return structure(a.as<capnp::DynamicStruct>(), b.as<capnp::DynamicStruct>(), path);
      case T::LIST: {
        auto la = a.as<capnp::DynamicList>();
        auto lb = b.as<capnp::DynamicList>();
        if (!skip_a.empty() && field == "chunks") return chunk_set(la, lb, path);
        if (la.size() != lb.size())
          return path + ": " + std::to_string(la.size()) + " vs " + std::to_string(lb.size()) +
                 " elements";
        // Snapshot chunks are in address order, and two runs may place allocations in another
        // order: compare them as a set, a's addresses translated.
        if ((map_ || !skip_a.empty()) && field == "chunks") return chunk_set(la, lb, path);
        for (unsigned i = 0; i < la.size(); ++i) {
          std::string d = value(la[i], lb[i], path + "[" + std::to_string(i) + "]", field);
          if (!d.empty()) return d;
        }
        return "";
      }
      case T::UINT: {
        uint64_t va = a.as<uint64_t>(), vb = b.as<uint64_t>();
        if (kSeqFields.count(field) != 0) va = seq_in_b(va);
        if (va == vb) return "";
        if (map_ && kAddressFields.count(field) != 0 && ranges.same_address(va, vb)) return "";
        if (map_ && kHandleFields.count(field) != 0 && ranges.same_handle(va, vb)) return "";
        return path + ": " + std::to_string(va) + " vs " + std::to_string(vb);
      }
      case T::INT:
        return a.as<int64_t>() == b.as<int64_t>() ? "" : path + ": differs";
      case T::FLOAT:
        return a.as<double>() == b.as<double>() ? "" : path + ": differs";
      case T::BOOL:
        return a.as<bool>() == b.as<bool>() ? "" : path + ": differs";
      case T::ENUM:
        return a.as<capnp::DynamicEnum>().getRaw() == b.as<capnp::DynamicEnum>().getRaw()
                   ? ""
                   : path + ": differs";
      case T::TEXT:
        return a.as<capnp::Text>() == b.as<capnp::Text>() ? "" : path + ": differs";
      case T::DATA: {
        auto da = a.as<capnp::Data>();
        auto db = b.as<capnp::Data>();
        if (da.size() != db.size()) return path + ": sizes differ";
        // Parameter bytes: an 8-byte word that differs must be the same address in b.
        for (size_t at = 0; at < da.size(); at += 8) {
          size_t n = std::min<size_t>(8, da.size() - at);
          if (std::memcmp(da.begin() + at, db.begin() + at, n) == 0) continue;
          uint64_t va = 0, vb = 0;
          if (!map_ || n != 8) return path + ": byte " + std::to_string(at) + " differs";
          std::memcpy(&va, da.begin() + at, 8);
          std::memcpy(&vb, db.begin() + at, 8);
          // A pointer into host memory left out of the comparison (two runs place it apart).
          if (in_skipped(va)) continue;
          // A texture/surface object's handle, mapped by its texObject record before.
          if (auto h = ranges.handles.find(va); h != ranges.handles.end() && h->second == vb)
            continue;
          uint64_t t = 0;
          if (!ranges.translate(va, &t) || t != vb)
            return path + ": word at byte " + std::to_string(at) + " differs";
        }
        return "";
      }
      case T::VOID:
        return "";
      default:
        return path + ": unsupported field type";
    }
  }

  // Snapshot chunks of two runs: matched by translated address; the same size, and the same
  // hash or, where the memory holds device pointers (a linked list), bytes equal but for 8-byte
  // words that are the same address in the other run.
  std::string chunk_set(capnp::DynamicList::Reader la, capnp::DynamicList::Reader lb,
                        const std::string& path) {
    auto chunk = [](capnp::DynamicValue::Reader v) {
      return v.as<capnp::DynamicStruct>().as<schema::MemoryChunk>();
    };
    std::map<uint64_t, schema::MemoryChunk::Reader> in_b;
    for (unsigned i = 0; i < lb.size(); ++i) in_b.emplace(chunk(lb[i]).getAddress(), chunk(lb[i]));
    unsigned compared = 0;
    for (unsigned i = 0; i < la.size(); ++i) {
      auto ca = chunk(la[i]);
      const std::string where = path + "[" + std::to_string(i) + "]";
      if (in_skipped(ca.getAddress())) continue;
      ++compared;
      uint64_t translated = ca.getAddress();
      if (map_ && !ranges.translate(ca.getAddress(), &translated))
        return where + ": outside every allocation and variable";
      auto it = in_b.find(translated);
      if (it == in_b.end()) return where + ": no chunk at the same place in the second";
      auto cb = it->second;
      if (ca.getSize() != cb.getSize() || ca.getHashOnly() != cb.getHashOnly())
        return where + ": size or hashOnly differs";
      format::BlobId ia{ca.getBlob().getHigh(), ca.getBlob().getLow()};
      format::BlobId ib{cb.getBlob().getHigh(), cb.getBlob().getLow()};
      if (ia == ib) continue;
      if (ca.getHashOnly()) return where + ": hashes differ";
      auto ba = reader_a_->read_blob(ia);
      auto bb = reader_b_->read_blob(ib);
      if (!ba || !bb || ba->size() != bb->size()) return where + ": blobs unreadable";
      for (size_t at = 0; at < ba->size(); at += 8) {
        size_t n = std::min<size_t>(8, ba->size() - at);
        if (std::memcmp(ba->data() + at, bb->data() + at, n) == 0) continue;
        uint64_t va = 0, vb = 0, t = 0;
        if (n == 8) {
          std::memcpy(&va, ba->data() + at, 8);
          std::memcpy(&vb, bb->data() + at, 8);
        }
        if (!map_ || n != 8 || !ranges.translate(va, &t) || t != vb)
          return where + ": bytes differ at offset " + std::to_string(at);
      }
    }
    if (compared != lb.size())
      return path + ": " + std::to_string(compared) + " vs " + std::to_string(lb.size()) +
             " chunks";
    return "";
  }

  // Host memory only the first holds (compare_extracts' host_memory_only_in_a), and the seqs of
  // a's records left out for it (a seq of a names seq - (skipped before it) in b).
  std::vector<std::pair<uint64_t, uint64_t>> skip_a;
  std::set<uint64_t> skipped_records;
  uint64_t seq_in_b(uint64_t seq) const {
    return seq - static_cast<uint64_t>(
                     std::distance(skipped_records.begin(), skipped_records.lower_bound(seq)));
  }
  bool in_skipped(uint64_t address) const {
    for (const auto& [start, size] : skip_a)
      if (address >= start && address - start < size) return true;
    return false;
  }

  std::string structure(capnp::DynamicStruct::Reader a, capnp::DynamicStruct::Reader b,
                        const std::string& path) {
    for (auto f : a.getSchema().getNonUnionFields()) {
      std::string name = f.getProto().getName();
      if (kIgnored.count(name) != 0) continue;
      std::string d = value(a.get(f), b.get(f), path + "." + name, name);
      if (!d.empty()) return d;
    }
    KJ_IF_MAYBE (wa, a.which()) {
      KJ_IF_MAYBE (wb, b.which()) {
        if (wa->getIndex() != wb->getIndex()) return path + ": different union members";
        std::string name = wa->getProto().getName();
        return value(a.get(*wa), b.get(*wb), path + "." + name, name);
      }
      return path + ": union member only in the first";
    }
    return "";
  }

 private:
  bool map_;
  format::Reader* reader_a_;
  format::Reader* reader_b_;
};

}  // namespace

std::string compare_extracts(format::Reader& a, format::Reader& b, bool map_values,
                             bool host_memory_only_in_a) {
  auto ha = a.header(), hb = b.header();
  if (!ha.hasExtract() || !hb.hasExtract()) return "header: not an extracted capture";
  auto xa = ha.getExtract(), xb = hb.getExtract();
  Comparer cmp(map_values, a, b);
  // Host memory in a only: its memAlloc records and chunks are left out of the comparison.
  std::set<uint64_t>& skipped_records = cmp.skipped_records;
  uint64_t skipped_input = 0, skipped_expected = 0;
  if (host_memory_only_in_a) {
    using K = schema::MemAlloc::Kind;
    for (uint64_t seq = 0; seq < a.call_count(); ++seq) {
      auto r = a.call(seq);
      if (!r) return "record " + std::to_string(seq) + ": unreadable";
      auto c = r->get();
      if (!c.isMemAlloc()) continue;
      auto kind = c.getMemAlloc().getKind();
      if (kind != K::HOST && kind != K::HOST_ALLOC && kind != K::HOST_REGISTER) continue;
      skipped_records.insert(seq);
      cmp.skip_a.emplace_back(c.getMemAlloc().getAddress(), c.getMemAlloc().getSize());
    }
    for (uint64_t seq = 0; seq < a.call_count(); ++seq) {
      auto r = a.call(seq);
      if (!r || !r->get().isMemorySnapshot()) continue;
      auto snapshot = r->get().getMemorySnapshot();
      for (auto c : snapshot.getChunks()) {
        if (!cmp.in_skipped(c.getAddress())) continue;
        if (snapshot.getPhase() == schema::MemorySnapshot::Phase::BEFORE_LAUNCH)
          skipped_input += c.getSize();
        else
          skipped_expected += c.getSize();
      }
    }
  }
  if (xa.getKernelName() != xb.getKernelName()) return "header: kernel names differ";
  if (xa.getLaunchOrdinal() != xb.getLaunchOrdinal()) return "header: launch ordinals differ";
  if (xa.getInputBytes() - skipped_input != xb.getInputBytes()) return "header: input bytes differ";
  if (xa.getExpectedBytes() - skipped_expected != xb.getExpectedBytes())
    return "header: expected bytes differ";
  if (xa.getMinimized() != xb.getMinimized()) return "header: minimized differs";
  if (ha.getOptions().getSnapshotChunkBytes() != hb.getOptions().getSnapshotChunkBytes())
    return "header: chunk sizes differ";
  if (std::string d = cmp.value(capnp::toDynamic(ha.getDevices()),
                                capnp::toDynamic(hb.getDevices()), "header.devices", "devices");
      !d.empty())
    return d;
  if (a.call_count() - skipped_records.size() != b.call_count())
    return std::to_string(a.call_count() - skipped_records.size()) + " vs " +
           std::to_string(b.call_count()) + " records";
  for (uint64_t seq = 0, seq_b = 0; seq < a.call_count(); ++seq) {
    if (skipped_records.count(seq) != 0) continue;
    auto ra = a.call(seq);
    auto rb = b.call(seq_b++);
    if (!ra || !rb) return "record " + std::to_string(seq) + ": unreadable";
    auto ca = ra->get(), cb = rb->get();
    // An allocation or variable: its range in a corresponds to its range in b.
    if (ca.which() == cb.which()) {
      if (ca.isMemAlloc() && ca.getMemAlloc().getSize() == cb.getMemAlloc().getSize())
        cmp.ranges.pairs.push_back({ca.getMemAlloc().getAddress(), cb.getMemAlloc().getAddress(),
                                    ca.getMemAlloc().getSize()});
      if (ca.isGlobalGet() && ca.getGlobalGet().getSize() == cb.getGlobalGet().getSize())
        cmp.ranges.pairs.push_back({ca.getGlobalGet().getAddress(), cb.getGlobalGet().getAddress(),
                                    ca.getGlobalGet().getSize()});
    }
    std::string d =
        cmp.structure(capnp::toDynamic(ca), capnp::toDynamic(cb), "record " + std::to_string(seq));
    if (!d.empty()) return d;
  }
  return "";
}

}  // namespace cusnap::extract::test
