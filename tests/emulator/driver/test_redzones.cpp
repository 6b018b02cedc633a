// Redzones: allocations the emulator places itself are never adjacent, so an access one element
// past the end of one is a memcheck error (not a silent write into the next allocation), and the
// message names the allocation it overflowed.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

// `store_at(p, i)`: ((u32*)p)[i] = 0xdead. `store_var(i)`: table[i] = 0xdead, where `table` is a
// module variable of 4 words.
const char* kStorePtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .global .align 4 .u32 table[4];
.visible .entry store_at(.param .u64 p, .param .u32 i)
{
  .reg .b64 %rd<4>;
  .reg .b32 %r<3>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [i];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r2, 0xdead;
  st.global.u32 [%rd3], %r2;
  ret;
}
.visible .entry store_var(.param .u32 i)
{
  .reg .b64 %rd<4>;
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [i];
  mov.u64 %rd1, table;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r2, 0xdead;
  st.global.u32 [%rd3], %r2;
  ret;
}
)";

// Collects what the emulator writes to stderr (fd 2) while alive.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    REQUIRE(file_ != nullptr);
    saved_ = dup(2);
    REQUIRE(dup2(fileno(file_), 2) >= 0);
  }
  ~StderrCapture() { restore(); }
  std::string text() {
    restore();
    std::string out;
    std::rewind(file_);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) out.append(buf, n);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Launches store_at(p, i) in a fresh context; returns the launch's outcome and its stderr.
std::pair<CUresult, std::string> store_at(CUfunction f, CUdeviceptr p, unsigned i) {
  void* params[] = {&p, &i};
  StderrCapture capture;
  CUresult r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  return {r, capture.text()};
}

}  // namespace

TEST_CASE("a store one element past a 16 KiB allocation is reported against that allocation",
          "[memory][redzone]") {
  primary_context();
  constexpr size_t kBytes = 16 * 1024;
  CUdeviceptr a = 0, b = 0;
  REQUIRE_CU(cuMemAlloc(&a, kBytes));
  REQUIRE_CU(cuMemAlloc(&b, kBytes));
  CUcontext ctx = nullptr;  // the launch poisons this one, not the primary context
  REQUIRE_CU(cuCtxCreate(&ctx, nullptr, 0, 0));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kStorePtx));
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "store_at"));
  CHECK(a % 256 == 0);
  CHECK(b % 256 == 0);
  // The one at the lower address is the one whose end faces the other.
  const CUdeviceptr low = std::min(a, b), high = std::max(a, b);
  INFO("allocations at " << hex(low) << " and " << hex(high));
  CHECK(high >= low + kBytes + 256);  // never back to back: at least the default redzone between

  // The last element is fine; the next one is an illegal address naming `low`.
  REQUIRE(store_at(f, low, 4095).first == CUDA_SUCCESS);
  auto [result, message] = store_at(f, low, 4096);
  INFO(message);
  CHECK(result == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(message.find("illegal address") != std::string::npos);
  CHECK(message.find("0 bytes past the end of the 16384-byte device allocation at " + hex(low)) !=
        std::string::npos);
  CHECK(message.find("offset 16384") != std::string::npos);
  // Nothing was written into the neighbour.
  std::vector<uint32_t> neighbour(kBytes / 4, 1);
  REQUIRE_CU(cuCtxDestroy(ctx));
  REQUIRE_CU(cuMemcpyDtoH(neighbour.data(), high, kBytes));
  CHECK(neighbour == std::vector<uint32_t>(kBytes / 4, 0));
  REQUIRE_CU(cuMemFree(a));
  REQUIRE_CU(cuMemFree(b));
}

TEST_CASE("overflows of pitched, pinned and module memory name their allocation",
          "[memory][redzone]") {
  primary_context();
  CUcontext ctx = nullptr;
  REQUIRE_CU(cuCtxCreate(&ctx, nullptr, 0, 0));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kStorePtx));
  CUfunction f = nullptr, fv = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "store_at"));
  REQUIRE_CU(cuModuleGetFunction(&fv, module, "store_var"));

  SECTION("cuMemAllocHost, 40 bytes past the end") {
    void* pinned = nullptr;
    REQUIRE_CU(cuMemAllocHost(&pinned, 1000));  // 250 words
    const auto base = reinterpret_cast<CUdeviceptr>(pinned);
    auto [result, message] = store_at(f, base, 260);
    INFO(message);
    CHECK(result == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(message.find("40 bytes past the end of the 1000-byte pinned host allocation at " +
                       hex(base)) != std::string::npos);
    REQUIRE_CU(cuCtxDestroy(ctx));
    REQUIRE_CU(cuMemFreeHost(pinned));
  }
  SECTION("cuMemAllocPitch, the first element after the last row") {
    CUdeviceptr p = 0;
    size_t pitch = 0;
    REQUIRE_CU(cuMemAllocPitch(&p, &pitch, 100, 3, 4));
    auto [result, message] = store_at(f, p, static_cast<unsigned>(pitch * 3 / 4));
    INFO(message);
    CHECK(result == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(message.find("0 bytes past the end of the " + std::to_string(pitch * 3) +
                       "-byte device allocation at " + hex(p)) != std::string::npos);
    REQUIRE_CU(cuCtxDestroy(ctx));
    REQUIRE_CU(cuMemFree(p));
  }
  SECTION("a module variable, one element past") {
    CUdeviceptr table = 0;
    size_t bytes = 0;
    REQUIRE_CU(cuModuleGetGlobal(&table, &bytes, module, "table"));
    REQUIRE(bytes == 16);
    unsigned i = 4;
    void* params[] = {&i};
    std::string message;
    CUresult result;
    {
      StderrCapture capture;
      result = cuLaunchKernel(fv, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
      if (result == CUDA_SUCCESS) result = cuCtxSynchronize();
      message = capture.text();
    }
    INFO(message);
    CHECK(result == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(message.find("0 bytes past the end of the 16-byte module variable table at " +
                       hex(table)) != std::string::npos);
    REQUIRE_CU(cuCtxDestroy(ctx));
  }
  SECTION("an underflow is reported before the allocation") {
    CUdeviceptr d = 0;
    REQUIRE_CU(cuMemAlloc(&d, 4096));
    auto [result, message] = store_at(f, d - 8, 0);
    INFO(message);
    CHECK(result == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(message.find("8 bytes before the start of the 4096-byte device allocation at " +
                       hex(d)) != std::string::npos);
    REQUIRE_CU(cuCtxDestroy(ctx));
    REQUIRE_CU(cuMemFree(d));
  }
}

#endif
