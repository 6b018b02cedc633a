// runtime_style: reaches the driver exactly the way the CUDA 13 runtime does, so that a
// libcuda.so.1 (the emulator, the interceptor) is exercised on that path without needing a
// runtime-API program. The executable does not link libcuda: it dlopens libcuda.so.1, binds only
// cuGetProcAddress_v2 with dlsym, makes the empty-name probe, calls cuInit, looks up
// cuGetProcAddress itself at 11030 and 12000, and then binds every other entry point at the
// CUDA version that introduced its ABI (per-thread default stream variants where the runtime
// asks with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).
//
// The kernels are built as in a runtime-API program: `nvcc -c` into an object linked into this
// executable, so nvcc's own fatbin wrapper sits in `.nvFatBinSegment` (found by reading this
// program's section headers, see nv_fatbin_segment.h). That wrapper is given to
// cuLibraryLoadData with CU_LIBRARY_BINARY_IS_PRESERVED, kernels are found with
// cuLibraryGetKernel by mangled name and launched as CUkernel cast to CUfunction. The static
// cudart is linked only for nvcc's registration start-up code; no runtime API function is called.
//
// Built twice: runtime_style (version-1 wrapper) and, with CUSNAP_RUNTIME_STYLE_RDC, runtime_rdc
// (-rdc=true + nvcc -dlink: the version-2 wrapper of the device-link object, which lists the
// relocatable fatbin of this program's single rdc translation unit).
#define CUSNAP_SAMPLE_DYNAMIC_DRIVER
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include "nv_fatbin_segment.h"
#include "sample_common.h"

using namespace cusnap::samples;

namespace {

#ifdef CUSNAP_RUNTIME_STYLE_RDC
constexpr const char* kSampleName = "runtime_rdc";
constexpr uint32_t kExpectedWrapperVersion = 2;
#else
constexpr const char* kSampleName = "runtime_style";
constexpr uint32_t kExpectedWrapperVersion = 1;
#endif

constexpr const char* kKernelName =
    "_Z16scale_and_offsetPfif";  // scale_and_offset(float*, int, float)

PFN_cuGetProcAddress_v12000 g_get_proc = nullptr;

template <typename Fn>
Fn bind(const char* symbol, int version, cuuint64_t flags) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult result = g_get_proc(symbol, &fn, version, flags, &status);
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "error: cuGetProcAddress(%s@%d, flags=%llu) failed: %s (%d)\n", symbol,
                 version, static_cast<unsigned long long>(flags), error_name(result).c_str(),
                 static_cast<int>(result));
    std::exit(2);
  }
  if (status != CU_GET_PROC_ADDRESS_SUCCESS || fn == nullptr) {
    std::fprintf(stderr, "error: cuGetProcAddress(%s@%d, flags=%llu): symbol status %d\n", symbol,
                 version, static_cast<unsigned long long>(flags), static_cast<int>(status));
    std::exit(2);
  }
  return reinterpret_cast<Fn>(fn);
}

constexpr cuuint64_t kDefault = CU_GET_PROC_ADDRESS_DEFAULT;
constexpr cuuint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 5000);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");

  // The wrapper the runtime would register for this program's one kernel object.
  SegmentWrappers segment = find_segment_wrappers();
  if (!segment.error.empty()) {
    std::fprintf(stderr, "error: %s\n", segment.error.c_str());
    return 2;
  }
  if (segment.registered.size() != 1 || segment.registered[0]->version != kExpectedWrapperVersion) {
    std::string found =
        std::to_string(segment.registered.size()) + " of " + std::to_string(segment.total);
    if (!segment.registered.empty())
      found += ", the first of version " + std::to_string(segment.registered[0]->version);
    std::fprintf(
        stderr,
        "error: expected one registered version-%u fatbin wrapper in .nvFatBinSegment, found %s\n",
        kExpectedWrapperVersion, found.c_str());
    return 2;
  }
  const FatbinWrapper* wrapper = segment.registered[0];

  void* driver = dlopen("libcuda.so.1", RTLD_NOW);
  if (driver == nullptr) {
    std::fprintf(stderr, "error: dlopen(\"libcuda.so.1\") failed: %s\n", dlerror());
    return 2;
  }
  g_get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(driver, "cuGetProcAddress_v2"));
  if (g_get_proc == nullptr) {
    std::fprintf(stderr, "error: libcuda.so.1 has no cuGetProcAddress_v2\n");
    return 2;
  }

  // The runtime's probe: its answer is not used (drivers differ), only the call is made.
  {
    void* ignored = nullptr;
    CUdriverProcAddressQueryResult status;
    (void)g_get_proc("", &ignored, CUDA_VERSION, kDefault, &status);
  }
  auto cu_init = bind<PFN_cuInit_v2000>("cuInit", 2000, kDefault);
  CU_CHECK(cu_init(0));
  auto get_proc_11030 = bind<PFN_cuGetProcAddress_v11030>("cuGetProcAddress", 11030, kDefault);
  g_get_proc = bind<PFN_cuGetProcAddress_v12000>("cuGetProcAddress", 12000, kDefault);
  (void)get_proc_11030;
  g_get_error_name = bind<PFN_cuGetErrorName_v6000>("cuGetErrorName", 6000, kDefault);

  auto device_get = bind<PFN_cuDeviceGet_v2000>("cuDeviceGet", 2000, kDefault);
  auto primary_retain =
      bind<PFN_cuDevicePrimaryCtxRetain_v7000>("cuDevicePrimaryCtxRetain", 7000, kDefault);
  auto primary_release =
      bind<PFN_cuDevicePrimaryCtxRelease_v11000>("cuDevicePrimaryCtxRelease", 11000, kDefault);
  auto ctx_set_current = bind<PFN_cuCtxSetCurrent_v4000>("cuCtxSetCurrent", 4000, kDefault);
  auto mem_alloc = bind<PFN_cuMemAlloc_v3020>("cuMemAlloc", 3020, kDefault);
  auto mem_free = bind<PFN_cuMemFree_v3020>("cuMemFree", 3020, kDefault);
  auto memcpy_htod = bind<PFN_cuMemcpyHtoD_v7000_ptds>("cuMemcpyHtoD", 7000, kPerThread);
  auto memcpy_dtoh = bind<PFN_cuMemcpyDtoH_v7000_ptds>("cuMemcpyDtoH", 7000, kPerThread);
  auto library_load = bind<PFN_cuLibraryLoadData_v12000>("cuLibraryLoadData", 12000, kDefault);
  auto library_unload = bind<PFN_cuLibraryUnload_v12000>("cuLibraryUnload", 12000, kDefault);
  auto library_get_kernel =
      bind<PFN_cuLibraryGetKernel_v12000>("cuLibraryGetKernel", 12000, kDefault);
  auto library_get_global =
      bind<PFN_cuLibraryGetGlobal_v12000>("cuLibraryGetGlobal", 12000, kDefault);
  auto kernel_get_function =
      bind<PFN_cuKernelGetFunction_v12000>("cuKernelGetFunction", 12000, kDefault);
  auto kernel_get_attribute =
      bind<PFN_cuKernelGetAttribute_v12000>("cuKernelGetAttribute", 12000, kDefault);
  auto launch_kernel = bind<PFN_cuLaunchKernel_v7000_ptsz>("cuLaunchKernel", 7000, kPerThread);
  auto stream_sync =
      bind<PFN_cuStreamSynchronize_v7000_ptsz>("cuStreamSynchronize", 7000, kPerThread);

  std::vector<float> data(n), result(n), reference(n);
  Lcg rng(7);
  const float factor = 0.5f, offset = 3.25f;
  for (size_t i = 0; i < n; ++i) {
    data[i] = rng.next_float(-64.0f, 64.0f);
    // Two launches of x * 0.5 + 3.25. Inputs are multiples of 2^-17 below 64 in magnitude, so
    // every intermediate fits in 24 bits: exact whether or not nvcc fuses into an fma.
    reference[i] = (data[i] * factor + offset) * factor + offset;
  }
  maybe_inject_error(options, reference);

  CUdevice device;
  CUcontext context;
  CU_CHECK(device_get(&device, 0));
  CU_CHECK(primary_retain(&context, device));
  CU_CHECK(ctx_set_current(context));

  // The runtime hands over the wrapper, not the fatbin, and promises to keep it alive.
  CUlibraryOption library_option = CU_LIBRARY_BINARY_IS_PRESERVED;
  void* library_option_value = reinterpret_cast<void*>(uintptr_t{1});
  CUlibrary library;
  CU_CHECK(library_load(&library, wrapper, nullptr, nullptr, 0, &library_option,
                        &library_option_value, 1));
  CUkernel kernel;
  CU_CHECK(library_get_kernel(&kernel, library, kKernelName));

  // cudaFuncGetAttributes goes through the kernel's function in the current context.
  CUfunction function;
  CU_CHECK(kernel_get_function(&function, kernel));
  int max_threads = 0;
  CU_CHECK(
      kernel_get_attribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel, device));
  const unsigned block = 128;
  if (max_threads < static_cast<int>(block)) {
    std::fprintf(stderr, "error: kernel allows only %d threads per block\n", max_threads);
    return 2;
  }

  CUdeviceptr d_offset, d_count;
  size_t offset_size = 0, count_size = 0;
  CU_CHECK(library_get_global(&d_offset, &offset_size, library, "g_offset"));
  CU_CHECK(library_get_global(&d_count, &count_size, library, "g_launch_count"));
  if (offset_size != sizeof(float) || count_size != sizeof(unsigned)) {
    std::fprintf(stderr, "error: unexpected __device__ variable sizes %zu, %zu\n", offset_size,
                 count_size);
    return 2;
  }
  const unsigned zero = 0;
  CU_CHECK(memcpy_htod(d_offset, &offset, sizeof(float)));
  CU_CHECK(memcpy_htod(d_count, &zero, sizeof(unsigned)));

  CUdeviceptr d_data;
  CU_CHECK(mem_alloc(&d_data, n * sizeof(float)));
  CU_CHECK(memcpy_htod(d_data, data.data(), n * sizeof(float)));
  int count = static_cast<int>(n);
  float launch_factor = factor;
  void* params[] = {&d_data, &count, &launch_factor};
  for (int launch = 0; launch < 2; ++launch) {
    CU_CHECK(launch_kernel(reinterpret_cast<CUfunction>(kernel), blocks_for(n, block), 1, 1, block,
                           1, 1, 0, nullptr, params, nullptr));
  }
  CU_CHECK(stream_sync(nullptr));
  CU_CHECK(memcpy_dtoh(result.data(), d_data, n * sizeof(float)));
  unsigned launches = 0;
  CU_CHECK(memcpy_dtoh(&launches, d_count, sizeof(unsigned)));

  bool ok = compare_exact(reference, result);
  if (ok && launches != 2) {
    std::printf("MISMATCH in __device__ g_launch_count: expected 2, found %u\n", launches);
    ok = false;
  }

  CU_CHECK(mem_free(d_data));
  CU_CHECK(library_unload(library));
  CU_CHECK(primary_release(device));
  dlclose(driver);
  return finish(kSampleName, ok,
                "n=" + std::to_string(n) + ", wrapper v" + std::to_string(kExpectedWrapperVersion) +
                    ", 2 launches via cuLibrary*, exact");
}
