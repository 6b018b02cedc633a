// Shared helpers for the cusnap CUDA driver-API samples: error checking, access to kernel
// images embedded at build time, command-line options, and result comparison.
//
// Contract every sample follows (tests rely on it):
//   exit 0  device results match the host reference (a line ending in "PASSED" on stdout);
//   exit 1  mismatch ("MISMATCH at index I: expected E, found F" on stdout);
//   exit 2  a driver call or the command line failed (the failing call, file, line and
//           error name on stderr). Never a crash, whatever driver is found at run time.
//
// Samples that link libcuda (all but runtime_style) get cuGetErrorName automatically. A sample
// that binds the driver at run time defines CUSNAP_SAMPLE_DYNAMIC_DRIVER before including this
// header and may store its own cuGetErrorName in g_get_error_name.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

namespace cusnap::samples {

// A kernel image linked into the executable (see CUSNAP_EMBEDDED_IMAGE).
struct EmbeddedImage {
  const unsigned char* data;
  size_t size;
};

using GetErrorNameFn = CUresult (*)(CUresult, const char**);
#ifdef CUSNAP_SAMPLE_DYNAMIC_DRIVER
inline GetErrorNameFn g_get_error_name = nullptr;
#else
inline GetErrorNameFn g_get_error_name = &cuGetErrorName;
#endif

// Names for the codes a sample is likely to meet when the driver cannot name them itself (the
// toolkit's stub library answers cuGetErrorName with CUDA_ERROR_STUB_LIBRARY, too).
inline const char* fallback_error_name(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS:
      return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE:
      return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY:
      return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_NO_DEVICE:
      return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE:
      return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_IMAGE:
      return "CUDA_ERROR_INVALID_IMAGE";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
      return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case CUDA_ERROR_INVALID_PTX:
      return "CUDA_ERROR_INVALID_PTX";
    case CUDA_ERROR_NOT_FOUND:
      return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case CUDA_ERROR_LAUNCH_FAILED:
      return "CUDA_ERROR_LAUNCH_FAILED";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "CUDA_ERROR_NOT_SUPPORTED";
    default:
      return nullptr;
  }
}

inline std::string error_name(CUresult result) {
  const char* name = nullptr;
  if (g_get_error_name != nullptr && g_get_error_name(result, &name) == CUDA_SUCCESS &&
      name != nullptr) {
    return name;
  }
  name = fallback_error_name(result);
  return name != nullptr ? std::string(name)
                         : "CUresult " + std::to_string(static_cast<int>(result));
}

[[noreturn]] inline void fail_call(const char* call, CUresult result, const char* file, int line) {
  std::fprintf(stderr, "error: %s failed at %s:%d: %s (%d)\n", call, file, line,
               error_name(result).c_str(), static_cast<int>(result));
  std::exit(2);
}

[[noreturn]] inline void fail_usage(const char* what) {
  std::fprintf(stderr, "error: %s\n", what);
  std::exit(2);
}

}  // namespace cusnap::samples

// Evaluates a driver call once; on failure reports the call text, location and error name, and
// exits with status 2.
#define CU_CHECK(call)                                                                \
  do {                                                                                \
    CUresult cusnap_sample_result_ = (call);                                          \
    if (cusnap_sample_result_ != CUDA_SUCCESS)                                        \
      ::cusnap::samples::fail_call(#call, cusnap_sample_result_, __FILE__, __LINE__); \
  } while (0)

// Declares the image that cusnap_add_sample embedded from KERNELS file `<stem>.cu` (fatbin) or
// PTX_KERNELS (PTX text). The bytes are 16-byte aligned and followed by one NUL byte that is not
// counted in size, so PTX text can be handed to the driver as a C string.
#define CUSNAP_EMBEDDED_IMAGE(stem)                                                \
  extern "C" const unsigned char cusnap_image_##stem[];                            \
  extern "C" const unsigned char cusnap_image_##stem##_end[];                      \
  namespace {                                                                      \
  inline ::cusnap::samples::EmbeddedImage stem##_image() {                         \
    return {cusnap_image_##stem,                                                   \
            static_cast<size_t>(cusnap_image_##stem##_end - cusnap_image_##stem)}; \
  }                                                                                \
  }

namespace cusnap::samples {

// Command line shared by all samples: --size/-n N scales the problem for GPU runs,
// --inject-error corrupts one element of the host reference so the comparison must fail.
struct Options {
  size_t size = 0;
  bool inject_error = false;
};

inline Options parse_options(int argc, char** argv, size_t default_size,
                             const char* usage_extra = "") {
  Options options;
  options.size = default_size;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--size" || arg == "-n") && i + 1 < argc) {
      char* end = nullptr;
      unsigned long long value = std::strtoull(argv[++i], &end, 0);
      if (end == argv[i] || *end != '\0' || value == 0)
        fail_usage("--size expects a positive integer");
      options.size = static_cast<size_t>(value);
    } else if (arg == "--inject-error") {
      options.inject_error = true;
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: %s [--size N] [--inject-error]%s\n  default size %zu\n", argv[0],
                  usage_extra, default_size);
      std::exit(0);
    } else {
      std::fprintf(stderr, "error: unknown argument '%s' (try --help)\n", arg.c_str());
      std::exit(2);
    }
  }
  return options;
}

// Corrupts the middle element of a host reference when --inject-error was given.
template <typename T>
void maybe_inject_error(const Options& options, std::vector<T>& reference) {
  if (!options.inject_error || reference.empty()) return;
  T& victim = reference[reference.size() / 2];
  if constexpr (std::is_floating_point_v<T>) {
    victim += std::copysign(T(1) + std::fabs(victim), victim);  // away from zero, by >= 1
  } else {
    victim = static_cast<T>(victim ^ T(1));
  }
}

template <typename T>
double as_double(T value) {
  return static_cast<double>(value);
}

template <typename T>
void print_mismatch(size_t index, T expected, T found) {
  if constexpr (std::is_floating_point_v<T>) {
    std::printf("MISMATCH at index %zu: expected %.9g, found %.9g\n", index, as_double(expected),
                as_double(found));
  } else if constexpr (std::is_signed_v<T>) {
    std::printf("MISMATCH at index %zu: expected %lld, found %lld\n", index,
                static_cast<long long>(expected), static_cast<long long>(found));
  } else {
    std::printf("MISMATCH at index %zu: expected %llu, found %llu\n", index,
                static_cast<unsigned long long>(expected), static_cast<unsigned long long>(found));
  }
}

// Exact comparison (integer work, or float work whose operations are correctly rounded on both
// sides). Reports the first mismatch.
template <typename T>
bool compare_exact(const std::vector<T>& expected, const std::vector<T>& found) {
  if (expected.size() != found.size()) {
    std::printf("MISMATCH in size: expected %zu, found %zu\n", expected.size(), found.size());
    return false;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&expected[i], &found[i], sizeof(T)) != 0) {
      print_mismatch(i, expected[i], found[i]);
      return false;
    }
  }
  return true;
}

// |found - expected| <= abs_tol + rel_tol * |expected| for every element; NaN never matches.
// Reports the first mismatch and the largest absolute error seen.
template <typename T>
bool compare_close(const std::vector<T>& expected, const std::vector<T>& found, double abs_tol,
                   double rel_tol, double* max_abs_error = nullptr) {
  if (expected.size() != found.size()) {
    std::printf("MISMATCH in size: expected %zu, found %zu\n", expected.size(), found.size());
    return false;
  }
  double worst = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    double e = as_double(expected[i]);
    double f = as_double(found[i]);
    double err = std::fabs(f - e);
    if (!(err <= abs_tol + rel_tol * std::fabs(e))) {
      print_mismatch(i, expected[i], found[i]);
      return false;
    }
    if (err > worst) worst = err;
  }
  if (max_abs_error != nullptr) *max_abs_error = worst;
  return true;
}

// Prints the result line and returns the process exit status.
inline int finish(const char* sample, bool ok, const std::string& detail) {
  std::printf("%s: %s: %s\n", sample, detail.c_str(), ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}

// Small deterministic generator (the samples must produce the same inputs everywhere).
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed) {}
  uint32_t next_u32() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state_ >> 33);
  }
  // Uniform in [lo, hi).
  float next_float(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next_u32() & 0xFFFFFF) / 16777216.0f;
  }

 private:
  uint64_t state_;
};

#ifndef CUSNAP_SAMPLE_DYNAMIC_DRIVER
// Retains and makes current the primary context of device 0; releases it on destruction.
class PrimaryContext {
 public:
  PrimaryContext() {
    CU_CHECK(cuInit(0));
    CU_CHECK(cuDeviceGet(&device_, 0));
    CU_CHECK(cuDevicePrimaryCtxRetain(&context_, device_));
    CU_CHECK(cuCtxSetCurrent(context_));
  }
  ~PrimaryContext() {
    cuCtxSetCurrent(nullptr);
    cuDevicePrimaryCtxRelease(device_);
  }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  CUdevice device() const { return device_; }
  CUcontext context() const { return context_; }

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};
#endif

inline unsigned blocks_for(size_t n, unsigned block) {
  return static_cast<unsigned>((n + block - 1) / block);
}

// The start of a one-kernel program that takes its kernel image as a file (the interceptor's test
// applications, bench/): cuInit, device 0's primary context made current, the image at `path`
// loaded and `kernel` looked up. An unreadable file or a failing call exits 2, as CU_CHECK does.
struct LoadedKernel {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};
inline LoadedKernel load_kernel_file(const char* path, const char* kernel) {
  std::ifstream file(path, std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (image.empty()) {
    std::fprintf(stderr, "cannot read the kernel image %s\n", path);
    std::exit(2);
  }
  image.push_back('\0');  // PTX text is handed to the driver as a C string
  LoadedKernel k;
  CU_CHECK(cuInit(0));
  CU_CHECK(cuDeviceGet(&k.device, 0));
  CU_CHECK(cuDevicePrimaryCtxRetain(&k.context, k.device));
  CU_CHECK(cuCtxSetCurrent(k.context));
  CU_CHECK(cuModuleLoadData(&k.module, image.data()));
  CU_CHECK(cuModuleGetFunction(&k.function, k.module, kernel));
  return k;
}

}  // namespace cusnap::samples
