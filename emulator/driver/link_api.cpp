// The driver linker (cuLinkCreate/AddData/AddFile/Complete/Destroy) over PTX: the inputs become
// PTX (link_inputs.h), cuLinkComplete links them into one PTX module (ptx_link.h), compiles it
// once to report what the engine would refuse, and hands out the linked PTX text as the "cubin":
// cuModuleLoadData and cuLibraryLoadData load it like any PTX, and a program that saves it gets a
// PTX file the emulator loads again.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/link_inputs.h"
#include "driver/ptx_link.h"
#include "driver/state.h"
#include "ptx/engine.h"

using namespace cusnap::emu::driver;

namespace {

// A log buffer option pair: the buffer, its size (in), and the slot that gets the length written.
struct LogBuffer {
  char* buffer = nullptr;
  size_t size = 0;
  void** length_slot = nullptr;
};

struct JitOutputs {
  LogBuffer error, info;
  void** wall_time_slot = nullptr;  // CU_JIT_WALL_TIME: a float (milliseconds) in the slot
};

CUresult parse_options(unsigned n, CUjit_option* options, void** values, JitOutputs* out) {
  if (n > 0 && (options == nullptr || values == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i) {
    const auto size =
        static_cast<size_t>(static_cast<unsigned>(reinterpret_cast<uintptr_t>(values[i])));
    switch (options[i]) {
      case CU_JIT_ERROR_LOG_BUFFER:
        out->error.buffer = static_cast<char*>(values[i]);
        break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        out->error.size = size;
        out->error.length_slot = &values[i];
        break;
      case CU_JIT_INFO_LOG_BUFFER:
        out->info.buffer = static_cast<char*>(values[i]);
        break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        out->info.size = size;
        out->info.length_slot = &values[i];
        break;
      case CU_JIT_WALL_TIME:
        out->wall_time_slot = &values[i];
        break;
      default:
        break;  // optimisation levels, targets, debug info, ...: nothing to change here
    }
  }
  return CUDA_SUCCESS;
}

// As the driver fills JIT logs: at most `size` bytes with the NUL, the length (NUL excluded)
// stored back into the size option's slot.
void write_log(const LogBuffer& log, const std::string& text) {
  if (log.buffer == nullptr || log.size == 0) return;
  const size_t length = std::min(text.size(), log.size - 1);
  std::memcpy(log.buffer, text.data(), length);
  log.buffer[length] = '\0';
  if (log.length_slot != nullptr)
    *log.length_slot = reinterpret_cast<void*>(static_cast<uintptr_t>(length));
}

struct LinkState {
  std::mutex mutex;
  JitOutputs outputs;  // cuLinkCreate's, written by every later call
  std::vector<LinkInput> inputs;
  std::string image;  // cuLinkComplete's result, valid until cuLinkDestroy
  bool complete = false;
};

LinkState* link_state(CUlinkState handle) {
  return handle_cast<LinkState>(handle, HandleKind::kLinkState);
}

CUresult fail(LinkState* state, const JitOutputs* call, CUresult result, const std::string& what) {
  const std::string text = "cusnap emulator linker: " + what + "\n";
  log(LogLevel::kError, "%s", text.substr(0, text.size() - 1).c_str());
  write_log(state->outputs.error, text);
  if (call != nullptr) write_log(call->error, text);
  return result;
}

CUresult link_create(unsigned numOptions, CUjit_option* options, void** optionValues,
                     CUlinkState* stateOut) {
  Context* ctx;
  if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
  if (stateOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  JitOutputs outputs;
  if (CUresult r = parse_options(numOptions, options, optionValues, &outputs); r != CUDA_SUCCESS)
    return r;
  auto* state = new LinkState;
  state->outputs = outputs;
  write_log(outputs.error, "");
  write_log(outputs.info, "");
  register_handle(state, HandleKind::kLinkState);
  *stateOut = reinterpret_cast<CUlinkState>(state);
  return CUDA_SUCCESS;
}

CUresult link_add(CUlinkState handle, CUjitInputType type, const void* data, size_t size,
                  const std::string& name, unsigned numOptions, CUjit_option* options,
                  void** optionValues) {
  LinkState* state = link_state(handle);
  if (state == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  JitOutputs call;
  if (CUresult r = parse_options(numOptions, options, optionValues, &call); r != CUDA_SUCCESS)
    return r;
  std::lock_guard lock(state->mutex);
  if (state->complete)
    return fail(state, &call, CUDA_ERROR_INVALID_VALUE,
                "input '" + name + "' added after cuLinkComplete");
  std::string error;
  std::vector<LinkInput> added;
  CUresult r = add_link_input(type, data, size, name, &added, &error);
  if (r != CUDA_SUCCESS) return error.empty() ? r : fail(state, &call, r, error);
  for (LinkInput& input : added) state->inputs.push_back(std::move(input));
  write_log(call.error, "");
  return CUDA_SUCCESS;
}

CUresult link_add_data(CUlinkState state, CUjitInputType type, void* data, size_t size,
                       const char* name, unsigned numOptions, CUjit_option* options,
                       void** optionValues) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  LinkState* s = link_state(state);
  const std::string label =
      name != nullptr && *name != '\0'
          ? std::string(name)
          : "input " + std::to_string(s != nullptr ? s->inputs.size() + 1 : 0);
  return link_add(state, type, data, size, label, numOptions, options, optionValues);
}

CUresult link_add_file(CUlinkState state, CUjitInputType type, const char* path,
                       unsigned numOptions, CUjit_option* options, void** optionValues) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (link_state(state) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) return CUDA_ERROR_INVALID_IMAGE;
  return link_add(state, type, bytes.data(), bytes.size(), path, numOptions, options, optionValues);
}

// Compiles the linked module once, so that what the engine refuses is reported by the link.
CUresult check_linked(const std::string& ptx, std::string* error) {
#ifdef CUSNAP_EMU_HAVE_PTX_ENGINE
  cusnap::emu::ptx::CompileResult compiled = cusnap::emu::ptx::compile(ptx);
  if (compiled.program) return CUDA_SUCCESS;
  *error = "the linked module: " + compiled.error;
  switch (compiled.status) {
    case cusnap::emu::ptx::CompileStatus::kNotSupported:
      return CUDA_ERROR_NOT_SUPPORTED;
    case cusnap::emu::ptx::CompileStatus::kOutOfMemory:
      return CUDA_ERROR_OUT_OF_MEMORY;
    default:
      return CUDA_ERROR_INVALID_PTX;
  }
#else
  (void)ptx;
  *error = "this emulator build has no PTX engine";
  return CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
#endif
}

CUresult link_complete(CUlinkState handle, void** cubinOut, size_t* sizeOut) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  LinkState* state = link_state(handle);
  if (state == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (cubinOut == nullptr || sizeOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state->mutex);
  const auto start = std::chrono::steady_clock::now();
  if (!state->complete) {
    LinkOutput linked = link_ptx(state->inputs);
    // Link errors (undefined, multiply defined, mismatched symbols) make no usable image.
    if (!linked.ok) return fail(state, nullptr, CUDA_ERROR_INVALID_IMAGE, linked.error);
    std::string error;
    if (CUresult r = check_linked(linked.ptx, &error); r != CUDA_SUCCESS)
      return fail(state, nullptr, r, error);
    state->image = std::move(linked.ptx);
    state->complete = true;
  }
  *cubinOut = state->image.data();
  *sizeOut = state->image.size() + 1;  // with its NUL, as a PTX image is loaded
  write_log(state->outputs.info, "cusnap emulator linker: linked " +
                                     std::to_string(state->inputs.size()) +
                                     " inputs into one PTX module\n");
  if (state->outputs.wall_time_slot != nullptr) {
    const float ms =
        std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::memcpy(state->outputs.wall_time_slot, &ms, sizeof ms);
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuLinkCreate(unsigned int numOptions, CUjit_option* options,
                                            void** optionValues, CUlinkState* stateOut) {
  return guarded("cuLinkCreate",
                 [&] { return link_create(numOptions, options, optionValues, stateOut); });
}
CUSNAP_EXPORT CUresult CUDAAPI cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options,
                                               void** optionValues, CUlinkState* stateOut) {
  return guarded("cuLinkCreate_v2",
                 [&] { return link_create(numOptions, options, optionValues, stateOut); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLinkAddData(CUlinkState state, CUjitInputType type, void* data,
                                             size_t size, const char* name, unsigned int numOptions,
                                             CUjit_option* options, void** optionValues) {
  return guarded("cuLinkAddData", [&] {
    return link_add_data(state, type, data, size, name, numOptions, options, optionValues);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data,
                                                size_t size, const char* name,
                                                unsigned int numOptions, CUjit_option* options,
                                                void** optionValues) {
  return guarded("cuLinkAddData_v2", [&] {
    return link_add_data(state, type, data, size, name, numOptions, options, optionValues);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLinkAddFile(CUlinkState state, CUjitInputType type,
                                             const char* path, unsigned int numOptions,
                                             CUjit_option* options, void** optionValues) {
  return guarded("cuLinkAddFile", [&] {
    return link_add_file(state, type, path, numOptions, options, optionValues);
  });
}
CUSNAP_EXPORT CUresult CUDAAPI cuLinkAddFile_v2(CUlinkState state, CUjitInputType type,
                                                const char* path, unsigned int numOptions,
                                                CUjit_option* options, void** optionValues) {
  return guarded("cuLinkAddFile_v2", [&] {
    return link_add_file(state, type, path, numOptions, options, optionValues);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  return guarded("cuLinkComplete", [&] { return link_complete(state, cubinOut, sizeOut); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLinkDestroy(CUlinkState state) {
  return guarded("cuLinkDestroy", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    LinkState* s = link_state(state);
    if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    destroy_handle(s, HandleKind::kLinkState);
    return CUDA_SUCCESS;
  });
}
