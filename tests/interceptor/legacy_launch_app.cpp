// A driver-API program that launches only through the legacy execution-control API
// (cuFuncSetBlockShape, cuFuncSetSharedSize, cuParamSetSize/Seti/Setf/Setv, then cuLaunchGrid,
// cuLaunch and cuLaunchGridAsync on a stream), checks every result against a host reference and
// prints, for each launch, what the capture must hold:
//   expect launch api=<symbol> grid=x,y,z block=x,y,z shared=<bytes> stream=<handle> params=<hex>
//     result=<CUresult>
// (params: the parameter buffer, cuParamSetSize bytes, as the caller wrote it). One launch is
// refused by the driver (a grid width of 0): it must be recorded with its error and not replayed.
// Usage: legacy_launch_app KERNELS.ptx. Exit 0: every result matched; 1: a mismatch; 2: error.
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "legacy_launch_app: %s failed (%d)\n", what, static_cast<int>(result));
    std::exit(2);
  }
}

// The parameter buffer as the application builds it, mirrored here to print the expectation.
class Params {
 public:
  explicit Params(CUfunction f) : f_(f) {}
  void pointer(int offset, CUdeviceptr p) {
    check(cuParamSetv(f_, offset, &p, sizeof p), "cuParamSetv");
    put(offset, &p, sizeof p);
  }
  void f32(int offset, float v) {
    check(cuParamSetf(f_, offset, v), "cuParamSetf");
    put(offset, &v, sizeof v);
  }
  void u32(int offset, unsigned v) {
    check(cuParamSeti(f_, offset, v), "cuParamSeti");
    put(offset, &v, sizeof v);
  }
  void size(unsigned bytes) {
    check(cuParamSetSize(f_, bytes), "cuParamSetSize");
    size_ = bytes;
  }
  std::string hex() const {
    std::string out;
    char digits[3];
    for (unsigned i = 0; i < size_; ++i) {
      std::snprintf(digits, sizeof digits, "%02x", i < bytes_.size() ? bytes_[i] : 0);
      out += digits;
    }
    return out;
  }

 private:
  void put(int offset, const void* data, size_t size) {
    if (bytes_.size() < offset + size) bytes_.resize(offset + size, 0);
    std::memcpy(bytes_.data() + offset, data, size);
  }
  CUfunction f_;
  std::vector<uint8_t> bytes_;
  unsigned size_ = 0;
};

void expect(const char* api, unsigned gx, unsigned gy, unsigned bx, unsigned shared,
            CUstream stream, const Params& params, CUresult result = CUDA_SUCCESS) {
  std::printf(
      "expect launch api=%s grid=%u,%u,1 block=%u,1,1 shared=%u stream=%llu params=%s result=%d\n",
      api, gx, gy, bx, shared, static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(stream)),
      params.hex().c_str(), static_cast<int>(result));
}

int mismatches = 0;

void compare_axpb(const std::vector<float>& y, const std::vector<float>& x, float a, float b,
                  int n) {
  for (int i = 0; i < n; ++i) {
    float want = std::fma(a, x[i], b);
    if (y[i] != want) {
      if (mismatches++ < 5) std::fprintf(stderr, "axpb[%d] = %g, want %g\n", i, y[i], want);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: legacy_launch_app KERNELS.ptx\n");
    return 2;
  }
  std::ifstream file(argv[1]);
  std::string ptx((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (ptx.empty()) {
    std::fprintf(stderr, "legacy_launch_app: cannot read %s\n", argv[1]);
    return 2;
  }
  check(cuInit(0), "cuInit");
  CUdevice device;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  CUmodule module;
  check(cuModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData");
  CUfunction axpb, reverse;
  check(cuModuleGetFunction(&axpb, module, "axpb"), "cuModuleGetFunction axpb");
  check(cuModuleGetFunction(&reverse, module, "reverse_shared"), "cuModuleGetFunction reverse");

  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = 0.5f * static_cast<float>(i) - 7.25f;
  CUdeviceptr dx, dy;
  check(cuMemAlloc(&dx, n * sizeof(float)), "cuMemAlloc");
  check(cuMemAlloc(&dy, n * sizeof(float)), "cuMemAlloc");
  check(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)), "cuMemcpyHtoD");

  // cuLaunchGrid: a 4x2 grid of 128 threads covers n. Layout (float*, const float*, float, float,
  // int): offsets 0, 8, 16, 20, 24; 28 bytes.
  Params p(axpb);
  p.pointer(0, dy);
  p.pointer(8, dx);
  p.f32(16, 1.5f);
  p.f32(20, -3.0f);
  p.u32(24, static_cast<unsigned>(n));
  p.size(28);
  check(cuFuncSetBlockShape(axpb, 128, 1, 1), "cuFuncSetBlockShape");
  check(cuLaunchGrid(axpb, 4, 2), "cuLaunchGrid");
  expect("cuLaunchGrid", 4, 2, 128, 0, nullptr, p);
  check(cuMemcpyDtoH(y.data(), dy, n * sizeof(float)), "cuMemcpyDtoH");
  compare_axpb(y, x, 1.5f, -3.0f, n);
  // Refused (an empty grid): nothing runs, y stays as it is.
  CUresult refused = cuLaunchGrid(axpb, 0, 2);
  if (refused == CUDA_SUCCESS) {
    std::fprintf(stderr, "legacy_launch_app: cuLaunchGrid with a grid width of 0 succeeded\n");
    return 2;
  }
  expect("cuLaunchGrid", 0, 2, 128, 0, nullptr, p, refused);

  // cuLaunch: one block of 64 threads with 256 bytes of dynamic shared memory.
  const unsigned threads = 64, base = 1000;
  CUdeviceptr dr;
  check(cuMemAlloc(&dr, threads * sizeof(unsigned)), "cuMemAlloc");
  Params q(reverse);
  q.pointer(0, dr);
  q.u32(8, base);
  q.size(12);
  check(cuFuncSetBlockShape(reverse, threads, 1, 1), "cuFuncSetBlockShape");
  check(cuFuncSetSharedSize(reverse, threads * sizeof(unsigned)), "cuFuncSetSharedSize");
  check(cuLaunch(reverse), "cuLaunch");
  expect("cuLaunch", 1, 1, threads, threads * sizeof(unsigned), nullptr, q);
  std::vector<unsigned> r(threads);
  check(cuMemcpyDtoH(r.data(), dr, threads * sizeof(unsigned)), "cuMemcpyDtoH");
  for (unsigned t = 0; t < threads; ++t) {
    unsigned want = base + (threads - 1 - t) * (threads - 1 - t);
    if (r[t] != want && mismatches++ < 5)
      std::fprintf(stderr, "reverse[%u] = %u, want %u\n", t, r[t], want);
  }

  // cuLaunchGridAsync on a stream: only the parameters that change are set again (the state
  // stays), a 2x1 grid of 256 threads over the first 500 elements, in place (y = 2y + 0.25).
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const int m = 500;
  p.pointer(8, dy);
  p.f32(16, 2.0f);
  p.f32(20, 0.25f);
  p.u32(24, static_cast<unsigned>(m));
  check(cuFuncSetBlockShape(axpb, 256, 1, 1), "cuFuncSetBlockShape");
  check(cuLaunchGridAsync(axpb, 2, 1, stream), "cuLaunchGridAsync");
  expect("cuLaunchGridAsync", 2, 1, 256, 0, stream, p);
  std::vector<float> before = y;
  check(cuMemcpyDtoHAsync(y.data(), dy, n * sizeof(float), stream), "cuMemcpyDtoHAsync");
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  compare_axpb(y, before, 2.0f, 0.25f, m);
  for (int i = m; i < n; ++i) {
    if (y[i] != before[i] && mismatches++ < 5) std::fprintf(stderr, "y[%d] changed\n", i);
  }

  check(cuStreamDestroy(stream), "cuStreamDestroy");
  check(cuMemFree(dx), "cuMemFree");
  check(cuMemFree(dy), "cuMemFree");
  check(cuMemFree(dr), "cuMemFree");
  check(cuModuleUnload(module), "cuModuleUnload");
  check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  if (mismatches != 0) {
    std::fprintf(stderr, "legacy_launch_app: %d results differ from the host reference\n",
                 mismatches);
    return 1;
  }
  std::printf("legacy_launch_app: all results match the host reference\n");
  return 0;
}
