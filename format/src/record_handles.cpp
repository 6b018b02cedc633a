#include "cusnap/format/record_handles.h"

#include <cstdio>

namespace cusnap::format {

namespace {

constexpr size_t index_of(HandleKind kind) { return static_cast<size_t>(kind); }

// CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: streams no call creates.
constexpr uint64_t kStreamLegacy = 0x1;
constexpr uint64_t kStreamPerThread = 0x2;

std::string hex(uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(v));
  return buffer;
}

Status unreplayable(uint64_t seq, std::string message) {
  return Status::error(ErrorCode::kMalformed, std::move(message)).at_call(seq);
}

}  // namespace

const char* handle_kind_name(HandleKind kind) {
  switch (kind) {
    case HandleKind::kContext:
      return "context";
    case HandleKind::kModule:
      return "module";
    case HandleKind::kFunction:
      return "function";
    case HandleKind::kStream:
      return "stream";
    case HandleKind::kEvent:
      return "event";
  }
  return "handle";
}

bool HandleReport::empty() const {
  for (size_t k = 0; k < kHandleKinds; ++k) {
    if (never_created[k].calls != 0 || created_twice[k].calls != 0) return false;
  }
  return true;
}

void HandleChecker::note(HandleFinding& f, std::unordered_set<uint64_t>& seen, uint64_t handle,
                         uint64_t seq, const char* api) {
  if (f.calls++ == 0) {
    f.first_seq = seq;
    f.first_handle = handle;
    f.first_api = api;
  }
  if (seen.insert(handle).second) ++f.handles;
}

void HandleChecker::use(HandleKind kind, uint64_t handle, uint64_t seq, const char* api) {
  size_t k = index_of(kind);
  if (handle == 0 || ever_[k].count(handle) != 0) return;
  if (kind == HandleKind::kStream && (handle == kStreamLegacy || handle == kStreamPerThread))
    return;
  note(report_.never_created[k], unknown_seen_[k], handle, seq, api);
}

void HandleChecker::create(HandleKind kind, uint64_t handle, uint64_t seq, const char* api) {
  size_t k = index_of(kind);
  if (handle == 0) return;
  ever_[k].insert(handle);
  if (!live_[k].insert(handle).second) {
    note(report_.created_twice[k], twice_seen_[k], handle, seq, api);
  }
}

void HandleChecker::destroy(HandleKind kind, uint64_t handle) {
  live_[index_of(kind)].erase(handle);
}

Status HandleChecker::check(schema::CallRecord::Reader r) {
  if (r.getResult() != 0) return Status::ok();
  using Which = schema::CallRecord::Which;
  const uint64_t seq = r.getSeq();
  const char* api = r.getApiName().cStr();
  switch (r.which()) {
    case Which::CONTEXT_CREATE:
      create(HandleKind::kContext, r.getContextCreate().getContext(), seq, api);
      break;
    case Which::CONTEXT_DESTROY:
      use(HandleKind::kContext, r.getContextDestroy().getContext(), seq, api);
      destroy(HandleKind::kContext, r.getContextDestroy().getContext());
      break;
    case Which::CONTEXT_SET_CURRENT:
      use(HandleKind::kContext, r.getContextSetCurrent().getContext(), seq, api);
      break;
    case Which::PRIMARY_CONTEXT: {
      auto p = r.getPrimaryContext();
      // Retaining the primary context again returns the same handle: not a second create.
      if (p.getOp() == schema::PrimaryContext::Op::RETAIN && p.getContext() != 0) {
        ever_[index_of(HandleKind::kContext)].insert(p.getContext());
        live_[index_of(HandleKind::kContext)].insert(p.getContext());
      }
      break;
    }
    case Which::MODULE_LOAD:
      create(HandleKind::kModule, r.getModuleLoad().getHandle(), seq, api);
      break;
    case Which::MODULE_UNLOAD:
      // The replayer skips the unload of a module it never loaded.
      use(HandleKind::kModule, r.getModuleUnload().getHandle(), seq, api);
      destroy(HandleKind::kModule, r.getModuleUnload().getHandle());
      break;
    case Which::FUNCTION_GET: {
      auto g = r.getFunctionGet();
      if (g.getHandle() == 0) break;  // the replayer skips it
      if (g.getKind() == schema::FunctionGet::Kind::KERNEL_GET_FUNCTION) {
        // Replayed by converting the replayed CUkernel: there must be one.
        if (ever_[index_of(HandleKind::kFunction)].count(g.getKernel()) == 0) {
          return unreplayable(seq, "cuKernelGetFunction of kernel " + hex(g.getKernel()) +
                                       " that no earlier record obtained");
        }
      } else if (live_[index_of(HandleKind::kModule)].count(g.getModule()) == 0) {
        // Replayed by looking the name up in the replayed module: it must be loaded.
        return unreplayable(seq, "function '" + std::string(g.getName().cStr()) + "' of module " +
                                     hex(g.getModule()) +
                                     " that no earlier record loaded (or that was unloaded)");
      }
      // The same function asked for twice is the same handle: not suspicious.
      ever_[index_of(HandleKind::kFunction)].insert(g.getHandle());
      break;
    }
    case Which::FUNCTION_SET_ATTRIBUTE:
      use(HandleKind::kFunction, r.getFunctionSetAttribute().getFunction(), seq, api);
      break;
    case Which::GLOBAL_GET: {
      auto g = r.getGlobalGet();
      if (live_[index_of(HandleKind::kModule)].count(g.getModule()) == 0) {
        return unreplayable(seq, "global '" + std::string(g.getName().cStr()) + "' of module " +
                                     hex(g.getModule()) +
                                     " that no earlier record loaded (or that was unloaded)");
      }
      break;
    }
    case Which::MEMCPY:
      use(HandleKind::kStream, r.getMemcpy().getStream(), seq, api);
      break;
    case Which::MEMSET:
      use(HandleKind::kStream, r.getMemset().getStream(), seq, api);
      break;
    case Which::LAUNCH: {
      auto l = r.getLaunch();
      use(HandleKind::kStream, l.getStream(), seq, api);
      if (ever_[index_of(HandleKind::kFunction)].count(l.getFunction()) == 0) {
        // The replayer finds a function no record obtained by its kernel name; without one
        // there is nothing to launch.
        if (!l.hasKernelName() || l.getKernelName().size() == 0) {
          return unreplayable(seq, "launch of function " + hex(l.getFunction()) +
                                       " that no earlier record obtained, with no kernel name "
                                       "to find it by");
        }
        use(HandleKind::kFunction, l.getFunction(), seq, api);
      }
      break;
    }
    case Which::STREAM_CREATE:
      create(HandleKind::kStream, r.getStreamCreate().getStream(), seq, api);
      break;
    case Which::STREAM_DESTROY:
      use(HandleKind::kStream, r.getStreamDestroy().getStream(), seq, api);
      destroy(HandleKind::kStream, r.getStreamDestroy().getStream());
      break;
    case Which::STREAM_WAIT_EVENT:
      use(HandleKind::kStream, r.getStreamWaitEvent().getStream(), seq, api);
      use(HandleKind::kEvent, r.getStreamWaitEvent().getEvent(), seq, api);
      break;
    case Which::STREAM_SYNCHRONIZE:
      use(HandleKind::kStream, r.getStreamSynchronize().getStream(), seq, api);
      break;
    case Which::STREAM_QUERY:
      use(HandleKind::kStream, r.getStreamQuery().getStream(), seq, api);
      break;
    case Which::EVENT_CREATE:
      create(HandleKind::kEvent, r.getEventCreate().getEvent(), seq, api);
      break;
    case Which::EVENT_RECORD:
      use(HandleKind::kEvent, r.getEventRecord().getEvent(), seq, api);
      use(HandleKind::kStream, r.getEventRecord().getStream(), seq, api);
      break;
    case Which::EVENT_SYNCHRONIZE:
      use(HandleKind::kEvent, r.getEventSynchronize().getEvent(), seq, api);
      break;
    case Which::EVENT_DESTROY:
      use(HandleKind::kEvent, r.getEventDestroy().getEvent(), seq, api);
      destroy(HandleKind::kEvent, r.getEventDestroy().getEvent());
      break;
    case Which::EVENT_ELAPSED_TIME:
      use(HandleKind::kEvent, r.getEventElapsedTime().getStart(), seq, api);
      use(HandleKind::kEvent, r.getEventElapsedTime().getEnd(), seq, api);
      break;
    case Which::EVENT_QUERY:
      use(HandleKind::kEvent, r.getEventQuery().getEvent(), seq, api);
      break;
    case Which::HOST_FUNC:
      use(HandleKind::kStream, r.getHostFunc().getStream(), seq, api);
      break;
    default:
      break;
  }
  return Status::ok();
}

}  // namespace cusnap::format
