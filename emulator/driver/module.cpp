#include "driver/module.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "driver/api.h"
#include "driver/array.h"
#include "driver/context.h"
#include "driver/link_inputs.h"
#include "driver/memory.h"
#include "driver/ptx_link.h"
#include "driver/ptx_selection.h"
#include "driver/state.h"
#include "driver/stats.h"

namespace cusnap::emu::driver {
namespace {

std::unique_ptr<ptx::Program> compile_ptx(const std::string& text, CUresult* status,
                                          std::string* error) {
#ifdef CUSNAP_EMU_HAVE_PTX_ENGINE
  ptx::CompileResult result = ptx::compile(text);
  if (!result.program) {
    switch (result.status) {
      case ptx::CompileStatus::kNotSupported:
        // Valid PTX the emulator cannot run: refused now rather than computing a wrong answer.
        *status = CUDA_ERROR_NOT_SUPPORTED;
        *error = "PTX " + result.error;
        break;
      case ptx::CompileStatus::kOutOfMemory:
        *status = CUDA_ERROR_OUT_OF_MEMORY;
        *error = result.error;
        break;
      default:
        *status = CUDA_ERROR_INVALID_PTX;
        *error = "invalid PTX: " + result.error;
        break;
    }
  }
  return std::move(result.program);
#else
  (void)text;
  *status = CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
  *error =
      "this emulator build has no PTX engine (cusnap_emu_ptx was not built), so no module can be "
      "loaded";
  return nullptr;
#endif
}

void free_variables(Module* m) {
  for (uint64_t address : m->variable_addresses) {
    if (address == 0) continue;
    if (auto a = allocations().erase(address)) {
      note_free(a->kind, a->size);
      unmap_anonymous(reinterpret_cast<void*>(a->base), a->mapped_size);
    }
  }
  m->variable_addresses.clear();
}

}  // namespace

CUresult load_module(const void* image, Module** out, std::string* error) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (std::strncmp(static_cast<const char*>(image), "!<arch>\n", 8) == 0) {
    // A static library: its members are separate modules to link, and an image pointer alone
    // does not say where the archive ends.
    *error =
        "the image is an ar archive (a static library), not a module: load it from its file "
        "(cuModuleLoad, cuLibraryLoadFromFile) or link it (cuLinkAddData with "
        "CU_JIT_INPUT_LIBRARY)";
    log(LogLevel::kError, "module load: %s", error->c_str());
    return CUDA_ERROR_INVALID_IMAGE;
  }
  int sm = device_config().sm;
  PtxSelection selection = select_ptx(image, static_cast<uint32_t>(sm));
  if (selection.sass_only) {
    *error =
        "SASS-only module: the emulator needs PTX (build with -gencode "
        "arch=compute_XX,code=compute_XX "
        "or the default -arch); " +
        selection.error;
    log(LogLevel::kError, "%s", error->c_str());
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  if (!selection.error.empty()) {
    *error = selection.error;
    log(LogLevel::kError, "module load: %s", error->c_str());
    return selection.error.find("newer architecture") != std::string::npos
               ? CUDA_ERROR_NO_BINARY_FOR_GPU
               : CUDA_ERROR_INVALID_IMAGE;
  }
  CUresult status = CUDA_SUCCESS;
  auto program = compile_ptx(selection.ptx, &status, error);
  if (!program) {
    log(LogLevel::kError, "module load: %s", error->c_str());
    return status;
  }
  auto module = std::make_unique<Module>();
  module->ptx_sm = selection.sm;
  module->program = std::move(program);
  const auto& variables = module->program->variables();
  module->variable_addresses.assign(variables.size(), 0);
  for (size_t i = 0; i < variables.size(); ++i) {
    const ptx::VariableDesc& v = variables[i];
    if (v.is_extern) continue;
    uint64_t size = std::max<uint64_t>(v.size, 1);
    uint64_t mapped = (size + redzone_bytes() + 4095) / 4096 * 4096;  // redzone: see memory.h
    void* p = map_anonymous(mapped);
    if (p == nullptr) {
      free_variables(module.get());
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!v.initializer.empty()) {
      std::memcpy(p, v.initializer.data(), std::min<size_t>(v.initializer.size(), v.size));
    }
    Allocation a;
    a.base = reinterpret_cast<uint64_t>(p);
    a.size = v.size;
    a.mapped_size = mapped;
    a.kind = AllocationKind::kModuleVariable;
    a.name = v.name.c_str();  // the program (and its names) outlives the allocation
    // A .texref/.surfref variable holds its reference's handle, which device code only reads
    // through the texture instructions.
    a.device_writable =
        v.space == ptx::VariableSpace::kGlobal && v.opaque == ptx::OpaqueKind::kNone;
    // `__managed__`: device addresses are host addresses, so the address cuModuleGetGlobal
    // returns is the host's pointer to the same bytes, as unified addressing gives on a GPU.
    a.managed_variable = v.managed;
    a.counts_as_device_memory = false;
    allocations().insert(a);
    note_allocation(a.kind, a.size);
    module->variable_addresses[i] = a.base;
    module->program->bind_variable(static_cast<int>(i), a.base);
  }
  if (CUresult r = create_module_references(module.get()); r != CUDA_SUCCESS) {
    free_variables(module.get());
    return r;
  }
  const auto& kernels = module->program->kernels();
  for (const ptx::KernelDesc& k : kernels) {
    if (k.serial_blocks) {
      log(LogLevel::kDebug,
          "kernel %s runs its blocks one at a time in block-index order, so that its results do "
          "not depend on CUSNAP_EMU_THREADS: %s",
          k.name.c_str(), k.serial_reason.c_str());
    }
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto f = std::make_unique<Function>();
    f->module = module.get();
    f->index = static_cast<int>(i);
    f->desc = &kernels[i];
    register_handle(f.get(), HandleKind::kFunction);
    module->functions.push_back(std::move(f));
  }
  register_handle(module.get(), HandleKind::kModule);
  *out = module.release();
  return CUDA_SUCCESS;
}

void unload_module(Module* module) {
  for (int n; (n = module->launches_in_flight.load()) != 0;) module->launches_in_flight.wait(n);
  for (auto& f : module->functions) destroy_handle(f.release(), HandleKind::kFunction);
  destroy_module_references(module);
  free_variables(module);
  destroy_handle(module, HandleKind::kModule);
}

Function* function_from_handle(const void* handle) {
  return handle_cast<Function>(handle, HandleKind::kFunction);
}
Module* module_from_handle(CUmodule handle) {
  return handle_cast<Module>(handle, HandleKind::kModule);
}

}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;

namespace {

CUresult read_file(const char* path, std::string* out, std::string* error) {
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (is_ar_archive(out->data(), out->size())) {
    // A static library file: its members (PTX, fatbins, host objects with device code) linked
    // into one module, as cuLinkAddFile with CU_JIT_INPUT_LIBRARY would.
    std::vector<LinkInput> inputs;
    if (CUresult r =
            add_link_input(CU_JIT_INPUT_LIBRARY, out->data(), out->size(), path, &inputs, error);
        r != CUDA_SUCCESS) {
      log(LogLevel::kError, "module load: %s", error->c_str());
      return r;
    }
    LinkOutput linked = link_ptx(inputs);
    if (!linked.ok) {
      *error = "linking the members of '" + std::string(path) + "': " + linked.error;
      log(LogLevel::kError, "module load: %s", error->c_str());
      return CUDA_ERROR_INVALID_IMAGE;
    }
    *out = std::move(linked.ptx);
  }
  out->push_back('\0');  // PTX text files need not end in NUL
  return CUDA_SUCCESS;
}

CUresult module_load(CUmodule* module, const void* image) {
  Context* ctx;
  if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Module* m = nullptr;
  std::string error;
  CUresult r = load_module(image, &m, &error);
  if (r == CUDA_SUCCESS) *module = reinterpret_cast<CUmodule>(m);
  return r;
}

// Fills CU_JIT_ERROR_LOG_BUFFER as the driver does for ptxas diagnostics: at most
// CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES bytes including the terminating NUL, and the number of bytes
// of text written (excluding the NUL) stored back into the size option's value. A successful load
// leaves an empty log. `error` is empty on success.
void report_jit_log(unsigned n, CUjit_option* options, void** values, const std::string& error) {
  if (options == nullptr || values == nullptr) return;
  char* buffer = nullptr;
  size_t size = 0;
  int size_index = -1;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) buffer = static_cast<char*>(values[i]);
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
      // The option's value is an unsigned int carried in the pointer-sized slot.
      size = static_cast<unsigned>(reinterpret_cast<uintptr_t>(values[i]));
      size_index = static_cast<int>(i);
    }
  }
  if (buffer == nullptr || size == 0) return;
  std::string text = error.empty() ? std::string() : "cusnap emulator: " + error + "\n";
  size_t len = std::min(text.size(), size - 1);
  std::memcpy(buffer, text.data(), len);
  buffer[len] = '\0';
  if (size_index >= 0) values[size_index] = reinterpret_cast<void*>(static_cast<uintptr_t>(len));
}

CUresult library_load(CUlibrary* library, const void* code, unsigned numJitOptions,
                      CUjit_option* jitOptions, void** jitOptionsValues) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (library == nullptr || code == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Libraries are context-independent; the one device's memory is shared by all contexts.
  // The image is parsed right here, so CU_LIBRARY_BINARY_IS_PRESERVED needs no copy.
  Module* m = nullptr;
  std::string error;
  CUresult r = load_module(code, &m, &error);
  report_jit_log(numJitOptions, jitOptions, jitOptionsValues,
                 r == CUDA_SUCCESS ? std::string() : error);
  if (r != CUDA_SUCCESS) return r;
  auto* lib = new Library{m};
  m->library = lib;
  register_handle(lib, HandleKind::kLibrary);
  *library = reinterpret_cast<CUlibrary>(lib);
  return CUDA_SUCCESS;
}

CUresult get_global(Module* m, const char* name, CUdeviceptr* dptr, size_t* bytes) {
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int index = m->program->find_variable(name);
  // Texture and surface references are not global variables (cuModuleGetTexRef finds them).
  if (index < 0 || m->variable_addresses[index] == 0 ||
      m->program->variables()[index].opaque != cusnap::emu::ptx::OpaqueKind::kNone)
    return CUDA_ERROR_NOT_FOUND;
  if (dptr != nullptr) *dptr = m->variable_addresses[index];
  if (bytes != nullptr) *bytes = m->program->variables()[index].size;
  return CUDA_SUCCESS;
}

CUresult get_function(Module* m, const char* name, Function** out) {
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (name == nullptr || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int index = m->program->find_kernel(name);
  if (index < 0) return CUDA_ERROR_NOT_FOUND;
  *out = m->functions[index].get();
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  return guarded("cuModuleLoadData", [&] { return module_load(module, image); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image,
                                                  unsigned int numOptions, CUjit_option* options,
                                                  void** optionValues) {
  return guarded("cuModuleLoadDataEx", [&] {
    Context* ctx;
    if (CUresult r = require_context(&ctx); r != CUDA_SUCCESS) return r;
    if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Module* m = nullptr;
    std::string error;
    CUresult r = load_module(image, &m, &error);
    report_jit_log(numOptions, options, optionValues, r == CUDA_SUCCESS ? std::string() : error);
    if (r != CUDA_SUCCESS) return r;
    *module = reinterpret_cast<CUmodule>(m);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return guarded("cuModuleLoadFatBinary", [&] { return module_load(module, fatCubin); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuModuleLoad(CUmodule* module, const char* fname) {
  return guarded("cuModuleLoad", [&] {
    std::string bytes, error;
    if (CUresult r = read_file(fname, &bytes, &error); r != CUDA_SUCCESS) return r;
    return module_load(module, bytes.data());
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  return guarded("cuModuleUnload", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Module* m = module_from_handle(hmod);
    if (m == nullptr || m->library != nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (Context* ctx = current_context()) ctx->synchronize();
    unload_module(m);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod,
                                                   const char* name) {
  return guarded("cuModuleGetFunction", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (hfunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Function* f = nullptr;
    CUresult r = get_function(module_from_handle(hmod), name, &f);
    if (r == CUDA_SUCCESS) *hfunc = reinterpret_cast<CUfunction>(f);
    return r;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod,
                                                    const char* name) {
  return guarded("cuModuleGetGlobal", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    return get_global(module_from_handle(hmod), name, dptr, bytes);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int* count, CUmodule hmod) {
  return guarded("cuModuleGetFunctionCount", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Module* m = module_from_handle(hmod);
    if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *count = static_cast<unsigned>(m->functions.size());
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction* functions,
                                                          unsigned int numFunctions, CUmodule mod) {
  return guarded("cuModuleEnumerateFunctions", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    Module* m = module_from_handle(mod);
    if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (functions == nullptr) return CUDA_ERROR_INVALID_VALUE;
    unsigned n = std::min<unsigned>(numFunctions, static_cast<unsigned>(m->functions.size()));
    for (unsigned i = 0; i < n; ++i)
      functions[i] = reinterpret_cast<CUfunction>(m->functions[i].get());
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_EAGER_LOADING;  // modules are compiled completely at load time
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuLibraryLoadData(CUlibrary* library, const void* code,
                                                 CUjit_option* jitOptions, void** jitOptionsValues,
                                                 unsigned int numJitOptions, CUlibraryOption*,
                                                 void**, unsigned int) {
  return guarded("cuLibraryLoadData", [&] {
    return library_load(library, code, numJitOptions, jitOptions, jitOptionsValues);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary* library, const char* fileName,
                                                     CUjit_option* jitOptions,
                                                     void** jitOptionsValues,
                                                     unsigned int numJitOptions, CUlibraryOption*,
                                                     void**, unsigned int) {
  return guarded("cuLibraryLoadFromFile", [&] {
    std::string bytes, error;
    if (CUresult r = read_file(fileName, &bytes, &error); r != CUDA_SUCCESS) {
      report_jit_log(numJitOptions, jitOptions, jitOptionsValues, error);
      return r;
    }
    return library_load(library, bytes.data(), numJitOptions, jitOptions, jitOptionsValues);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary library) {
  return guarded("cuLibraryUnload", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    auto* lib = handle_cast<Library>(library, HandleKind::kLibrary);
    if (lib == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (Context* ctx = current_context()) ctx->synchronize();
    unload_module(lib->module);
    destroy_handle(lib, HandleKind::kLibrary);
    return CUDA_SUCCESS;
  });
}

// CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS is 0 (the host cannot call interpreted PTX), for
// which cuda.h documents CUDA_ERROR_NOT_FOUND.
CUSNAP_EXPORT CUresult CUDAAPI cuLibraryGetUnifiedFunction(void** fptr, CUlibrary library,
                                                           const char* symbol) {
  return guarded("cuLibraryGetUnifiedFunction", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    if (handle_cast<Library>(library, HandleKind::kLibrary) == nullptr)
      return CUDA_ERROR_INVALID_HANDLE;
    if (fptr == nullptr || symbol == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_NOT_FOUND;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library,
                                                  const char* name) {
  return guarded("cuLibraryGetKernel", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    auto* lib = handle_cast<Library>(library, HandleKind::kLibrary);
    if (lib == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (pKernel == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Function* f = nullptr;
    CUresult r = get_function(lib->module, name, &f);
    if (r == CUDA_SUCCESS) *pKernel = reinterpret_cast<CUkernel>(f);
    return r;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  auto* lib = handle_cast<Library>(library, HandleKind::kLibrary);
  if (lib == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pMod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pMod = reinterpret_cast<CUmodule>(lib->module);
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes,
                                                  CUlibrary library, const char* name) {
  return guarded("cuLibraryGetGlobal", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    auto* lib = handle_cast<Library>(library, HandleKind::kLibrary);
    if (lib == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    return get_global(lib->module, name, dptr, bytes);
  });
}

// `__managed__` variables of a library (the runtime looks them up here): like
// cuLibraryGetGlobal, but only variables declared `.attribute(.managed)` are found.
CUSNAP_EXPORT CUresult CUDAAPI cuLibraryGetManaged(CUdeviceptr* dptr, size_t* bytes,
                                                   CUlibrary library, const char* name) {
  return guarded("cuLibraryGetManaged", [&] {
    if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
    auto* lib = handle_cast<Library>(library, HandleKind::kLibrary);
    if (lib == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (name == nullptr || (dptr == nullptr && bytes == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    const int index = lib->module->program->find_variable(name);
    if (index < 0 || !lib->module->program->variables()[index].managed) return CUDA_ERROR_NOT_FOUND;
    return get_global(lib->module, name, dptr, bytes);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int* count, CUlibrary library) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  auto* lib = handle_cast<Library>(library, HandleKind::kLibrary);
  if (lib == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return cuModuleGetFunctionCount(count, reinterpret_cast<CUmodule>(lib->module));
}

CUSNAP_EXPORT CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels,
                                                         CUlibrary library) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  auto* lib = handle_cast<Library>(library, HandleKind::kLibrary);
  if (lib == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return cuModuleEnumerateFunctions(reinterpret_cast<CUfunction*>(kernels), numKernels,
                                    reinterpret_cast<CUmodule>(lib->module));
}
