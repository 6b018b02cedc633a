// NVTX recording (docs/capture.md, "NVTX"): the shim is also an NVTX injection library. NVTX
// (header-only, compiled into the application) loads the library NVTX_INJECTION64_PATH names at
// the application's first NVTX call and calls its InitializeInjectionNvtx2, which fills the CORE
// and CORE2 callback slots with the functions below. Each range or mark then becomes an `nvtx`
// record (schema NvtxEvent) while a capture is active; without one the callbacks only keep what
// NVTX's return values need (nesting levels, range ids, domain and string handles), so the
// application sees what an injection library gives it, whether or not anything is recorded.
//
// `cusnap capture` sets NVTX_INJECTION64_PATH to the shim unless the environment already names an
// injection library (another tool's, e.g. Nsight Systems': left alone, NVTX is then not recorded).
// InitializeInjectionNvtx2 is the one symbol the shim exports besides the driver's; without
// NVTX_INJECTION64_PATH nothing looks it up.
//
// Slots left empty (NVTX's no-ops, as without a tool): category and OS-thread naming, resources,
// CUDA/OpenCL/sync modules. Event payloads are not recorded.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#undef NVTX_NO_IMPL

#include <capnp/message.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <cwchar>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture_range.h"
#include "cusnap/format/capture.capnp.h"
#include "log.h"
#include "session.h"
#include "shim_runtime.h"

namespace cusnap::icpt {
namespace {

namespace schema = format::schema;
using Kind = schema::NvtxEvent::Kind;

constexpr size_t kMaxMessageBytes = 4096;  // longer messages are cut (a label, not a payload)
constexpr size_t kMaxOpenStartedRanges = 1 << 16;  // start without end: messages kept for `end`

// Handles the application receives: ours, never freed (a destroyed domain's handle stays valid
// memory, so a late use reads a name instead of crashing).
struct Domain {
  std::string name;
};
struct RegisteredString {
  std::string text;
};

std::mutex g_mutex;                                   // guards g_started
std::unordered_map<uint64_t, std::string> g_started;  // open nvtxRangeStart ids -> message
std::atomic<uint64_t> g_next_range_id{1};
std::atomic<uint64_t> g_capture_range_id{0};  // the start that began the nvtx capture range

// Ranges pushed and not yet popped on this thread, innermost last.
struct OpenRange {
  const Domain* domain;
  std::string message;
  bool starts_capture = false;  // the nvtx capture range began at this push: its pop ends it
};
thread_local std::vector<OpenRange> t_pushed;

void append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x110000) {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += "\xef\xbf\xbd";  // U+FFFD: not a code point
  }
}

std::string ascii_text(const char* text) {
  if (text == nullptr) return {};
  return std::string(text, strnlen(text, kMaxMessageBytes));
}

std::string wide_text(const wchar_t* text) {
  std::string out;
  if (text == nullptr) return out;
  for (size_t i = 0; text[i] != 0 && out.size() < kMaxMessageBytes; ++i) {
    append_utf8(out, static_cast<uint32_t>(text[i]));
  }
  return out;
}

// What an event attribute structure says, read only as far as its `size` reaches.
struct Attributes {
  std::string message;
  uint32_t category = 0;
  uint32_t color = 0;
  bool has_color = false;
};

template <class Field>
bool covers(const nvtxEventAttributes_t* a, size_t offset) {
  return a->size >= offset + sizeof(Field);
}

Attributes read_attributes(const nvtxEventAttributes_t* a) {
  Attributes out;
  if (a == nullptr || a->version < 1) return out;
  if (covers<uint32_t>(a, offsetof(nvtxEventAttributes_t, category))) out.category = a->category;
  if (covers<uint32_t>(a, offsetof(nvtxEventAttributes_t, color)) &&
      a->colorType == NVTX_COLOR_ARGB) {
    out.color = a->color;
    out.has_color = true;
  }
  if (!covers<nvtxMessageValue_t>(a, offsetof(nvtxEventAttributes_t, message))) return out;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      out.message = ascii_text(a->message.ascii);
      break;
    case NVTX_MESSAGE_TYPE_UNICODE:
      out.message = wide_text(a->message.unicode);
      break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      if (a->message.registered != nullptr) {
        out.message = reinterpret_cast<const RegisteredString*>(a->message.registered)->text;
      }
      break;
    default:
      break;
  }
  return out;
}

Attributes message_only(std::string message) {
  Attributes out;
  out.message = std::move(message);
  return out;
}

const Domain* domain_of(nvtxDomainHandle_t handle) {
  return reinterpret_cast<const Domain*>(handle);
}

// Appends the record of one event when a capture is active. Never throws, never fails the app.
void record(const char* api, Kind kind, const Domain* domain, const Attributes& attributes,
            uint64_t range_id) noexcept {
  if (!capture_active()) return;
  Session* session = Session::current();
  if (session == nullptr) return;
  try {
    capnp::MallocMessageBuilder message;
    auto call = message.initRoot<schema::CallRecord>();
    call.setThreadId(current_thread_id());
    call.setStartNs(monotonic_ns());
    call.setEndNs(call.getStartNs());
    call.setApiName(api);
    auto event = call.initNvtx();
    event.setKind(kind);
    if (domain != nullptr) {
      event.setDomain(domain->name);
      event.setDomainHandle(reinterpret_cast<uint64_t>(domain));
    }
    event.setMessage(attributes.message);
    event.setCategory(attributes.category);
    event.setColor(attributes.color);
    event.setHasColor(attributes.has_color);
    event.setRangeId(range_id);
    (void)session->append(message);
  } catch (...) {
    log_once(LogLevel::kWarn, "nvtx-record", "an NVTX event could not be recorded");
  }
}

int push(const char* api, const Domain* domain, Attributes attributes) noexcept {
  try {
    int level = 0;
    for (const OpenRange& open : t_pushed) level += open.domain == domain ? 1 : 0;
    // The nvtx capture range starts before this push's record (the push is its first record).
    bool starts =
        nvtx_starts_range(domain != nullptr ? &domain->name : nullptr, attributes.message);
    if (starts) range_begin("nvtx push");
    record(api, Kind::PUSH, domain, attributes, static_cast<uint64_t>(level));
    t_pushed.push_back({domain, std::move(attributes.message), starts});
    return level;
  } catch (...) {
    return -1;  // NVTX's "error" level; only out of memory gets here
  }
}

int pop(const char* api, const Domain* domain) noexcept {
  try {
    for (size_t i = t_pushed.size(); i-- > 0;) {
      if (t_pushed[i].domain != domain) continue;
      int level = 0;
      for (size_t j = 0; j < i; ++j) level += t_pushed[j].domain == domain ? 1 : 0;
      record(api, Kind::POP, domain, message_only(std::move(t_pushed[i].message)),
             static_cast<uint64_t>(level));
      bool ends = t_pushed[i].starts_capture;
      t_pushed.erase(t_pushed.begin() + static_cast<std::ptrdiff_t>(i));
      if (ends) range_end();  // after the pop's record: the pop is the range's last record
      return level;
    }
    // A pop without a push: NVTX says the result is undefined; recorded, level unknown.
    record(api, Kind::POP, domain, Attributes{}, UINT64_MAX);
  } catch (...) {
  }
  return -1;
}

nvtxRangeId_t start(const char* api, const Domain* domain, const Attributes& attributes) noexcept {
  uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (nvtx_starts_range(domain != nullptr ? &domain->name : nullptr, attributes.message)) {
    g_capture_range_id.store(id);
    range_begin("nvtx range start");
  }
  record(api, Kind::START, domain, attributes, id);
  try {
    std::lock_guard lock(g_mutex);
    if (g_started.size() < kMaxOpenStartedRanges) g_started.emplace(id, attributes.message);
  } catch (...) {
  }
  return id;
}

void end(const char* api, const Domain* domain, nvtxRangeId_t id) noexcept {
  Attributes attributes;
  try {
    std::lock_guard lock(g_mutex);
    if (auto it = g_started.find(id); it != g_started.end()) {
      attributes.message = std::move(it->second);
      g_started.erase(it);
    }
  } catch (...) {
  }
  record(api, Kind::END, domain, attributes, id);
  uint64_t capturing = id;
  if (id != 0 && g_capture_range_id.compare_exchange_strong(capturing, 0)) range_end();
}

void mark(const char* api, const Domain* domain, const Attributes& attributes) noexcept {
  record(api, Kind::MARK, domain, attributes, 0);
}

// ---- CORE
void NVTX_API mark_ex(const nvtxEventAttributes_t* a) {
  mark("nvtxMarkEx", nullptr, read_attributes(a));
}
void NVTX_API mark_a(const char* m) { mark("nvtxMarkA", nullptr, message_only(ascii_text(m))); }
void NVTX_API mark_w(const wchar_t* m) { mark("nvtxMarkW", nullptr, message_only(wide_text(m))); }
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  return start("nvtxRangeStartEx", nullptr, read_attributes(a));
}
nvtxRangeId_t NVTX_API start_a(const char* m) {
  return start("nvtxRangeStartA", nullptr, message_only(ascii_text(m)));
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* m) {
  return start("nvtxRangeStartW", nullptr, message_only(wide_text(m)));
}
void NVTX_API end_core(nvtxRangeId_t id) { end("nvtxRangeEnd", nullptr, id); }
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  return push("nvtxRangePushEx", nullptr, read_attributes(a));
}
int NVTX_API push_a(const char* m) {
  return push("nvtxRangePushA", nullptr, message_only(ascii_text(m)));
}
int NVTX_API push_w(const wchar_t* m) {
  return push("nvtxRangePushW", nullptr, message_only(wide_text(m)));
}
int NVTX_API pop_core() { return pop("nvtxRangePop", nullptr); }

// ---- CORE2
void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  mark("nvtxDomainMarkEx", domain_of(d), read_attributes(a));
}
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start("nvtxDomainRangeStartEx", domain_of(d), read_attributes(a));
}
void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  end("nvtxDomainRangeEnd", domain_of(d), id);
}
int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return push("nvtxDomainRangePushEx", domain_of(d), read_attributes(a));
}
int NVTX_API domain_pop(nvtxDomainHandle_t d) { return pop("nvtxDomainRangePop", domain_of(d)); }

template <class Text>
nvtxStringHandle_t register_string(Text text) noexcept {
  try {
    return reinterpret_cast<nvtxStringHandle_t>(new RegisteredString{std::move(text)});
  } catch (...) {
    return nullptr;
  }
}
nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t, const char* s) {
  return register_string(ascii_text(s));
}
nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t, const wchar_t* s) {
  return register_string(wide_text(s));
}

template <class Text>
nvtxDomainHandle_t create_domain(Text name) noexcept {
  try {
    return reinterpret_cast<nvtxDomainHandle_t>(new Domain{std::move(name)});
  } catch (...) {
    return nullptr;
  }
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return create_domain(ascii_text(name));
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  return create_domain(wide_text(name));
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}  // kept: see Domain

template <class Function>
void fill(NvtxFunctionTable table, unsigned size, unsigned id, Function function) {
  if (id < size && table[id] != nullptr)
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(function);
}

bool fill_module(const NvtxExportTableCallbacks* callbacks, NvtxCallbackModule module) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks->GetModuleFunctionTable == nullptr ||
      callbacks->GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) {
    return false;
  }
  if (module == NVTX_CB_MODULE_CORE) {
    fill(table, size, NVTX_CBID_CORE_MarkEx, &mark_ex);
    fill(table, size, NVTX_CBID_CORE_MarkA, &mark_a);
    fill(table, size, NVTX_CBID_CORE_MarkW, &mark_w);
    fill(table, size, NVTX_CBID_CORE_RangeStartEx, &start_ex);
    fill(table, size, NVTX_CBID_CORE_RangeStartA, &start_a);
    fill(table, size, NVTX_CBID_CORE_RangeStartW, &start_w);
    fill(table, size, NVTX_CBID_CORE_RangeEnd, &end_core);
    fill(table, size, NVTX_CBID_CORE_RangePushEx, &push_ex);
    fill(table, size, NVTX_CBID_CORE_RangePushA, &push_a);
    fill(table, size, NVTX_CBID_CORE_RangePushW, &push_w);
    fill(table, size, NVTX_CBID_CORE_RangePop, &pop_core);
  } else {
    fill(table, size, NVTX_CBID_CORE2_DomainMarkEx, &domain_mark_ex);
    fill(table, size, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start_ex);
    fill(table, size, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
    fill(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push_ex);
    fill(table, size, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
    fill(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string_a);
    fill(table, size, NVTX_CBID_CORE2_DomainRegisterStringW, &register_string_w);
    fill(table, size, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
    fill(table, size, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
    fill(table, size, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
  }
  return true;
}

}  // namespace
}  // namespace cusnap::icpt

// The NVTX injection entry point (nvtxDetail/nvtxInit.h). Returning 0 makes NVTX turn every call
// into its no-op, as without a tool: what happens when the tables are not what this code knows.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  using namespace cusnap::icpt;
  ensure_initialized();
  if (get_export_table == nullptr) return 0;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) {
    log_once(LogLevel::kWarn, "nvtx-table",
             "NVTX: the application's callback table is not one this interceptor knows; its "
             "NVTX ranges are not recorded");
    return 0;
  }
  if (const auto* version =
          static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
      version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
      version->SetInjectionNvtxVersion != nullptr) {
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  }
  if (!fill_module(callbacks, NVTX_CB_MODULE_CORE)) {
    log_once(LogLevel::kWarn, "nvtx-core",
             "NVTX: no CORE callback table; the application's NVTX ranges are not recorded");
    return 0;
  }
  if (!fill_module(callbacks, NVTX_CB_MODULE_CORE2)) {
    // An NVTX older than domains: the CORE ranges are still recorded.
    log_once(LogLevel::kInfo, "nvtx-core2", "NVTX: no CORE2 (domain) callback table");
  }
  log(LogLevel::kDebug, "NVTX injection initialised");
  return 1;
}
