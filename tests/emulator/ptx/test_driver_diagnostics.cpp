// Driver-level load errors (label: emulator): the emulator's cuModuleLoadDataEx and
// cuLibraryLoadData report refused PTX through CUDA_ERROR_NOT_SUPPORTED / CUDA_ERROR_INVALID_PTX
// and CU_JIT_ERROR_LOG_BUFFER, as the real driver does for ptxas errors.
#include <cuda.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>

#include "diagnostics_ptx.h"

using namespace cusnap_test;

namespace {

void make_context_current() {
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  CUcontext ctx = nullptr;
  REQUIRE(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
  REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

// The JIT option arrays a program passes to get the error log.
struct JitLog {
  char buffer[512];
  CUjit_option options[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[2];
  explicit JitLog(unsigned size) {
    std::memset(buffer, 'x', sizeof buffer);
    values[0] = buffer;
    values[1] = reinterpret_cast<void*>(static_cast<uintptr_t>(size));
  }
  unsigned written() const { return static_cast<unsigned>(reinterpret_cast<uintptr_t>(values[1])); }
};

}  // namespace

TEST_CASE("cuModuleLoadDataEx refuses unsupported PTX with NOT_SUPPORTED and fills the error log",
          "[driver][load]") {
  make_context_current();
  JitLog log(sizeof(JitLog::buffer));
  CUmodule module = nullptr;
  REQUIRE(cuModuleLoadDataEx(&module, kRefusedPtx, 2, log.options, log.values) ==
          CUDA_ERROR_NOT_SUPPORTED);
  const std::string text(log.buffer);
  INFO(text);
  CHECK(text.find("vadd.s32.s32.s32") != std::string::npos);
  CHECK(text.find("line " + std::to_string(kRefusedLine)) != std::string::npos);
  CHECK(text.find("'refused'") != std::string::npos);
  CHECK(log.written() == text.size());  // bytes of text written back, NUL not counted
}

TEST_CASE("the error log honours the buffer size and is NUL-terminated", "[driver][load]") {
  make_context_current();
  JitLog log(16);
  CUmodule module = nullptr;
  REQUIRE(cuModuleLoadDataEx(&module, kRefusedPtx, 2, log.options, log.values) ==
          CUDA_ERROR_NOT_SUPPORTED);
  CHECK(std::strlen(log.buffer) == 15);
  CHECK(log.buffer[16] == 'x');  // nothing past the stated size
  CHECK(log.written() == 15);
}

TEST_CASE("cuLibraryLoadData reports through its JIT options, invalid PTX is INVALID_PTX",
          "[driver][load]") {
  make_context_current();
  {
    JitLog log(sizeof(JitLog::buffer));
    CUlibrary library = nullptr;
    REQUIRE(cuLibraryLoadData(&library, kRefusedPtx, log.options, log.values, 2, nullptr, nullptr,
                              0) == CUDA_ERROR_NOT_SUPPORTED);
    CHECK(std::string(log.buffer).find("vadd.s32.s32.s32") != std::string::npos);
  }
  {
    std::string bad = kStorePtx;
    bad.replace(bad.find("st.global.u32"), 13, "sto.global.u32");
    JitLog log(sizeof(JitLog::buffer));
    CUlibrary library = nullptr;
    REQUIRE(cuLibraryLoadData(&library, bad.c_str(), log.options, log.values, 2, nullptr, nullptr,
                              0) == CUDA_ERROR_INVALID_PTX);
    const std::string text(log.buffer);
    INFO(text);
    CHECK(text.find("sto") != std::string::npos);
    CHECK(text.find("line " + std::to_string(kStoreLine)) != std::string::npos);
  }
}

TEST_CASE("a supported module loads and leaves an empty error log", "[driver][load]") {
  make_context_current();
  JitLog log(sizeof(JitLog::buffer));
  CUmodule module = nullptr;
  REQUIRE(cuModuleLoadDataEx(&module, kStorePtx, 2, log.options, log.values) == CUDA_SUCCESS);
  CHECK(log.buffer[0] == '\0');
  CHECK(log.written() == 0);
  CUfunction f = nullptr;
  CHECK(cuModuleGetFunction(&f, module, "store_tid") == CUDA_SUCCESS);
  CHECK(cuModuleUnload(module) == CUDA_SUCCESS);
}
