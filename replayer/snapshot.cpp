// Memory snapshots during a replay (docs/replay.md, "Memory snapshots"): an extracted capture's
// beforeLaunch snapshot is written to device memory before its launch; every other snapshot is
// a verification point, read back after a full synchronisation and compared chunk by chunk.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cusnap/common/hex.h"
#include "cusnap/format/blob_id.h"
#include "replayer/execute.h"

namespace cusnap::replayer {
namespace {

using common::hex;

}  // namespace

std::optional<AllocationRef> Executor::allocation_of(uint64_t address) const {
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return std::nullopt;
  --it;
  if (address - it->second.address >= it->second.size) return std::nullopt;
  return it->second;
}

const Tolerance* Executor::tolerance_for(const std::optional<AllocationRef>& allocation) const {
  const Tolerance* general = nullptr;
  for (const Tolerance& t : options_.tolerances) {
    if (!t.allocation) {
      if (general == nullptr) general = &t;
    } else if (allocation && allocation->address == *t.allocation) {
      return &t;  // a rule for this allocation wins over a general one
    }
  }
  return general;
}

Expected<uint64_t> Executor::snapshot_address(const Action& a, const SnapshotChunk& chunk) {
  auto live = memory_->translate(chunk.address, chunk.size);
  if (!live) {
    return Error(ErrorKind::kCapture,
                 "snapshot chunk of " + std::to_string(chunk.size) +
                     " bytes outside every replayed allocation and module variable")
        .at_call(a.seq)
        .in_record("memorySnapshot")
        .with_address(chunk.address);
  }
  return *live;
}

MaybeError Executor::restore_snapshot(const Action& a, const Snapshot& snapshot) {
  if (auto e = synchronize_all()) return e;
  for (const SnapshotChunk& chunk : snapshot.chunks) {
    auto live = snapshot_address(a, chunk);
    if (!live) return live.error();
    auto bytes = reader_.read_blob(chunk.blob);
    if (!bytes || bytes.value().size() != chunk.size) {
      return Error(ErrorKind::kCapture,
                   "reading snapshot chunk " + chunk.blob.to_hex() + ": " +
                       (bytes ? std::string("wrong size") : bytes.status().to_string()))
          .at_call(snapshot.seq)
          .in_record("memorySnapshot")
          .with_address(chunk.address);
    }
    substitute_tensor_maps(chunk.address, bytes.value());
    if (CUresult r = api_.cuMemcpyHtoD(live.value(), bytes.value().data(), chunk.size);
        r != CUDA_SUCCESS) {
      return fail(a, "restoring a snapshot chunk", r).with_address(chunk.address);
    }
    ++result_.snapshots.restored_chunks;
    result_.snapshots.restored_bytes += chunk.size;
  }
  return std::nullopt;
}

MaybeError Executor::compare_snapshot(const Action& a, const LaunchOp& op,
                                      const Snapshot& snapshot) {
  if (auto e = synchronize_all()) return e;
  SnapshotCheck check;
  check.seq = snapshot.seq;
  check.launch_seq = a.seq;
  check.launch_ordinal = op.ordinal;
  check.kernel = op.kernel_name;
  check.phase = snapshot.phase;
  std::vector<uint8_t> actual;
  for (const SnapshotChunk& chunk : snapshot.chunks) {
    auto live = snapshot_address(a, chunk);
    if (!live) return live.error();
    actual.resize(chunk.size);
    if (CUresult r = api_.cuMemcpyDtoH(actual.data(), live.value(), chunk.size);
        r != CUDA_SUCCESS) {
      return fail(a, "reading back a snapshot chunk", r).with_address(chunk.address);
    }
    substitute_tensor_maps(chunk.address, actual, true);  // the replay's maps compare as captured
    ++check.chunks;
    check.bytes += chunk.size;
    if (!result_.outputs_dir.empty() && snapshot.phase == SnapshotPhase::kAfterLaunch) {
      auto name = save_output(actual);
      if (!name) return name.error();
      check.saved.push_back(SnapshotCheck::Saved{chunk.address, chunk.size, name.value()});
    }
    format::BlobId hash = format::hash_blob(actual);
    if (hash == chunk.blob) {
      ++check.matched_chunks;
      continue;
    }
    ChunkMismatch m;
    m.address = chunk.address;
    m.size = chunk.size;
    m.expected = chunk.blob;
    m.actual = hash;
    m.allocation = allocation_of(chunk.address);
    m.bytes_known = !chunk.hash_only;
    const Tolerance* tolerance = tolerance_for(m.allocation);
    if (m.bytes_known) {
      auto expected = reader_.read_blob(chunk.blob);
      if (!expected || expected.value().size() != chunk.size) {
        return Error(ErrorKind::kCapture, "reading snapshot chunk " + chunk.blob.to_hex())
            .at_call(snapshot.seq)
            .in_record("memorySnapshot")
            .with_address(chunk.address);
      }
      const std::vector<uint8_t>& want = expected.value();
      bool first = true;
      for (uint64_t i = 0; i < chunk.size; ++i) {
        if (want[i] == actual[i]) continue;
        ++m.differing_bytes;
        if (first) {
          first = false;
          m.first_difference = chunk.address + i;
          m.expected_byte = want[i];
          m.actual_byte = actual[i];
        }
      }
      if (tolerance != nullptr) {
        unsigned size = element_size(tolerance->type);
        uint64_t base = m.allocation ? m.allocation->address : chunk.address;
        if ((chunk.address - base) % size != 0 || chunk.size % size != 0) {
          m.note = "the chunk is not a whole number of " +
                   std::string(element_type_name(tolerance->type)) +
                   " elements from the allocation's start: exact comparison only";
        } else {
          m.tolerance_text = tolerance->text;
          m.elements = compare_elements(*tolerance, want, actual, chunk.address,
                                        (chunk.address - base) / size, kWorstElements);
          m.within_tolerance = m.elements.over == 0;
        }
      }
    } else if (tolerance != nullptr) {
      m.note = "only its hash was captured: exact comparison only";
    }
    if (!m.tolerance_text.empty() && std::find(check.tolerances.begin(), check.tolerances.end(),
                                               m.tolerance_text) == check.tolerances.end()) {
      check.tolerances.push_back(m.tolerance_text);
    }
    if (m.within_tolerance) {
      ++check.within_tolerance_chunks;
    } else {
      ++check.mismatched_chunks;
    }
    if (check.mismatches.size() < kMaxReportedMismatches) check.mismatches.push_back(std::move(m));
  }
  SnapshotResults& s = result_.snapshots;
  s.compared_chunks += check.chunks;
  s.compared_bytes += check.bytes;
  s.matched_chunks += check.matched_chunks;
  s.within_tolerance_chunks += check.within_tolerance_chunks;
  s.mismatched_chunks += check.mismatched_chunks;
  if (!check.ok()) {
    // What ran before the memory was read: before a launch, not that launch itself.
    for (const OrderDependentKernel& k : result_.order_dependent_kernels)
      if (snapshot.phase == SnapshotPhase::kAfterLaunch || k.first_seq < a.seq)
        check.order_dependent.push_back(k);
    if (!check.order_dependent.empty()) ++s.order_dependent_checks;
    warn("snapshot of call " + std::to_string(snapshot.seq) + " (" +
         snapshot_phase_name(snapshot.phase) + " of launch #" + std::to_string(op.ordinal) +
         ", call " + std::to_string(a.seq) + "): " + std::to_string(check.mismatched_chunks) +
         " of " + std::to_string(check.chunks) + " chunk(s) differ, first at " +
         hex(check.mismatches.front().address) + describe_order_dependence(check.order_dependent));
  }
  s.checks.push_back(std::move(check));
  return std::nullopt;
}

}  // namespace cusnap::replayer

namespace cusnap::replayer {

std::string Executor::first_divergence() const {
  for (const CopyCheck& c : result_.copies) {
    if (c.state != VerifyState::kMismatched) continue;
    return "the device-to-host copy of call " + std::to_string(c.seq) + " (" +
           std::to_string(c.size) + " bytes from " + hex(c.address) +
           ") does not match the capture's checksum";
  }
  for (const SnapshotCheck& c : result_.snapshots.checks) {
    if (c.ok()) continue;
    return "the " + std::string(snapshot_phase_name(c.phase)) + " snapshot of call " +
           std::to_string(c.launch_seq) + " (" + c.kernel +
           "): " + std::to_string(c.mismatched_chunks) + " chunk(s) differ, first at " +
           hex(c.mismatches.front().address);
  }
  return "";
}

MaybeError Executor::tap_snapshot(const Action& a, const LaunchOp& op, SnapshotPhase phase,
                                  const GraphStep* step) {
  if (!options_.tap) return std::nullopt;
  const LaunchKey key{a.seq, step != nullptr ? step->index : 0};
  auto it = options_.tap->ranges.find(key);
  if (it == options_.tap->ranges.end()) return std::nullopt;
  const uint64_t chunk_bytes = options_.tap->chunk_bytes;
  if (chunk_bytes == 0) return Error(ErrorKind::kInvalidArgument, "snapshot chunk size 0");
  // Relocated memory holds the replay's addresses wherever the program stored pointers: not the
  // memory the capture describes.
  if (memory_->relocated_count() != 0) {
    return Error(ErrorKind::kTarget,
                 "the driver did not place " + std::to_string(memory_->relocated_count()) +
                     " captured range(s) at their addresses; snapshots of the replay need them")
        .at_call(a.seq)
        .in_record("launch");
  }
  // Everything before (or the launch itself) has finished and every copy is verified.
  if (auto e = synchronize_all()) return e;
  if (phase == SnapshotPhase::kBeforeLaunch) {
    tap_variables_.clear();
    if (auto v = options_.tap->variables.find(key); v != options_.tap->variables.end())
      if (auto e = look_up_tap_variables(a, v->second)) return e;
  }
  // What is read: the captured ranges (translated) and the variables looked up (live), in
  // address order, as a capture-time snapshot tiles them.
  struct Read {
    uint64_t address = 0;
    uint64_t size = 0;
    bool live = false;
  };
  std::vector<Read> reads;
  for (const auto& [address, size] : it->second) reads.push_back({address, size, false});
  for (const TapVariable& v : tap_variables_) reads.push_back({v.address, v.size, true});
  std::sort(reads.begin(), reads.end(),
            [](const Read& x, const Read& y) { return x.address < y.address; });
  for (size_t i = 1; i < reads.size(); ++i) {
    if (reads[i - 1].address + reads[i - 1].size > reads[i].address) {
      return Error(ErrorKind::kTarget,
                   "a module variable the replay looked up overlaps a captured range: the "
                   "driver placed it where the capture had other memory")
          .at_call(a.seq)
          .in_record("launch")
          .with_address(reads[i].address);
    }
  }
  uint64_t total = 0;
  for (const Read& r : reads) total += r.size;
  tap_bytes_.resize(total);
  TakenSnapshot taken;
  taken.launch_seq = a.seq;
  taken.graph_kernel = key.graph_kernel;
  taken.graph_node = step != nullptr ? step->node : 0;
  taken.launch_ordinal = op.ordinal;
  taken.kernel = op.kernel_name;
  taken.phase = phase;
  taken.diverged = first_divergence();
  taken.variables = tap_variables_;
  uint64_t offset = 0;
  for (const auto& [address, size, is_live] : reads) {
    auto live = is_live ? std::optional<uint64_t>(address) : memory_->translate(address, size);
    if (!live) {
      return Error(ErrorKind::kCapture, "a range of " + std::to_string(size) +
                                            " bytes live at the launch lies outside every "
                                            "replayed allocation and module variable")
          .at_call(a.seq)
          .in_record("launch")
          .with_address(address);
    }
    if (CUresult r = api_.cuMemcpyDtoH(tap_bytes_.data() + offset, *live, size);
        r != CUDA_SUCCESS) {
      return fail(a,
                  std::string("reading memory for the ") + snapshot_phase_name(phase) + " snapshot",
                  r)
          .with_address(address);
    }
    format::for_each_snapshot_chunk(
        address, std::span<const uint8_t>(tap_bytes_.data() + offset, size), chunk_bytes,
        [&](uint64_t at, std::span<const uint8_t> bytes) {
          taken.chunks.push_back(TakenChunk{at, bytes, format::hash_blob(bytes)});
        });
    offset += size;
  }
  if (auto wanted = options_.tap->arrays.find(key); wanted != options_.tap->arrays.end()) {
    if (auto e = read_tap_arrays(a, phase, wanted->second, taken.arrays)) return e;
  }
  return options_.tap->on_snapshot ? options_.tap->on_snapshot(taken) : std::nullopt;
}

MaybeError Executor::read_tap_arrays(const Action& a, SnapshotPhase phase,
                                     const std::vector<TapArray>& wanted,
                                     std::vector<TakenArray>& taken) {
  if (api_.cuMemcpy3D == nullptr)
    return Error(ErrorKind::kUnsupported, "the driver has no 3D copies to read CUDA arrays with")
        .at_call(a.seq)
        .in_record("launch");
  uint64_t total = 0;
  for (const TapArray& t : wanted) {
    if (t.width_bytes == 0 || t.height == 0 || t.depth == 0 ||
        t.width_bytes * t.height > kMaxRangeBytes / t.depth || total > kMaxRangeBytes) {
      return Error(ErrorKind::kInvalidArgument, "CUDA array extent out of limits")
          .at_call(a.seq)
          .with_handle(t.array);
    }
    total += t.width_bytes * t.height * t.depth;
  }
  tap_array_bytes_.resize(total);
  uint64_t offset = 0;
  for (const TapArray& t : wanted) {
    auto live = array_for(a, t.array);
    if (!live) return live.error();
    CUDA_MEMCPY3D c{};
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = live.value();
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = tap_array_bytes_.data() + offset;
    c.dstPitch = t.width_bytes;
    c.dstHeight = t.height;
    c.WidthInBytes = t.width_bytes;
    c.Height = t.height;
    c.Depth = t.depth;
    if (CUresult r = api_.cuMemcpy3D(&c); r != CUDA_SUCCESS) {
      return fail(a,
                  std::string("reading a CUDA array for the ") + snapshot_phase_name(phase) +
                      " snapshot",
                  r)
          .with_handle(t.array);
    }
    const uint64_t size = t.width_bytes * t.height * t.depth;
    taken.push_back(
        TakenArray{t.array, std::span<const uint8_t>(tap_array_bytes_.data() + offset, size)});
    offset += size;
  }
  return std::nullopt;
}

MaybeError Executor::look_up_tap_variables(const Action& a, const SnapshotTap::Variables& wanted) {
  auto m = modules_.find(wanted.module);
  if (m == modules_.end()) {
    return Error(ErrorKind::kCapture, "module variables of a module the replay has not loaded")
        .at_call(a.seq)
        .in_record("launch")
        .with_handle(wanted.module);
  }
  for (const std::string& name : wanted.names) {
    CUdeviceptr live = 0;
    size_t size = 0;
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    if (m->second.is_library && api_.cuLibraryGetGlobal != nullptr) {
      r = api_.cuLibraryGetGlobal(&live, &size, m->second.library, name.c_str());
    } else if (!m->second.is_library && api_.cuModuleGetGlobal != nullptr) {
      r = api_.cuModuleGetGlobal(&live, &size, m->second.module, name.c_str());
    }
    if (r != CUDA_SUCCESS || live == 0 || size == 0) {
      warn("call " + std::to_string(a.seq) + ": module variable '" + name +
           "' the image defines was not found by the driver (" + driver_.error_name(r) +
           "): the snapshots of the launch do not cover it");
      continue;
    }
    tap_variables_.push_back(TapVariable{wanted.module, m->second.is_library, name, live, size});
  }
  return std::nullopt;
}

}  // namespace cusnap::replayer
