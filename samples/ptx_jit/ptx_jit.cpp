// ptx_jit: PTX text JIT-compiled with cuModuleLoadDataEx and log-buffer options, a __constant__
// array written through cuModuleGetGlobal + cuMemcpyHtoD, and a launch whose parameters (a
// struct by value and two pointers) go through the `extra` buffer
// (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE / _END) instead of kernelParams. Broken PTX must be
// rejected with an error.
#include "ptx_jit_params.h"
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(ptx_jit_kernels)

using namespace cusnap::samples;

namespace {

// Appends a value at its natural alignment, as the kernel's parameter layout expects.
template <typename T>
void append_param(std::vector<unsigned char>& buffer, const T& value) {
  size_t offset = (buffer.size() + alignof(T) - 1) / alignof(T) * alignof(T);
  buffer.resize(offset + sizeof(T));
  std::memcpy(buffer.data() + offset, &value, sizeof(T));
}

// Undeclared register: every PTX assembler rejects this.
constexpr const char* kBrokenPtx =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .entry broken()\n{\n\tmov.u32 %r_undeclared, 1;\n\tret;\n}\n";

struct JitLogs {
  char info[4096] = {};
  char error[4096] = {};
};

CUresult load_ptx(CUmodule* module, const char* ptx, JitLogs& logs) {
  CUjit_option keys[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_LOG_VERBOSE};
  void* values[] = {logs.info, reinterpret_cast<void*>(uintptr_t{sizeof(logs.info)}), logs.error,
                    reinterpret_cast<void*>(uintptr_t{sizeof(logs.error)}),
                    reinterpret_cast<void*>(uintptr_t{1})};
  return cuModuleLoadDataEx(module, ptx, 5, keys, values);
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 3000);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");

  const float coefficients[kMaxCoefficients] = {0.5f,  -1.25f, 0.75f, 2.0f,
                                                -0.5f, 0.125f, 1.0f,  0.0f};
  PolyParams p{};
  p.n = static_cast<int>(n);
  p.scale = 1.5f;
  p.bias = -0.25;
  p.degree = 6;

  std::vector<float> x(n), y(n), reference(n);
  Lcg rng(10);
  for (size_t i = 0; i < n; ++i) {
    x[i] = rng.next_float(-1.0f, 1.0f);
    double acc = coefficients[p.degree];
    for (int j = p.degree - 1; j >= 0; --j) acc = acc * x[i] + coefficients[j];
    reference[i] = static_cast<float>(p.scale * acc + p.bias);
  }
  maybe_inject_error(options, reference);

  PrimaryContext context;
  const char* ptx = reinterpret_cast<const char*>(ptx_jit_kernels_image().data);
  JitLogs logs;
  CUmodule module;
  CUresult loaded = load_ptx(&module, ptx, logs);
  if (loaded != CUDA_SUCCESS) {
    std::fprintf(stderr, "JIT error log:\n%s\n", logs.error);
    fail_call("cuModuleLoadDataEx(ptx)", loaded, __FILE__, __LINE__);
  }
  const size_t info_log_length = std::strlen(logs.info);

  CUdeviceptr d_coefficients;
  size_t coefficients_size = 0;
  CU_CHECK(cuModuleGetGlobal(&d_coefficients, &coefficients_size, module, "c_coefficients"));
  if (coefficients_size != sizeof(coefficients)) {
    std::fprintf(stderr, "error: c_coefficients is %zu bytes, expected %zu\n", coefficients_size,
                 sizeof(coefficients));
    return 2;
  }
  CU_CHECK(cuMemcpyHtoD(d_coefficients, coefficients, sizeof(coefficients)));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "poly_eval"));

  CUdeviceptr d_x, d_y;
  CU_CHECK(cuMemAlloc(&d_x, n * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_y, n * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_x, x.data(), n * sizeof(float)));

  std::vector<unsigned char> buffer;
  append_param(buffer, p);
  append_param(buffer, d_x);
  append_param(buffer, d_y);
  size_t buffer_size = buffer.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &buffer_size, CU_LAUNCH_PARAM_END};
  CU_CHECK(cuLaunchKernel(kernel, blocks_for(n, 128), 1, 1, 128, 1, 1, 0, nullptr, nullptr, extra));
  CU_CHECK(cuMemcpyDtoH(y.data(), d_y, n * sizeof(float)));

  // Float Horner (fused) against double: a few ulps of values of magnitude <= ~10.
  double max_error = 0.0;
  bool ok = compare_close(reference, y, 1e-5, 1e-5, &max_error);

  // The driver must refuse broken PTX (and should say why in the error log).
  JitLogs broken_logs;
  CUmodule broken_module = nullptr;
  CUresult broken = load_ptx(&broken_module, kBrokenPtx, broken_logs);
  if (broken == CUDA_SUCCESS) {
    std::printf("MISMATCH: broken PTX was accepted\n");
    ok = false;
    CU_CHECK(cuModuleUnload(broken_module));
  }

  CU_CHECK(cuMemFree(d_x));
  CU_CHECK(cuMemFree(d_y));
  CU_CHECK(cuModuleUnload(module));
  char detail[200];
  std::snprintf(
      detail, sizeof(detail),
      "n=%zu, %zu-byte param buffer, info log %zu chars, broken PTX -> %s, max abs error %.3g", n,
      buffer_size, info_log_length, error_name(broken).c_str(), max_error);
  return finish("ptx_jit", ok, detail);
}
