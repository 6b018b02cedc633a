// Extraction by file work: one pass over the source finds, for every selected launch, the records
// it needs and its snapshots; then each launch is written as its own capture (extract.h).
#include "cusnap/extract/extract.h"

#include <capnp/message.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "cusnap/common/kernel_filter.h"
#include "cusnap/format/writer.h"
#include "unreadable.h"

namespace cusnap::extract {

namespace schema = format::schema;
using format::ErrorCode;
using format::Result;
using format::Status;

namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

Status fail(ErrorCode code, std::string message) { return Status::error(code, std::move(message)); }

std::string describe(uint64_t seq, const std::string& kernel) {
  return "launch seq " + std::to_string(seq) + " (" + kernel + ")";
}

format::BlobId to_blob(schema::BlobId::Reader id) { return {id.getHigh(), id.getLow()}; }

struct Range {
  uint64_t seq = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t module = 0;  // globals only
};

bool contains(const Range& r, uint64_t address, uint64_t size) {
  return address >= r.address && size <= r.size && address - r.address <= r.size - size;
}

// What is live while scanning, copied for each selected launch when it is seen.
struct LiveState {
  std::map<uint64_t, uint64_t> modules;    // handle -> moduleLoad seq
  std::map<uint64_t, uint64_t> functions;  // CUfunction / CUkernel -> functionGet seq
  // CUkernel -> its libraryKernel record. Apart from `functions`: a cuKernelGetFunction may
  // return the same value as its CUkernel (the emulator's does), and must not hide it.
  std::map<uint64_t, uint64_t> kernels;
  std::map<uint64_t, Range> allocations;  // address -> memAlloc
  std::map<uint64_t, Range> globals;      // address -> globalGet
};

struct Pending {
  LaunchPlan plan;
  uint64_t module_handle = 0;
  std::map<uint64_t, Range> allocations;
  std::map<uint64_t, Range> globals;
};

bool is_vmm(schema::MemAlloc::Kind kind) {
  using K = schema::MemAlloc::Kind;
  return kind == K::VMM_CREATE || kind == K::VMM_RESERVE || kind == K::VMM_MAP ||
         kind == K::VMM_SET_ACCESS;
}

const char* phase_name(schema::MemorySnapshot::Phase phase) {
  switch (phase) {
    case schema::MemorySnapshot::Phase::BEFORE_LAUNCH:
      return "beforeLaunch";
    case schema::MemorySnapshot::Phase::AFTER_LAUNCH:
      return "afterLaunch";
    default:
      return "onDemand";
  }
}

// Checks a snapshot's chunks against what was live at its launch and records what they cover.
Status cover_chunks(Pending& p, schema::MemorySnapshot::Reader snap, uint64_t chunk_bytes,
                    std::set<uint64_t>& allocations, std::set<uint64_t>& globals) {
  const std::string who = std::string(phase_name(snap.getPhase())) + " snapshot of " +
                          describe(p.plan.launch_seq, p.plan.kernel_name);
  uint64_t end = 0;
  bool first = true;
  for (auto chunk : snap.getChunks()) {
    uint64_t address = chunk.getAddress();
    uint64_t size = chunk.getSize();
    std::string what =
        "chunk at " + hex(address) + " (" + std::to_string(size) + " bytes) of the " + who;
    if (size == 0 || (chunk_bytes != 0 && size > chunk_bytes))
      return fail(ErrorCode::kMalformed, what +
                                             ": size is 0 or larger than the header's chunk size " +
                                             std::to_string(chunk_bytes));
    if (!first && address < end)
      return fail(ErrorCode::kMalformed, what + ": overlaps or precedes the previous chunk");
    if (address + size < address) return fail(ErrorCode::kMalformed, what + ": wraps around");
    first = false;
    end = address + size;
    if (!chunk.getHashOnly() && to_blob(chunk.getBlob()).is_null())
      return fail(ErrorCode::kMalformed, what + ": no blob and not marked hashOnly");
    auto in = [&](const std::map<uint64_t, Range>& ranges) -> const Range* {
      auto it = ranges.upper_bound(address);
      if (it == ranges.begin()) return nullptr;
      --it;
      return contains(it->second, address, size) ? &it->second : nullptr;
    };
    if (const Range* r = in(p.allocations)) {
      allocations.insert(r->seq);
    } else if (const Range* g = in(p.globals)) {
      if (g->module == p.module_handle) {
        globals.insert(g->seq);
      } else {
        p.plan.notes.push_back(what + " lies in a variable of module " + hex(g->module) +
                               ", not the launch's module: left out");
      }
    } else {
      return fail(ErrorCode::kMalformed, what +
                                             " lies outside every allocation and module "
                                             "variable live at that launch");
    }
  }
  return Status::ok();
}

Result<std::vector<LaunchPlan>> plan_records(format::Reader& source, const Selection& selection) {
  std::string error;
  std::optional<common::KernelFilter> kernel_filter = common::KernelFilter::create(
      selection.kernel_regex, common::KernelNameBase::kFunction, &error);
  if (!kernel_filter) return fail(ErrorCode::kInvalidArgument, "--kernel-name " + error);
  common::LaunchSelection filter(std::move(*kernel_filter), selection.launch_skip,
                                 selection.launch_count);
  if (selection.call_seq) {
    uint64_t seq = *selection.call_seq;
    if (seq >= source.call_count())
      return fail(ErrorCode::kNotFound, "--call " + std::to_string(seq) + ": the capture has " +
                                            std::to_string(source.call_count()) + " calls");
  }
  std::map<uint64_t, uint64_t> launch_ordinals;  // every launch: seq -> ordinal (the index)
  for (const auto& l : source.launches()) launch_ordinals[l.seq] = l.ordinal;
  const uint64_t chunk_bytes = source.header().getOptions().getSnapshotChunkBytes();

  LiveState live;
  std::map<uint64_t, Pending> pending;  // by launch seq
  std::map<uint64_t, std::set<uint64_t>> covered_allocations, covered_globals;
  Status failure;
  Status scan = source.for_each_call([&](const format::CallRef& ref) {
    auto rec = ref.get();
    const uint64_t seq = ref.seq();
    switch (rec.which()) {
      case schema::CallRecord::MODULE_LOAD:
        if (rec.getResult() == 0) live.modules[rec.getModuleLoad().getHandle()] = seq;
        break;
      case schema::CallRecord::MODULE_UNLOAD:
        if (rec.getResult() == 0) live.modules.erase(rec.getModuleUnload().getHandle());
        break;
      case schema::CallRecord::FUNCTION_GET:
        if (rec.getResult() == 0) {
          auto f = rec.getFunctionGet();
          live.functions[f.getHandle()] = seq;
          if (f.getKind() == schema::FunctionGet::Kind::LIBRARY_KERNEL)
            live.kernels[f.getHandle()] = seq;
        }
        break;
      case schema::CallRecord::GLOBAL_GET: {
        auto g = rec.getGlobalGet();
        if (rec.getResult() == 0 && g.getSize() != 0)
          live.globals[g.getAddress()] = Range{seq, g.getAddress(), g.getSize(), g.getModule()};
        break;
      }
      case schema::CallRecord::MEM_ALLOC: {
        auto a = rec.getMemAlloc();
        // A VMM reservation covers what is mapped into it (as the replayer reserves and maps
        // it); the physical handles, maps and access settings are not ranges of their own.
        bool range = !is_vmm(a.getKind()) || a.getKind() == schema::MemAlloc::Kind::VMM_RESERVE;
        if (rec.getResult() == 0 && range && a.getSize() != 0)
          live.allocations[a.getAddress()] = Range{seq, a.getAddress(), a.getSize(), 0};
        break;
      }
      case schema::CallRecord::MEM_FREE:
        if (rec.getResult() == 0) live.allocations.erase(rec.getMemFree().getAddress());
        break;
      case schema::CallRecord::LAUNCH: {
        auto l = rec.getLaunch();
        std::string name = l.getKernelName();
        // A launch the driver refused ran nothing: like replay, extraction neither selects nor
        // counts it (--call naming one gets the "not a launch record" error below).
        if (rec.getResult() != 0) break;
        bool selected = selection.call_seq ? *selection.call_seq == seq : filter.select(name);
        if (!selected) break;
        Pending p;
        p.plan.launch_seq = seq;
        p.plan.launch_ordinal = l.getOrdinal();
        p.plan.kernel_name = name;
        std::string who = describe(seq, name);
        auto fn = live.functions.find(l.getFunction());
        if (fn == live.functions.end()) {
          failure = fail(ErrorCode::kMalformed, who + ": function " + hex(l.getFunction()) +
                                                    " has no functionGet record before it");
          return false;
        }
        p.plan.function_seqs.push_back(fn->second);
        auto fget = source.call(fn->second);
        if (!fget) {
          failure = fget.status();
          return false;
        }
        auto f = fget->get().getFunctionGet();
        uint64_t module = f.getModule();
        if (f.getKind() == schema::FunctionGet::Kind::KERNEL_GET_FUNCTION) {
          auto k = live.kernels.find(f.getKernel());
          if (k == live.kernels.end()) {
            failure = fail(ErrorCode::kMalformed, who + ": kernel " + hex(f.getKernel()) +
                                                      " has no libraryKernel record before it");
            return false;
          }
          p.plan.function_seqs.insert(p.plan.function_seqs.begin(), k->second);
          auto kget = source.call(k->second);
          if (!kget) {
            failure = kget.status();
            return false;
          }
          module = kget->get().getFunctionGet().getModule();
        }
        auto m = live.modules.find(module);
        if (m == live.modules.end()) {
          failure = fail(ErrorCode::kMalformed,
                         who + ": module " + hex(module) + " is not loaded at the launch");
          return false;
        }
        p.plan.module_seq = m->second;
        p.module_handle = module;
        p.allocations = live.allocations;
        p.globals = live.globals;
        pending.emplace(seq, std::move(p));
        break;
      }
      case schema::CallRecord::MEMORY_SNAPSHOT: {
        auto s = rec.getMemorySnapshot();
        uint64_t target = s.getLaunchSeq();
        auto known = launch_ordinals.find(target);
        std::string what =
            std::string(phase_name(s.getPhase())) + " snapshot (seq " + std::to_string(seq) + ")";
        if (known == launch_ordinals.end() || target >= seq) {
          failure =
              fail(ErrorCode::kMalformed, what + " names launch seq " + std::to_string(target) +
                                              ", which is not a launch record before it");
          return false;
        }
        if (known->second != s.getLaunchOrdinal()) {
          failure = fail(ErrorCode::kMalformed,
                         what + " names launch ordinal " + std::to_string(s.getLaunchOrdinal()) +
                             " but launch seq " + std::to_string(target) + " has ordinal " +
                             std::to_string(known->second));
          return false;
        }
        auto it = pending.find(target);
        if (it == pending.end()) break;
        Pending& p = it->second;
        auto phase = s.getPhase();
        if (phase == schema::MemorySnapshot::Phase::ON_DEMAND) break;
        bool before = phase == schema::MemorySnapshot::Phase::BEFORE_LAUNCH;
        std::optional<uint64_t>& slot = before ? p.plan.before_seq : p.plan.after_seq;
        if (slot || (before && !p.plan.skipped_reason.empty())) {
          failure = fail(ErrorCode::kMalformed, what + ": " + describe(target, p.plan.kernel_name) +
                                                    " has two " + phase_name(phase) + " snapshots");
          return false;
        }
        if (s.hasSkippedReason() && s.getSkippedReason().size() != 0) {
          // Either phase may be missing for a reason (an after-state that other work
          // overlapped is not recorded); the first reason is the one reported.
          if (p.plan.skipped_reason.empty()) p.plan.skipped_reason = s.getSkippedReason();
          break;
        }
        slot = seq;
        Status st =
            cover_chunks(p, s, chunk_bytes, covered_allocations[target], covered_globals[target]);
        if (!st) {
          failure = st;
          return false;
        }
        break;
      }
      default:
        break;
    }
    return true;
  });
  if (!failure) return failure.in_file(source.path());
  if (!scan) return scan;
  if (pending.empty()) {
    if (selection.call_seq)
      return fail(ErrorCode::kNotFound,
                  "--call " + std::to_string(*selection.call_seq) +
                      " is not a launch record (or a launch the driver refused)");
    return fail(ErrorCode::kNotFound, "no launch matches --kernel-name '" + selection.kernel_regex +
                                          "' (skip " + std::to_string(selection.launch_skip) +
                                          ", count " + std::to_string(selection.launch_count) +
                                          ")");
  }
  std::vector<LaunchPlan> plans;
  for (auto& [seq, p] : pending) {
    for (uint64_t a : covered_allocations[seq]) {
      p.plan.allocation_seqs.push_back(a);
      for (const auto& [addr, r] : p.allocations)
        if (r.seq == a) p.plan.kept_ranges.emplace_back(r.address, r.size);
    }
    for (uint64_t g : covered_globals[seq]) {
      p.plan.global_seqs.push_back(g);
      for (const auto& [addr, r] : p.globals)
        if (r.seq == g) p.plan.kept_ranges.emplace_back(r.address, r.size);
    }
    plans.push_back(std::move(p.plan));
  }
  return plans;
}

}  // namespace

Result<std::vector<LaunchPlan>> plan_extraction(format::Reader& source,
                                                const Selection& selection) {
  return detail::unreadable_as_error([&] { return plan_records(source, selection); });
}

Result<std::string> output_path(const std::string& out, const LaunchPlan& plan, size_t selected) {
  const std::string seq = std::to_string(plan.launch_seq);
  if (auto pos = out.find("%n"); pos != std::string::npos) {
    std::string path = out;
    while ((pos = path.find("%n")) != std::string::npos) path.replace(pos, 2, seq);
    return path;
  }
  std::error_code ec;
  bool is_dir = std::filesystem::is_directory(out, ec);
  if (selected == 1 && !is_dir) return out;
  if (!is_dir && out.size() >= 7 && out.compare(out.size() - 7, 7, ".cusnap") == 0)
    return fail(ErrorCode::kInvalidArgument,
                std::to_string(selected) + " launches selected but -o " + out +
                    " names one file: give a directory or a pattern with %n (the launch's seq)");
  std::filesystem::create_directories(out, ec);
  if (ec) return fail(ErrorCode::kIo, "cannot create directory " + out + ": " + ec.message());
  return (std::filesystem::path(out) / ("call-" + seq + ".cusnap")).string();
}

namespace {

struct Chunk {
  uint64_t address = 0;
  uint64_t size = 0;
  format::BlobId blob;
  bool hash_only = false;
};

bool kept(const LaunchPlan& plan, uint64_t address, uint64_t size) {
  for (const auto& [a, s] : plan.kept_ranges)
    if (contains(Range{0, a, s, 0}, address, size)) return true;
  return false;
}

// Copies a blob from the source into the new file, by content.
Status copy_blob(format::Reader& source, format::Writer& writer, const format::BlobId& id,
                 const std::string& what) {
  if (writer.has_blob(id)) return Status::ok();
  if (source.find_blob(id) == nullptr)
    return fail(ErrorCode::kMalformed,
                what + ": blob " + id.to_hex() + " is missing from the source");
  auto bytes = source.read_blob(id);
  if (!bytes) return bytes.status();
  auto put = writer.put_blob(*bytes);
  if (!put) return put.status();
  if (!(*put == id))
    return fail(ErrorCode::kCorrupt,
                what + ": blob " + id.to_hex() + " hashes to " + put->to_hex());
  return Status::ok();
}

Result<ExtractedLaunch> write_records(format::Reader& source, const std::string& source_path,
                                      const LaunchPlan& plan, const std::string& out_path) {
  const std::string who = describe(plan.launch_seq, plan.kernel_name);
  const std::string later = "; extracting it needs --route replay, not implemented yet";
  if (!plan.skipped_reason.empty())
    return fail(ErrorCode::kNotFound, who + ": its snapshot was skipped at capture time (" +
                                          plan.skipped_reason + ")" + later);
  if (!plan.before_seq)
    return fail(ErrorCode::kNotFound, who +
                                          " has no beforeLaunch memory snapshot (was the capture "
                                          "taken with --snapshot-kernels matching it?)" +
                                          later);
  if (!plan.after_seq)
    return fail(ErrorCode::kNotFound, who +
                                          " has a beforeLaunch but no afterLaunch snapshot "
                                          "(the capture ended before the launch completed?)");
  ExtractedLaunch result;
  result.plan = plan;
  result.output_path = out_path;

  auto before = source.call(*plan.before_seq);
  if (!before) return before.status();
  auto after = source.call(*plan.after_seq);
  if (!after) return after.status();
  for (auto c : before->get().getMemorySnapshot().getChunks()) {
    if (!kept(plan, c.getAddress(), c.getSize())) continue;
    if (c.getHashOnly())
      return fail(ErrorCode::kInvalidArgument, who + ": its beforeLaunch chunk at " +
                                                   hex(c.getAddress()) +
                                                   " holds only a hash, nothing to restore");
    result.input_bytes += c.getSize();
  }
  for (auto c : after->get().getMemorySnapshot().getChunks())
    if (kept(plan, c.getAddress(), c.getSize())) result.expected_bytes += c.getSize();

  capnp::MallocMessageBuilder header;
  header.setRoot(source.header());
  auto h = header.getRoot<schema::CaptureHeader>();
  h.getOptions().setMode(schema::CaptureOptions::CaptureMode::SNAPSHOT);
  auto x = h.initExtract();
  x.setSourcePath(source_path);
  x.setSourceCreationTimeNs(source.header().getCreationTimeNs());
  x.setSourceHostName(source.header().getHostName());
  x.setSourcePid(source.header().getPid());
  x.setLaunchSeq(plan.launch_seq);
  x.setLaunchOrdinal(plan.launch_ordinal);
  x.setKernelName(plan.kernel_name);
  x.setRoute(schema::ExtractInfo::Route::SNAPSHOT);
  x.setMinimized(false);
  x.setInputBytes(result.input_bytes);
  x.setExpectedBytes(result.expected_bytes);
  auto writer = format::Writer::create(out_path, header);
  if (!writer) return writer.status();
  format::Writer& w = **writer;

  std::map<uint64_t, uint64_t> new_seq;  // source seq -> seq in the extracted file
  auto copy = [&](uint64_t seq, auto&& patch) -> Status {
    auto ref = source.call(seq);
    if (!ref) return ref.status();
    capnp::MallocMessageBuilder b;
    b.setRoot(ref->get());
    auto r = b.getRoot<schema::CallRecord>();
    Status st = patch(r);
    if (!st) return st;
    auto appended = w.append_call(b);
    if (!appended) return appended.status();
    new_seq[seq] = *appended;
    return Status::ok();
  };
  auto no_patch = [](schema::CallRecord::Builder) { return Status::ok(); };
  Status st = copy(plan.module_seq, [&](schema::CallRecord::Builder r) {
    auto id = to_blob(r.getModuleLoad().getImage());
    if (id.is_null())
      return fail(ErrorCode::kNotFound, who + ": its module (seq " +
                                            std::to_string(plan.module_seq) +
                                            ") has no code image in the capture");
    return copy_blob(source, w, id, who + ": module image");
  });
  for (uint64_t s : plan.function_seqs)
    if (st) st = copy(s, no_patch);
  for (uint64_t s : plan.global_seqs)
    if (st) st = copy(s, no_patch);
  for (uint64_t s : plan.allocation_seqs)
    if (st) st = copy(s, no_patch);
  uint64_t launch_seq = 0;
  if (st) {
    st = copy(plan.launch_seq, [&](schema::CallRecord::Builder r) {
      auto l = r.getLaunch();
      auto it = new_seq.find(l.getLayoutSeq());
      l.setLayoutSeq(it != new_seq.end() ? it->second : new_seq[plan.function_seqs.back()]);
      return Status::ok();
    });
    launch_seq = new_seq[plan.launch_seq];
  }
  auto copy_snapshot = [&](uint64_t seq, const char* phase) {
    return copy(seq, [&](schema::CallRecord::Builder r) {
      auto s = r.getMemorySnapshot();
      std::vector<Chunk> chunks;
      for (auto c : s.getChunks().asReader())
        if (kept(plan, c.getAddress(), c.getSize()))
          chunks.push_back({c.getAddress(), c.getSize(), to_blob(c.getBlob()), c.getHashOnly()});
      for (const Chunk& c : chunks) {
        if (c.hash_only) continue;
        Status b = copy_blob(source, w, c.blob, who + ": " + phase + " chunk at " + hex(c.address));
        if (!b) return b;
      }
      auto list = s.initChunks(static_cast<unsigned>(chunks.size()));
      for (unsigned i = 0; i < chunks.size(); ++i) {
        list[i].setAddress(chunks[i].address);
        list[i].setSize(chunks[i].size);
        list[i].getBlob().setHigh(chunks[i].blob.high);
        list[i].getBlob().setLow(chunks[i].blob.low);
        list[i].setHashOnly(chunks[i].hash_only);
      }
      s.setLaunchSeq(launch_seq);
      s.setLaunchOrdinal(0);
      return Status::ok();
    });
  };
  if (st) st = copy_snapshot(*plan.before_seq, "beforeLaunch");
  if (st) st = copy_snapshot(*plan.after_seq, "afterLaunch");
  Status closed = w.close();
  if (!st || !closed) {
    std::error_code ec;
    std::filesystem::remove(out_path, ec);
    return !st ? st : closed;
  }
  return result;
}

}  // namespace

Result<ExtractedLaunch> write_extracted(format::Reader& source, const std::string& source_path,
                                        const LaunchPlan& plan, const std::string& out_path) {
  return detail::unreadable_as_error(
      [&] { return write_records(source, source_path, plan, out_path); });
}

}  // namespace cusnap::extract
