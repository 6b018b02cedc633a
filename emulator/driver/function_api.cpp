// CUfunction / CUkernel queries and settings: names, parameter layout, attributes.
#include <algorithm>
#include <cstdint>

#include "driver/api.h"
#include "driver/device.h"
#include "driver/module.h"
#include "driver/state.h"

using namespace cusnap::emu::driver;
namespace ptx = cusnap::emu::ptx;

namespace cusnap::emu::driver {

// The static shared memory a function declares plus the dynamic shared memory it may request
// by default: what the launch path allows without CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
int default_dynamic_shared(const Function& f) {
  int base = 48 * 1024 - static_cast<int>(f.desc->static_shared_bytes);
  return std::max(base, 0);
}

int max_dynamic_shared(const Function& f) {
  int set = f.max_dynamic_shared.load();
  return set > 0 ? set : default_dynamic_shared(f);
}

int max_threads_per_block(const Function& f) {
  int limit = 1024;
  if (f.desc->max_threads_per_block != 0)
    limit = std::min<int>(limit, static_cast<int>(f.desc->max_threads_per_block));
  if (f.desc->reqntid.x != 0)
    limit = std::min<int>(limit, static_cast<int>(f.desc->reqntid.count()));
  return limit;
}

}  // namespace cusnap::emu::driver

namespace {

// CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: the module's user constant bank, as on a GPU every kernel
// of a module reports the same: its `.const` variables laid out in declaration order, each at
// its alignment (`.extern` declarations take no space).
int const_bank_bytes(const Module& m) {
  uint64_t end = 0;
  for (const ptx::VariableDesc& v : m.program->variables()) {
    if (v.space != ptx::VariableSpace::kConst || v.is_extern) continue;
    const uint64_t align = std::max<uint32_t>(v.align, 1);
    end = (end + align - 1) / align * align + v.size;
  }
  return static_cast<int>(std::min<uint64_t>(end, INT32_MAX));
}

CUresult get_attribute(int* pi, CUfunction_attribute attrib, Function* f) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto& d = *f->desc;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = max_threads_per_block(*f);
      break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *pi = static_cast<int>(d.static_shared_bytes);
      break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      *pi = const_bank_bytes(*f->module);
      break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *pi = static_cast<int>(d.local_bytes_per_thread);
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *pi = static_cast<int>(std::min<uint32_t>(d.num_regs, 255));
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
      *pi = static_cast<int>(f->module->program->ptx_version());
      break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *pi = device_config().sm;
      break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
      *pi = 0;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *pi = max_dynamic_shared(*f);
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *pi = f->carveout.load();
      break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:  // `.explicitcluster` (__cluster_dims__)
      *pi = d.explicit_cluster ? 1 : 0;
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
      *pi = d.reqnctapercluster.x != 0 ? static_cast<int>(d.reqnctapercluster.x)
                                       : f->required_cluster[0].load();
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
      *pi = d.reqnctapercluster.x != 0 ? static_cast<int>(d.reqnctapercluster.y)
                                       : f->required_cluster[1].load();
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      *pi = d.reqnctapercluster.x != 0 ? static_cast<int>(d.reqnctapercluster.z)
                                       : f->required_cluster[2].load();
      break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      *pi = f->non_portable_cluster.load();
      break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      *pi = f->cluster_policy.load();
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult set_attribute(Function* f, CUfunction_attribute attrib, int value) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
      int optin = 0;
      device_attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &optin);
      if (value < 0 || value + static_cast<int>(f->desc->static_shared_bytes) > optin)
        return CUDA_ERROR_INVALID_VALUE;
      f->max_dynamic_shared = value;
      return CUDA_SUCCESS;
    }
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
      f->carveout = value;
      return CUDA_SUCCESS;
    // The required cluster shape: not settable when the kernel fixes it at compile time
    // (__cluster_dims__); the values are checked when a launch uses them (launch_cluster).
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: {
      if (f->desc->reqnctapercluster.x != 0) return CUDA_ERROR_NOT_PERMITTED;
      if (value < 0) return CUDA_ERROR_INVALID_VALUE;
      const int i = attrib == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH    ? 0
                    : attrib == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT ? 1
                                                                          : 2;
      f->required_cluster[i] = value;
      return CUDA_SUCCESS;
    }
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      if (value != 0 && value != 1) return CUDA_ERROR_INVALID_VALUE;
      f->non_portable_cluster = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      if (value < CU_CLUSTER_SCHEDULING_POLICY_DEFAULT ||
          value > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
        return CUDA_ERROR_INVALID_VALUE;
      f->cluster_policy = value;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // read-only attributes
  }
}

CUresult param_info(Function* f, size_t index, size_t* offset, size_t* size) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (index >= f->desc->params.size()) return CUDA_ERROR_INVALID_VALUE;
  if (offset != nullptr) *offset = f->desc->params[index].offset;
  if (size != nullptr) *size = f->desc->params[index].size;
  return CUDA_SUCCESS;
}

CUresult get_name(const char** name, Function* f) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *name = f->desc->name.c_str();
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuFuncGetAttribute(int* pi, CUfunction_attribute attrib,
                                                  CUfunction hfunc) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return get_attribute(pi, attrib, function_from_handle(hfunc));
}
CUSNAP_EXPORT CUresult CUDAAPI cuKernelGetAttribute(int* pi, CUfunction_attribute attrib,
                                                    CUkernel kernel, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  return get_attribute(pi, attrib, function_from_handle(kernel));
}
CUSNAP_EXPORT CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                                                  int value) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return set_attribute(function_from_handle(hfunc), attrib, value);
}
CUSNAP_EXPORT CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val,
                                                    CUkernel kernel, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  return set_attribute(function_from_handle(kernel), attrib, val);
}
CUSNAP_EXPORT CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction hfunc) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return get_name(name, function_from_handle(hfunc));
}
CUSNAP_EXPORT CUresult CUDAAPI cuKernelGetName(const char** name, CUkernel hfunc) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return get_name(name, function_from_handle(hfunc));
}
CUSNAP_EXPORT CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex,
                                                  size_t* paramOffset, size_t* paramSize) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return param_info(function_from_handle(func), paramIndex, paramOffset, paramSize);
}
CUSNAP_EXPORT CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
                                                    size_t* paramOffset, size_t* paramSize) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return param_info(function_from_handle(kernel), paramIndex, paramOffset, paramSize);
}
CUSNAP_EXPORT CUresult CUDAAPI cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (function_from_handle(kernel) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pFunc = reinterpret_cast<CUfunction>(kernel);  // the same object (see module.h)
  return CUDA_SUCCESS;
}
CUSNAP_EXPORT CUresult CUDAAPI cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Function* f = function_from_handle(kernel);
  if (f == nullptr || f->module->library == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pLib == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pLib = reinterpret_cast<CUlibrary>(f->module->library);
  return CUDA_SUCCESS;
}
CUSNAP_EXPORT CUresult CUDAAPI cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Function* f = function_from_handle(hfunc);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (hmod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *hmod = reinterpret_cast<CUmodule>(f->module);
  return CUDA_SUCCESS;
}
CUSNAP_EXPORT CUresult CUDAAPI cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction hfunc) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (function_from_handle(hfunc) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}
CUSNAP_EXPORT CUresult CUDAAPI cuFuncLoad(CUfunction hfunc) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return function_from_handle(hfunc) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUSNAP_EXPORT CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (function_from_handle(hfunc) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return static_cast<unsigned>(config) <= CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_SUCCESS
                                                                     : CUDA_ERROR_INVALID_VALUE;
}
CUSNAP_EXPORT CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config,
                                                      CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  return cuFuncSetCacheConfig(reinterpret_cast<CUfunction>(kernel), config);
}
CUSNAP_EXPORT CUresult CUDAAPI cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (function_from_handle(hfunc) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return static_cast<unsigned>(config) <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}
