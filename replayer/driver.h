// The driver a replay runs on, opened at run time.
//
// Contract: the replayer never links libcuda. It dlopen()s a driver by absolute path
// (RTLD_NOW | RTLD_LOCAL, so the emulator and NVIDIA's driver, which share the SONAME
// libcuda.so.1, never shadow each other), looks up exactly one symbol with dlsym,
// `cuGetProcAddress_v2`, and binds every other entry point through it at the CUDA version that
// introduced the ABI it was compiled against (cuMemAlloc@3020, cuLaunchKernelEx@11060, ...), with
// flags 0 (legacy default stream semantics, as a driver-API program that does not opt into
// per-thread streams gets). One binary therefore runs against any driver new enough for the
// required entry points; optional ones (VMM, libraries, cuLaunchKernelEx, occupancy) that the
// driver lacks are left null and the feature depending on them is disabled with a message.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <memory>
#include <string>
#include <vector>

#include "replayer/status.h"

namespace cusnap::replayer {

// X(name, version, required): every entry point the replayer uses. The member `name` has type
// PFN_<name>_v<version>, exactly the ABI the driver is asked for.
#define CUSNAP_REPLAYER_ENTRY_POINTS(X)                       \
  X(cuInit, 2000, true)                                       \
  X(cuDriverGetVersion, 2020, true)                           \
  X(cuGetErrorName, 6000, false)                              \
  X(cuGetErrorString, 6000, false)                            \
  X(cuGetExportTable, 3000, false)                            \
  X(cuDeviceGet, 2000, true)                                  \
  X(cuDeviceGetCount, 2000, true)                             \
  X(cuDeviceGetName, 2000, true)                              \
  X(cuDeviceGetAttribute, 2000, true)                         \
  X(cuDeviceTotalMem, 3020, true)                             \
  X(cuDevicePrimaryCtxRetain, 7000, true)                     \
  X(cuDevicePrimaryCtxRelease, 11000, true)                   \
  X(cuCtxSetCurrent, 4000, true)                              \
  X(cuCtxSynchronize, 2000, true)                             \
  X(cuMemGetInfo, 3020, true)                                 \
  X(cuModuleLoadData, 2000, true)                             \
  X(cuModuleGetFunction, 2000, true)                          \
  X(cuModuleGetGlobal, 3020, true)                            \
  X(cuModuleUnload, 2000, true)                               \
  X(cuLibraryLoadData, 12000, false)                          \
  X(cuLibraryGetKernel, 12000, false)                         \
  X(cuLibraryGetGlobal, 12000, false)                         \
  X(cuLibraryUnload, 12000, false)                            \
  X(cuKernelGetFunction, 12000, false)                        \
  X(cuKernelSetAttribute, 12000, false)                       \
  X(cuFuncSetAttribute, 9000, false)                          \
  X(cuFuncSetCacheConfig, 3000, false)                        \
  X(cuFuncGetAttribute, 2020, false)                          \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, false) \
  X(cuMemAlloc, 3020, true)                                   \
  X(cuMemFree, 3020, true)                                    \
  X(cuMemAddressReserve, 10020, false)                        \
  X(cuMemAddressFree, 10020, false)                           \
  X(cuMemCreate, 10020, false)                                \
  X(cuMemRelease, 10020, false)                               \
  X(cuMemMap, 10020, false)                                   \
  X(cuMemUnmap, 10020, false)                                 \
  X(cuMemSetAccess, 10020, false)                             \
  X(cuMemGetAllocationGranularity, 10020, false)              \
  X(cuMemHostAlloc, 2020, false)                              \
  X(cuMemFreeHost, 2000, false)                               \
  X(cuMemHostRegister, 6050, false)                           \
  X(cuMemHostUnregister, 4000, false)                         \
  X(cuMemHostGetDevicePointer, 3020, false)                   \
  X(cuMemcpyHtoD, 3020, true)                                 \
  X(cuMemcpyDtoH, 3020, true)                                 \
  X(cuMemcpyDtoD, 3020, true)                                 \
  X(cuMemcpyHtoDAsync, 3020, true)                            \
  X(cuMemcpyDtoHAsync, 3020, true)                            \
  X(cuMemcpyDtoDAsync, 3020, true)                            \
  X(cuMemcpy2DUnaligned, 3020, false)                         \
  X(cuMemcpy2DAsync, 3020, false)                             \
  X(cuMemcpy3D, 3020, false)                                  \
  X(cuMemcpy3DAsync, 3020, false)                             \
  X(cuMemcpyHtoA, 3020, false)                                \
  X(cuMemcpyAtoH, 3020, false)                                \
  X(cuMemcpyDtoA, 3020, false)                                \
  X(cuMemcpyAtoD, 3020, false)                                \
  X(cuMemcpyAtoA, 3020, false)                                \
  X(cuMemcpyHtoAAsync, 3020, false)                           \
  X(cuMemcpyAtoHAsync, 3020, false)                           \
  X(cuArrayCreate, 3020, false)                               \
  X(cuArray3DCreate, 3020, false)                             \
  X(cuArrayDestroy, 2000, false)                              \
  X(cuMipmappedArrayCreate, 5000, false)                      \
  X(cuMipmappedArrayGetLevel, 5000, false)                    \
  X(cuMipmappedArrayDestroy, 5000, false)                     \
  X(cuTexObjectCreate, 5000, false)                           \
  X(cuTexObjectDestroy, 5000, false)                          \
  X(cuSurfObjectCreate, 5000, false)                          \
  X(cuSurfObjectDestroy, 5000, false)                         \
  X(cuTensorMapEncodeTiled, 12000, false)                     \
  X(cuTensorMapEncodeIm2col, 12000, false)                    \
  X(cuTensorMapEncodeIm2colWide, 12080, false)                \
  X(cuTensorMapReplaceAddress, 12000, false)                  \
  X(cuMemsetD8, 3020, true)                                   \
  X(cuMemsetD16, 3020, true)                                  \
  X(cuMemsetD32, 3020, true)                                  \
  X(cuMemsetD8Async, 3020, true)                              \
  X(cuMemsetD16Async, 3020, true)                             \
  X(cuMemsetD32Async, 3020, true)                             \
  X(cuMemsetD2D8Async, 3020, false)                           \
  X(cuMemsetD2D16Async, 3020, false)                          \
  X(cuMemsetD2D32Async, 3020, false)                          \
  X(cuLaunchKernel, 4000, true)                               \
  X(cuLaunchKernelEx, 11060, false)                           \
  X(cuLaunchCooperativeKernel, 9000, false)                   \
  X(cuStreamCreate, 2000, true)                               \
  X(cuStreamCreateWithPriority, 5050, false)                  \
  X(cuStreamDestroy, 4000, true)                              \
  X(cuStreamSynchronize, 2000, true)                          \
  X(cuStreamWaitEvent, 3020, true)                            \
  X(cuEventCreate, 2000, true)                                \
  X(cuEventRecord, 2000, true)                                \
  X(cuEventSynchronize, 2000, true)                           \
  X(cuEventElapsedTime, 2000, true)                           \
  X(cuEventDestroy, 4000, true)                               \
  X(cuGraphCreate, 10000, false)                              \
  X(cuGraphDestroy, 10000, false)                             \
  X(cuGraphClone, 10000, false)                               \
  X(cuGraphAddDependencies, 10000, false)                     \
  X(cuGraphRemoveDependencies, 10000, false)                  \
  X(cuGraphDestroyNode, 10000, false)                         \
  X(cuGraphAddKernelNode, 10000, false)                       \
  X(cuGraphAddMemcpyNode, 10000, false)                       \
  X(cuGraphAddMemsetNode, 10000, false)                       \
  X(cuGraphAddEmptyNode, 10000, false)                        \
  X(cuGraphAddEventRecordNode, 11010, false)                  \
  X(cuGraphAddEventWaitNode, 11010, false)                    \
  X(cuGraphAddChildGraphNode, 10000, false)                   \
  X(cuGraphKernelNodeSetParams, 10000, false)                 \
  X(cuGraphInstantiateWithFlags, 11040, false)                \
  X(cuGraphExecUpdate, 10020, false)                          \
  X(cuGraphExecKernelNodeSetParams, 10010, false)             \
  X(cuGraphExecMemsetNodeSetParams, 10020, false)             \
  X(cuGraphExecMemcpyNodeSetParams, 10020, false)             \
  X(cuGraphNodeSetEnabled, 11060, false)                      \
  X(cuGraphUpload, 11010, false)                              \
  X(cuGraphLaunch, 10000, false)                              \
  X(cuGraphExecDestroy, 10000, false)                         \
  X(cuModuleGetTexRef, 2000, false)                           \
  X(cuModuleGetSurfRef, 3000, false)                          \
  X(cuTexRefCreate, 2000, false)                              \
  X(cuTexRefDestroy, 2000, false)                             \
  X(cuTexRefSetArray, 2000, false)                            \
  X(cuTexRefSetMipmappedArray, 5000, false)                   \
  X(cuTexRefSetAddress, 3020, false)                          \
  X(cuTexRefSetAddress2D, 4010, false)                        \
  X(cuTexRefSetFormat, 2000, false)                           \
  X(cuTexRefSetAddressMode, 2000, false)                      \
  X(cuTexRefSetFilterMode, 2000, false)                       \
  X(cuTexRefSetMipmapFilterMode, 5000, false)                 \
  X(cuTexRefSetMipmapLevelBias, 5000, false)                  \
  X(cuTexRefSetMipmapLevelClamp, 5000, false)                 \
  X(cuTexRefSetMaxAnisotropy, 5000, false)                    \
  X(cuTexRefSetBorderColor, 8000, false)                      \
  X(cuTexRefSetFlags, 2000, false)                            \
  X(cuSurfRefSetArray, 3000, false)                           \
  X(cuParamSetTexRef, 2000, false)                            \
  X(cuMemPoolCreate, 11020, false)                            \
  X(cuMemPoolDestroy, 11020, false)                           \
  X(cuMemPoolSetAttribute, 11020, false)                      \
  X(cuMemPoolGetAttribute, 11020, false)                      \
  X(cuMemPoolTrimTo, 11020, false)                            \
  X(cuMemPoolSetAccess, 11020, false)                         \
  X(cuDeviceSetMemPool, 11020, false)                         \
  X(cuDeviceGetMemPool, 11020, false)                         \
  X(cuDeviceGetDefaultMemPool, 11020, false)

struct DriverApi {
#define CUSNAP_REPLAYER_MEMBER(name, version, required) PFN_##name##_v##version name = nullptr;
  CUSNAP_REPLAYER_ENTRY_POINTS(CUSNAP_REPLAYER_MEMBER)
#undef CUSNAP_REPLAYER_MEMBER
};

class Driver {
 public:
  // dlopen()s `path` (must be absolute), binds the table, calls cuInit(0). Errors: the library
  // cannot be opened, has no cuGetProcAddress_v2, lacks a required entry point, or cuInit fails.
  static Expected<std::unique_ptr<Driver>> open(const std::string& path);
  // The library stays loaded until exit: drivers start threads and register atexit handlers
  // that must not outlive their code.
  ~Driver() = default;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  const DriverApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  int version() const { return version_; }  // cuDriverGetVersion
  // Optional entry points the driver did not provide ("cuLaunchKernelEx@11060").
  const std::vector<std::string>& missing() const { return missing_; }
  bool has_vmm() const;

  // "CUDA_ERROR_INVALID_VALUE" (the driver's name when it has cuGetErrorName, else the number).
  std::string error_name(CUresult result) const;
  // An Error of kind kDriver for `what` failing with `result`.
  Error failure(const std::string& what, CUresult result) const;

 private:
  Driver() = default;
  DriverApi api_;
  std::string path_;
  int version_ = 0;
  std::vector<std::string> missing_;
};

struct DriverChoice {
  std::string path;
  std::string reason;  // how it was chosen, for the report and the log
};

// Resolves --driver: "emulator", an absolute or relative path, or "auto", through cusnap's one
// driver lookup (cusnap/common/driver_search.h; the same answer `cusnap capture` and the
// interceptor get), with system drivers probed for a device in a child process. Never searches
// LD_LIBRARY_PATH, and never picks the cusnap interceptor. Errors: kInvalidArgument for a path
// that is no usable file, kTarget when no driver is found; both name every path tried.
Expected<DriverChoice> resolve_driver(const std::string& spec);

}  // namespace cusnap::replayer
