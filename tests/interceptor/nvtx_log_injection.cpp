// A test-only NVTX injection library (interceptor.nvtx): loaded through NVTX_INJECTION64_PATH by
// the application or by `cusnap replay`, it writes one line per NVTX event to the file
// $CUSNAP_TEST_NVTX_LOG, so that the test can compare what NVTX saw in the original run with
// what the replay emitted:
//   <kind> <domain> color=<hex|-> category=<n> <message>
// kind: push, pop, start, end, mark; domain "-" for the default one; pop and end print the
// message of the range they close. Never installed.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#undef NVTX_NO_IMPL

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Domain {
  std::string name;
};

std::mutex g_mutex;
FILE* g_log = nullptr;
std::vector<std::pair<const Domain*, std::string>> g_pushed;
std::map<nvtxRangeId_t, std::string> g_started;
nvtxRangeId_t g_next_id = 1;

std::string wide(const wchar_t* text) {
  std::string out;
  for (; text != nullptr && *text != 0; ++text) {
    auto c = static_cast<uint32_t>(*text);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      out += '?';  // the test uses nothing wider
    }
  }
  return out;
}

std::string message_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii != nullptr ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
      return wide(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered != nullptr
                 ? reinterpret_cast<const std::string*>(a->message.registered)->c_str()
                 : "";
    default:
      return {};
  }
}

void line(const char* kind, const Domain* domain, const nvtxEventAttributes_t* a,
          const std::string& message) {
  if (g_log == nullptr) return;
  char color[16] = "-";
  if (a != nullptr && a->colorType == NVTX_COLOR_ARGB)
    std::snprintf(color, sizeof color, "%08x", a->color);
  std::fprintf(g_log, "%s %s color=%s category=%u %s\n", kind,
               domain != nullptr ? domain->name.c_str() : "-", color,
               a != nullptr ? a->category : 0u, message.c_str());
  std::fflush(g_log);
}

int push(const Domain* d, const nvtxEventAttributes_t* a, const std::string& message) {
  std::lock_guard lock(g_mutex);
  line("push", d, a, message);
  g_pushed.emplace_back(d, message);
  return static_cast<int>(g_pushed.size()) - 1;
}
int pop(const Domain* d) {
  std::lock_guard lock(g_mutex);
  for (size_t i = g_pushed.size(); i-- > 0;) {
    if (g_pushed[i].first != d) continue;
    line("pop", d, nullptr, g_pushed[i].second);
    g_pushed.erase(g_pushed.begin() + static_cast<long>(i));
    return static_cast<int>(i);
  }
  line("pop", d, nullptr, "<nothing pushed>");
  return -1;
}
nvtxRangeId_t start(const Domain* d, const nvtxEventAttributes_t* a, const std::string& message) {
  std::lock_guard lock(g_mutex);
  line("start", d, a, message);
  g_started[g_next_id] = message;
  return g_next_id++;
}
void end(const Domain* d, nvtxRangeId_t id) {
  std::lock_guard lock(g_mutex);
  auto it = g_started.find(id);
  line("end", d, nullptr, it != g_started.end() ? it->second : "<unknown range>");
  if (it != g_started.end()) g_started.erase(it);
}
void mark(const Domain* d, const nvtxEventAttributes_t* a, const std::string& message) {
  std::lock_guard lock(g_mutex);
  line("mark", d, a, message);
}
const Domain* dom(nvtxDomainHandle_t d) { return reinterpret_cast<const Domain*>(d); }

void NVTX_API mark_ex(const nvtxEventAttributes_t* a) { mark(nullptr, a, message_of(a)); }
void NVTX_API mark_a(const char* m) { mark(nullptr, nullptr, m); }
void NVTX_API mark_w(const wchar_t* m) { mark(nullptr, nullptr, wide(m)); }
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  return start(nullptr, a, message_of(a));
}
nvtxRangeId_t NVTX_API start_a(const char* m) { return start(nullptr, nullptr, m); }
nvtxRangeId_t NVTX_API start_w(const wchar_t* m) { return start(nullptr, nullptr, wide(m)); }
void NVTX_API end_core(nvtxRangeId_t id) { end(nullptr, id); }
int NVTX_API push_ex(const nvtxEventAttributes_t* a) { return push(nullptr, a, message_of(a)); }
int NVTX_API push_a(const char* m) { return push(nullptr, nullptr, m); }
int NVTX_API push_w(const wchar_t* m) { return push(nullptr, nullptr, wide(m)); }
int NVTX_API pop_core() { return pop(nullptr); }
void NVTX_API d_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  mark(dom(d), a, message_of(a));
}
nvtxRangeId_t NVTX_API d_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start(dom(d), a, message_of(a));
}
void NVTX_API d_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { end(dom(d), id); }
int NVTX_API d_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return push(dom(d), a, message_of(a));
}
int NVTX_API d_pop(nvtxDomainHandle_t d) { return pop(dom(d)); }
nvtxStringHandle_t NVTX_API d_register_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(new std::string(s));
}
nvtxDomainHandle_t NVTX_API d_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new Domain{name});
}

template <class F>
void set(NvtxFunctionTable table, unsigned size, unsigned id, F f) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char* path = std::getenv("CUSNAP_TEST_NVTX_LOG");
  if (path == nullptr) return 0;
  g_log = std::fopen(path, "a");
  auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable t = nullptr;
  unsigned n = 0;
  if (callbacks == nullptr || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n))
    return 0;
  set(t, n, NVTX_CBID_CORE_MarkEx, &mark_ex);
  set(t, n, NVTX_CBID_CORE_MarkA, &mark_a);
  set(t, n, NVTX_CBID_CORE_MarkW, &mark_w);
  set(t, n, NVTX_CBID_CORE_RangeStartEx, &start_ex);
  set(t, n, NVTX_CBID_CORE_RangeStartA, &start_a);
  set(t, n, NVTX_CBID_CORE_RangeStartW, &start_w);
  set(t, n, NVTX_CBID_CORE_RangeEnd, &end_core);
  set(t, n, NVTX_CBID_CORE_RangePushEx, &push_ex);
  set(t, n, NVTX_CBID_CORE_RangePushA, &push_a);
  set(t, n, NVTX_CBID_CORE_RangePushW, &push_w);
  set(t, n, NVTX_CBID_CORE_RangePop, &pop_core);
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n)) return 0;
  set(t, n, NVTX_CBID_CORE2_DomainMarkEx, &d_mark);
  set(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, &d_start);
  set(t, n, NVTX_CBID_CORE2_DomainRangeEnd, &d_end);
  set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, &d_push);
  set(t, n, NVTX_CBID_CORE2_DomainRangePop, &d_pop);
  set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, &d_register_a);
  set(t, n, NVTX_CBID_CORE2_DomainCreateA, &d_create_a);
  return 1;
}
