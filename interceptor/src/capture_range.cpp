#include "capture_range.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <signal.h>

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cusnap/format/writer.h"
#include "handles.h"
#include "hooks.h"
#include "log.h"
#include "session.h"
#include "snapshot.h"

namespace cusnap::icpt {
namespace schema = format::schema;
using Which = schema::CallRecord::Which;
using Trigger = capture::RangeSettings::Trigger;

bool g_ranges_configured = false;
std::atomic<bool> g_in_range{false};
std::atomic<bool> g_range_attention{false};

namespace {

capture::RangeSettings g_settings;
bool g_state_symbol[kSymbolCount] = {};

}  // namespace

// The names whose calls create or destroy what a range's start restates (is_state_symbol).
bool is_state_name(const char* name) noexcept {
  static const char* const kPrefixes[] = {"cuCtxCreate",
                                          "cuCtxDestroy",
                                          "cuCtxSetCurrent",
                                          "cuCtxPushCurrent",
                                          "cuCtxPopCurrent",
                                          "cuDevicePrimaryCtx",
                                          "cuModuleLoad",
                                          "cuModuleUnload",
                                          "cuModuleGetFunction",
                                          "cuModuleGetGlobal",
                                          "cuModuleEnumerateFunctions",
                                          "cuLibraryLoad",
                                          "cuLibraryUnload",
                                          "cuLibraryGetKernel",
                                          "cuLibraryGetGlobal",
                                          "cuLibraryEnumerateKernels",
                                          "cuKernelGetFunction",
                                          "cuFuncSetAttribute",
                                          "cuFuncSetCacheConfig",
                                          "cuKernelSetAttribute",
                                          "cuMemAlloc",
                                          "cuMemFree",
                                          "cuMemHostAlloc",
                                          "cuMemHostRegister",
                                          "cuMemHostUnregister",
                                          "cuMemCreate",
                                          "cuMemRelease",
                                          "cuMemAddressReserve",
                                          "cuMemAddressFree",
                                          "cuMemMap",
                                          "cuMemUnmap",
                                          "cuMemSetAccess",
                                          "cuStreamCreate",
                                          "cuStreamDestroy",
                                          "cuEventCreate",
                                          "cuEventDestroy",
                                          "cuArrayCreate",
                                          "cuArray3DCreate",
                                          "cuArrayDestroy",
                                          "cuMipmappedArray",
                                          "cuTexObjectCreate",
                                          "cuTexObjectDestroy",
                                          "cuSurfObjectCreate",
                                          "cuSurfObjectDestroy",
                                          "cuTensorMapEncode",
                                          "cuTensorMapReplaceAddress",
                                          "cuModuleGetTexRef",
                                          "cuModuleGetSurfRef",
                                          "cuTexRefCreate",
                                          "cuTexRefDestroy",
                                          "cuTexRefSet",
                                          "cuSurfRefSetArray",
                                          "cuParamSetTexRef",
                                          "cuMemPoolCreate",
                                          "cuMemPoolDestroy",
                                          "cuMemPoolSetAttribute",
                                          "cuMemPoolSetAccess",
                                          "cuDeviceSetMemPool",
                                          "cuDeviceGetMemPool",
                                          "cuDeviceGetDefaultMemPool",
                                          "cuProfilerStart",
                                          "cuProfilerStop",
                                          "cuInit"};
  for (const char* prefix : kPrefixes) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

namespace {

// ---- the state log

// What an entry is indexed by: a kind and up to two values (handle, address, ...).
enum class KeyKind : uint8_t {
  kContext,
  kCurrent,  // the thread's current-context record
  kPrimary,
  kPrimaryFlags,
  kModule,
  kModuleChild,  // a function or variable of module `a`
  kFunction,
  kFunctionChild,  // an attribute of function `a`
  kGlobal,
  kAlloc,
  kVmmHandle,
  kVmmReserve,
  kVmmMap,
  kVmmAccess,
  kStream,
  kEvent,
  kArray,
  kMipmapped,
  kMipmappedChild,
  kTexObject,
  kTensorMap,    // by the CUtensorMap's host address: a later encode into it replaces the map
  kTexRef,       // a texture/surface reference (looked up or created)
  kTexRefChild,  // a setter's latest record for reference `a`, slot `b`
  kMemPool,
  kMemPoolChild,  // an attribute / the access of pool `a`
  kDevicePool,    // device `a`'s current pool (cuDeviceSetMemPool)
};
struct Key {
  KeyKind kind;
  uint64_t a = 0;
  uint64_t b = 0;
  bool operator<(const Key& o) const { return std::tie(kind, a, b) < std::tie(o.kind, o.a, o.b); }
};

struct Entry {
  kj::Array<capnp::word> words;  // the record, flat
  std::vector<Key> keys;
  format::BlobId image;  // a module load: its image
};

struct Image {
  std::vector<uint8_t> bytes;
  uint32_t references =
      0;  // kept module loads naming it (an image whose load failed stays, unnamed)
};

struct BlobIdHash {
  size_t operator()(const format::BlobId& id) const { return static_cast<size_t>(id.low); }
};

class StateLog {
 public:
  void note(schema::CallRecord::Reader r) {
    if (r.getResult() != 0) return;  // a failed call created or destroyed nothing
    switch (r.which()) {
      case Which::GENERIC:
      case Which::TOOL_EVENT:
      case Which::MEMCPY:
      case Which::MEMSET:
      case Which::LAUNCH:
      case Which::MEMORY_SNAPSHOT:
      case Which::DEFERRED_RESULT:
      case Which::NVTX:
        return;  // the frequent records, not state: no lock
      default:
        break;
    }
    std::lock_guard lock(mutex_);
    switch (r.which()) {
      case Which::CONTEXT_CREATE:
        add(r, {{KeyKind::kContext, r.getContextCreate().getContext()}});
        break;
      case Which::CONTEXT_DESTROY:
        erase({KeyKind::kContext, r.getContextDestroy().getContext()});
        break;
      case Which::CONTEXT_SET_CURRENT:
        erase({KeyKind::kCurrent, r.getThreadId()});
        add(r, {{KeyKind::kCurrent, r.getThreadId()}});
        break;
      case Which::PRIMARY_CONTEXT: {
        auto p = r.getPrimaryContext();
        auto device = static_cast<uint64_t>(p.getDevice());
        if (p.getOp() == schema::PrimaryContext::Op::RETAIN) {
          if (!has({KeyKind::kPrimary, device})) add(r, {{KeyKind::kPrimary, device}});
        } else if (p.getOp() == schema::PrimaryContext::Op::SET_FLAGS) {
          erase({KeyKind::kPrimaryFlags, device});
          add(r, {{KeyKind::kPrimaryFlags, device}});
        }
        break;
      }
      case Which::MODULE_LOAD: {
        auto m = r.getModuleLoad();
        uint64_t order = add(r, {{KeyKind::kModule, m.getHandle()}});
        if (m.hasImage()) {
          format::BlobId id{m.getImage().getHigh(), m.getImage().getLow()};
          auto it = images_.find(id);
          if (it != images_.end()) {
            ++it->second.references;
            entries_[order].image = id;
          }
        }
        break;
      }
      case Which::MODULE_UNLOAD:
        erase({KeyKind::kModule, r.getModuleUnload().getHandle()});
        erase({KeyKind::kModuleChild, r.getModuleUnload().getHandle()});
        break;
      case Which::FUNCTION_GET: {
        auto f = r.getFunctionGet();
        if (has({KeyKind::kFunction, f.getHandle()})) break;
        add(r, {{KeyKind::kFunction, f.getHandle()}, {KeyKind::kModuleChild, f.getModule()}});
        break;
      }
      case Which::FUNCTION_SET_ATTRIBUTE: {
        auto f = r.getFunctionSetAttribute();
        Key key{KeyKind::kFunctionChild, f.getFunction(),
                static_cast<uint64_t>(static_cast<uint32_t>(f.getAttribute()))};
        erase(key);
        add(r, {key});
        break;
      }
      case Which::GLOBAL_GET: {
        auto g = r.getGlobalGet();
        if (has({KeyKind::kGlobal, g.getAddress()})) break;
        add(r, {{KeyKind::kGlobal, g.getAddress()}, {KeyKind::kModuleChild, g.getModule()}});
        break;
      }
      case Which::MEM_ALLOC:
        note_alloc(r);
        break;
      case Which::MEM_FREE:
        note_free(r.getMemFree());
        break;
      case Which::STREAM_CREATE:
        add(r, {{KeyKind::kStream, r.getStreamCreate().getStream()}});
        break;
      case Which::STREAM_DESTROY:
        erase({KeyKind::kStream, r.getStreamDestroy().getStream()});
        break;
      case Which::EVENT_CREATE:
        add(r, {{KeyKind::kEvent, r.getEventCreate().getEvent()}});
        break;
      case Which::EVENT_DESTROY:
        erase({KeyKind::kEvent, r.getEventDestroy().getEvent()});
        break;
      case Which::ARRAY:
        note_array(r);
        break;
      case Which::TEX_REF:
        note_tex_ref(r);
        break;
      case Which::MEM_POOL:
        note_mem_pool(r);
        break;
      case Which::TEX_OBJECT: {
        auto t = r.getTexObject();
        using Op = schema::TexObjectCall::Op;
        if (t.getOp() == Op::TEXTURE_CREATE || t.getOp() == Op::SURFACE_CREATE) {
          add(r, {{KeyKind::kTexObject, t.getObject()}});
        } else {
          erase({KeyKind::kTexObject, t.getObject()});
        }
        break;
      }
      case Which::TENSOR_MAP: {
        // The map a range's launches and copies may carry: its encode (or re-addressing) must
        // precede them for a replay to re-encode it (docs/replay.md, "Tensor maps").
        if (r.getResult() != 0) break;
        // A re-addressing is kept with the encode it starts from (its replay needs both).
        auto t = r.getTensorMap();
        uint64_t host = t.getHostAddress();
        if (t.getOp() != schema::TensorMapCall::Op::REPLACE_ADDRESS)
          erase({KeyKind::kTensorMap, host});
        add(r, {{KeyKind::kTensorMap, host}});
        break;
      }
      default:
        break;  // calls, copies, launches, events of the tool: not state
    }
  }

  void keep_image(std::span<const uint8_t> bytes, const format::BlobId& id) {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = images_.try_emplace(id);
    if (inserted) it->second.bytes.assign(bytes.begin(), bytes.end());
  }

  bool write(format::Writer& writer, std::string& error) {
    std::lock_guard lock(mutex_);
    for (const auto& [id, image] : images_) {
      if (image.references == 0) continue;
      auto stored = writer.put_blob(image.bytes);
      if (!stored) {
        error = "storing a module image: " + stored.status().to_string();
        return false;
      }
    }
    for (const auto& [order, entry] : entries_) {
      capnp::FlatArrayMessageReader reader(entry.words);
      capnp::MallocMessageBuilder copy;
      copy.setRoot(reader.getRoot<schema::CallRecord>());
      auto seq = writer.append_call(copy);
      if (!seq) {
        error = "writing a state record: " + seq.status().to_string();
        return false;
      }
      // Launch records name the record their layout came from: this file's copy of it.
      auto root = reader.getRoot<schema::CallRecord>();
      if (root.isFunctionGet()) {
        HandleTable::instance().set_layout_seq(root.getFunctionGet().getHandle(), seq.value());
      }
    }
    return true;
  }

 private:
  void note_alloc(schema::CallRecord::Reader r) {
    auto m = r.getMemAlloc();
    using Kind = schema::MemAlloc::Kind;
    switch (m.getKind()) {
      case Kind::VMM_CREATE:
        add(r, {{KeyKind::kVmmHandle, m.getHandle()}});
        break;
      case Kind::VMM_RESERVE:
        add(r, {{KeyKind::kVmmReserve, m.getAddress()}});
        break;
      case Kind::VMM_MAP:
        add(r, {{KeyKind::kVmmMap, m.getAddress()}});
        break;
      case Kind::VMM_SET_ACCESS:
        add(r, {{KeyKind::kVmmAccess, m.getAddress()}});
        break;
      case Kind::HOST:
      case Kind::HOST_ALLOC:
      case Kind::HOST_REGISTER:
        // cuMemFreeHost / cuMemHostUnregister name the host pointer.
        add(r, {{KeyKind::kAlloc, m.getHostPointer() != 0 ? m.getHostPointer() : m.getAddress()}});
        break;
      default:
        add(r, {{KeyKind::kAlloc, m.getAddress()}});
        break;
    }
  }

  void note_free(schema::MemFree::Reader f) {
    using Kind = schema::MemFree::Kind;
    switch (f.getKind()) {
      case Kind::VMM_UNMAP:
        erase_within(KeyKind::kVmmMap, f.getAddress(), f.getSize());
        erase_within(KeyKind::kVmmAccess, f.getAddress(), f.getSize());
        break;
      case Kind::VMM_RELEASE:
        erase({KeyKind::kVmmHandle, f.getHandle()});
        break;
      case Kind::VMM_ADDRESS_FREE:
        erase({KeyKind::kVmmReserve, f.getAddress()});
        break;
      default:
        erase({KeyKind::kAlloc, f.getAddress()});
        break;
    }
  }

  // A reference's look-up goes with its module; each setter keeps its latest record (the four
  // bindings share one slot, and an array binding goes with its array).
  void note_tex_ref(schema::CallRecord::Reader r) {
    auto t = r.getTexRef();
    using Op = schema::TexRefCall::Op;
    const uint64_t ref = t.getRef();
    switch (t.getOp()) {
      case Op::GET_TEX_REF:
      case Op::GET_SURF_REF:
        if (!has({KeyKind::kTexRef, ref}))
          add(r, {{KeyKind::kTexRef, ref}, {KeyKind::kModuleChild, t.getModule()}});
        return;
      case Op::CREATE:
        add(r, {{KeyKind::kTexRef, ref}});
        return;
      case Op::DESTROY:
        erase({KeyKind::kTexRef, ref});
        return;
      default:
        break;
    }
    if (!has({KeyKind::kTexRef, ref})) return;
    constexpr uint64_t kBinding = 0;
    uint64_t slot = static_cast<uint64_t>(t.getOp()) * 4;
    std::vector<Key> keys;
    switch (t.getOp()) {
      case Op::SET_ARRAY:
      case Op::SURF_SET_ARRAY:
        slot = kBinding;
        keys.push_back({KeyKind::kArray, t.getArray()});
        break;
      case Op::SET_MIPMAPPED_ARRAY:
        slot = kBinding;
        keys.push_back({KeyKind::kMipmapped, t.getMipmapped()});
        break;
      case Op::SET_ADDRESS:
      case Op::SET_ADDRESS2D:
        slot = kBinding;
        break;
      case Op::SET_ADDRESS_MODE:
        slot += static_cast<uint64_t>(t.getDim() & 3);
        break;
      case Op::PARAM_SET_TEX_REF:
        keys.push_back({KeyKind::kFunctionChild, t.getFunction(), uint64_t{1} << 40});
        break;
      default:
        break;
    }
    Key key{KeyKind::kTexRefChild, ref, slot};
    erase(key);
    keys.push_back(key);
    add(r, std::move(keys));
  }

  void note_mem_pool(schema::CallRecord::Reader r) {
    auto p = r.getMemPool();
    using Op = schema::MemPoolCall::Op;
    const uint64_t pool = p.getPool();
    switch (p.getOp()) {
      case Op::CREATE:
        add(r, {{KeyKind::kMemPool, pool}});
        break;
      case Op::DESTROY:
        erase({KeyKind::kMemPool, pool});
        break;
      case Op::DEVICE_GET_MEM_POOL:
      case Op::DEVICE_GET_DEFAULT_MEM_POOL:
        if (pool != 0 && !has({KeyKind::kMemPool, pool})) add(r, {{KeyKind::kMemPool, pool}});
        break;
      case Op::SET_ATTRIBUTE:
      case Op::SET_ACCESS: {
        if (!has({KeyKind::kMemPool, pool})) break;
        Key key{KeyKind::kMemPoolChild, pool,
                p.getOp() == Op::SET_ACCESS
                    ? uint64_t{1} << 40
                    : static_cast<uint64_t>(static_cast<uint32_t>(p.getAttribute()))};
        erase(key);
        add(r, {key});
        break;
      }
      case Op::DEVICE_SET_MEM_POOL: {
        if (!has({KeyKind::kMemPool, pool})) break;
        Key device{KeyKind::kDevicePool,
                   static_cast<uint64_t>(static_cast<uint32_t>(p.getDevice()))};
        erase(device);
        add(r, {device, {KeyKind::kMemPoolChild, pool, uint64_t{2} << 40}});
        break;
      }
      default:
        break;  // getAttribute, trimTo: no state
    }
  }

  void note_array(schema::CallRecord::Reader r) {
    auto a = r.getArray();
    using Op = schema::ArrayCall::Op;
    switch (a.getOp()) {
      case Op::CREATE:
      case Op::CREATE3D:
        add(r, {{KeyKind::kArray, a.getArray()}});
        break;
      case Op::DESTROY:
        erase({KeyKind::kArray, a.getArray()});
        break;
      case Op::MIPMAPPED_CREATE:
        add(r, {{KeyKind::kMipmapped, a.getMipmapped()}});
        break;
      case Op::MIPMAPPED_GET_LEVEL:
        add(r, {{KeyKind::kMipmappedChild, a.getMipmapped()}});
        break;
      case Op::MIPMAPPED_DESTROY:
        erase({KeyKind::kMipmapped, a.getMipmapped()});
        erase({KeyKind::kMipmappedChild, a.getMipmapped()});
        break;
    }
  }

  uint64_t add(schema::CallRecord::Reader r, std::vector<Key> keys) {
    capnp::MallocMessageBuilder copy;
    copy.setRoot(r);
    uint64_t order = next_++;
    for (const Key& key : keys) index_.emplace(key, order);
    entries_.emplace(order, Entry{capnp::messageToFlatArray(copy), std::move(keys), {}});
    return order;
  }

  bool has(const Key& key) const { return index_.find(key) != index_.end(); }

  void erase_entry(uint64_t order) {
    auto it = entries_.find(order);
    if (it == entries_.end()) return;
    Entry entry = std::move(it->second);
    entries_.erase(it);
    for (const Key& key : entry.keys) {
      auto [first, last] = index_.equal_range(key);
      for (auto i = first; i != last;) i = i->second == order ? index_.erase(i) : std::next(i);
      // A function's attributes go with it, a reference's setters and a pool's settings too.
      if (key.kind == KeyKind::kFunction) erase({KeyKind::kFunctionChild, key.a}, true);
      if (key.kind == KeyKind::kTexRef) erase({KeyKind::kTexRefChild, key.a}, true);
      if (key.kind == KeyKind::kMemPool) erase({KeyKind::kMemPoolChild, key.a}, true);
    }
    if (!entry.image.is_null()) {
      auto image = images_.find(entry.image);
      if (image != images_.end() && --image->second.references == 0) images_.erase(image);
    }
  }

  // Every entry under `key` (any b when `any_b`).
  void erase(const Key& key, bool any_b = false) {
    std::vector<uint64_t> orders;
    auto first = any_b ? index_.lower_bound(Key{key.kind, key.a, 0}) : index_.lower_bound(key);
    for (auto it = first; it != index_.end() && it->first.kind == key.kind && it->first.a == key.a;
         ++it) {
      if (!any_b && it->first.b != key.b) break;
      orders.push_back(it->second);
    }
    for (uint64_t order : orders) erase_entry(order);
  }

  void erase_within(KeyKind kind, uint64_t address, uint64_t size) {
    std::vector<uint64_t> orders;
    for (auto it = index_.lower_bound(Key{kind, address, 0});
         it != index_.end() && it->first.kind == kind && it->first.a < address + size; ++it) {
      orders.push_back(it->second);
    }
    for (uint64_t order : orders) erase_entry(order);
  }

  std::mutex mutex_;
  uint64_t next_ = 0;
  std::map<uint64_t, Entry> entries_;  // creation order
  std::multimap<Key, uint64_t> index_;
  std::unordered_map<format::BlobId, Image, BlobIdHash> images_;
};

StateLog& state_log() {
  static StateLog* log = new StateLog();  // never destroyed: hooks may run during exit
  return *log;
}

std::recursive_mutex g_transition;  // range starts and ends, one at a time (a failure inside
                                    // a start may close the capture, which ends the range)
uint32_t g_ranges_started = 0;      // under g_transition
bool g_done = false;                // every range allowed has been recorded

// ---- signal trigger
std::atomic<uint32_t> g_signals{0};  // SIGUSR1s not yet applied
struct sigaction g_previous_usr1 {};
bool g_signal_installed = false;

void on_usr1(int signal, siginfo_t* info, void* context) {
  g_signals.fetch_add(1, std::memory_order_relaxed);
  g_range_attention.store(true, std::memory_order_relaxed);
  // The handler the application had: called as the kernel would have (SIG_DFL, which would end
  // the process, and SIG_IGN are not: SIGUSR1 is the trigger then).
  const struct sigaction& previous = g_previous_usr1;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signal, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
  }
}

}  // namespace

bool configure_ranges(const capture::CaptureConfig& config) noexcept {
  try {
    std::string error;
    if (!capture::parse_range_settings(config, g_settings, error)) {
      log(LogLevel::kError, "%s; nothing is recorded", error.c_str());
      return false;
    }
    if (!g_settings.active()) return true;
    for (size_t id = 0; id < kSymbolCount; ++id)
      g_state_symbol[id] = is_state_name(kSymbolNames[id]);
    g_ranges_configured = true;
    if (g_settings.trigger == Trigger::kSignal) g_range_attention.store(true);
    return true;
  } catch (...) {
    log(LogLevel::kError, "cannot configure capture ranges: out of memory; nothing is recorded");
    return false;
  }
}

const capture::RangeSettings& range_settings() noexcept { return g_settings; }

bool is_state_symbol(SymbolId id) noexcept { return g_state_symbol[id]; }

void range_attention() noexcept {
  if (!g_range_attention.exchange(false)) return;
  if (g_settings.trigger != Trigger::kSignal) return;
  {
    std::lock_guard lock(g_transition);
    if (!g_signal_installed) {
      // At the application's first driver call, after what it set up in main(): its own
      // handler is the one chained to.
      g_signal_installed = true;
      struct sigaction action {};
      action.sa_sigaction = on_usr1;
      action.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&action.sa_mask);
      ::sigaction(SIGUSR1, &action, &g_previous_usr1);
    }
  }
  // Each SIGUSR1 since the last call toggles: start, stop, start, ...
  for (uint32_t n = g_signals.exchange(0); n > 0; --n) {
    if (g_in_range.load()) {
      range_end();
    } else {
      range_begin("SIGUSR1");
    }
  }
}

void range_begin(const char* why) noexcept {
  std::lock_guard lock(g_transition);
  if (g_done || g_in_range.load()) return;
  Session* session = Session::current();
  if (session == nullptr || !capture_active()) return;
  try {
    uint32_t number = ++g_ranges_started;
    format::Writer* writer = session->open_range(number);
    if (writer == nullptr) {
      g_done = true;
      stop_recording();
      return;
    }
    std::string error;
    if (!state_log().write(*writer, error)) {
      log(LogLevel::kError, "capture range %u: %s; recording stops (the application continues)",
          number, error.c_str());
      session->close_range();
      g_done = true;
      stop_recording();
      return;
    }
    snapshot_new_file();
    g_in_range.store(true);
    std::vector<SnapshotChunk> chunks;
    std::string skipped = snapshot_live_memory(*session, chunks);
    session->range_snapshot(chunks, skipped);
    log(LogLevel::kInfo, "capture range %u started (%s): %s", number, why,
        session->file_name().c_str());
  } catch (...) {
    log(LogLevel::kError, "capture range start: out of memory; recording stops");
    g_in_range.store(false);
    session->close_range();
    g_done = true;
    stop_recording();
  }
}

void range_end() noexcept {
  std::lock_guard lock(g_transition);
  if (!g_in_range.load()) return;
  Session* session = Session::current();
  g_in_range.store(false);
  if (session != nullptr) session->close_range();
  if (g_settings.max_ranges != 0 && g_ranges_started >= g_settings.max_ranges) {
    g_done = true;
    stop_recording();  // nothing more is recorded: every call takes the fast path
  }
}

void ranges_at_exit() noexcept {
  if (g_in_range.load()) {
    range_end();
    return;
  }
  std::lock_guard lock(g_transition);
  Session* session = Session::current();
  if (g_ranges_started != 0 || session == nullptr) return;
  // No range started: an empty file (header only, range number 0) says so.
  if (session->open_range(0) != nullptr) session->close_range();
}

bool nvtx_starts_range(const std::string* domain, const std::string& message) noexcept {
  if (!g_ranges_configured || g_settings.trigger != Trigger::kNvtx) return false;
  if (g_in_range.load(std::memory_order_relaxed)) return false;
  const std::string none;
  return message == g_settings.nvtx_message &&
         (domain != nullptr ? *domain : none) == g_settings.nvtx_domain;
}

void range_note_record(schema::CallRecord::Reader record) noexcept {
  try {
    state_log().note(record);
  } catch (...) {
    log_once(LogLevel::kWarn, "range-state", "a state record could not be kept for later ranges");
  }
}

void range_keep_image(std::span<const uint8_t> bytes, const format::BlobId& id) noexcept {
  try {
    state_log().keep_image(bytes, id);
  } catch (...) {
    log_once(LogLevel::kWarn, "range-image", "a module image could not be kept for later ranges");
  }
}

bool range_write_state(format::Writer& writer, std::string& error) noexcept {
  try {
    return state_log().write(writer, error);
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
}

namespace hooks {

// cudaProfilerApi: the range is cuProfilerStart .. cuProfilerStop (the runtime's
// cudaProfilerStart/Stop call these). The two calls are the range's bounds, not in it.
CUSNAP_POST_HOOK(cuProfilerStart)(CallScope& call, CUresult result) {
  if (!g_ranges_configured || g_settings.trigger != Trigger::kProfilerApi) return;
  call.skip();
  if (result == CUDA_SUCCESS) range_begin("cuProfilerStart");
}

CUSNAP_POST_HOOK(cuProfilerStop)(CallScope& call, CUresult result) {
  if (!g_ranges_configured || g_settings.trigger != Trigger::kProfilerApi) return;
  call.skip();
  if (result == CUDA_SUCCESS) range_end();
}

}  // namespace hooks
}  // namespace cusnap::icpt
