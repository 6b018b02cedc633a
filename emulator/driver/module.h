// Modules, libraries and functions.
//
// A Module owns one compiled PTX program (ptx::Program), device memory for its module-scope
// variables, and one Function per `.entry`. A Library (cuLibrary*) wraps one Module: the
// emulator has one device and one address space, so a library's module is shared by every
// context. CUkernel and CUfunction handles are the same Function object: the CUDA runtime
// launches a CUkernel cast to CUfunction, and cuKernelGetFunction returns its argument.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "generated_driver_api.h"
#include "ptx/engine.h"

namespace cusnap::emu::driver {

struct Module;
struct Library;

// The legacy execution-control state of a function (cuFuncSetBlockShape, cuFuncSetSharedSize,
// cuParamSetSize/Seti/Setf/Setv), read by cuLaunch, cuLaunchGrid and cuLaunchGridAsync. The
// parameter buffer holds the bytes at the offsets the caller gave; cuLaunchKernel* clears the
// whole state (the driver documents it as invalidated), so a later cuLaunch* without setting it
// again fails with CUDA_ERROR_INVALID_VALUE instead of launching with stale values.
struct LegacyLaunchState {
  uint32_t block[3] = {0, 0, 0};  // 0: never set
  unsigned shared_bytes = 0;
  std::vector<uint8_t> params;  // written bytes (zero where nothing was written)
  bool size_set = false;
  unsigned param_size = 0;  // cuParamSetSize
};

// The largest parameter buffer a kernel takes (CUDA 12.1+, sm_70+): cuParamSet* refuse to write
// beyond it.
inline constexpr unsigned kMaxParamBytes = 32764;

struct Function {
  Module* module = nullptr;
  int index = 0;  // into program->kernels()
  const ptx::KernelDesc* desc = nullptr;
  std::atomic<int> max_dynamic_shared{
      0};  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (0: default)
  std::atomic<int> carveout{-1};
  std::atomic<int> non_portable_cluster{0};
  std::atomic<int> required_cluster[3] = {0, 0, 0};
  std::atomic<int> cluster_policy{0};
  std::mutex legacy_mutex;  // guards legacy
  LegacyLaunchState legacy;
};

struct Module {
  std::unique_ptr<ptx::Program> program;
  // Launches of this module's kernels queued or running on any stream: unloading waits for them,
  // so the program is never freed under a kernel of another context.
  std::atomic<int> launches_in_flight{0};
  std::vector<std::unique_ptr<Function>> functions;
  std::vector<uint64_t> variable_addresses;  // per program->variables(); 0 for externs
  // Per program->variables(): the CUtexref / CUsurfref of a `.texref` / `.surfref` variable
  // (texref.cpp), else null.
  std::vector<void*> references;
  Library* library = nullptr;
  uint32_t ptx_sm = 0;  // the fatbin entry the PTX came from (0 for plain PTX text)
};

struct Library {
  Module* module = nullptr;
};

// Loads an image (PTX text, fatbin container or wrapper). On failure returns the CUresult the
// driver would and fills `error` with what went wrong (also logged).
CUresult load_module(const void* image, Module** out, std::string* error);
void unload_module(Module* module);

Function* function_from_handle(const void* handle);  // CUfunction or CUkernel
Module* module_from_handle(CUmodule handle);

}  // namespace cusnap::emu::driver
