// inspect_snapshots: checks the memory snapshots of a capture against the capture's own records,
// through the format Reader only (no CUDA, nothing of the interceptor). Prints
//   options mode=<stream|snapshot> filter=<text> skip=<n> count=<n> chunk=<bytes>
//   snap <ordinal> <kernel> before=<chunks> after=<chunks> changed=<chunks> stored_after=<chunks>
//   skip <ordinal> <kernel> reason="<text>"
//   summary launches=<n> snapshotted=<n> skipped=<n> continuity_chunks=<n> model_bytes=<n>
// and fails (exit 1, the reasons on stderr) when
// - a snapshot record names no launch, the wrong ordinal, or comes before its launch record;
// - a launch has a before without an after snapshot or the reverse, or two of either;
// - the chunks do not tile exactly the ranges live at the launch, as the capture's own records
//   say (memAlloc of device/pitch/async/pool/managed kinds and VMM access, host memory
//   (cuMemAllocHost, cuMemHostAlloc, cuMemHostRegister; at the recorded address, as under unified
//   addressing), globalGet; frees, unmaps, module unloads), in chunk-size pieces;
// - a before chunk's blob is missing, of the wrong size or not the XXH3-128 of its bytes; an after
//   chunk not marked hashOnly has no blob;
// - continuity: the before snapshot of a launch differs from the after snapshot of the previous
//   snapshotted launch in a chunk of the same range where no record in between could have
//   changed device memory (host memory is left out: host code writes it without a record);
// - the first snapshot differs from the memory recomputed from the host-to-device payloads and
//   memsets recorded before it (bytes never written are not compared).
// --require-all: every launch must have both snapshots, or a skipped record.
// --threads: several threads allocate, free and launch concurrently. Then the records of another
// thread's allocation or free may land between a snapshot and its launch record, and another
// thread's launch may run between two snapshots: instead of exact tiling, every chunk must lie
// inside a range live at the launch, in chunk-size pieces, the after snapshot covering exactly
// what the before one did; no continuity check and no comparison with the recorded inputs.
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/reader.h"

using namespace cusnap::format;

namespace {

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

struct Live {
  uint64_t size = 0;
  bool global = false;
  uint64_t module = 0;
  bool host = false;  // pinned, mapped or registered host memory (host code writes it unrecorded)
};

struct LaunchState {
  uint64_t ordinal = 0;
  std::string kernel;
  Ranges ranges;
  int before = 0, after = 0;
  bool skipped = false;
  std::vector<std::pair<uint64_t, BlobId>> before_chunks;
};

// Bytes written into device memory by the recorded host-to-device copies and memsets.
struct Model {
  bool valid = true;
  std::map<uint64_t, std::pair<std::vector<uint8_t>, std::vector<uint8_t>>>
      memory;  // base: bytes, known

  void write(const std::map<uint64_t, Live>& live, uint64_t address, const uint8_t* bytes,
             uint64_t size, int fill = -1) {
    auto it = live.upper_bound(address);
    if (it == live.begin()) {
      valid = false;
      return;
    }
    --it;
    if (address + size > it->first + it->second.size) {
      valid = false;
      return;
    }
    auto& [data, known] = memory[it->first];
    data.resize(it->second.size);
    known.resize(it->second.size);
    uint64_t offset = address - it->first;
    for (uint64_t i = 0; i < size; ++i) {
      data[offset + i] = fill >= 0 ? static_cast<uint8_t>(fill) : bytes[i];
      known[offset + i] = 1;
    }
  }
};

int g_errors = 0;
void fail(const char* format, unsigned long long a = 0, unsigned long long b = 0,
          const char* text = "") {
  ++g_errors;
  if (g_errors <= 20) {
    std::fprintf(stderr, "inspect_snapshots: ");
    std::fprintf(stderr, format, a, b, text);
    std::fprintf(stderr, "\n");
  }
}

Ranges merged(const std::map<uint64_t, Live>& live) {
  Ranges out;
  for (const auto& [address, l] : live) {
    if (l.size == 0) continue;
    // Host ranges are never merged (as the interceptor covers them).
    if (!out.empty() && !l.host && address < out.back().first + out.back().second) {
      out.back().second =
          std::max(out.back().first + out.back().second, address + l.size) - out.back().first;
    } else {
      out.emplace_back(address, l.size);
    }
  }
  return out;
}

BlobId id_of(schema::BlobId::Reader id) { return BlobId{id.getHigh(), id.getLow()}; }

// True when `address` lies in live host memory.
bool in_host(const std::map<uint64_t, Live>& live, uint64_t address) {
  auto it = live.upper_bound(address);
  if (it == live.begin()) return false;
  --it;
  return it->second.host && address < it->first + it->second.size;
}

}  // namespace

int main(int argc, char** argv) {
  bool require_all = false;
  bool continuity = true;
  const char* path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--require-all") == 0) {
      require_all = true;
    } else if (std::strcmp(argv[i], "--threads") == 0) {
      continuity = false;
    } else {
      path = argv[i];
    }
  }
  if (path == nullptr) {
    std::fprintf(stderr, "usage: inspect_snapshots [--require-all] FILE\n");
    return 2;
  }
  auto opened = Reader::open(path);
  if (!opened) {
    std::fprintf(stderr, "inspect_snapshots: %s\n", opened.status().to_string().c_str());
    return 2;
  }
  Reader& reader = *opened.value();
  auto options = reader.header().getOptions();
  bool snapshot_mode = options.getMode() == schema::CaptureOptions::CaptureMode::SNAPSHOT;
  uint64_t chunk = options.getSnapshotChunkBytes();
  std::printf("options mode=%s filter=%s skip=%llu count=%llu chunk=%llu\n",
              snapshot_mode ? "snapshot" : "stream", options.getKernelRegex().cStr(),
              static_cast<unsigned long long>(options.getLaunchSkip()),
              static_cast<unsigned long long>(options.getLaunchCount()),
              static_cast<unsigned long long>(chunk));
  if (snapshot_mode && chunk == 0) fail("snapshot capture with chunk size 0");

  std::map<uint64_t, Live> live;
  std::map<uint64_t, LaunchState> launches;  // by seq
  Model model;
  // --threads: other threads' asynchronous copies on their own streams may not have executed
  // when a launch on another stream is snapshotted: no model to compare with.
  model.valid = continuity;
  bool first_snapshot_seen = false;
  uint64_t model_bytes = 0, continuity_chunks = 0, snapshotted = 0, skipped = 0;
  // The previous after snapshot, and whether anything since could have changed device memory.
  std::map<uint64_t, std::pair<uint64_t, BlobId>> last_after;  // address: size, id
  bool clean = false;
  uint64_t launches_since_after = 0;
  std::map<uint64_t, uint64_t> async_copies;  // memcpy seq -> dst, for deferred payloads

  auto apply_payload = [&](uint64_t dst, const BlobId& id, uint64_t size) {
    auto bytes = reader.read_blob(id);
    if (!bytes || bytes.value().size() != size) {
      model.valid = false;
      return;
    }
    model.write(live, dst, bytes.value().data(), size);
  };

  Status status = reader.for_each_call([&](const CallRef& ref) {
    auto call = ref.get();
    bool ok = call.getResult() == 0;
    switch (call.which()) {
      case schema::CallRecord::MEM_ALLOC: {
        auto m = call.getMemAlloc();
        using K = schema::MemAlloc::Kind;
        K kind = m.getKind();
        bool device = kind == K::DEVICE || kind == K::PITCH || kind == K::ASYNC ||
                      kind == K::FROM_POOL || kind == K::MANAGED || kind == K::VMM_SET_ACCESS;
        if (ok && device && m.getAddress() != 0) live[m.getAddress()] = Live{m.getSize(), false, 0};
        // Host memory the device reaches: under unified addressing (the emulator) its device
        // address is the recorded one.
        bool host = kind == K::HOST || kind == K::HOST_ALLOC || kind == K::HOST_REGISTER;
        if (ok && host && m.getAddress() != 0)
          live[m.getAddress()] = Live{m.getSize(), false, 0, true};
        if (kind != K::HOST && kind != K::HOST_REGISTER && kind != K::VMM_RESERVE &&
            kind != K::VMM_CREATE)
          clean = false;
        break;
      }
      case schema::CallRecord::MEM_FREE: {
        auto f = call.getMemFree();
        using K = schema::MemFree::Kind;
        if (f.getKind() == K::VMM_UNMAP || f.getKind() == K::VMM_ADDRESS_FREE) {
          for (auto it = live.lower_bound(f.getAddress());
               it != live.end() && it->first < f.getAddress() + f.getSize();) {
            it = live.erase(it);
          }
        } else if (f.getKind() == K::DEVICE || f.getKind() == K::ASYNC || f.getKind() == K::HOST ||
                   f.getKind() == K::HOST_UNREGISTER) {
          live.erase(f.getAddress());
        }
        clean = false;
        break;
      }
      case schema::CallRecord::GLOBAL_GET: {
        auto g = call.getGlobalGet();
        if (ok && g.getAddress() != 0 && g.getSize() != 0)
          live[g.getAddress()] = Live{g.getSize(), true, g.getModule()};
        break;
      }
      case schema::CallRecord::MODULE_UNLOAD: {
        uint64_t module = call.getModuleUnload().getHandle();
        for (auto it = live.begin(); it != live.end();) {
          it = it->second.global && it->second.module == module ? live.erase(it) : std::next(it);
        }
        clean = false;
        break;
      }
      case schema::CallRecord::MEMCPY: {
        auto m = call.getMemcpy();
        using K = schema::Memcpy::Kind;
        if (m.getKind() == K::DEVICE_TO_HOST) break;  // changes no device memory
        clean = false;
        if (first_snapshot_seen || !model.valid) break;
        if (m.getKind() == K::HOST_TO_DEVICE && m.getDimensions() <= 1 &&
            !id_of(m.getPayload()).is_null()) {
          apply_payload(m.getDst(), id_of(m.getPayload()), m.getSize());
          if (m.getAsync()) async_copies[ref.seq()] = m.getDst();
        } else if (m.getKind() != K::HOST_TO_HOST) {
          model.valid = false;  // a write this model does not follow
        }
        break;
      }
      case schema::CallRecord::DEFERRED_RESULT: {
        auto d = call.getDeferredResult();
        auto it = async_copies.find(d.getCallSeq());
        if (!first_snapshot_seen && model.valid && it != async_copies.end() &&
            !id_of(d.getPayload()).is_null()) {
          auto copy = reader.call(d.getCallSeq());
          if (copy)
            apply_payload(it->second, id_of(d.getPayload()),
                          copy.value().get().getMemcpy().getSize());
        }
        break;
      }
      case schema::CallRecord::MEMSET: {
        auto m = call.getMemset();
        clean = false;
        if (first_snapshot_seen || !model.valid) break;
        if (m.getHeight() <= 1 && m.getElementSize() == 1) {
          model.write(live, m.getAddress(), nullptr, m.getWidth(),
                      static_cast<int>(m.getValue() & 0xff));
        } else {
          model.valid = false;
        }
        break;
      }
      case schema::CallRecord::LAUNCH: {
        auto l = call.getLaunch();
        LaunchState state;
        state.ordinal = l.getOrdinal();
        state.kernel = l.getKernelName().cStr();
        state.ranges = merged(live);
        launches[ref.seq()] = std::move(state);
        // Between one launch's after snapshot and the next one's before snapshot, the only launch
        // allowed is that next one (its record comes first; its snapshot was taken before it ran).
        if (launches_since_after++ > 0) clean = false;
        break;
      }
      case schema::CallRecord::GENERIC:
        if (call.getGeneric().getAffectsDeviceState()) {
          clean = false;
          if (!first_snapshot_seen) model.valid = false;
        }
        break;
      case schema::CallRecord::MEMORY_SNAPSHOT: {
        auto s = call.getMemorySnapshot();
        auto it = launches.find(s.getLaunchSeq());
        if (it == launches.end()) {
          fail("snapshot at seq %llu names launch seq %llu, which is no earlier launch record",
               ref.seq(), s.getLaunchSeq());
          break;
        }
        LaunchState& launch = it->second;
        if (s.getLaunchOrdinal() != launch.ordinal) {
          fail("snapshot of launch seq %llu says ordinal %llu", s.getLaunchSeq(),
               s.getLaunchOrdinal());
        }
        bool after = s.getPhase() == schema::MemorySnapshot::Phase::AFTER_LAUNCH;
        if (s.getSkippedReason().size() > 0) {
          if (s.getChunks().size() != 0)
            fail("skipped snapshot of launch %llu has chunks", launch.ordinal);
          if (!launch.skipped) {
            ++skipped;
            std::printf("skip %llu %s reason=\"%s\"\n",
                        static_cast<unsigned long long>(launch.ordinal), launch.kernel.c_str(),
                        s.getSkippedReason().cStr());
          }
          launch.skipped = true;
          clean = false;
          // The launch ran without a snapshot: its writes are not in the host-to-device model.
          if (!first_snapshot_seen) model.valid = false;
          break;
        }
        (after ? launch.after : launch.before)++;
        auto chunks = s.getChunks();
        if (!continuity) {  // --threads: coverage inside the live ranges, same before and after
          uint64_t previous_end = 0;
          for (unsigned k = 0; k < chunks.size(); ++k) {
            uint64_t address = chunks[k].getAddress(), size = chunks[k].getSize();
            bool inside = false;
            for (const auto& [base, length] : launch.ranges) {
              inside |= address >= base && address + size <= base + length;
            }
            if (!inside || size == 0 || size > chunk || address < previous_end) {
              fail("launch %llu: chunk %llu is not inside a live range in order", launch.ordinal,
                   k);
            }
            previous_end = address + size;
            if (after &&
                (k >= launch.before_chunks.size() || launch.before_chunks[k].first != address)) {
              fail("launch %llu: after chunk %llu does not match the before snapshot",
                   launch.ordinal, k);
            }
          }
          if (after && chunks.size() != launch.before_chunks.size()) {
            fail("launch %llu: after and before snapshots differ in coverage", launch.ordinal);
          }
        }
        // Exact tiling of the live ranges.
        size_t c = 0;
        for (const auto& [base, size] : continuity ? launch.ranges : Ranges{}) {
          for (uint64_t offset = 0; offset < size && chunk != 0; offset += chunk, ++c) {
            uint64_t expect = std::min(chunk, size - offset);
            if (c >= chunks.size() || chunks[c].getAddress() != base + offset ||
                chunks[c].getSize() != expect) {
              fail("launch %llu: chunk %llu does not tile the live ranges%s", launch.ordinal, c,
                   after ? " (after)" : " (before)");
              c = chunks.size() + 1;
              break;
            }
          }
          if (c > chunks.size()) break;
        }
        if (continuity && c != chunks.size())
          fail("launch %llu: %llu chunks, the live ranges need a different count", launch.ordinal,
               chunks.size());
        unsigned changed = 0, stored_after = 0;
        if (!after) {
          launch.before_chunks.clear();
          if (clean && continuity) {
            for (auto ch : chunks) {
              auto prev = last_after.find(ch.getAddress());
              if (prev == last_after.end() || prev->second.first != ch.getSize()) continue;
              ++continuity_chunks;
              if (!(prev->second.second == id_of(ch.getBlob()))) {
                fail(
                    "launch %llu: before chunk at 0x%llx differs from the previous launch's after "
                    "state, "
                    "with nothing in between",
                    launch.ordinal, ch.getAddress());
              }
            }
          }
        }
        for (auto ch : chunks) {
          BlobId id = id_of(ch.getBlob());
          if (!after) {
            launch.before_chunks.emplace_back(ch.getAddress(), id);
            if (ch.getHashOnly()) fail("launch %llu: a before chunk is hashOnly", launch.ordinal);
            auto bytes = reader.read_blob(id);
            if (!bytes) {
              fail("launch %llu: before chunk at 0x%llx: blob missing", launch.ordinal,
                   ch.getAddress());
              continue;
            }
            if (bytes.value().size() != ch.getSize() || !(hash_blob(bytes.value()) == id)) {
              fail("launch %llu: before chunk at 0x%llx: wrong size or hash", launch.ordinal,
                   ch.getAddress());
            }
            if (!first_snapshot_seen && model.valid) {
              auto m = model.memory.upper_bound(ch.getAddress());
              if (m != model.memory.begin()) {
                --m;
                auto& [data, known] = m->second;
                uint64_t offset = ch.getAddress() - m->first;
                for (uint64_t i = 0; i < ch.getSize() && offset + i < data.size(); ++i) {
                  if (!known[offset + i]) continue;
                  ++model_bytes;
                  if (data[offset + i] != bytes.value()[i]) {
                    fail(
                        "first snapshot: byte at 0x%llx is %llu, the recorded host-to-device data "
                        "says otherwise",
                        ch.getAddress() + i, bytes.value()[i]);
                    break;
                  }
                }
              }
            }
          } else {
            bool was_same = false;
            for (const auto& [address, before_id] : launch.before_chunks) {
              if (address == ch.getAddress()) was_same = before_id == id;
            }
            changed += was_same ? 0 : 1;
            if (!ch.getHashOnly()) {
              ++stored_after;
              if (reader.find_blob(id) == nullptr) {
                fail("launch %llu: after chunk at 0x%llx is not hashOnly but has no blob",
                     launch.ordinal, ch.getAddress());
              }
            } else if (was_same) {
              fail("launch %llu: unchanged after chunk at 0x%llx is marked hashOnly",
                   launch.ordinal, ch.getAddress());
            }
          }
        }
        if (!after) {
          first_snapshot_seen = true;
        } else {
          last_after.clear();
          // Host memory is left out of continuity: host code changes it without a record.
          for (auto ch : chunks) {
            if (!in_host(live, ch.getAddress()))
              last_after[ch.getAddress()] = {ch.getSize(), id_of(ch.getBlob())};
          }
          clean = true;
          launches_since_after = 0;
          ++snapshotted;
          std::printf("snap %llu %s before=%zu after=%u changed=%u stored_after=%u\n",
                      static_cast<unsigned long long>(launch.ordinal), launch.kernel.c_str(),
                      launch.before_chunks.size(), chunks.size(), changed, stored_after);
        }
        break;
      }
      default: {
        // Records that cannot change device memory keep the chain clean.
        auto which = call.which();
        bool harmless =
            which == schema::CallRecord::TOOL_EVENT ||
            which == schema::CallRecord::STREAM_SYNCHRONIZE ||
            which == schema::CallRecord::CONTEXT_SYNCHRONIZE ||
            which == schema::CallRecord::EVENT_SYNCHRONIZE ||
            which == schema::CallRecord::EVENT_QUERY || which == schema::CallRecord::STREAM_QUERY ||
            which == schema::CallRecord::EVENT_ELAPSED_TIME ||
            which == schema::CallRecord::EVENT_RECORD ||
            which == schema::CallRecord::EVENT_CREATE || which == schema::CallRecord::FUNCTION_GET;
        if (!harmless) clean = false;
        break;
      }
    }
    return true;
  });
  if (!status) {
    std::fprintf(stderr, "inspect_snapshots: %s\n", status.to_string().c_str());
    return 1;
  }
  for (const auto& [seq, launch] : launches) {
    if (launch.skipped) continue;
    if (launch.before != launch.after || launch.before > 1) {
      fail("launch %llu has %llu before and a different number of after snapshots", launch.ordinal,
           launch.before);
    }
    if (require_all && launch.before != 1) fail("launch %llu has no snapshot", launch.ordinal);
  }
  std::printf(
      "summary launches=%zu snapshotted=%llu skipped=%llu continuity_chunks=%llu "
      "model_bytes=%llu\n",
      launches.size(), static_cast<unsigned long long>(snapshotted),
      static_cast<unsigned long long>(skipped), static_cast<unsigned long long>(continuity_chunks),
      static_cast<unsigned long long>(model_bytes));
  return g_errors == 0 ? 0 : 1;
}
