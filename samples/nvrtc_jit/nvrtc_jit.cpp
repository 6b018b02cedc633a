// nvrtc_jit: a kernel compiled while the program runs. CUDA C++ source held in this file is
// compiled by NVRTC to PTX for compute_75 (with a -D option and two template instantiations
// whose mangled names NVRTC reports), then handed to cuModuleLoadDataEx with JIT log options.
// To the driver, and so to cusnap, this is PTX that no file on disk contains: the capture is the
// only record of it. Both instantiations are checked exactly against the host.
#include <nvrtc.h>

#include "sample_common.h"

using namespace cusnap::samples;

namespace {

// Compiled with -DSHIFT=<kShift>. Unsigned arithmetic wraps, so the host reference is exact.
constexpr const char* kSource = R"(
template <typename T>
__global__ void affine(T scale, const T* x, T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale * x[i] + (y[i] << SHIFT) + static_cast<T>(i);
}
)";
constexpr unsigned kShift = 3;
constexpr const char* kNameU32 = "affine<unsigned int>";
constexpr const char* kNameU64 = "affine<unsigned long long>";

[[noreturn]] void fail_nvrtc(const char* call, nvrtcResult result, const char* file, int line) {
  std::fprintf(stderr, "error: %s failed at %s:%d: %s (%d)\n", call, file, line,
               nvrtcGetErrorString(result), static_cast<int>(result));
  std::exit(2);
}

#define NVRTC_CHECK(call)                                                                     \
  do {                                                                                        \
    nvrtcResult nvrtc_result_ = (call);                                                       \
    if (nvrtc_result_ != NVRTC_SUCCESS) fail_nvrtc(#call, nvrtc_result_, __FILE__, __LINE__); \
  } while (0)

struct Compiled {
  std::string ptx;
  std::string lowered_u32;
  std::string lowered_u64;
};

Compiled compile_source() {
  nvrtcProgram program;
  NVRTC_CHECK(nvrtcCreateProgram(&program, kSource, "nvrtc_jit_affine.cu", 0, nullptr, nullptr));
  NVRTC_CHECK(nvrtcAddNameExpression(program, kNameU32));
  NVRTC_CHECK(nvrtcAddNameExpression(program, kNameU64));
  const std::string shift_define = "-DSHIFT=" + std::to_string(kShift);
  const char* compile_options[] = {"--gpu-architecture=compute_75", "-std=c++17",
                                   shift_define.c_str()};
  nvrtcResult compiled = nvrtcCompileProgram(program, 3, compile_options);
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    if (nvrtcGetProgramLogSize(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
      std::string log(log_size, '\0');
      if (nvrtcGetProgramLog(program, log.data()) == NVRTC_SUCCESS) {
        std::fprintf(stderr, "nvrtc log:\n%s\n", log.c_str());
      }
    }
    fail_nvrtc("nvrtcCompileProgram", compiled, __FILE__, __LINE__);
  }
  Compiled out;
  size_t ptx_size = 0;
  NVRTC_CHECK(nvrtcGetPTXSize(program, &ptx_size));  // includes the terminating NUL
  out.ptx.assign(ptx_size, '\0');
  NVRTC_CHECK(nvrtcGetPTX(program, out.ptx.data()));
  const char* lowered = nullptr;
  NVRTC_CHECK(nvrtcGetLoweredName(program, kNameU32, &lowered));
  out.lowered_u32 = lowered;  // owned by the program: copy before destroying it
  NVRTC_CHECK(nvrtcGetLoweredName(program, kNameU64, &lowered));
  out.lowered_u64 = lowered;
  NVRTC_CHECK(nvrtcDestroyProgram(&program));
  return out;
}

template <typename T>
std::vector<T> make_input(size_t n, Lcg& rng) {
  std::vector<T> v(n);
  for (auto& e : v)
    e = static_cast<T>((static_cast<uint64_t>(rng.next_u32()) << 32) | rng.next_u32());
  return v;
}

// Runs one instantiation on n elements and compares with the host; returns false on mismatch.
template <typename T>
bool run_affine(CUfunction kernel, T scale, size_t n, Lcg& rng, const Options& options,
                bool inject) {
  std::vector<T> x = make_input<T>(n, rng);
  std::vector<T> y = make_input<T>(n, rng);
  std::vector<T> reference(n);
  for (size_t i = 0; i < n; ++i) {
    reference[i] =
        static_cast<T>(scale * x[i] + static_cast<T>(y[i] << kShift) + static_cast<T>(i));
  }
  if (inject) maybe_inject_error(options, reference);

  const size_t bytes = n * sizeof(T);
  CUdeviceptr d_x, d_y;
  CU_CHECK(cuMemAlloc(&d_x, bytes));
  CU_CHECK(cuMemAlloc(&d_y, bytes));
  CU_CHECK(cuMemcpyHtoD(d_x, x.data(), bytes));
  CU_CHECK(cuMemcpyHtoD(d_y, y.data(), bytes));
  int count = static_cast<int>(n);
  void* params[] = {&scale, &d_x, &d_y, &count};
  const unsigned block = 128;
  CU_CHECK(
      cuLaunchKernel(kernel, blocks_for(n, block), 1, 1, block, 1, 1, 0, nullptr, params, nullptr));
  std::vector<T> result(n);
  CU_CHECK(cuMemcpyDtoH(result.data(), d_y, bytes));
  CU_CHECK(cuMemFree(d_x));
  CU_CHECK(cuMemFree(d_y));
  return compare_exact(reference, result);
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 13);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");

  // The driver first, so that a missing or stub driver is reported before any compilation.
  PrimaryContext context;
  Compiled compiled = compile_source();

  char info_log[4096] = {};
  char error_log[4096] = {};
  CUjit_option jit_options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* jit_values[] = {info_log, reinterpret_cast<void*>(sizeof(info_log)), error_log,
                        reinterpret_cast<void*>(sizeof(error_log))};
  CUmodule module;
  CUresult loaded = cuModuleLoadDataEx(&module, compiled.ptx.c_str(), 4, jit_options, jit_values);
  if (loaded != CUDA_SUCCESS) {
    if (error_log[0] != '\0') std::fprintf(stderr, "JIT error log:\n%s\n", error_log);
    fail_call("cuModuleLoadDataEx", loaded, __FILE__, __LINE__);
  }
  CUfunction affine_u32, affine_u64;
  CU_CHECK(cuModuleGetFunction(&affine_u32, module, compiled.lowered_u32.c_str()));
  CU_CHECK(cuModuleGetFunction(&affine_u64, module, compiled.lowered_u64.c_str()));

  Lcg rng(11);
  // The injected error goes into the first check only, so the run stops at a MISMATCH line.
  bool ok = run_affine<uint32_t>(affine_u32, 2654435761u, n, rng, options, true) &&
            run_affine<uint64_t>(affine_u64, 0x9E3779B97F4A7C15ull, n, rng, options, false);
  CU_CHECK(cuModuleUnload(module));
  return finish("nvrtc_jit", ok,
                "n=" + std::to_string(n) + ", PTX " + std::to_string(compiled.ptx.size() - 1) +
                    " bytes from NVRTC, 2 instantiations, exact");
}
