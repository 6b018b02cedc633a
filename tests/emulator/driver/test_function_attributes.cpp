// cuFuncGetAttribute values that mean something, from a PTX module whose declarations fix them
// (docs/emulator.md, "Function attributes").
#include <string>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

// The .const bank: table[100] at 0, k (align 4) at 100, d (align 8) at 104: 112 bytes. The
// .global and the .extern .const take none of it.
const char* kAttributesPtx = R"(.version 8.3
.target sm_80
.address_size 64
.const .align 8 .b8 table[100];
.const .align 4 .u32 k;
.const .align 8 .f64 d;
.extern .const .align 4 .u32 elsewhere;
.global .align 4 .u32 g[64];

.func (.reg .b32 out) helper(.reg .b32 in)
{
  .reg .b32 %q<5>;
  add.u32 out, in, 1;
  ret;
}

.visible .entry big(.param .u64 p)
.maxntid 128, 2, 1
{
  .local .align 8 .b8 depot[40];
  .shared .align 4 .b8 sh[300];
  .reg .b32 %r<10>;
  .reg .pred %p<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  ld.const.u32 %r1, [k];
  call (%r2), helper, (%r1);
  st.global.u32 [%rd1], %r2;
  ret;
}

.visible .entry exact()
.reqntid 64, 4, 1
{
  ret;
}

.visible .entry plain()
{
  .reg .b32 %r<3>;
  mov.u32 %r1, 1;
  ret;
}
)";

int attribute(CUfunction f, CUfunction_attribute a) {
  int v = -1;
  REQUIRE_CU(cuFuncGetAttribute(&v, a, f));
  return v;
}

}  // namespace

TEST_CASE("function attributes: registers, constant bank, local, shared, limits, versions",
          "[attributes]") {
  primary_context();
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kAttributesPtx));
  CUfunction big = nullptr, exact = nullptr, plain = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&big, module, "big"));
  REQUIRE_CU(cuModuleGetFunction(&exact, module, "exact"));
  REQUIRE_CU(cuModuleGetFunction(&plain, module, "plain"));
  int major = 0, minor = 0;
  REQUIRE_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  REQUIRE_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));

  // NUM_REGS: every register the kernel and what it calls declare, once each: big's 10 + 3 + 4,
  // helper's 5 and its two parameter registers.
  CHECK(attribute(big, CU_FUNC_ATTRIBUTE_NUM_REGS) == 24);
  CHECK(attribute(plain, CU_FUNC_ATTRIBUTE_NUM_REGS) == 3);
  CHECK(attribute(exact, CU_FUNC_ATTRIBUTE_NUM_REGS) == 0);
  // The module's constant bank, the same for every kernel of the module.
  CHECK(attribute(big, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES) == 112);
  CHECK(attribute(plain, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES) == 112);
  // Local memory per thread: the 40-byte depot, in 16-byte units.
  CHECK(attribute(big, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) == 48);
  CHECK(attribute(plain, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) == 0);
  CHECK(attribute(big, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) == 300);
  CHECK(attribute(plain, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) == 0);
  // .maxntid and .reqntid bound the block; otherwise the device limit.
  CHECK(attribute(big, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) == 256);
  CHECK(attribute(exact, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) == 256);
  CHECK(attribute(plain, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) == 1024);
  CHECK(attribute(big, CU_FUNC_ATTRIBUTE_PTX_VERSION) == 83);
  CHECK(attribute(big, CU_FUNC_ATTRIBUTE_BINARY_VERSION) == major * 10 + minor);
  // The static shared memory leaves the rest of the default 48 KiB to dynamic shared memory.
  CHECK(attribute(big, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) == 48 * 1024 - 300);

  int v = 0;
  CHECK(cuFuncGetAttribute(nullptr, CU_FUNC_ATTRIBUTE_NUM_REGS, big) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX, big) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, nullptr) == CUDA_ERROR_INVALID_HANDLE);
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE(
    "function attributes: nvcc kernels report their local depot, static shared memory and bounds",
    "[attributes]") {
  primary_context();
  std::string ptx = read_file(kernel_path("surface.ptx"));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  CUfunction resources = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&resources, module, "resources"));
  // float scratch[32] indexed at run time: a 128-byte __local_depot; tile[1024] + extra[64];
  // __launch_bounds__(256); coefficients[64] + offsets_table[16] in the constant bank.
  CHECK(attribute(resources, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) == 128);
  CHECK(attribute(resources, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) == 4096 + 256);
  CHECK(attribute(resources, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) == 256);
  CHECK(attribute(resources, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES) == 64 * 4 + 16 * 4);
  CHECK(attribute(resources, CU_FUNC_ATTRIBUTE_NUM_REGS) > 0);
  CHECK(attribute(resources, CU_FUNC_ATTRIBUTE_NUM_REGS) <= 255);
  REQUIRE_CU(cuModuleUnload(module));
}

#endif  // CUSNAP_TEST_HAVE_PTX_ENGINE
