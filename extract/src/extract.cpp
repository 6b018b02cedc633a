// Extraction by file work: one pass over the source finds, for every selected launch, the records
// it needs and its snapshots; then each launch is written as its own capture (extract.h).
#include "cusnap/extract/extract.h"

#include <capnp/message.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "cusnap/common/hex.h"
#include "cusnap/common/kernel_filter.h"
#include "cusnap/fatbin/variables.h"
#include "cusnap/format/launch_params.h"
#include "cusnap/format/snapshot_ranges.h"
#include "cusnap/format/writer.h"
#include "internal.h"
#include "replayer/graph_model.h"
#include "unreadable.h"

namespace cusnap::extract {

namespace schema = format::schema;
using format::ErrorCode;
using format::Result;
using format::Status;
using format::to_blob;

namespace {

using common::hex;

Status fail(ErrorCode code, std::string message) { return Status::error(code, std::move(message)); }

std::string describe(uint64_t seq, const std::string& kernel) {
  return "launch seq " + std::to_string(seq) + " (" + kernel + ")";
}

// Pending launches by the replay tap's name for them (detail::launch_key).
using Key = replayer::LaunchKey;

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
  // Module handle -> the names of its variables a globalGet record (the application's or the
  // interceptor's) looked up since its load; and the first launch record after its load.
  std::map<uint64_t, std::set<std::string>> global_names;
  std::map<uint64_t, uint64_t> first_launch;
  std::set<uint64_t> awaiting_launch;  // modules loaded with no launch record after them yet
  // Tensor maps: the 128 bytes a successful tensorMap record left -> the records that made them
  // (the encode, then each cuTensorMapReplaceAddress), in capture order (schema 8).
  std::map<std::string, std::vector<uint64_t>> tensor_maps;
  // Texture and surface objects (schema 6) by value, and the CUDA arrays (create, create3d
  // records) by handle: a launch that takes an object gets its record and, over an array, the
  // array's record and contents.
  struct Object {
    uint64_t seq = 0;  // the texObject create record
    std::string text;  // "texture object 0x.. over CUDA array 0x.."
    int32_t type = 0;  // CUresourcetype: 0 array, 1 mipmapped array, 2 linear, 3 pitch2D
    uint64_t array = 0;
  };
  std::map<uint64_t, Object> objects;
  std::map<uint64_t, uint64_t> arrays;       // CUarray -> its create record
  std::map<uint64_t, uint64_t> array_fills;  // an extract's: CUarray -> its host-to-array copy
  // Legacy texture/surface references of modules (schema 8), by CUtexref/CUsurfref: the
  // records that give each its state now (its look-up, then the latest record of each setting;
  // all bindings count as one setting), and what it is bound to.
  struct Reference {
    uint64_t module = 0;
    std::string text;                                      // "texture reference 'tex2d'"
    std::map<std::pair<int, int32_t>, uint64_t> settings;  // (setting, dimension) -> record
    uint64_t array = 0;                                    // bound to a plain CUDA array
    bool mipmapped = false;                                // bound to a mipmapped array
  };
  std::map<uint64_t, Reference> references;
  // Memory that graphs' allocation nodes made (address -> the graphNode record): kernel nodes
  // reach it while their graph runs, and the replay maps it at its captured address for good
  // (docs/replay.md, "Graphs"), so a kernel node's extract covers it like any allocation.
  std::map<uint64_t, Range> graph_allocations;
};

struct Pending {
  LaunchPlan plan;
  uint64_t module_handle = 0;
  std::map<uint64_t, Range> allocations;
  std::map<uint64_t, Range> globals;
  std::vector<format::AddressRange> host_memory;  // live host allocations (the replay route's gap)
  std::set<std::string> recorded_variables;       // live.global_names of the launch's module
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
    case schema::MemorySnapshot::Phase::RANGE_START:
      return "rangeStart";
    default:
      return "onDemand";
  }
}

struct ChunkView {
  uint64_t address = 0;
  uint64_t size = 0;
  bool no_blob = false;  // neither a blob nor marked hashOnly
};

// Checks a snapshot's chunks against what was live at its launch and records what they cover
// (`who`: the snapshot, for messages).
Status cover_chunks(Pending& p, const std::string& who, const std::vector<ChunkView>& chunks,
                    uint64_t chunk_bytes, std::set<uint64_t>& allocations,
                    std::set<uint64_t>& globals) {
  uint64_t end = 0;
  bool first = true;
  for (const ChunkView& chunk : chunks) {
    uint64_t address = chunk.address;
    uint64_t size = chunk.size;
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
    if (chunk.no_blob)
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

}  // namespace

std::optional<Route> parse_route(const std::string& text) {
  if (text == "auto") return Route::kAuto;
  if (text == "snapshots" || text == "snapshot") return Route::kSnapshots;
  if (text == "replay") return Route::kReplay;
  return std::nullopt;
}

namespace {

// The variables the image of the moduleLoad record at `seq` defines (none without an image).
Result<std::vector<fatbin::Variable>> module_image_variables(format::Reader& source, uint64_t seq) {
  auto ref = source.call(seq);
  if (!ref) return ref.status();
  auto id = to_blob(ref->get().getModuleLoad().getImage());
  if (id.is_null() || source.find_blob(id) == nullptr) return std::vector<fatbin::Variable>{};
  auto bytes = source.read_blob(id);
  if (!bytes) return bytes.status();
  return fatbin::image_variables(*bytes);
}

Result<std::vector<LaunchPlan>> plan_records(format::Reader& source, const Selection& selection,
                                             const ExtractOptions& options) {
  std::string error;
  std::optional<common::KernelFilter> kernel_filter =
      common::KernelFilter::create(selection.kernel_regex, selection.name_base, &error);
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
  // The replay route's chunk size: --snapshot-chunk, else the source's (a capture records its
  // configured size even without snapshots), else the capture default.
  const uint64_t replay_chunk_bytes = options.chunk_bytes != 0 ? options.chunk_bytes
                                      : chunk_bytes != 0       ? chunk_bytes
                                                               : format::kDefaultSnapshotChunkBytes;

  LiveState live;
  const bool source_is_extract = source.header().hasExtract();
  format::SnapshotRanges snapshot_ranges;  // what a capture-time snapshot covers (the shim's rule)
  std::map<Key, Pending> pending;
  std::map<Key, std::set<uint64_t>> covered_allocations, covered_globals;
  // The kernel nodes each graph launch runs (replayer/graph_model.h), built from the capture the
  // first time a graph launch is seen.
  // (GraphKernel::kernel points into graph_plan.)
  std::optional<replayer::Plan> graph_plan;
  std::optional<std::map<uint64_t, std::vector<replayer::GraphKernel>>> graph_kernels;
  Status failure;
  // Adds the CUDA array `handle` a launch reaches through `via` (an object or reference) to the
  // plan: its record, extent and (an extract's) fill. Returns why it cannot, or "".
  auto plan_array = [&](LaunchPlan& plan, uint64_t handle, const std::string& via) -> std::string {
    for (const PlannedArray& a : plan.arrays)
      if (a.handle == handle) return "";
    auto made = live.arrays.find(handle);
    if (made == live.arrays.end())
      return "CUDA array " + hex(handle) +
             " is a mipmapped array's level or was made by no record before the launch, and "
             "extracts recreate only plain CUDA arrays";
    auto rec = source.call(made->second);
    if (!rec) return rec.status().to_string();
    auto extent = format::array_extent(rec->get().getArray());
    if (!extent)
      return "CUDA array " + hex(handle) + " cannot be read back: " + extent.status().message();
    PlannedArray planned{made->second, handle, *extent, via, std::nullopt, std::nullopt};
    if (auto fill = live.array_fills.find(handle); fill != live.array_fills.end())
      planned.fill_seq = fill->second;
    plan.arrays.push_back(std::move(planned));
    return "";
  };
  // Plans one selected launch: a launch record (graph_node 0) or one kernel node of a graph
  // launch, whose parameters `l` holds (a graphNode record's, or a graphExec setNodeParams').
  auto plan_launch = [&](uint64_t seq, schema::Launch::Reader l, uint64_t ordinal,
                         uint64_t graph_node, uint64_t kernel_index,
                         uint64_t node_record_seq) -> bool {
    std::string name = l.getKernelName();
    Pending p;
    p.plan.launch_seq = seq;
    p.plan.launch_ordinal = ordinal;
    p.plan.kernel_name = name;
    p.plan.graph_node = graph_node;
    p.plan.graph_kernel_index = kernel_index;
    p.plan.node_record_seq = node_record_seq;
    std::string who = describe(p.plan);
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
    p.plan.module_handle = module;
    // Texture/surface objects among the 8-byte parameters (the replay's rule for mapping them,
    // docs/replay.md): the extract recreates each, and the CUDA array under it with its contents
    // (docs/extract.md, "Textures and surfaces").
    auto params = l.getParams();
    format::for_each_word_slot(params.size(), l.getLayout(), true, [&](size_t offset) {
      uint64_t value = 0;
      std::memcpy(&value, params.begin() + offset, 8);
      auto object = live.objects.find(value);
      if (object == live.objects.end()) return;
      const LiveState::Object& o = object->second;
      auto refuse = [&](const std::string& why) {
        if (p.plan.unsupported_reason.empty())
          p.plan.unsupported_reason =
              "its parameter at offset " + std::to_string(offset) + " is " + o.text + ": " + why;
      };
      if (std::find(p.plan.object_seqs.begin(), p.plan.object_seqs.end(), o.seq) !=
          p.plan.object_seqs.end())
        return;
      if (o.type == 1)
        return refuse("extracts do not recreate mipmapped arrays (not supported yet)");
      if (o.type == 0) {
        std::string why = plan_array(p.plan, o.array, o.text);
        if (!why.empty()) return refuse(why);
      }
      p.plan.object_seqs.push_back(o.seq);
    });
    // The module's legacy texture/surface references (its kernels may sample or write any):
    // each one's records, and the array it is bound to.
    for (const auto& entry : live.references) {
      const LiveState::Reference& r = entry.second;  // (not a structured binding: captured below)
      if (r.module != module) continue;
      auto refuse = [&](const std::string& why) {
        if (p.plan.unsupported_reason.empty())
          p.plan.unsupported_reason = "its module " + hex(module) + " binds " + r.text + ": " + why;
      };
      if (r.mipmapped) {
        refuse("extracts do not recreate mipmapped arrays (not supported yet)");
        continue;
      }
      if (r.array != 0) {
        std::string why = plan_array(p.plan, r.array, r.text);
        if (!why.empty()) refuse(why);
      }
      for (const auto& [setting, record] : r.settings) p.plan.texref_seqs.push_back(record);
    }
    std::sort(p.plan.texref_seqs.begin(), p.plan.texref_seqs.end());
    // Tensor maps among the parameters (where launch_params.h says one may sit): the records
    // that made them go into the extract, so its replay encodes them on its own driver.
    std::set<uint64_t> map_seqs;
    format::for_each_tensor_map_slot(params.size(), l.getLayout(), true, [&](size_t offset) {
      auto made = live.tensor_maps.find(std::string(
          reinterpret_cast<const char*>(params.begin()) + offset, format::kTensorMapBytes));
      if (made != live.tensor_maps.end()) map_seqs.insert(made->second.begin(), made->second.end());
    });
    p.plan.tensor_map_seqs.assign(map_seqs.begin(), map_seqs.end());
    p.allocations = live.allocations;
    p.globals = live.globals;
    std::vector<format::AddressRange> graph_memory;
    if (graph_node != 0) {
      for (const auto& [address, r] : live.graph_allocations) {
        // Not where an allocation of its own lies (the driver reused the range).
        auto next = p.allocations.lower_bound(address);
        if (next != p.allocations.end() && next->first < address + r.size) continue;
        if (next != p.allocations.begin() &&
            std::prev(next)->first + std::prev(next)->second.size > address)
          continue;
        p.allocations[address] = r;
        graph_memory.emplace_back(address, r.size);
      }
    }
    if (options.route != Route::kSnapshots) {
      if (graph_memory.empty()) {
        p.plan.snapshot_ranges = snapshot_ranges.live();
      } else {
        // The shim's rule with the graph's memory tracked as allocations.
        format::SnapshotRanges with_graph = snapshot_ranges;
        for (const auto& [address, size] : graph_memory)
          with_graph.track(address, size, format::SnapshotRangeKind::kAllocation);
        p.plan.snapshot_ranges = with_graph.live();
      }
      p.host_memory = snapshot_ranges.unreadable();
      p.plan.chunk_bytes = replay_chunk_bytes;
      p.recorded_variables = live.global_names[module];
      p.plan.variables_seq = live.first_launch.count(module) != 0 ? live.first_launch[module] : seq;
    }
    pending.emplace(detail::launch_key(p.plan), std::move(p));
    return true;
  };
  Status scan = source.for_each_call([&](const format::CallRef& ref) {
    auto rec = ref.get();
    const uint64_t seq = ref.seq();
    snapshot_ranges.apply(rec);
    switch (rec.which()) {
      case schema::CallRecord::MODULE_LOAD:
        if (rec.getResult() == 0) {
          const uint64_t handle = rec.getModuleLoad().getHandle();
          live.modules[handle] = seq;
          live.global_names.erase(handle);
          live.first_launch.erase(handle);
          live.awaiting_launch.insert(handle);
        }
        break;
      case schema::CallRecord::MODULE_UNLOAD:
        if (rec.getResult() == 0) {
          live.modules.erase(rec.getModuleUnload().getHandle());
          std::erase_if(live.references, [&](const auto& r) {
            return r.second.module == rec.getModuleUnload().getHandle();
          });
        }
        break;
      case schema::CallRecord::TEX_REF: {
        using Op = schema::TexRefCall::Op;
        auto t = rec.getTexRef();
        if (rec.getResult() != 0) break;
        if (t.getOp() == Op::GET_TEX_REF || t.getOp() == Op::GET_SURF_REF) {
          LiveState::Reference& r = live.references[t.getRef()];
          r = LiveState::Reference{};
          r.module = t.getModule();
          r.text = std::string(t.getOp() == Op::GET_SURF_REF ? "surface" : "texture") +
                   " reference '" + std::string(t.getName()) + "'";
          r.settings[{-1, 0}] = seq;
          break;
        }
        auto r = live.references.find(t.getRef());
        if (r == live.references.end()) break;  // a reference of no module (cuTexRefCreate)
        if (t.getOp() == Op::DESTROY) {
          live.references.erase(r);
          break;
        }
        // Bindings replace each other; every other setting is its own (per dimension).
        const bool binding = t.getOp() == Op::SET_ARRAY || t.getOp() == Op::SET_MIPMAPPED_ARRAY ||
                             t.getOp() == Op::SET_ADDRESS || t.getOp() == Op::SET_ADDRESS2D ||
                             t.getOp() == Op::SURF_SET_ARRAY;
        const int setting = binding ? 0 : 1 + static_cast<int>(t.getOp());
        r->second.settings[{setting, t.getOp() == Op::SET_ADDRESS_MODE ? t.getDim() : 0}] = seq;
        if (binding) {
          r->second.array =
              t.getOp() == Op::SET_ARRAY || t.getOp() == Op::SURF_SET_ARRAY ? t.getArray() : 0;
          r->second.mipmapped = t.getOp() == Op::SET_MIPMAPPED_ARRAY;
        }
        break;
      }
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
        if (rec.getResult() == 0) live.global_names[g.getModule()].insert(g.getName());
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
        if (rec.getResult() == 0) {
          live.allocations.erase(rec.getMemFree().getAddress());
          live.graph_allocations.erase(rec.getMemFree().getAddress());
        }
        break;
      case schema::CallRecord::GRAPH_NODE: {
        auto n = rec.getGraphNode();
        if (rec.getResult() == 0 && n.getOp() == schema::GraphNode::Op::ADD &&
            n.getKind() == schema::GraphNode::Kind::MEM_ALLOC && n.getSize() != 0)
          live.graph_allocations[n.getAddress()] = Range{seq, n.getAddress(), n.getSize(), 0};
        break;
      }
      case schema::CallRecord::ARRAY: {
        using Op = schema::ArrayCall::Op;
        auto a = rec.getArray();
        if (rec.getResult() != 0) break;
        if (a.getOp() == Op::CREATE || a.getOp() == Op::CREATE3D) {
          live.arrays[a.getArray()] = seq;
        } else if (a.getOp() == Op::DESTROY || a.getOp() == Op::MIPMAPPED_GET_LEVEL) {
          live.arrays.erase(a.getArray());  // a level's handle is not a plain array
        }
        live.array_fills.erase(a.getArray());
        break;
      }
      case schema::CallRecord::MEMCPY: {
        // In an extract (write_capture), the copies that fill its arrays before the launch and
        // check them after it.
        auto m = rec.getMemcpy();
        if (!source_is_extract || rec.getResult() != 0 ||
            m.getKind() != schema::Memcpy::Kind::ARRAY_INVOLVED)
          break;
        constexpr int32_t kArray = 3;  // CU_MEMORYTYPE_ARRAY
        auto g = m.getGeometry();
        if (g.getDstMemoryType() == kArray) {
          live.array_fills[g.getDstArray()] = seq;
        } else if (g.getSrcMemoryType() == kArray) {
          for (auto& [key, p] : pending)
            for (PlannedArray& a : p.plan.arrays)
              if (a.handle == g.getSrcArray() && !a.check_seq) a.check_seq = seq;
        }
        break;
      }
      case schema::CallRecord::TEX_OBJECT: {
        using Op = schema::TexObjectCall::Op;
        auto o = rec.getTexObject();
        if (rec.getResult() != 0) break;
        if (o.getOp() == Op::TEXTURE_DESTROY || o.getOp() == Op::SURFACE_DESTROY) {
          live.objects.erase(o.getObject());
          break;
        }
        auto r = o.getResource();
        std::string over = r.getType() == 0   ? "CUDA array " + hex(r.getArray())
                           : r.getType() == 1 ? "mipmapped array " + hex(r.getMipmapped())
                                              : "device memory at " + hex(r.getDevicePointer());
        live.objects[o.getObject()] =
            LiveState::Object{seq,
                              std::string(o.getOp() == Op::SURFACE_CREATE ? "surface" : "texture") +
                                  " object " + hex(o.getObject()) + " over " + over,
                              r.getType(), r.getArray()};
        break;
      }
      case schema::CallRecord::TENSOR_MAP: {
        auto t = rec.getTensorMap();
        if (rec.getResult() != 0 || t.getEncoded().size() != format::kTensorMapBytes) break;
        auto bytes = [](capnp::Data::Reader d) {
          return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
        };
        std::vector<uint64_t> made;
        if (t.getOp() == schema::TensorMapCall::Op::REPLACE_ADDRESS) {
          auto before = live.tensor_maps.find(bytes(t.getPrevious()));
          // A map whose encode the capture lacks: the replay passes its bytes as captured.
          if (before == live.tensor_maps.end()) break;
          made = before->second;
        }
        made.push_back(seq);
        live.tensor_maps[bytes(t.getEncoded())] = std::move(made);
        break;
      }
      case schema::CallRecord::LAUNCH: {
        // The interceptor resolves a module's other variables at the first snapshot after its
        // load, recording them before that launch (the replay route orders its records so).
        for (uint64_t handle : live.awaiting_launch) live.first_launch[handle] = seq;
        live.awaiting_launch.clear();
        auto l = rec.getLaunch();
        // A launch the driver refused ran nothing: like replay, extraction neither selects nor
        // counts it (--call naming one gets the "not a launch record" error below).
        if (rec.getResult() != 0) break;
        bool selected =
            selection.call_seq ? *selection.call_seq == seq : filter.select(l.getKernelName());
        if (selected && !plan_launch(seq, l, l.getOrdinal(), 0, 0, 0)) return false;
        break;
      }
      case schema::CallRecord::GRAPH_EXEC: {
        // A graph launch: each kernel node it runs is a launch, counted and selected in the
        // order the replay runs them (the replayer's graph model), as `cusnap replay` does.
        auto g = rec.getGraphExec();
        if (rec.getResult() != 0 || g.getOp() != schema::GraphExecCall::Op::LAUNCH) break;
        if (!graph_kernels) {
          auto plan = replayer::build_plan(source);
          if (!plan) {
            failure = fail(ErrorCode::kMalformed, "graph launch seq " + std::to_string(seq) +
                                                      ": the capture's graphs cannot be read: " +
                                                      plan.error().to_string());
            return false;
          }
          graph_plan = std::move(plan.value());
          graph_kernels = replayer::graph_launch_kernels(*graph_plan);
        }
        auto kernels = graph_kernels->find(seq);
        if (kernels == graph_kernels->end()) break;
        for (size_t k = 0; k < kernels->second.size(); ++k) {
          const replayer::GraphKernel& node = kernels->second[k];
          bool selected = selection.call_seq ? *selection.call_seq == seq
                                             : filter.select(node.kernel->kernel_name);
          if (!selected) continue;
          auto holder = source.call(node.kernel_seq);
          if (!holder) {
            failure = holder.status();
            return false;
          }
          auto r = holder->get();
          schema::Launch::Reader l = r.which() == schema::CallRecord::GRAPH_EXEC
                                         ? r.getGraphExec().getParams().getKernel()
                                         : r.getGraphNode().getKernel();
          if (!plan_launch(seq, l, g.getLaunchIndex(), node.node, k, node.kernel_seq)) return false;
        }
        break;
      }
      case schema::CallRecord::MEMORY_SNAPSHOT: {
        auto s = rec.getMemorySnapshot();
        // A capture range's start (docs/format.md): the memory of the whole process, no launch's
        // snapshot; an extract's inputs come from its launch's beforeLaunch snapshot.
        if (s.getPhase() == schema::MemorySnapshot::Phase::RANGE_START) break;
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
        auto it = pending.find(Key{target, 0});
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
        std::vector<ChunkView> chunks;
        for (auto c : s.getChunks())
          chunks.push_back(
              {c.getAddress(), c.getSize(), !c.getHashOnly() && to_blob(c.getBlob()).is_null()});
        Status st = cover_chunks(
            p,
            std::string(phase_name(phase)) + " snapshot of " + describe(target, p.plan.kernel_name),
            chunks, chunk_bytes, covered_allocations[Key{target, 0}],
            covered_globals[Key{target, 0}]);
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
  std::map<uint64_t, std::vector<fatbin::Variable>> image_variables;  // by moduleLoad seq
  for (auto& [key, p] : pending) {
    const bool has_snapshots =
        p.plan.before_seq && p.plan.after_seq && p.plan.skipped_reason.empty();
    // CUDA arrays are in no capture-time snapshot: only the replay can read them (an extract
    // holds them as copies).
    bool arrays = false;
    for (const PlannedArray& a : p.plan.arrays) arrays = arrays || !a.fill_seq || !a.check_seq;
    if (options.route == Route::kReplay ||
        (options.route == Route::kAuto && (!has_snapshots || arrays))) {
      // What the replay will read: the tiles of the ranges a capture-time snapshot covers,
      // checked and kept by the same rule as the snapshot route's chunks.
      p.plan.route = Route::kReplay;
      p.plan.before_seq.reset();
      p.plan.after_seq.reset();
      p.plan.skipped_reason.clear();
      p.plan.notes.clear();
      for (const auto& [address, size] : p.host_memory)
        p.plan.notes.push_back(
            "host memory at " + hex(address) + " (" + std::to_string(size) +
            " bytes) is not in the extract: the replay route cannot know what host code wrote "
            "there (a capture with --snapshot-kernels has it); a kernel that reads it fails when "
            "the extract is replayed");
      covered_allocations[key].clear();
      covered_globals[key].clear();
      std::vector<ChunkView> tiles;
      for (const auto& [address, size] :
           format::snapshot_chunk_tiles(p.plan.snapshot_ranges, p.plan.chunk_bytes))
        tiles.push_back({address, size, false});
      Status st = cover_chunks(p, "replayed snapshot of " + describe(p.plan), tiles,
                               p.plan.chunk_bytes, covered_allocations[key], covered_globals[key]);
      if (!st) return st.in_file(source.path());
      // The module's variables no record names (a capture without snapshots): the replay looks
      // them up, as the interceptor would have at its first snapshot after the load.
      auto defined = image_variables.find(p.plan.module_seq);
      if (defined == image_variables.end()) {
        auto vars = module_image_variables(source, p.plan.module_seq);
        if (!vars) return vars.status().in_file(source.path());
        defined = image_variables.emplace(p.plan.module_seq, std::move(*vars)).first;
      }
      for (const fatbin::Variable& v : defined->second)
        if (p.recorded_variables.count(v.name) == 0) p.plan.unrecorded_variables.push_back(v.name);
    } else {
      p.plan.snapshot_ranges.clear();
      if (p.plan.graph_node != 0 && p.plan.unsupported_reason.empty())
        p.plan.unsupported_reason =
            "it is a kernel node of a graph launch, and a capture takes no snapshots of those "
            "(--route auto or replay extracts it)";
      if (arrays && p.plan.unsupported_reason.empty())
        p.plan.unsupported_reason = "it reads or writes CUDA array " +
                                    hex(p.plan.arrays.front().handle) + " (" +
                                    p.plan.arrays.front().object +
                                    "), and capture-time snapshots do not hold array "
                                    "contents (--route auto or replay extracts it)";
    }
    for (uint64_t a : covered_allocations[key]) {
      p.plan.allocation_seqs.push_back(a);
      for (const auto& [addr, r] : p.allocations)
        if (r.seq == a) p.plan.kept_ranges.emplace_back(r.address, r.size);
    }
    for (uint64_t g : covered_globals[key]) {
      p.plan.global_seqs.push_back(g);
      for (const auto& [addr, r] : p.globals)
        if (r.seq == g) p.plan.kept_ranges.emplace_back(r.address, r.size);
    }
    plans.push_back(std::move(p.plan));
  }
  return plans;
}

}  // namespace

Result<std::vector<LaunchPlan>> plan_extraction(format::Reader& source, const Selection& selection,
                                                const ExtractOptions& options) {
  return detail::unreadable_as_error([&] { return plan_records(source, selection, options); });
}

std::string describe(const LaunchPlan& plan) {
  std::string text = describe(plan.launch_seq, plan.kernel_name);
  if (plan.graph_node != 0)
    text += ", kernel node " + std::to_string(plan.graph_kernel_index) + " (" +
            hex(plan.graph_node) + ") of the graph launch";
  return text;
}

namespace detail {

replayer::LaunchKey launch_key(const LaunchPlan& plan) {
  return {plan.launch_seq, plan.graph_node != 0 ? plan.graph_kernel_index + 1 : 0};
}

}  // namespace detail

std::string launch_label(const LaunchPlan& plan) {
  std::string label = std::to_string(plan.launch_seq);
  if (plan.graph_node != 0) label += "-" + std::to_string(plan.graph_kernel_index);
  return label;
}

Result<std::string> output_path(const std::string& out, const LaunchPlan& plan, size_t selected) {
  const std::string seq = launch_label(plan);
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

namespace detail {

bool kept(const LaunchPlan& plan, uint64_t address, uint64_t size) {
  for (const auto& [a, s] : plan.kept_ranges)
    if (contains(Range{0, a, s, 0}, address, size)) return true;
  return false;
}

}  // namespace detail

namespace {

using detail::Chunk;
using detail::kept;
using detail::PhaseContents;

// Copies a blob from the source into the new file, by content.
Status copy_blob(format::Reader& source, format::Writer& writer, const format::BlobId& id,
                 const std::string& what) {
  if (writer.has_blob(id)) return Status::ok();
  if (source.find_blob(id) == nullptr)
    return fail(ErrorCode::kMalformed,
                what + ": blob " + id.to_hex() + " is missing from the source");
  auto bytes = source.read_blob(id);
  if (!bytes) return bytes.status();
  return detail::put_blob(writer, *bytes, id, what);
}

// The kept chunks of a snapshot record of the source (the snapshot route).
Result<PhaseContents> source_phase(format::Reader& source, const LaunchPlan& plan, uint64_t seq) {
  auto ref = source.call(seq);
  if (!ref) return ref.status();
  PhaseContents phase;
  phase.record_seq = seq;
  for (auto c : ref->get().getMemorySnapshot().getChunks())
    if (kept(plan, c.getAddress(), c.getSize()))
      phase.chunks.push_back(
          Chunk{c.getAddress(), c.getSize(), to_blob(c.getBlob()), c.getHashOnly(), {}});
  return phase;
}

}  // namespace

namespace detail {

Status put_blob(format::Writer& writer, std::span<const uint8_t> bytes, const format::BlobId& id,
                const std::string& what) {
  if (writer.has_blob(id)) return Status::ok();
  auto put = writer.put_blob(bytes);
  if (!put) return put.status();
  if (!(*put == id))
    return fail(ErrorCode::kCorrupt,
                what + ": blob " + id.to_hex() + " hashes to " + put->to_hex());
  return Status::ok();
}

Result<ExtractedLaunch> write_capture(format::Reader& source, const std::string& source_path,
                                      const LaunchPlan& plan, const std::string& out_path,
                                      const PhaseContents& before, const PhaseContents& after,
                                      const std::string& route_driver,
                                      const std::optional<Dropped>& dropped) {
  const std::string who = describe(plan);
  const bool replay = plan.route == Route::kReplay;
  ExtractedLaunch result;
  result.plan = plan;
  result.output_path = out_path;
  for (const Chunk& c : before.chunks) {
    if (c.hash_only)
      return fail(ErrorCode::kInvalidArgument, who + ": its beforeLaunch chunk at " +
                                                   hex(c.address) +
                                                   " holds only a hash, nothing to restore");
    result.input_bytes += c.size;
  }
  for (const Chunk& c : after.chunks) result.expected_bytes += c.size;
  for (const PlannedArray& a : plan.arrays) {
    result.input_bytes += a.extent.bytes;
    result.expected_bytes += a.extent.bytes;
  }

  capnp::MallocMessageBuilder header;
  header.setRoot(source.header());
  auto h = header.getRoot<schema::CaptureHeader>();
  h.getOptions().setMode(schema::CaptureOptions::CaptureMode::SNAPSHOT);
  if (replay) h.getOptions().setSnapshotChunkBytes(plan.chunk_bytes);
  // An extract of an extract (--minimize rewrites one from itself) says where the launch came
  // from first: the header copied above keeps the source's ExtractInfo.
  const bool re_extract = source.header().hasExtract();
  auto x = re_extract ? h.getExtract() : h.initExtract();
  if (!re_extract) {
    x.setSourcePath(source_path);
    x.setSourceCreationTimeNs(source.header().getCreationTimeNs());
    x.setSourceHostName(source.header().getHostName());
    x.setSourcePid(source.header().getPid());
    x.setLaunchSeq(plan.launch_seq);
    x.setLaunchOrdinal(plan.launch_ordinal);
    x.setKernelName(plan.kernel_name);
    x.setGraphNode(plan.graph_node);
    x.setGraphKernelIndex(plan.graph_kernel_index);
    x.setRoute(replay ? schema::ExtractInfo::Route::REPLAY : schema::ExtractInfo::Route::SNAPSHOT);
    if (replay) x.setRouteDriver(route_driver);
  }
  x.setMinimized(dropped.has_value());
  x.setInputBytes(result.input_bytes);
  x.setExpectedBytes(result.expected_bytes);
  if (dropped) {
    result.minimized = true;
    result.dropped_input_bytes = dropped->input_bytes;
    result.dropped_expected_bytes = dropped->expected_bytes;
    result.dropped_ranges = dropped->ranges;
    x.setDroppedInputBytes(dropped->input_bytes);
    x.setDroppedExpectedBytes(dropped->expected_bytes);
    x.setDroppedRanges(dropped->ranges);
  }
  auto writer = format::Writer::create(out_path, header);
  if (!writer) return writer.status();
  format::Writer& w = **writer;

  std::map<uint64_t, uint64_t> new_seq;  // source seq -> seq in the extracted file
  auto append = [&](capnp::MallocMessageBuilder& b, std::optional<uint64_t> seq) -> Status {
    auto appended = w.append_call(b);
    if (!appended) return appended.status();
    if (seq) new_seq[*seq] = *appended;
    return Status::ok();
  };
  auto copy = [&](uint64_t seq, auto&& patch) -> Status {
    auto ref = source.call(seq);
    if (!ref) return ref.status();
    capnp::MallocMessageBuilder b;
    b.setRoot(ref->get());
    auto r = b.getRoot<schema::CallRecord>();
    Status st = patch(r);
    if (!st) return st;
    return append(b, seq);
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
  // The variables the replay route looked up go where the interceptor would have recorded them.
  bool looked_up_written = plan.looked_up_variables.empty();
  auto write_looked_up = [&]() -> Status {
    looked_up_written = true;
    for (const LookedUpVariable& v : plan.looked_up_variables) {
      capnp::MallocMessageBuilder b;
      auto r = b.initRoot<schema::CallRecord>();
      r.setApiName("cusnap");
      auto g = r.initGlobalGet();
      g.setModule(v.module);
      g.setIsLibrary(v.is_library);
      g.setName(v.name);
      g.setAddress(v.address);
      g.setSize(v.size);
      g.setByTool(true);
      if (Status appended = append(b, std::nullopt); !appended) return appended;
    }
    return Status::ok();
  };
  for (uint64_t s : plan.global_seqs) {
    if (st && !looked_up_written && s >= plan.variables_seq) st = write_looked_up();
    if (st) st = copy(s, no_patch);
  }
  if (st && !looked_up_written) st = write_looked_up();
  // A graph's allocation node becomes an allocation of the extract, at its address.
  auto graph_allocation = [&](schema::CallRecord::Builder r) {
    if (r.which() != schema::CallRecord::GRAPH_NODE) return Status::ok();
    const uint64_t address = r.getGraphNode().getAddress();
    const uint64_t size = r.getGraphNode().getSize();
    auto m = r.initMemAlloc();
    m.setKind(schema::MemAlloc::Kind::DEVICE);
    m.setAddress(address);
    m.setSize(size);
    return Status::ok();
  };
  for (uint64_t s : plan.allocation_seqs)
    if (st) st = copy(s, graph_allocation);
  for (uint64_t s : plan.tensor_map_seqs)
    if (st) st = copy(s, no_patch);
  // The arrays (created, then filled with their contents before the launch) and the objects
  // over them or over memory; after the launch, a copy back whose checksum is the after-state.
  auto contents = [](const PhaseContents& phase, uint64_t array) -> const ArrayContents* {
    for (const ArrayContents& a : phase.arrays)
      if (a.array == array) return &a;
    return nullptr;
  };
  auto array_copy = [&](const PlannedArray& a, const PhaseContents& phase, bool fill) -> Status {
    const ArrayContents* read = contents(phase, a.handle);
    std::optional<uint64_t> recorded = fill ? a.fill_seq : a.check_seq;
    const std::string what = who + ": the contents of CUDA array " + hex(a.handle) +
                             (fill ? " before the launch" : " after the launch");
    if (read == nullptr) {
      if (!recorded) return fail(ErrorCode::kNotFound, what + " were not read");
      return copy(*recorded, [&](schema::CallRecord::Builder r) {
        if (!r.getMemcpy().hasPayload()) return Status::ok();
        return copy_blob(source, w, to_blob(r.getMemcpy().getPayload().asReader()), what);
      });
    }
    if (read->bytes.size() != a.extent.bytes)
      return fail(ErrorCode::kInvalidArgument, what + ": " + std::to_string(read->bytes.size()) +
                                                   " bytes read, the array holds " +
                                                   std::to_string(a.extent.bytes));
    constexpr int32_t kHost = 1, kArray = 3;  // CUmemorytype
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<schema::CallRecord>();
    r.setApiName("cusnap");
    auto m = r.initMemcpy();
    m.setKind(schema::Memcpy::Kind::ARRAY_INVOLVED);
    m.setSize(a.extent.bytes);
    m.setDimensions(3);
    auto g = m.initGeometry();
    g.setWidthInBytes(a.extent.width_bytes);
    g.setHeight(a.extent.height);
    g.setDepth(a.extent.depth);
    if (fill) {
      g.setSrcMemoryType(kHost);
      g.setSrcPitch(a.extent.width_bytes);
      g.setSrcHeight(a.extent.height);
      g.setDstMemoryType(kArray);
      g.setDstArray(a.handle);
    } else {
      g.setSrcMemoryType(kArray);
      g.setSrcArray(a.handle);
      g.setDstMemoryType(kHost);
      g.setDstPitch(a.extent.width_bytes);
      g.setDstHeight(a.extent.height);
      m.setHostChecksum(format::checksum64(read->bytes));
      m.setHasHostChecksum(true);
    }
    // The bytes: what fills the array, or (the check) what it must hold after the launch, for
    // a reader that compares bytes (the --emit-cpp reproducer); the replay checks the checksum.
    const format::BlobId id = format::hash_blob(read->bytes);
    if (Status put = detail::put_blob(w, read->bytes, id, what); !put) return put;
    m.getPayload().setHigh(id.high);
    m.getPayload().setLow(id.low);
    return append(b, std::nullopt);
  };
  for (const PlannedArray& a : plan.arrays) {
    if (st) st = copy(a.create_seq, no_patch);
    if (st) st = array_copy(a, before, true);
  }
  for (uint64_t s : plan.object_seqs)
    if (st) st = copy(s, no_patch);
  for (uint64_t s : plan.texref_seqs)
    if (st) st = copy(s, no_patch);
  uint64_t launch_seq = 0;
  auto map_layout_seq = [&](schema::Launch::Builder l) {
    auto it = new_seq.find(l.getLayoutSeq());
    l.setLayoutSeq(it != new_seq.end() ? it->second : new_seq[plan.function_seqs.back()]);
  };
  if (st && plan.graph_node == 0) {
    st = copy(plan.launch_seq, [&](schema::CallRecord::Builder r) {
      map_layout_seq(r.getLaunch());
      return Status::ok();
    });
    launch_seq = new_seq[plan.launch_seq];
  } else if (st) {
    // A kernel node: the graph launch record (its thread, time, stream) becomes a launch record
    // with the node's kernel parameters as they were at that launch.
    auto node = source.call(plan.node_record_seq);
    if (!node) st = node.status();
    if (st) {
      auto n = node->get();
      if (n.which() != schema::CallRecord::GRAPH_EXEC &&
          n.which() != schema::CallRecord::GRAPH_NODE)
        st = fail(ErrorCode::kMalformed, who + ": record " + std::to_string(plan.node_record_seq) +
                                             " holds no kernel node parameters");
    }
    if (st) {
      st = copy(plan.launch_seq, [&](schema::CallRecord::Builder r) {
        auto n = node->get();
        const uint64_t stream = r.getGraphExec().getStream();
        r.setLaunch(n.which() == schema::CallRecord::GRAPH_EXEC
                        ? n.getGraphExec().getParams().getKernel()
                        : n.getGraphNode().getKernel());
        auto l = r.getLaunch();
        l.setStream(stream);
        map_layout_seq(l);
        return Status::ok();
      });
      launch_seq = new_seq[plan.launch_seq];
    }
  }
  // A snapshot record: the source's, copied with its chunks replaced (snapshot route), or a new
  // one as the interceptor writes it (replay route); the chunks' blobs copied or stored.
  auto write_snapshot = [&](const PhaseContents& phase, schema::MemorySnapshot::Phase which,
                            const char* name) -> Status {
    auto fill = [&](schema::MemorySnapshot::Builder s) -> Status {
      for (const Chunk& c : phase.chunks) {
        if (c.hash_only) continue;
        std::string what = who + ": " + name + " chunk at " + hex(c.address);
        Status b = c.bytes.empty() && c.size != 0 ? copy_blob(source, w, c.blob, what)
                                                  : detail::put_blob(w, c.bytes, c.blob, what);
        if (!b) return b;
      }
      auto list = s.initChunks(static_cast<unsigned>(phase.chunks.size()));
      for (unsigned i = 0; i < phase.chunks.size(); ++i) {
        list[i].setAddress(phase.chunks[i].address);
        list[i].setSize(phase.chunks[i].size);
        list[i].getBlob().setHigh(phase.chunks[i].blob.high);
        list[i].getBlob().setLow(phase.chunks[i].blob.low);
        list[i].setHashOnly(phase.chunks[i].hash_only);
      }
      s.setLaunchSeq(launch_seq);
      s.setLaunchOrdinal(0);
      return Status::ok();
    };
    if (phase.record_seq)
      return copy(*phase.record_seq,
                  [&](schema::CallRecord::Builder r) { return fill(r.getMemorySnapshot()); });
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<schema::CallRecord>();
    r.setApiName("cusnap");
    auto s = r.initMemorySnapshot();
    s.setPhase(which);
    Status filled = fill(s);
    if (!filled) return filled;
    return append(b, std::nullopt);
  };
  if (st) st = write_snapshot(before, schema::MemorySnapshot::Phase::BEFORE_LAUNCH, "beforeLaunch");
  if (st) st = write_snapshot(after, schema::MemorySnapshot::Phase::AFTER_LAUNCH, "afterLaunch");
  for (const PlannedArray& a : plan.arrays)
    if (st) st = array_copy(a, after, false);
  Status closed = w.close();
  if (!st || !closed) {
    std::error_code ec;
    std::filesystem::remove(out_path, ec);
    return !st ? st : closed;
  }
  return result;
}

}  // namespace detail

namespace {

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

// Sorted, with overlapping and adjacent ranges merged (what overlaps() needs).
Ranges normalized(Ranges ranges) {
  std::sort(ranges.begin(), ranges.end());
  Ranges out;
  for (const auto& r : ranges) {
    if (!out.empty() && r.first <= out.back().first + out.back().second) {
      uint64_t end = std::max(out.back().first + out.back().second, r.first + r.second);
      out.back().second = end - out.back().first;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

// Whether [address, address + size) overlaps one of `ranges` (normalized).
bool overlaps(const Ranges& ranges, uint64_t address, uint64_t size) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(address, ~uint64_t{0}));
  if (it != ranges.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second > address) return true;
  }
  return it != ranges.end() && it->first < address + size;
}

// write_extracted's --minimize rule: the input keeps the chunks that overlap memory the launch
// read or wrote (a chunk partly written is compared, so its other bytes must be right), the
// expected state those that overlap memory it wrote; the plan keeps the allocations and globals
// that hold a kept chunk. Counts what it left out.
void minimize_phases(const TouchedMemory& touched, LaunchPlan& plan, PhaseContents& before,
                     PhaseContents& after, detail::Dropped& dropped) {
  Ranges read_or_written = touched.read;
  read_or_written.insert(read_or_written.end(), touched.written.begin(), touched.written.end());
  read_or_written = normalized(std::move(read_or_written));
  const Ranges written = normalized(touched.written);
  auto cut = [&](PhaseContents& phase, const Ranges& keep, uint64_t& dropped_bytes) {
    std::vector<Chunk> kept_chunks;
    for (Chunk& c : phase.chunks) {
      if (overlaps(keep, c.address, c.size))
        kept_chunks.push_back(c);
      else
        dropped_bytes += c.size;
    }
    phase.chunks = std::move(kept_chunks);
  };
  cut(before, read_or_written, dropped.input_bytes);
  cut(after, written, dropped.expected_bytes);
  Ranges needed;  // chunks either snapshot keeps
  for (const Chunk& c : before.chunks) needed.emplace_back(c.address, c.size);
  for (const Chunk& c : after.chunks) needed.emplace_back(c.address, c.size);
  needed = normalized(std::move(needed));
  // kept_ranges pairs with allocation_seqs then global_seqs; should that ever not hold, every
  // record stays (a larger extract, never a wrong one).
  if (plan.kept_ranges.size() != plan.allocation_seqs.size() + plan.global_seqs.size()) return;
  const LaunchPlan full = plan;
  plan.allocation_seqs.clear();
  plan.global_seqs.clear();
  plan.kept_ranges.clear();
  const size_t allocations = full.allocation_seqs.size();
  for (size_t i = 0; i < full.kept_ranges.size(); ++i) {
    const auto& [address, size] = full.kept_ranges[i];
    if (!overlaps(needed, address, size)) {
      ++dropped.ranges;
      continue;
    }
    plan.kept_ranges.push_back(full.kept_ranges[i]);
    if (i < allocations)
      plan.allocation_seqs.push_back(full.allocation_seqs[i]);
    else
      plan.global_seqs.push_back(full.global_seqs[i - allocations]);
  }
}

// write_extracted's body (the snapshot route), which may meet a record Cap'n Proto cannot read.
Result<ExtractedLaunch> write_records(format::Reader& source, const std::string& source_path,
                                      const LaunchPlan& plan, const std::string& out_path,
                                      const TouchedMemory* touched) {
  const std::string who = describe(plan);
  const std::string later = "; --route replay (or auto) extracts it by replaying the capture";
  if (plan.route == Route::kReplay)
    return fail(ErrorCode::kInvalidArgument,
                who + ": planned for the replay route (extract_launches writes it)");
  if (!plan.unsupported_reason.empty())
    return fail(ErrorCode::kInvalidArgument,
                who + " cannot be extracted: " + plan.unsupported_reason);
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
                                          "(the capture ended before the launch completed?)" +
                                          later);
  auto before = source_phase(source, plan, *plan.before_seq);
  if (!before) return before.status();
  auto after = source_phase(source, plan, *plan.after_seq);
  if (!after) return after.status();
  LaunchPlan cut = plan;
  std::optional<detail::Dropped> dropped;
  if (touched != nullptr) minimize_phases(*touched, cut, *before, *after, dropped.emplace());
  return detail::write_capture(source, source_path, cut, out_path, *before, *after, "", dropped);
}

}  // namespace

Result<ExtractedLaunch> write_extracted(format::Reader& source, const std::string& source_path,
                                        const LaunchPlan& plan, const std::string& out_path,
                                        const TouchedMemory* touched) {
  return detail::unreadable_as_error(
      [&] { return write_records(source, source_path, plan, out_path, touched); });
}

}  // namespace cusnap::extract
