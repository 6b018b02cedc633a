// cuGetProcAddress the way the CUDA runtime uses it: dlopen the emulator from its build path,
// bind only cuGetProcAddress_v2, and resolve everything through it.
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include "test_helpers.h"

TEST_CASE("dlopen + cuGetProcAddress_v2 as the CUDA runtime does it", "[proc]") {
  void* lib = dlopen(CUSNAP_TEST_EMULATOR_LIB, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  REQUIRE(get_proc != nullptr);
  CHECK(dlsym(lib, "cuMemAlloc_v2") != nullptr);
  CHECK(dlsym(lib, "cuLaunchKernel_ptsz") != nullptr);

  void* fn = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status{};
  // 1. The empty-name probe.
  REQUIRE(get_proc("", &fn, 12000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == nullptr);
  CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  // 2. cuInit.
  REQUIRE(get_proc("cuInit", &fn, 2000, 0, &status) == CUDA_SUCCESS);
  REQUIRE(fn != nullptr);
  CHECK(reinterpret_cast<PFN_cuInit_v2000>(fn)(0) == CUDA_SUCCESS);
  // 3. Itself at 11030 and 12000: two different ABIs.
  REQUIRE(get_proc("cuGetProcAddress", &fn, 11030, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuGetProcAddress"));
  REQUIRE(get_proc("cuGetProcAddress", &fn, 12000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuGetProcAddress_v2"));
  CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS);
  // 4. Per-thread default stream variants and versioned ABIs.
  REQUIRE(get_proc("cuLaunchKernel", &fn, 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                   &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuLaunchKernel_ptsz"));
  REQUIRE(get_proc("cuLaunchKernel", &fn, 4000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                   &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuLaunchKernel"));  // no per-thread ABI before 7.0
  REQUIRE(get_proc("cuLaunchKernel", &fn, 12000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuLaunchKernel"));
  REQUIRE(get_proc("cuMemAlloc", &fn, 3020, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuMemAlloc_v2"));
  REQUIRE(get_proc("cuMemAlloc", &fn, 2000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuMemAlloc"));
  REQUIRE(get_proc("cuStreamBeginCapture", &fn, 10000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuStreamBeginCapture"));
  REQUIRE(get_proc("cuStreamBeginCapture", &fn, 10010,
                   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuStreamBeginCapture_v2_ptsz"));
  REQUIRE(get_proc("cuMemcpyHtoD", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                   &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuMemcpyHtoD_v2_ptds"));
  REQUIRE(get_proc("cuCtxCreate", &fn, 12050, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuCtxCreate_v4"));
  REQUIRE(get_proc("cuCtxCreate", &fn, 11040, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == dlsym(lib, "cuCtxCreate_v3"));
  // 5. Too old a version, unknown names, bad flags.
  REQUIRE(get_proc("cuLaunchKernelEx", &fn, 11000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == nullptr);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  REQUIRE(get_proc("cuNoSuchFunction", &fn, 13000, 0, &status) == CUDA_SUCCESS);
  CHECK(fn == nullptr);
  CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK(get_proc("cuInit", &fn, 13000, 8, &status) == CUDA_ERROR_INVALID_VALUE);

  // An unimplemented entry point is still found and answers NOT_SUPPORTED.
  REQUIRE(get_proc("cuIpcGetEventHandle", &fn, 11000, 0, &status) == CUDA_SUCCESS);
  REQUIRE(fn != nullptr);
  CUipcEventHandle handle{};
  CHECK(reinterpret_cast<PFN_cuIpcGetEventHandle_v4010>(fn)(&handle, nullptr) ==
        CUDA_ERROR_NOT_SUPPORTED);
  // The private export tables are not provided.
  const void* table = nullptr;
  CUuuid id{};
  CHECK(reinterpret_cast<PFN_cuGetExportTable_v3000>(dlsym(lib, "cuGetExportTable"))(&table, &id) ==
        CUDA_ERROR_NOT_SUPPORTED);
  dlclose(lib);
}

TEST_CASE("the emulator exports only driver API symbols", "[proc]") {
  void* lib = dlopen(CUSNAP_TEST_EMULATOR_LIB, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  // Internal C++ symbols are hidden.
  CHECK(dlsym(lib, "_ZN6cusnap3emu6driver11allocationsEv") == nullptr);
  CHECK(dlsym(lib, "ZSTD_decompress") == nullptr);
  CHECK(dlsym(lib, "LZ4_decompress_safe") == nullptr);
  dlclose(lib);
}
