// Access tracking (docs/emulator.md, "Access tracking"): the emulator's cusnap export table, and
// per launch the chunks of driver memory a kernel read and wrote, checked against sets computed
// here on the host from what each PTX kernel below does.
#include <cuda.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <set>
#include <vector>

#include "cusnap/common/emulator_access.h"
#include "test_helpers.h"

using namespace cusnap_test;
using cusnap::common::EmulatorAccessTable;
using cusnap::common::EmulatorLaunchAccesses;

namespace {

const char* const kPtx = R"(
.version 8.0
.target sm_80
.address_size 64

.global .align 4 .u32 g[64];
.const .align 4 .u32 c[64] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
  20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33};

// out[i*stride] = in[i*stride] + 1 for i < n (one thread per i)
.visible .entry ld_st(.param .u64 in, .param .u64 out, .param .u32 n, .param .u32 stride)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r2, [stride];
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %ctaid.x;
  mov.u32 %r5, %ntid.x;
  mad.lo.u32 %r3, %r4, %r5, %r3;
  setp.ge.u32 %p1, %r3, %r1;
  @%p1 bra DONE;
  mul.lo.u32 %r6, %r3, %r2;
  mul.wide.u32 %rd3, %r6, 4;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.u32 %r7, [%rd4];
  add.u32 %r7, %r7, 1;
  add.u64 %rd5, %rd2, %rd3;
  st.global.u32 [%rd5], %r7;
DONE:
  ret;
}

// thread t: atom.add at ctr + 512*t, red.add at red + 1024*t
.visible .entry atomics(.param .u64 ctr, .param .u64 red)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [ctr];
  ld.param.u64 %rd2, [red];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 512;
  add.u64 %rd4, %rd1, %rd3;
  atom.global.add.u32 %r2, [%rd4], 1;
  mul.wide.u32 %rd5, %r1, 1024;
  add.u64 %rd6, %rd2, %rd5;
  red.global.add.u32 [%rd6], %r2;
  ret;
}

// thread t: a v4 load of 16 bytes at in + 64*t + 16, a v2 store of 8 bytes at out + 40*t
.visible .entry vector(.param .u64 in, .param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 64;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd4+16];
  add.u32 %r2, %r2, %r3;
  add.u32 %r4, %r4, %r5;
  mul.wide.u32 %rd5, %r1, 40;
  add.u64 %rd6, %rd2, %rd5;
  st.global.v2.u32 [%rd6], {%r2, %r4};
  ret;
}

// g[16] = c[32] (module variables); a generic load of g[48] through cvta
.visible .entry globals(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.const.u32 %r1, [c+128];
  st.global.u32 [g+64], %r1;
  mov.u64 %rd1, g;
  cvta.global.u64 %rd2, %rd1;
  ld.u32 %r2, [%rd2+192];
  ld.param.u64 %rd3, [out];
  st.global.u32 [%rd3], %r2;
  ret;
}

// shared, local and parameter memory, then one store to out[0]: nothing read
.visible .entry private_memory(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .local .align 4 .b8 depot[16];
  .shared .align 4 .u32 s[32];
  mov.u32 %r1, %tid.x;
  st.shared.u32 [s], %r1;
  ld.shared.u32 %r2, [s];
  st.local.u32 [depot], %r2;
  ld.local.u32 %r3, [depot];
  mov.u64 %rd2, s;
  cvta.shared.u64 %rd2, %rd2;
  ld.u32 %r3, [%rd2];
  ld.param.u64 %rd1, [out];
  st.global.u32 [%rd1], %r3;
  ret;
}

// cp.async: 16 bytes from in + 32 into shared, src-size 0 from in + 1024 (reads nothing),
// then the 16 bytes stored to out
.visible .entry copy_async(.param .u64 in, .param .u64 out)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  .shared .align 16 .b8 s[32];
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  cp.async.ca.shared.global [s], [%rd1+32], 16;
  cp.async.ca.shared.global [s+16], [%rd1+1024], 16, 0;
  cp.async.wait_all;
  ld.shared.v4.u32 {%r1, %r2, %r3, %r4}, [s];
  st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};
  ret;
}

// thread t < 4 stores to out + 256*t under a guard predicate; the other lanes issue nothing
.visible .entry predicated(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 256;
  add.u64 %rd3, %rd1, %rd2;
  setp.lt.u32 %p1, %r1, 4;
  @%p1 st.global.u32 [%rd3], %r1;
  ret;
}

.visible .entry nothing()
{
  ret;
}
)";

const EmulatorAccessTable* access_table() {
  CUuuid id;
  std::memcpy(id.bytes, cusnap::common::kEmulatorAccessTableId, sizeof id.bytes);
  const void* table = nullptr;
  REQUIRE_CU(cuGetExportTable(&table, &id));
  REQUIRE(table != nullptr);
  const auto* t = static_cast<const EmulatorAccessTable*>(table);
  REQUIRE(t->size >= sizeof(EmulatorAccessTable));
  return t;
}

using ChunkSet = std::set<uint64_t>;

// The chunks [address, address + size) covers, at `chunk` bytes.
void add_chunks(ChunkSet& set, uint64_t address, uint64_t size, uint64_t chunk) {
  for (uint64_t c = address / chunk * chunk; c < address + size; c += chunk) set.insert(c);
}

struct Taken {
  ChunkSet read, written;
  EmulatorLaunchAccesses raw{};
};

// Launches `f` (grid x block threads) with `params`, synchronizes and takes its sets.
Taken run(const EmulatorAccessTable* t, CUfunction f, unsigned grid, unsigned block,
          void** params) {
  REQUIRE_CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, params, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  Taken r;
  REQUIRE(t->take_last_launch(&r.raw) == CUDA_SUCCESS);
  CHECK(r.raw.status == CUDA_SUCCESS);
  for (size_t i = 0; i < r.raw.read_count; ++i) {
    if (i > 0) CHECK(r.raw.read_chunks[i - 1] < r.raw.read_chunks[i]);
    r.read.insert(r.raw.read_chunks[i]);
  }
  for (size_t i = 0; i < r.raw.written_count; ++i) {
    if (i > 0) CHECK(r.raw.written_chunks[i - 1] < r.raw.written_chunks[i]);
    r.written.insert(r.raw.written_chunks[i]);
  }
  return r;
}

struct Buffer {
  CUdeviceptr ptr = 0;
  explicit Buffer(size_t bytes) {
    REQUIRE_CU(cuMemAlloc(&ptr, bytes));
    REQUIRE_CU(cuMemsetD8(ptr, 0, bytes));
  }
  ~Buffer() { cuMemFree(ptr); }
};

}  // namespace

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE
TEST_CASE("access tracking: the export table and its switch", "[access]") {
  primary_context();
  const EmulatorAccessTable* t = access_table();
  // Another UUID is not a table of the emulator's.
  CUuuid other{};
  const void* none = &other;
  CHECK(cuGetExportTable(&none, &other) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(none == nullptr);
  CHECK(t->enable(3) == CUDA_ERROR_INVALID_VALUE);
  CHECK(t->take_last_launch(nullptr) == CUDA_ERROR_INVALID_VALUE);

  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kPtx));
  CUfunction ld_st = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&ld_st, module, "ld_st"));
  Buffer in(4096), out(4096);
  unsigned n = 4, stride = 1;
  void* params[] = {&in.ptr, &out.ptr, &n, &stride};

  // Off (the default, and after enable(0)): launches are not tracked.
  REQUIRE(t->enable(0) == CUDA_SUCCESS);
  REQUIRE_CU(cuLaunchKernel(ld_st, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  EmulatorLaunchAccesses a{};
  CHECK(t->take_last_launch(&a) == CUDA_ERROR_NOT_FOUND);

  // On: the last completed launch, taken once.
  REQUIRE(t->enable(1024) == CUDA_SUCCESS);
  Taken r = run(t, ld_st, 1, 32, params);
  CHECK(r.raw.chunk_bytes == 1024);
  CHECK(std::string(r.raw.kernel) == "ld_st");
  CHECK(t->take_last_launch(&a) == CUDA_ERROR_NOT_FOUND);
  // Two launches before a take: the later one.
  n = 1;
  REQUIRE_CU(cuLaunchKernel(ld_st, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr));
  stride = 512;
  n = 2;
  Taken second = run(t, ld_st, 1, 32, params);
  ChunkSet want;
  add_chunks(want, in.ptr, 4, 1024);
  add_chunks(want, in.ptr + 2048, 4, 1024);
  CHECK(second.read == want);
  CHECK(second.raw.serial == r.raw.serial + 2);
  REQUIRE(t->enable(0) == CUDA_SUCCESS);
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("the export table says which kernels are order-dependent", "[access][order]") {
  primary_context();
  const EmulatorAccessTable* t = access_table();
  REQUIRE(t->order_dependence != nullptr);
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kPtx));
  CUfunction ld_st = nullptr, atomics = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&ld_st, module, "ld_st"));
  REQUIRE_CU(cuModuleGetFunction(&atomics, module, "atomics"));
  const char* reason = "unchanged";
  // Plain loads and stores: blocks cannot observe each other's order.
  REQUIRE(t->order_dependence(ld_st, &reason) == CUDA_SUCCESS);
  CHECK(reason == nullptr);
  // atom.add whose result feeds the red.add: the value depends on the blocks before it.
  REQUIRE(t->order_dependence(atomics, &reason) == CUDA_SUCCESS);
  REQUIRE(reason != nullptr);
  CHECK(std::string(reason).find("value-returning 'atom.global.add.u32'") != std::string::npos);
  CHECK(std::string(reason).find("at PTX line") != std::string::npos);
  CUkernel kernel = nullptr;  // a library's kernel handle answers too
  CUlibrary library = nullptr;
  REQUIRE_CU(cuLibraryLoadData(&library, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  REQUIRE_CU(cuLibraryGetKernel(&kernel, library, "atomics"));
  reason = nullptr;
  CHECK(t->order_dependence(kernel, &reason) == CUDA_SUCCESS);
  CHECK(reason != nullptr);
  int garbage = 0;
  CHECK(t->order_dependence(&garbage, &reason) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(t->order_dependence(nullptr, &reason) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(t->order_dependence(ld_st, nullptr) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuLibraryUnload(library));
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("access tracking: loads and stores, strided over many blocks", "[access]") {
  primary_context();
  const EmulatorAccessTable* t = access_table();
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kPtx));
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "ld_st"));
  const unsigned n = 1000, stride = 100;  // 400-byte steps: some 256-byte chunks skipped
  const size_t bytes = size_t{n} * stride * 4;
  Buffer in(bytes), out(bytes);
  std::vector<uint32_t> host(bytes / 4);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint32_t>(i * 3);
  REQUIRE_CU(cuMemcpyHtoD(in.ptr, host.data(), bytes));
  unsigned count = n, step = stride;
  void* params[] = {&in.ptr, &out.ptr, &count, &step};
  REQUIRE(t->enable(256) == CUDA_SUCCESS);
  Taken r = run(t, f, (n + 63) / 64, 64, params);
  REQUIRE(t->enable(0) == CUDA_SUCCESS);
  ChunkSet read, written;
  for (unsigned i = 0; i < n; ++i) {
    add_chunks(read, in.ptr + uint64_t{i} * stride * 4, 4, 256);
    add_chunks(written, out.ptr + uint64_t{i} * stride * 4, 4, 256);
  }
  CHECK(r.read == read);
  CHECK(r.written == written);
  CHECK(written.size() < bytes / 256);  // the test means something: chunks were skipped
  // Tracking changes nothing about the results.
  std::vector<uint32_t> result(bytes / 4);
  REQUIRE_CU(cuMemcpyDtoH(result.data(), out.ptr, bytes));
  for (unsigned i = 0; i < n; ++i)
    CHECK(result[size_t{i} * stride] == host[size_t{i} * stride] + 1);
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("access tracking: atomics and reductions read and write", "[access]") {
  primary_context();
  const EmulatorAccessTable* t = access_table();
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kPtx));
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "atomics"));
  Buffer ctr(8192), red(8192);
  void* params[] = {&ctr.ptr, &red.ptr};
  REQUIRE(t->enable(256) == CUDA_SUCCESS);
  Taken r = run(t, f, 1, 4, params);
  REQUIRE(t->enable(0) == CUDA_SUCCESS);
  ChunkSet both;
  for (uint64_t i = 0; i < 4; ++i) {
    add_chunks(both, ctr.ptr + 512 * i, 4, 256);
    add_chunks(both, red.ptr + 1024 * i, 4, 256);
  }
  CHECK(r.read == both);
  CHECK(r.written == both);
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("access tracking: vector accesses cover every chunk they span", "[access]") {
  primary_context();
  const EmulatorAccessTable* t = access_table();
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kPtx));
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "vector"));
  Buffer in(4096), out(4096);
  void* params[] = {&in.ptr, &out.ptr};
  REQUIRE(t->enable(8) == CUDA_SUCCESS);
  Taken r = run(t, f, 1, 32, params);
  REQUIRE(t->enable(0) == CUDA_SUCCESS);
  ChunkSet read, written;
  for (uint64_t i = 0; i < 32; ++i) {
    add_chunks(read, in.ptr + 64 * i + 16, 16, 8);
    add_chunks(written, out.ptr + 40 * i, 8, 8);
  }
  CHECK(read.size() == 64);  // two 8-byte chunks per 16-byte load
  CHECK(r.read == read);
  CHECK(r.written == written);
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("access tracking: module variables and __constant__ reads", "[access]") {
  primary_context();
  const EmulatorAccessTable* t = access_table();
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kPtx));
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "globals"));
  CUdeviceptr g = 0, c = 0;
  size_t size = 0;
  REQUIRE_CU(cuModuleGetGlobal(&g, &size, module, "g"));
  REQUIRE_CU(cuModuleGetGlobal(&c, &size, module, "c"));
  Buffer out(64);
  void* params[] = {&out.ptr};
  REQUIRE(t->enable(16) == CUDA_SUCCESS);
  Taken r = run(t, f, 1, 1, params);
  REQUIRE(t->enable(0) == CUDA_SUCCESS);
  ChunkSet read, written;
  add_chunks(read, c + 128, 4, 16);
  add_chunks(read, g + 192, 4, 16);
  add_chunks(written, g + 64, 4, 16);
  add_chunks(written, out.ptr, 4, 16);
  CHECK(r.read == read);
  CHECK(r.written == written);
  uint32_t v = 0;
  REQUIRE_CU(cuMemcpyDtoH(&v, g + 64, 4));
  CHECK(v == 33);
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE(
    "access tracking: shared, local, parameter memory and predicated-off lanes are not reported",
    "[access]") {
  primary_context();
  const EmulatorAccessTable* t = access_table();
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, kPtx));
  CUfunction priv = nullptr, copy = nullptr, nothing = nullptr, predicated = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&priv, module, "private_memory"));
  REQUIRE_CU(cuModuleGetFunction(&copy, module, "copy_async"));
  REQUIRE_CU(cuModuleGetFunction(&nothing, module, "nothing"));
  REQUIRE_CU(cuModuleGetFunction(&predicated, module, "predicated"));
  Buffer in(4096), out(8192);
  REQUIRE(t->enable(64) == CUDA_SUCCESS);
  {
    void* params[] = {&out.ptr};
    Taken r = run(t, priv, 2, 64, params);
    CHECK(r.read.empty());
    ChunkSet written;
    add_chunks(written, out.ptr, 4, 64);
    CHECK(r.written == written);
  }
  {
    // cp.async reads its global source (not the src-size 0 one); its shared target is not listed.
    void* params[] = {&in.ptr, &out.ptr};
    Taken r = run(t, copy, 1, 1, params);
    ChunkSet read, written;
    add_chunks(read, in.ptr + 32, 16, 64);
    add_chunks(written, out.ptr, 16, 64);
    CHECK(r.read == read);
    CHECK(r.written == written);
  }
  {
    // Lanes whose guard predicate is false access nothing.
    void* params[] = {&out.ptr};
    Taken r = run(t, predicated, 1, 32, params);
    ChunkSet written;
    for (uint64_t i = 0; i < 4; ++i) add_chunks(written, out.ptr + 256 * i, 4, 64);
    CHECK(r.read.empty());
    CHECK(r.written == written);
  }
  {
    // A kernel that touches nothing still completes a tracked launch, with two empty sets.
    Taken r = run(t, nothing, 4, 32, nullptr);
    CHECK(r.read.empty());
    CHECK(r.written.empty());
    CHECK(std::string(r.raw.kernel) == "nothing");
  }
  REQUIRE(t->enable(0) == CUDA_SUCCESS);
  REQUIRE_CU(cuModuleUnload(module));
}
#endif
