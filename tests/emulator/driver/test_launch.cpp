// Module loading and kernel launches through the PTX engine, checked against host results.
#include <cmath>
#include <cstring>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

#ifndef CUSNAP_TEST_HAVE_PTX_ENGINE

TEST_CASE("without the PTX engine, module loads fail with a clear error", "[launch]") {
  primary_context();
  std::string ptx = read_file(kernel_path("vector.ptx"));
  CUmodule module = nullptr;
  CHECK(cuModuleLoadData(&module, ptx.c_str()) == CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
}

#else

namespace {

struct Vectors {
  int n;
  std::vector<float> a, b, c;
  CUdeviceptr da = 0, db = 0, dc = 0;
  explicit Vectors(int count) : n(count), a(count), b(count), c(count, -1.0f) {
    for (int i = 0; i < n; ++i) {
      a[i] = 0.5f * static_cast<float>(i);
      b[i] = 1000.0f - static_cast<float>(i);
    }
    REQUIRE_CU(cuMemAlloc(&da, n * sizeof(float)));
    REQUIRE_CU(cuMemAlloc(&db, n * sizeof(float)));
    REQUIRE_CU(cuMemAlloc(&dc, n * sizeof(float)));
    REQUIRE_CU(cuMemcpyHtoD(da, a.data(), n * sizeof(float)));
    REQUIRE_CU(cuMemcpyHtoD(db, b.data(), n * sizeof(float)));
    REQUIRE_CU(cuMemsetD32(dc, 0, n));
  }
  ~Vectors() {
    cuMemFree(da);
    cuMemFree(db);
    cuMemFree(dc);
  }
  void check_sum() {
    REQUIRE_CU(cuMemcpyDtoH(c.data(), dc, n * sizeof(float)));
    for (int i = 0; i < n; ++i) {
      INFO("element " << i);
      REQUIRE(c[i] == a[i] + b[i]);
    }
  }
};

}  // namespace

TEST_CASE("PTX text module: function lookup, parameter layout, launch", "[launch]") {
  primary_context();
  std::string ptx = read_file(kernel_path("vector.ptx"));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  unsigned count = 0;
  REQUIRE_CU(cuModuleGetFunctionCount(&count, module));
  CHECK(count == 2);
  CUfunction add = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&add, module, "vector_add"));
  CHECK(cuModuleGetFunction(&add, module, "missing") == CUDA_ERROR_NOT_FOUND);
  REQUIRE_CU(cuModuleGetFunction(&add, module, "vector_add"));
  const char* name = nullptr;
  REQUIRE_CU(cuFuncGetName(&name, add));
  CHECK(std::string(name) == "vector_add");
  size_t offsets[4], sizes[4];
  for (size_t i = 0; i < 4; ++i) REQUIRE_CU(cuFuncGetParamInfo(add, i, &offsets[i], &sizes[i]));
  CHECK(offsets[0] == 0);
  CHECK(offsets[3] == 24);
  CHECK(sizes[0] == 8);
  CHECK(sizes[3] == 4);
  CHECK(cuFuncGetParamInfo(add, 4, &offsets[0], &sizes[0]) == CUDA_ERROR_INVALID_VALUE);
  int max_threads = 0;
  REQUIRE_CU(cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, add));
  CHECK(max_threads == 1024);

  Vectors v(1000);
  SECTION("kernelParams") {
    void* params[] = {&v.da, &v.db, &v.dc, &v.n};
    REQUIRE_CU(
        cuLaunchKernel(add, (v.n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
    v.check_sum();
  }
  SECTION("extra buffer, on a stream") {
    struct {
      CUdeviceptr a, b, c;
      int n;
    } args{v.da, v.db, v.dc, v.n};
    size_t size = sizeof args;
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    CUstream s = nullptr;
    REQUIRE_CU(cuStreamCreate(&s, 0));
    REQUIRE_CU(cuLaunchKernel(add, 8, 1, 1, 128, 1, 1, 0, s, nullptr, extra));
    REQUIRE_CU(cuStreamSynchronize(s));
    REQUIRE_CU(cuStreamDestroy(s));
    v.check_sum();
  }
  SECTION("cuLaunchKernelEx with attributes") {
    void* params[] = {&v.da, &v.db, &v.dc, &v.n};
    CUlaunchAttribute attrs[1];
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[0].value.cooperative = 1;
    CUlaunchConfig config{};
    config.gridDimX = 4;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 256;
    config.blockDimY = config.blockDimZ = 1;
    config.attrs = attrs;
    config.numAttrs = 1;
    REQUIRE_CU(cuLaunchKernelEx(&config, add, params, nullptr));
    REQUIRE_CU(cuCtxSynchronize());
    v.check_sum();
  }
  SECTION("bad configurations are refused at launch time") {
    void* params[] = {&v.da, &v.db, &v.dc, &v.n};
    CHECK(cuLaunchKernel(add, 1, 1, 1, 2048, 1, 1, 0, nullptr, params, nullptr) ==
          CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLaunchKernel(add, 0, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) ==
          CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 100 * 1024, nullptr, params, nullptr) ==
          CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) ==
          CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLaunchCooperativeKernel(add, 100000, 1, 1, 1024, 1, 1, 0, nullptr, params) ==
          CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  }
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("library from a fatbin: CUkernel launched as CUfunction, globals", "[launch]") {
  primary_context();
  std::string image = read_file(kernel_path("vector_speed.fatbin"));
  CUlibrary library = nullptr;
  REQUIRE_CU(cuLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel kernel = nullptr;
  REQUIRE_CU(cuLibraryGetKernel(&kernel, library, "scale_and_count"));
  void* unified = nullptr;  // no unified function pointers on the emulator
  CHECK(cuLibraryGetUnifiedFunction(&unified, library, "scale_and_count") == CUDA_ERROR_NOT_FOUND);
  CHECK(cuLibraryGetUnifiedFunction(nullptr, library, "x") == CUDA_ERROR_INVALID_VALUE);
  CUfunction function = nullptr;
  REQUIRE_CU(cuKernelGetFunction(&function, kernel));
  size_t offset = 0, size = 0;
  REQUIRE_CU(cuKernelGetParamInfo(kernel, 1, &offset, &size));
  CHECK(offset == 8);
  CHECK(size == 4);

  CUdeviceptr counter = 0;
  size_t counter_size = 0;
  REQUIRE_CU(cuLibraryGetGlobal(&counter, &counter_size, library, "counter_value"));
  CHECK(counter_size == sizeof(int));
  int value = 0;
  REQUIRE_CU(cuMemcpyDtoH(&value, counter, sizeof value));
  CHECK(value == 7);

  int n = 300;
  std::vector<float> data(n);
  for (int i = 0; i < n; ++i) data[i] = static_cast<float>(i) - 100.0f;
  CUdeviceptr d = 0;
  REQUIRE_CU(cuMemAlloc(&d, n * sizeof(float)));
  REQUIRE_CU(cuMemcpyHtoD(d, data.data(), n * sizeof(float)));
  float factor = 1.5f;
  void* params[] = {&d, &factor, &n};
  REQUIRE_CU(cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 3, 1, 1, 128, 1, 1, 0, nullptr,
                            params, nullptr));
  std::vector<float> out(n);
  REQUIRE_CU(cuMemcpyDtoH(out.data(), d, n * sizeof(float)));
  for (int i = 0; i < n; ++i) REQUIRE(out[i] == data[i] * factor);
  REQUIRE_CU(cuMemcpyDtoH(&value, counter, sizeof value));
  CHECK(value == 7 + n);
  REQUIRE_CU(cuMemFree(d));
  REQUIRE_CU(cuLibraryUnload(library));
}

TEST_CASE("an out-of-bounds access is ILLEGAL_ADDRESS and poisons the context", "[launch]") {
  primary_context();
  CUcontext ctx = nullptr;
  REQUIRE_CU(cuCtxCreate(&ctx, nullptr, 0, 0));
  std::string ptx = read_file(kernel_path("vector.ptx"));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  CUfunction add = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&add, module, "vector_add"));
  Vectors v(64);
  int too_many = 64 + 1000;  // c[i] beyond the allocation
  void* params[] = {&v.da, &v.db, &v.dc, &too_many};
  REQUIRE_CU(cuLaunchKernel(add, 9, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
  CHECK(cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS);
  CUdeviceptr p = 0;
  CHECK(cuMemAlloc(&p, 16) == CUDA_ERROR_ILLEGAL_ADDRESS);  // sticky
  CHECK(cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS);
  REQUIRE_CU(cuCtxDestroy(ctx));
  // The primary context is unaffected.
  CUcontext current = nullptr;
  REQUIRE_CU(cuCtxGetCurrent(&current));
  REQUIRE_CU(cuMemAlloc(&p, 16));
  REQUIRE_CU(cuMemFree(p));
}

#endif
