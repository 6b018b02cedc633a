// Shared helpers for the emulator driver tests.
#pragma once

#include <cuda.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#define REQUIRE_CU(call) REQUIRE((call) == CUDA_SUCCESS)
#define CHECK_CU(call) CHECK((call) == CUDA_SUCCESS)

namespace cusnap_test {

// Initialises the driver and makes the primary context current for the calling thread.
inline CUcontext primary_context() {
  REQUIRE_CU(cuInit(0));
  CUcontext ctx = nullptr;
  REQUIRE_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  REQUIRE_CU(cuCtxSetCurrent(ctx));
  return ctx;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::string kernel_path(const char* name) {
  return std::string(CUSNAP_TEST_KERNELS_DIR) + "/" + name;
}

// A kernel node over `elements` threads in one-dimensional blocks of 128.
inline CUDA_KERNEL_NODE_PARAMS kernel_node(CUfunction f, void** args, unsigned elements) {
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = f;
  p.gridDimX = (elements + 127) / 128;
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = 128;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = args;
  return p;
}

}  // namespace cusnap_test
