// Module and library loads (a copy of the image made at call time), unloads, function and
// kernel handles with their names and parameter layouts, and module globals.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "code_layouts.h"
#include "cusnap/fatbin/fatbin.h"
#include "handles.h"
#include "hooks.h"
#include "image_size.h"
#include "legacy_launch.h"
#include "session.h"
#include "snapshot.h"

namespace cusnap::icpt {
namespace {

using ImageKindSchema = schema::ModuleLoad::ImageKind;

ImageKindSchema to_schema(ImageKind kind) {
  switch (kind) {
    case ImageKind::kPtx:
      return ImageKindSchema::PTX;
    case ImageKind::kCubin:
      return ImageKindSchema::CUBIN;
    case ImageKind::kFatbin:
      return ImageKindSchema::FATBIN;
    case ImageKind::kFatbinWrapper:
      return ImageKindSchema::FATBIN_WRAPPER;
    case ImageKind::kUnknown:
      break;
  }
  return ImageKindSchema::UNKNOWN;
}

schema::FunctionGet::LayoutSource to_schema(LayoutSource source) {
  switch (source) {
    case LayoutSource::kDriverQuery:
      return schema::FunctionGet::LayoutSource::DRIVER_QUERY;
    case LayoutSource::kNvInfo:
      return schema::FunctionGet::LayoutSource::NV_INFO;
    case LayoutSource::kPtxSignature:
      return schema::FunctionGet::LayoutSource::PTX_SIGNATURE;
    case LayoutSource::kUnknown:
      break;
  }
  return schema::FunctionGet::LayoutSource::UNKNOWN;
}

void set_blob(schema::BlobId::Builder out, const format::BlobId& id) {
  out.setHigh(id.high);
  out.setLow(id.low);
}

std::vector<uint8_t> read_file(const char* path) {
  std::vector<uint8_t> bytes;
  if (path == nullptr) return bytes;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bytes;
  struct stat st;
  if (::fstat(fd, &st) == 0 && st.st_size > 0 &&
      static_cast<size_t>(st.st_size) <= kMaxImageBytes) {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    bytes.resize(done);
  }
  ::close(fd);
  return bytes;
}

// A file's bytes as a code image (for its parameter layouts). The buffer is padded so that
// inspect_image's header reads stay inside it and PTX text gets a terminating NUL; a fatbin
// wrapper holds a pointer, meaningless in a file, so it is never followed.
ImageView file_image(std::vector<uint8_t>& bytes) {
  constexpr size_t kPadding = 128;
  size_t size = bytes.size();
  uint32_t magic = 0;
  if (size >= sizeof magic) std::memcpy(&magic, bytes.data(), sizeof magic);
  if (magic == cusnap::fatbin::kWrapperMagic) return {};
  bytes.resize(size + kPadding, 0);
  ImageView view = inspect_image(bytes.data());
  if (view.kind == ImageKind::kUnknown || view.size > size) return {};
  return view;
}

template <typename OptionT>
void set_options(capnp::List<schema::JitOption>::Builder list, unsigned count,
                 const OptionT* options, void* const* values) {
  for (unsigned i = 0; i < count; ++i) {
    int option = static_cast<int>(options[i]);
    list[i].setOption(option);
    uint64_t value = values != nullptr ? reinterpret_cast<uint64_t>(values[i]) : 0;
    list[i].setValue(
        value);  // scalars as given; pointer-valued options (log buffers) as the address
  }
}

struct LoadArgs {
  uint64_t handle = 0;
  bool is_library = false;
  const void* image = nullptr;
  const char* path = nullptr;
  unsigned jit_count = 0;
  const CUjit_option* jit_options = nullptr;
  void* const* jit_values = nullptr;
  unsigned library_count = 0;
  const CUlibraryOption* library_options = nullptr;
  void* const* library_values = nullptr;
};

// The arguments cuLibraryLoadData and cuLibraryLoadFromFile share (all but the image source).
LoadArgs library_load_args(CUresult result, const CUlibrary* library,
                           const CUjit_option* jit_options, void* const* jit_values,
                           unsigned jit_count, const CUlibraryOption* library_options,
                           void* const* library_values, unsigned library_count) {
  LoadArgs args;
  args.handle = result == CUDA_SUCCESS && library != nullptr ? handle_value(*library) : 0;
  args.is_library = true;
  args.jit_count = jit_count;
  args.jit_options = jit_options;
  args.jit_values = jit_values;
  args.library_count = library_count;
  args.library_options = library_options;
  args.library_values = library_values;
  return args;
}

void record_load(CallScope& call, const LoadArgs& args) {
  Session* session = Session::current();
  auto record = call.record();
  auto load = record.initModuleLoad();
  load.setHandle(args.handle);
  load.setIsLibrary(args.is_library);
  std::vector<cusnap::fatbin::Variable> variables;  // snapshots on: what the image defines
  if (args.path != nullptr) {
    load.setPath(args.path);
    load.setKind(ImageKindSchema::FILE);
    std::vector<uint8_t> bytes = read_file(args.path);
    if (!bytes.empty() && session != nullptr) {
      set_blob(load.initImage(), session->put_image(bytes));
      load.setImageSize(bytes.size());
    }
    if (!bytes.empty() && args.handle != 0) {
      ImageView view = file_image(bytes);
      HandleTable::instance().put_module_layouts(args.handle, image_layouts(view));
      if (snapshots_enabled()) variables = image_variables(view);
    }
  } else {
    ImageView view = inspect_image(args.image);
    load.setKind(to_schema(view.kind));
    if (args.handle != 0) {
      HandleTable::instance().put_module_layouts(args.handle, image_layouts(view));
      if (snapshots_enabled()) variables = image_variables(view);
    }
    if (view.size > 0 && session != nullptr) {
      set_blob(load.initImage(), session->put_image({view.data, view.size}));
      load.setImageSize(view.size);
    }
  }
  if (args.jit_count > 0 && args.jit_options != nullptr) {
    set_options(load.initJitOptions(args.jit_count), args.jit_count, args.jit_options,
                args.jit_values);
  }
  if (args.library_count > 0 && args.library_options != nullptr) {
    set_options(load.initLibraryOptions(args.library_count), args.library_count,
                args.library_options, args.library_values);
  }
  call.commit();
  // Snapshots cover every variable the image defines, resolved at the next snapshot (after the
  // record: no globalGet of the tool's may come before its module's load).
  if (!variables.empty())
    track_module_variables(args.handle, args.is_library, std::move(variables));
}

void record_unload(CallScope& call, uint64_t handle, bool is_library) {
  auto unload = call.record().initModuleUnload();
  unload.setHandle(handle);
  unload.setIsLibrary(is_library);
  call.commit();
  HandleTable::instance().forget_module(handle);
  forget_legacy_launch_state(handle);
}

// A new function or kernel handle: remember it, ask for its layout, record both.
void record_function(CallScope& call, schema::FunctionGet::Kind kind, uint64_t module,
                     uint64_t handle, std::string name, bool is_kernel, uint64_t from_kernel = 0) {
  if (name.empty()) name = query_function_name(handle, is_kernel);
  auto layout = query_param_layout(handle, is_kernel);
  LayoutSource source = LayoutSource::kDriverQuery;
  if (!layout) {
    if (auto from_image = HandleTable::instance().image_layout(module, name)) {
      layout = std::move(from_image->layout);
      source = from_image->source;
    }
  }
  auto get = call.record().initFunctionGet();
  get.setKind(kind);
  get.setModule(module);
  get.setHandle(handle);
  get.setName(name);
  get.setKernel(from_kernel);
  if (layout) {
    get.setLayoutSource(to_schema(source));
    auto params = get.initParams(static_cast<unsigned>(layout->size()));
    for (size_t i = 0; i < layout->size(); ++i) {
      params[i].setOffset((*layout)[i].offset);
      params[i].setSize((*layout)[i].size);
    }
  }
  uint64_t seq = call.commit();
  FunctionInfo info;
  info.name = std::move(name);
  info.module = module;
  info.is_kernel = is_kernel;
  if (layout) {
    info.layout = std::move(*layout);
    info.layout_source = source;
    info.layout_seq = seq;
  }
  HandleTable::instance().put(handle, std::move(info));
}

void record_global(CallScope& call, uint64_t module, bool is_library, const char* name,
                   CUdeviceptr* dptr, size_t* bytes) {
  auto global = call.record().initGlobalGet();
  global.setModule(module);
  global.setIsLibrary(is_library);
  if (name != nullptr) global.setName(name);
  if (call.result() == CUDA_SUCCESS) {
    if (dptr != nullptr) global.setAddress(*dptr);
    if (bytes != nullptr) global.setSize(*bytes);
  }
  call.commit();
  // Module variables (__device__, __constant__) a kernel can reach, for snapshots (after the
  // record: no snapshot covers a range whose globalGet comes later).
  if (call.result() == CUDA_SUCCESS && dptr != nullptr && bytes != nullptr && snapshots_enabled()) {
    track_range(*dptr, *bytes, RangeKind::kGlobal, module);
  }
}

}  // namespace

namespace hooks {

CUSNAP_POST_HOOK(cuModuleLoad)
(CallScope& call, CUresult result, CUmodule* module, const char* fname) {
  LoadArgs args;
  args.handle = result == CUDA_SUCCESS && module != nullptr ? handle_value(*module) : 0;
  args.path = fname;
  record_load(call, args);
}

CUSNAP_POST_HOOK(cuModuleLoadData)
(CallScope& call, CUresult result, CUmodule* module, const void* image) {
  LoadArgs args;
  args.handle = result == CUDA_SUCCESS && module != nullptr ? handle_value(*module) : 0;
  args.image = image;
  record_load(call, args);
}

CUSNAP_POST_HOOK(cuModuleLoadDataEx)
(CallScope& call, CUresult result, CUmodule* module, const void* image, unsigned int numOptions,
 CUjit_option* options, void** optionValues) {
  LoadArgs args;
  args.handle = result == CUDA_SUCCESS && module != nullptr ? handle_value(*module) : 0;
  args.image = image;
  args.jit_count = numOptions;
  args.jit_options = options;
  args.jit_values = optionValues;
  record_load(call, args);
}

CUSNAP_POST_HOOK(cuModuleLoadFatBinary)
(CallScope& call, CUresult result, CUmodule* module, const void* fatCubin) {
  LoadArgs args;
  args.handle = result == CUDA_SUCCESS && module != nullptr ? handle_value(*module) : 0;
  args.image = fatCubin;
  record_load(call, args);
}

// Snapshots: the module's variables leave the table before the real unload (snapshot.h).
CUSNAP_PRE_HOOK(cuModuleUnload)(CallScope&, CUmodule hmod) {
  if (snapshots_enabled()) release_begin(Release::kModule, handle_value(hmod));
}

CUSNAP_PRE_HOOK(cuLibraryUnload)(CallScope&, CUlibrary library) {
  if (snapshots_enabled()) release_begin(Release::kModule, handle_value(library));
}

CUSNAP_POST_HOOK(cuModuleUnload)(CallScope& call, CUresult, CUmodule hmod) {
  if (snapshots_enabled()) release_end();
  record_unload(call, handle_value(hmod), false);
}

CUSNAP_POST_HOOK(cuLibraryLoadData)
(CallScope& call, CUresult result, CUlibrary* library, const void* code, CUjit_option* jitOptions,
 void** jitOptionsValues, unsigned int numJitOptions, CUlibraryOption* libraryOptions,
 void** libraryOptionValues, unsigned int numLibraryOptions) {
  LoadArgs args = library_load_args(result, library, jitOptions, jitOptionsValues, numJitOptions,
                                    libraryOptions, libraryOptionValues, numLibraryOptions);
  args.image = code;
  record_load(call, args);
}

CUSNAP_POST_HOOK(cuLibraryLoadFromFile)
(CallScope& call, CUresult result, CUlibrary* library, const char* fileName,
 CUjit_option* jitOptions, void** jitOptionsValues, unsigned int numJitOptions,
 CUlibraryOption* libraryOptions, void** libraryOptionValues, unsigned int numLibraryOptions) {
  LoadArgs args = library_load_args(result, library, jitOptions, jitOptionsValues, numJitOptions,
                                    libraryOptions, libraryOptionValues, numLibraryOptions);
  args.path = fileName;
  record_load(call, args);
}

CUSNAP_POST_HOOK(cuLibraryUnload)(CallScope& call, CUresult, CUlibrary library) {
  if (snapshots_enabled()) release_end();
  record_unload(call, handle_value(library), true);
}

CUSNAP_POST_HOOK(cuModuleGetFunction)
(CallScope& call, CUresult result, CUfunction* hfunc, CUmodule hmod, const char* name) {
  uint64_t handle = result == CUDA_SUCCESS && hfunc != nullptr ? handle_value(*hfunc) : 0;
  if (handle == 0) {
    auto get = call.record().initFunctionGet();
    get.setModule(handle_value(hmod));
    if (name != nullptr) get.setName(name);
    call.commit();
    return;
  }
  record_function(call, schema::FunctionGet::Kind::MODULE_FUNCTION, handle_value(hmod), handle,
                  name != nullptr ? name : "", false);
}

CUSNAP_POST_HOOK(cuLibraryGetKernel)
(CallScope& call, CUresult result, CUkernel* pKernel, CUlibrary library, const char* name) {
  uint64_t handle = result == CUDA_SUCCESS && pKernel != nullptr ? handle_value(*pKernel) : 0;
  if (handle == 0) {
    auto get = call.record().initFunctionGet();
    get.setKind(schema::FunctionGet::Kind::LIBRARY_KERNEL);
    get.setModule(handle_value(library));
    if (name != nullptr) get.setName(name);
    call.commit();
    return;
  }
  record_function(call, schema::FunctionGet::Kind::LIBRARY_KERNEL, handle_value(library), handle,
                  name != nullptr ? name : "", true);
}

CUSNAP_POST_HOOK(cuKernelGetFunction)
(CallScope& call, CUresult result, CUfunction* pFunc, CUkernel kernel) {
  uint64_t handle = result == CUDA_SUCCESS && pFunc != nullptr ? handle_value(*pFunc) : 0;
  auto known = HandleTable::instance().find(handle_value(kernel));
  if (handle == 0) {
    auto get = call.record().initFunctionGet();
    get.setKind(schema::FunctionGet::Kind::KERNEL_GET_FUNCTION);
    get.setKernel(handle_value(kernel));
    call.commit();
    return;
  }
  record_function(call, schema::FunctionGet::Kind::KERNEL_GET_FUNCTION, known ? known->module : 0,
                  handle, known ? known->name : "", false, handle_value(kernel));
}

CUSNAP_POST_HOOK(cuModuleGetGlobal_v2)
(CallScope& call, CUresult, CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  record_global(call, handle_value(hmod), false, name, dptr, bytes);
}

CUSNAP_POST_HOOK(cuLibraryGetGlobal)
(CallScope& call, CUresult, CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  record_global(call, handle_value(library), true, name, dptr, bytes);
}

CUSNAP_POST_HOOK(cuFuncSetAttribute)
(CallScope& call, CUresult, CUfunction hfunc, CUfunction_attribute attrib, int value) {
  auto set = call.record().initFunctionSetAttribute();
  set.setFunction(handle_value(hfunc));
  set.setAttribute(static_cast<int32_t>(attrib));
  set.setValue(value);
  call.commit();
}

CUSNAP_POST_HOOK(cuFuncSetCacheConfig)
(CallScope& call, CUresult, CUfunction hfunc, CUfunc_cache config) {
  auto set = call.record().initFunctionSetAttribute();
  set.setFunction(handle_value(hfunc));
  set.setAttribute(-1);
  set.setValue(static_cast<int64_t>(config));
  call.commit();
}

CUSNAP_POST_HOOK(cuKernelSetAttribute)
(CallScope& call, CUresult, CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
  auto set = call.record().initFunctionSetAttribute();
  set.setFunction(handle_value(kernel));
  set.setIsKernel(true);
  set.setAttribute(static_cast<int32_t>(attrib));
  set.setValue(val);
  set.setDevice(dev);
  call.commit();
}

}  // namespace hooks
}  // namespace cusnap::icpt
