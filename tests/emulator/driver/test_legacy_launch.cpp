// The legacy execution-control API (cuFuncSetBlockShape, cuFuncSetSharedSize, cuParamSet*,
// cuLaunch, cuLaunchGrid, cuLaunchGridAsync) and the context usage count (cuCtxAttach/Detach),
// as older bindings use them; results are checked against host computations.
// The deprecated entry points are what is tested here.
#define CUDA_ENABLE_DEPRECATED 1

#include <cstddef>
#include <cstring>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

// Aligns `offset` for a parameter of `align` bytes, as callers of cuParamSet* must.
int align_up(int offset, int align) { return (offset + align - 1) / align * align; }

CUmodule load(const char* name) {
  std::string ptx = read_file(kernel_path(name));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  return module;
}

}  // namespace

TEST_CASE("legacy launch: cuParamSetv/Seti at the caller's offsets, cuLaunchGrid", "[legacy]") {
  primary_context();
  CUmodule module = load("vector.ptx");
  CUfunction add = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&add, module, "vector_add"));
  const int n = 1000;
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.25f * static_cast<float>(i);
    b[i] = 3.0f - static_cast<float>(i);
  }
  CUdeviceptr da = 0, db = 0, dc = 0;
  REQUIRE_CU(cuMemAlloc(&da, n * sizeof(float)));
  REQUIRE_CU(cuMemAlloc(&db, n * sizeof(float)));
  REQUIRE_CU(cuMemAlloc(&dc, n * sizeof(float)));
  REQUIRE_CU(cuMemcpyHtoD(da, a.data(), n * sizeof(float)));
  REQUIRE_CU(cuMemcpyHtoD(db, b.data(), n * sizeof(float)));

  // The old samples' pattern: parameters first, cuParamSetSize last.
  int offset = 0;
  for (CUdeviceptr* p : {&da, &db, &dc}) {
    offset = align_up(offset, alignof(CUdeviceptr));
    REQUIRE_CU(cuParamSetv(add, offset, p, sizeof *p));
    offset += sizeof *p;
  }
  offset = align_up(offset, alignof(int));
  REQUIRE_CU(cuParamSeti(add, offset, static_cast<unsigned>(n)));
  offset += sizeof(int);
  REQUIRE_CU(cuParamSetSize(add, static_cast<unsigned>(offset)));
  REQUIRE_CU(cuFuncSetBlockShape(add, 128, 1, 1));
  REQUIRE_CU(cuLaunchGrid(add, (n + 127) / 128, 1));
  REQUIRE_CU(cuCtxSynchronize());
  REQUIRE_CU(cuMemcpyDtoH(c.data(), dc, n * sizeof(float)));
  for (int i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(c[i] == a[i] + b[i]);
  }

  // The state stays set: a second launch with one parameter changed (n = 10) touches only the
  // first 10 elements of a cleared output.
  REQUIRE_CU(cuMemsetD32(dc, 0, n));
  REQUIRE_CU(cuParamSeti(add, 24, 10u));
  REQUIRE_CU(cuLaunchGrid(add, (n + 127) / 128, 1));
  REQUIRE_CU(cuMemcpyDtoH(c.data(), dc, n * sizeof(float)));
  for (int i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(c[i] == (i < 10 ? a[i] + b[i] : 0.0f));
  }
  REQUIRE_CU(cuMemFree(da));
  REQUIRE_CU(cuMemFree(db));
  REQUIRE_CU(cuMemFree(dc));
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("legacy launch: char, double, int and float parameters, cuParamSetf, 2D grid",
          "[legacy]") {
  primary_context();
  CUmodule module = load("surface.ptx");
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "mixed_args"));
  size_t offsets[5], sizes[5];
  for (size_t i = 0; i < 5; ++i) REQUIRE_CU(cuFuncGetParamInfo(f, i, &offsets[i], &sizes[i]));
  REQUIRE(offsets[1] == 8);
  REQUIRE(offsets[2] == 16);
  REQUIRE(offsets[3] == 24);
  REQUIRE(offsets[4] == 28);

  // mixed_args indexes blockIdx.x only, so the second grid row writes the same elements.
  const int blocks = 3, threads = 32, count = blocks * threads;
  CUdeviceptr out = 0;
  REQUIRE_CU(cuMemAlloc(&out, count * sizeof(double)));
  char c = -7;
  double d = 0.125;
  int i = 1000;
  float factor = 0.5f;
  REQUIRE_CU(cuParamSetv(f, 0, &out, sizeof out));
  REQUIRE_CU(cuParamSetv(f, 8, &c, 1));
  REQUIRE_CU(cuParamSetv(f, 16, &d, sizeof d));
  REQUIRE_CU(cuParamSeti(f, 24, static_cast<unsigned>(i)));
  REQUIRE_CU(cuParamSetf(f, 28, factor));
  REQUIRE_CU(cuParamSetSize(f, 32));
  REQUIRE_CU(cuFuncSetBlockShape(f, threads, 1, 1));
  REQUIRE_CU(cuLaunchGrid(f, blocks, 2));
  std::vector<double> result(count);
  REQUIRE_CU(cuMemcpyDtoH(result.data(), out, count * sizeof(double)));
  for (int t = 0; t < count; ++t) {
    INFO("thread " << t);
    REQUIRE(result[t] == static_cast<double>(c) + d + static_cast<double>(i) * factor + t);
  }
  REQUIRE_CU(cuMemFree(out));
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("legacy launch: cuFuncSetSharedSize, cuLaunchGridAsync on a stream, then cuLaunch",
          "[legacy]") {
  primary_context();
  CUmodule module = load("surface.ptx");
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "reverse_dynamic"));
  const int threads = 64, blocks = 4, n = threads * blocks;
  std::vector<int> host(n);
  for (int i = 0; i < n; ++i) host[i] = i * 3 + 1;
  CUdeviceptr data = 0;
  REQUIRE_CU(cuMemAlloc(&data, n * sizeof(int)));
  REQUIRE_CU(cuMemcpyHtoD(data, host.data(), n * sizeof(int)));
  REQUIRE_CU(cuParamSetv(f, 0, &data, sizeof data));
  REQUIRE_CU(cuParamSetSize(f, sizeof data));
  REQUIRE_CU(cuFuncSetBlockShape(f, threads, 1, 1));
  REQUIRE_CU(cuFuncSetSharedSize(f, threads * sizeof(int)));
  CUstream stream = nullptr;
  REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuLaunchGridAsync(f, blocks, 1, stream));
  REQUIRE_CU(cuStreamSynchronize(stream));
  // cuLaunch: one block, on the legacy default stream; reverses the first slice back.
  REQUIRE_CU(cuLaunch(f));
  std::vector<int> result(n);
  REQUIRE_CU(cuMemcpyDtoH(result.data(), data, n * sizeof(int)));
  for (int i = 0; i < n; ++i) {
    const int block = i / threads, t = i % threads;
    const int expected = block == 0 ? host[i] : host[block * threads + threads - 1 - t];
    INFO("element " << i);
    REQUIRE(result[i] == expected);
  }
  REQUIRE_CU(cuStreamDestroy(stream));
  REQUIRE_CU(cuMemFree(data));
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("legacy launch: incomplete state is refused, cuLaunchKernel invalidates it", "[legacy]") {
  primary_context();
  CUmodule module = load("vector.ptx");
  CUfunction add = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&add, module, "vector_add"));
  CUdeviceptr buffer = 0;
  REQUIRE_CU(cuMemAlloc(&buffer, 64 * sizeof(float)));
  REQUIRE_CU(cuMemsetD32(buffer, 0, 64));
  int n = 64;

  // No block shape yet.
  CHECK(cuLaunchGrid(add, 1, 1) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuFuncSetBlockShape(add, 64, 1, 1));
  // No parameter size yet, then one shorter than the kernel's 28 bytes.
  CHECK(cuLaunchGrid(add, 1, 1) == CUDA_ERROR_INVALID_VALUE);
  for (int offset : {0, 8, 16}) REQUIRE_CU(cuParamSetv(add, offset, &buffer, sizeof buffer));
  REQUIRE_CU(cuParamSeti(add, 24, static_cast<unsigned>(n)));
  REQUIRE_CU(cuParamSetSize(add, 24));
  CHECK(cuLaunchGrid(add, 1, 1) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuParamSetSize(add, 28));
  CHECK(cuLaunchGrid(add, 0, 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuLaunchGrid(add, 1, -1) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuLaunchGrid(add, 1, 1));
  // Dynamic shared memory beyond the function's limit fails at launch.
  REQUIRE_CU(cuFuncSetSharedSize(add, 200 * 1024));
  CHECK(cuLaunch(add) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuFuncSetSharedSize(add, 0));
  REQUIRE_CU(cuLaunch(add));

  // Argument checks of the setters.
  CHECK(cuFuncSetBlockShape(add, 0, 1, 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuFuncSetBlockShape(add, 32, 1, 65) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuFuncSetBlockShape(add, 2048, 1, 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuParamSeti(add, -4, 1u) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuParamSetv(add, 0, nullptr, 8) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuParamSetv(add, 32760, &n, 8) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuParamSetSize(add, 40000) == CUDA_ERROR_INVALID_VALUE);
  CUfunction bogus = reinterpret_cast<CUfunction>(&n);
  CHECK(cuParamSeti(bogus, 0, 1u) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuFuncSetBlockShape(bogus, 1, 1, 1) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuLaunch(bogus) == CUDA_ERROR_INVALID_HANDLE);

  // cuLaunchKernel invalidates the block shape, shared size and parameters (documented), so
  // the next legacy launch is refused until they are set again.
  void* params[] = {&buffer, &buffer, &buffer, &n};
  REQUIRE_CU(cuLaunchKernel(add, 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr));
  CHECK(cuLaunch(add) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuFuncSetBlockShape(add, 64, 1, 1));
  CHECK(cuLaunch(add) == CUDA_ERROR_INVALID_VALUE);  // the parameter size is gone too
  REQUIRE_CU(cuCtxSynchronize());

  // Without a current context the setters answer INVALID_CONTEXT.
  CUcontext current = nullptr;
  REQUIRE_CU(cuCtxPopCurrent(&current));
  CHECK(cuFuncSetBlockShape(add, 64, 1, 1) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cuParamSetSize(add, 28) == CUDA_ERROR_INVALID_CONTEXT);
  REQUIRE_CU(cuCtxPushCurrent(current));
  REQUIRE_CU(cuMemFree(buffer));
  REQUIRE_CU(cuModuleUnload(module));
}

#endif  // CUSNAP_TEST_HAVE_PTX_ENGINE

TEST_CASE("cuCtxAttach and cuCtxDetach count a context's usage", "[legacy]") {
  REQUIRE_CU(cuInit(0));
  CUcontext ctx = nullptr;
  REQUIRE_CU(cuCtxCreate(&ctx, nullptr, 0, 0));
  CUcontext attached = nullptr;
  CHECK(cuCtxAttach(&attached, 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuCtxAttach(nullptr, 0) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuCtxAttach(&attached, 0));
  CHECK(attached == ctx);
  // Count 2 -> 1: still alive and current.
  REQUIRE_CU(cuCtxDetach(ctx));
  unsigned long long id = 0;
  REQUIRE_CU(cuCtxGetId(ctx, &id));
  CUcontext current = nullptr;
  REQUIRE_CU(cuCtxGetCurrent(&current));
  CHECK(current == ctx);
  // Count 1 -> 0: destroyed and popped, as cuCtxDestroy would.
  REQUIRE_CU(cuCtxDetach(ctx));
  CHECK(cuCtxGetId(ctx, &id) == CUDA_ERROR_INVALID_CONTEXT);
  REQUIRE_CU(cuCtxGetCurrent(&current));
  CHECK(current != ctx);

  // A context must be current to be detached; without one, nothing can be attached.
  while (cuCtxPopCurrent(&current) == CUDA_SUCCESS) {
  }
  CHECK(cuCtxAttach(&attached, 0) == CUDA_ERROR_INVALID_CONTEXT);
  CUcontext other = nullptr;
  REQUIRE_CU(cuCtxCreate(&other, nullptr, 0, 0));
  REQUIRE_CU(cuCtxPopCurrent(&current));
  CHECK(cuCtxDetach(other) == CUDA_ERROR_INVALID_CONTEXT);
  REQUIRE_CU(cuCtxDestroy(other));

  // The primary context counts attaches but is never destroyed by a detach.
  CUcontext primary = primary_context();
  REQUIRE_CU(cuCtxAttach(&attached, 0));
  CHECK(attached == primary);
  REQUIRE_CU(cuCtxDetach(primary));
  CHECK(cuCtxDetach(primary) == CUDA_ERROR_INVALID_CONTEXT);
  REQUIRE_CU(cuCtxGetId(primary, &id));
  CUdeviceptr p = 0;
  REQUIRE_CU(cuMemAlloc(&p, 16));
  REQUIRE_CU(cuMemFree(p));
}
