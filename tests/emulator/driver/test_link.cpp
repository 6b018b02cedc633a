// The driver linker (cuLink*) over PTX, host objects and static libraries: `.extern` functions
// and variables resolved across modules, private names kept apart, link errors named, and the
// linked image loaded and run against host results.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

// Module A: kernel k(out) stores scale(t) + bias + table[0] for every thread t, where `scale`
// and `bias` are B's and `table` is A's own (B has a `table` of its own too).
const char* kUserPtx = R"(.version 8.0
.target sm_75
.address_size 64
.extern .func (.param .b32 r) scale(.param .b32 x);
.extern .global .align 4 .u32 bias;
.global .align 4 .u32 table[2] = {7, 8};
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  {
    .param .b32 x;
    .param .b32 r;
    st.param.b32 [x], %r1;
    call.uni (r), scale, (x);
    ld.param.b32 %r2, [r];
  }
  ld.global.u32 %r3, [bias];
  ld.global.u32 %r4, [table];
  add.u32 %r5, %r2, %r3;
  add.u32 %r6, %r5, %r4;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r6;
  ret;
}
)";

// Module B: scale(x) = 3x + table[1] with B's table {20, 30}; bias = 100.
const char* kProviderPtx = R"(.version 8.3
.target sm_80
.address_size 64
.global .align 4 .u32 table[2] = {20, 30};
.visible .global .align 4 .u32 bias = 100;
.visible .func (.param .b32 r) scale(.param .b32 x)
{
  .reg .b32 %q<5>;
  ld.param.b32 %q1, [x];
  mul.lo.u32 %q2, %q1, 3;
  ld.global.u32 %q3, [table+4];
  add.u32 %q4, %q2, %q3;
  st.param.b32 [r], %q4;
  ret;
}
)";

// A weak scale() that a strong definition overrides: it would give 0.
const char* kWeakPtx = R"(.version 8.0
.target sm_75
.address_size 64
.weak .func (.param .b32 r) scale(.param .b32 x)
{
  .reg .b32 %w<2>;
  mov.u32 %w1, 0;
  st.param.b32 [r], %w1;
  ret;
}
)";

struct Logs {
  char error[4096] = {};
  char info[1024] = {};
  CUjit_option options[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                             CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[4] = {error, reinterpret_cast<void*>(sizeof error), info,
                     reinterpret_cast<void*>(sizeof info)};
};

CUresult add_ptx(CUlinkState state, const char* ptx, const char* name) {
  return cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(ptx), std::strlen(ptx) + 1, name,
                       0, nullptr, nullptr);
}

// Runs kernel `name` of `image` on `threads` threads; returns out[].
std::vector<unsigned> run(const void* image, const char* name, unsigned threads, int verbose = -1) {
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, image));
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, name));
  CUdeviceptr out = 0;
  REQUIRE_CU(cuMemAlloc(&out, threads * sizeof(unsigned)));
  REQUIRE_CU(cuMemsetD32(out, 0, threads));
  void* with_flag[] = {&out, &verbose};
  void* without[] = {&out};
  REQUIRE_CU(cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, 0, nullptr,
                            verbose >= 0 ? with_flag : without, nullptr));
  std::vector<unsigned> result(threads);
  REQUIRE_CU(cuMemcpyDtoH(result.data(), out, threads * sizeof(unsigned)));
  REQUIRE_CU(cuMemFree(out));
  REQUIRE_CU(cuModuleUnload(module));
  return result;
}

}  // namespace

TEST_CASE("linker: .extern functions and variables resolve across PTX modules, in either order",
          "[link]") {
  primary_context();
  for (int order = 0; order < 2; ++order) {
    INFO("order " << order);
    Logs logs;
    CUlinkState state = nullptr;
    REQUIRE_CU(cuLinkCreate(4, logs.options, logs.values, &state));
    if (order == 0) {
      REQUIRE_CU(add_ptx(state, kUserPtx, "user.ptx"));
      REQUIRE_CU(add_ptx(state, kProviderPtx, "provider.ptx"));
    } else {
      REQUIRE_CU(add_ptx(state, kProviderPtx, "provider.ptx"));
      REQUIRE_CU(add_ptx(state, kUserPtx, "user.ptx"));
    }
    void* image = nullptr;
    size_t size = 0;
    REQUIRE_CU(cuLinkComplete(state, &image, &size));
    INFO(static_cast<const char*>(image));
    CHECK(size == std::strlen(static_cast<const char*>(image)) + 1);
    CHECK(std::string(logs.error).empty());
    CHECK(std::string(logs.info).find("linked 2 inputs") != std::string::npos);
    // Each module keeps its own `table`: A's first element (7), B's second (30).
    const std::vector<unsigned> out = run(image, "k", 64);
    for (unsigned t = 0; t < 64; ++t) {
      INFO("thread " << t);
      REQUIRE(out[t] == 3 * t + 30 + 100 + 7);
    }
    // The linked module's visible variable is B's definition.
    CUmodule module = nullptr;
    REQUIRE_CU(cuModuleLoadData(&module, image));
    CUdeviceptr bias = 0;
    size_t bytes = 0;
    REQUIRE_CU(cuModuleGetGlobal(&bias, &bytes, module, "bias"));
    unsigned value = 0;
    REQUIRE_CU(cuMemcpyDtoH(&value, bias, sizeof value));
    CHECK(value == 100);
    REQUIRE_CU(cuModuleUnload(module));
    REQUIRE_CU(cuLinkDestroy(state));
  }
}

TEST_CASE("linker: a strong definition overrides a weak one", "[link]") {
  primary_context();
  for (int weak_first = 0; weak_first < 2; ++weak_first) {
    INFO("weak first " << weak_first);
    CUlinkState state = nullptr;
    REQUIRE_CU(cuLinkCreate(0, nullptr, nullptr, &state));
    REQUIRE_CU(add_ptx(state, kUserPtx, "user.ptx"));
    if (weak_first) REQUIRE_CU(add_ptx(state, kWeakPtx, "weak.ptx"));
    REQUIRE_CU(add_ptx(state, kProviderPtx, "provider.ptx"));
    if (!weak_first) REQUIRE_CU(add_ptx(state, kWeakPtx, "weak.ptx"));
    void* image = nullptr;
    size_t size = 0;
    REQUIRE_CU(cuLinkComplete(state, &image, &size));
    INFO(static_cast<const char*>(image));
    CHECK(run(image, "k", 4) == std::vector<unsigned>{137, 140, 143, 146});
    REQUIRE_CU(cuLinkDestroy(state));
  }
  // Weak alone: it is the definition.
  CUlinkState state = nullptr;
  REQUIRE_CU(cuLinkCreate(0, nullptr, nullptr, &state));
  REQUIRE_CU(add_ptx(state, kWeakPtx, "weak.ptx"));
  REQUIRE_CU(add_ptx(state, kUserPtx, "user.ptx"));
  const char* bias_ptx =
      ".version 8.0\n.target sm_75\n.address_size 64\n.visible .global .align 4 .u32 bias = 1;\n";
  REQUIRE_CU(add_ptx(state, bias_ptx, "bias.ptx"));
  void* image = nullptr;
  size_t size = 0;
  REQUIRE_CU(cuLinkComplete(state, &image, &size));
  CHECK(run(image, "k", 2) == std::vector<unsigned>{8, 8});
  REQUIRE_CU(cuLinkDestroy(state));
}

TEST_CASE("linker: undefined and multiply defined symbols fail cuLinkComplete, naming them",
          "[link]") {
  primary_context();
  {
    Logs logs;
    CUlinkState state = nullptr;
    REQUIRE_CU(cuLinkCreate(4, logs.options, logs.values, &state));
    REQUIRE_CU(add_ptx(state, kUserPtx, "user.ptx"));
    void* image = nullptr;
    size_t size = 0;
    CHECK(cuLinkComplete(state, &image, &size) == CUDA_ERROR_INVALID_IMAGE);
    const std::string log = logs.error;
    INFO(log);
    CHECK(log.find("undefined reference to 'scale' in 'user.ptx'") != std::string::npos);
    CHECK(log.find("undefined reference to 'bias' in 'user.ptx'") != std::string::npos);
    CHECK(reinterpret_cast<uintptr_t>(logs.values[1]) == log.size());
    REQUIRE_CU(cuLinkDestroy(state));
  }
  {
    Logs logs;
    CUlinkState state = nullptr;
    REQUIRE_CU(cuLinkCreate(4, logs.options, logs.values, &state));
    REQUIRE_CU(add_ptx(state, kUserPtx, "user.ptx"));
    REQUIRE_CU(add_ptx(state, kProviderPtx, "one.ptx"));
    REQUIRE_CU(add_ptx(state, kProviderPtx, "two.ptx"));
    void* image = nullptr;
    size_t size = 0;
    CHECK(cuLinkComplete(state, &image, &size) == CUDA_ERROR_INVALID_IMAGE);
    INFO(logs.error);
    CHECK(
        std::string(logs.error).find("multiple definitions of 'bias' in 'one.ptx' and 'two.ptx'") !=
        std::string::npos);
    CHECK(std::string(logs.error)
              .find("multiple definitions of 'scale' in 'one.ptx' and 'two.ptx'") !=
          std::string::npos);
    REQUIRE_CU(cuLinkDestroy(state));
  }
  {
    // The same kernel in two inputs, and a variable that another input calls as a function.
    Logs logs;
    CUlinkState state = nullptr;
    REQUIRE_CU(cuLinkCreate(4, logs.options, logs.values, &state));
    REQUIRE_CU(add_ptx(state, kUserPtx, "first.ptx"));
    REQUIRE_CU(add_ptx(state, kUserPtx, "second.ptx"));
    const char* clash =
        ".version 8.0\n.target sm_75\n.address_size 64\n.visible .global .u32 scale;\n";
    REQUIRE_CU(add_ptx(state, clash, "clash.ptx"));
    void* image = nullptr;
    size_t size = 0;
    CHECK(cuLinkComplete(state, &image, &size) == CUDA_ERROR_INVALID_IMAGE);
    INFO(logs.error);
    CHECK(std::string(logs.error).find("kernel 'k' is defined in 'first.ptx' and 'second.ptx'") !=
          std::string::npos);
    CHECK(
        std::string(logs.error)
            .find(
                "'scale' is a function in 'first.ptx' but a variable in .global in 'clash.ptx'") !=
        std::string::npos);
    REQUIRE_CU(cuLinkDestroy(state));
  }
}

namespace {

// Two modules with the same private names: a dynamic shared array `dyn`, a table, a pointer to
// it in an initializer and a function `bump` (x + `step`). Kernel <name>(out) stores
// *ptr + bump(thread index) through `dyn`.
std::string private_module(const char* kernel, unsigned value, unsigned step) {
  return std::string(
             ".version 8.0\n.target sm_75\n.address_size 64\n"
             ".extern .shared .align 4 .b8 dyn[];\n"
             ".global .align 4 .u32 table[1] = {") +
         std::to_string(value) + "};\n" +
         ".global .align 8 .u64 ptr = generic(table);\n"
         ".func (.param .b32 r) bump(.param .b32 x)\n{\n  .reg .b32 %b<3>;\n  ld.param.b32 %b1, "
         "[x];\n"
         "  add.u32 %b2, %b1, " +
         std::to_string(step) +
         ";\n  st.param.b32 [r], %b2;\n  ret;\n}\n"
         ".visible .entry " +
         kernel + R"((.param .u64 out)
{
  .reg .b32 %r<7>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  ld.global.u64 %rd2, [ptr];
  ld.u32 %r2, [%rd2];
  {
    .param .b32 x;
    .param .b32 r;
    st.param.b32 [x], %r1;
    call.uni (r), bump, (x);
    ld.param.b32 %r5, [r];
  }
  add.u32 %r3, %r2, %r5;
  mov.u64 %rd3, dyn;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  st.shared.u32 [%rd5], %r3;
  bar.sync 0;
  ld.shared.u32 %r4, [%rd5];
  add.s64 %rd6, %rd1, %rd4;
  st.global.u32 [%rd6], %r4;
  ret;
}
)";
}

}  // namespace

TEST_CASE("linker: private names, incl. dynamic shared arrays and initializers, stay private",
          "[link]") {
  primary_context();
  const std::string first = private_module("first", 1000, 1),
                    second = private_module("second", 2000, 2);
  CUlinkState state = nullptr;
  REQUIRE_CU(cuLinkCreate(0, nullptr, nullptr, &state));
  REQUIRE_CU(add_ptx(state, first.c_str(), "first.ptx"));
  REQUIRE_CU(add_ptx(state, second.c_str(), "second.ptx"));
  void* image = nullptr;
  size_t size = 0;
  REQUIRE_CU(cuLinkComplete(state, &image, &size));
  INFO(static_cast<const char*>(image));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, image));
  for (const auto& [name, base] :
       {std::pair<const char*, unsigned>{"first", 1001}, {"second", 2002}}) {
    CUfunction f = nullptr;
    REQUIRE_CU(cuModuleGetFunction(&f, module, name));
    CUdeviceptr out = 0;
    REQUIRE_CU(cuMemAlloc(&out, 32 * sizeof(unsigned)));
    void* params[] = {&out};
    REQUIRE_CU(
        cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 32 * sizeof(unsigned), nullptr, params, nullptr));
    std::vector<unsigned> result(32);
    REQUIRE_CU(cuMemcpyDtoH(result.data(), out, sizeof(unsigned) * 32));
    for (unsigned t = 0; t < 32; ++t) {
      INFO(name << " thread " << t);
      REQUIRE(result[t] == base + t);
    }
    REQUIRE_CU(cuMemFree(out));
  }
  REQUIRE_CU(cuModuleUnload(module));
  REQUIRE_CU(cuLinkDestroy(state));
}

TEST_CASE("linker: nvcc relocatable PTX, host objects and static libraries", "[link]") {
  primary_context();
  // link_a + link_b: out[t] = 3t + (0 ^ 2) + 100 + (0 ^ 1), each module with its own `twist`.
  auto expected = [](unsigned t) { return 3 * t + 2 + 100 + 1; };
  auto check = [&](CUlinkState state) {
    void* image = nullptr;
    size_t size = 0;
    REQUIRE_CU(cuLinkComplete(state, &image, &size));
    const std::vector<unsigned> out = run(image, "linked_kernel", 32, 0);
    for (unsigned t = 0; t < 32; ++t) {
      INFO("thread " << t);
      REQUIRE(out[t] == expected(t));
    }
    REQUIRE_CU(cuLinkDestroy(state));
  };
  SECTION("PTX files") {
    CUlinkState state = nullptr;
    REQUIRE_CU(cuLinkCreate(0, nullptr, nullptr, &state));
    REQUIRE_CU(cuLinkAddFile(state, CU_JIT_INPUT_PTX, kernel_path("link_a.ptx").c_str(), 0, nullptr,
                             nullptr));
    REQUIRE_CU(cuLinkAddFile(state, CU_JIT_INPUT_PTX, kernel_path("link_b.ptx").c_str(), 0, nullptr,
                             nullptr));
    check(state);
  }
  SECTION("host objects") {
    CUlinkState state = nullptr;
    REQUIRE_CU(cuLinkCreate(0, nullptr, nullptr, &state));
    REQUIRE_CU(cuLinkAddFile(state, CU_JIT_INPUT_OBJECT, kernel_path("link_b.o").c_str(), 0,
                             nullptr, nullptr));
    std::string object = read_file(kernel_path("link_a.o"));
    REQUIRE_CU(cuLinkAddData(state, CU_JIT_INPUT_OBJECT, object.data(), object.size(), "link_a.o",
                             0, nullptr, nullptr));
    check(state);
  }
  SECTION("an object and a static library") {
    CUlinkState state = nullptr;
    REQUIRE_CU(cuLinkCreate(0, nullptr, nullptr, &state));
    REQUIRE_CU(cuLinkAddFile(state, CU_JIT_INPUT_OBJECT, kernel_path("link_a.o").c_str(), 0,
                             nullptr, nullptr));
    REQUIRE_CU(cuLinkAddFile(state, CU_JIT_INPUT_LIBRARY, kernel_path("liblink_b.a").c_str(), 0,
                             nullptr, nullptr));
    check(state);
  }
  SECTION("a whole static library loaded from its file") {
    CUmodule module = nullptr;
    REQUIRE_CU(cuModuleLoad(&module, kernel_path("liblink_ab.a").c_str()));
    CUfunction f = nullptr;
    REQUIRE_CU(cuModuleGetFunction(&f, module, "linked_kernel"));
    REQUIRE_CU(cuModuleUnload(module));
    CUlibrary library = nullptr;
    REQUIRE_CU(cuLibraryLoadFromFile(&library, kernel_path("liblink_ab.a").c_str(), nullptr,
                                     nullptr, 0, nullptr, nullptr, 0));
    CUkernel kernel = nullptr;
    REQUIRE_CU(cuLibraryGetKernel(&kernel, library, "linked_kernel"));
    REQUIRE_CU(cuLibraryUnload(library));
  }
}

TEST_CASE(
    "linker: archives are recognised as archives, and what cannot be linked is refused by name",
    "[link]") {
  primary_context();
  // An archive image has no size: recognised and refused, not parsed as PTX.
  std::string archive = read_file(kernel_path("liblink_b.a"));
  CUmodule module = nullptr;
  char error[1024] = {};
  CUjit_option options[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[2] = {error, reinterpret_cast<void*>(sizeof error)};
  CHECK(cuModuleLoadDataEx(&module, archive.data(), 2, options, values) ==
        CUDA_ERROR_INVALID_IMAGE);
  CHECK(std::string(error).find("ar archive") != std::string::npos);

  // A member that is neither PTX, a fatbin nor an object with device code.
  std::string junk = "!<arch>\n";
  char header[61];
  std::snprintf(header, sizeof header, "%-16s%-12s%-6s%-6s%-8s%-10s`\n", "notes.txt/", "0", "0",
                "0", "644", "5");
  junk += header;
  junk += "hello\n";  // 5 bytes and the padding byte
  Logs logs;
  CUlinkState state = nullptr;
  REQUIRE_CU(cuLinkCreate(4, logs.options, logs.values, &state));
  CHECK(cuLinkAddData(state, CU_JIT_INPUT_LIBRARY, junk.data(), junk.size(), "libjunk.a", 0,
                      nullptr, nullptr) == CUDA_ERROR_INVALID_IMAGE);
  CHECK(std::string(logs.error).find("member 'libjunk.a(notes.txt)'") != std::string::npos);

  // Input kinds the emulator cannot link.
  std::string sass = read_file(kernel_path("vector_sass.fatbin"));
  CHECK(cuLinkAddData(state, CU_JIT_INPUT_FATBINARY, sass.data(), sass.size(), "sass.fatbin", 0,
                      nullptr, nullptr) == CUDA_ERROR_NO_BINARY_FOR_GPU);
  CHECK(cuLinkAddData(state, CU_JIT_INPUT_CUBIN, sass.data(), sass.size(), "x.cubin", 0, nullptr,
                      nullptr) == CUDA_ERROR_NO_BINARY_FOR_GPU);
  CHECK(cuLinkAddData(state, CU_JIT_INPUT_NVVM, sass.data(), sass.size(), "x.ltoir", 0, nullptr,
                      nullptr) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(cuLinkAddData(state, CU_JIT_INPUT_OBJECT, const_cast<char*>(kUserPtx),
                      std::strlen(kUserPtx), "x.o", 0, nullptr,
                      nullptr) == CUDA_ERROR_INVALID_IMAGE);
  CHECK(cuLinkAddData(state, CU_JIT_INPUT_PTX, nullptr, 10, "null", 0, nullptr, nullptr) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuLinkAddFile(state, CU_JIT_INPUT_PTX, "/nonexistent/x.ptx", 0, nullptr, nullptr) ==
        CUDA_ERROR_FILE_NOT_FOUND);

  // A fatbin with PTX links; nothing may be added once complete.
  std::string fatbin = read_file(kernel_path("vector_default.fatbin"));
  REQUIRE_CU(cuLinkAddData(state, CU_JIT_INPUT_FATBINARY, fatbin.data(), fatbin.size(),
                           "vector.fatbin", 0, nullptr, nullptr));
  void* image = nullptr;
  size_t size = 0;
  REQUIRE_CU(cuLinkComplete(state, &image, &size));
  REQUIRE_CU(cuModuleLoadData(&module, image));
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "vector_add"));
  REQUIRE_CU(cuModuleUnload(module));
  CHECK(add_ptx(state, kUserPtx, "late.ptx") == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuLinkDestroy(state));
  CHECK(cuLinkComplete(state, &image, &size) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuLinkDestroy(state) == CUDA_ERROR_INVALID_HANDLE);

  // Argument checks.
  CHECK(cuLinkCreate(0, nullptr, nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuLinkCreate(2, nullptr, nullptr, &state) == CUDA_ERROR_INVALID_VALUE);
  CUcontext current = nullptr;
  REQUIRE_CU(cuCtxPopCurrent(&current));
  CHECK(cuLinkCreate(0, nullptr, nullptr, &state) == CUDA_ERROR_INVALID_CONTEXT);
  REQUIRE_CU(cuCtxPushCurrent(current));
}

#endif  // CUSNAP_TEST_HAVE_PTX_ENGINE
