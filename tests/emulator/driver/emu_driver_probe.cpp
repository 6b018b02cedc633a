// A driver-API program run by driver_probe.cmake under different environment variables
// (CUSNAP_EMU_THREADS, CUSNAP_EMU_TIMEOUT, CUSNAP_EMU_REDZONE), which the emulator reads once per
// process. Modes:
//   order <order.ptx>   runs kernels whose results depend on block order, checks that each result
//                       is a valid outcome and prints one digest line per kernel, then a kernel's
//                       device printf output (stdout)
//   timeout             a kernel that never ends must fail with CUDA_ERROR_LAUNCH_TIMEOUT (sticky)
//   spin                block 0 waits for block 1 (serialised): LAUNCH_TIMEOUT, never a hang
//   finite <n>          a long but finite loop must succeed with the right result
//   redzone <bytes>     allocations must be at least <bytes> apart after their end
//   attribute           prints CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT
//   inject              busy(out, 100) on 32 threads: prints "wrong N first T xor X" (the
//                       elements that differ from the host's values) and "elapsed_ns E" (event
//                       time), for CUSNAP_EMU_INJECT; a failing cuInit prints "cuInit R"
// Exit status 0 when the emulator behaved as expected; the failing check is printed on stderr.
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
#include <vector>

#include "test_kernels.h"

namespace {

int fail(const char* what, CUresult r = CUDA_SUCCESS) {
  std::fprintf(stderr, "probe: %s (CUresult %d)\n", what, static_cast<int>(r));
  return 1;
}

#define PROBE_CHECK(call)                                     \
  do {                                                        \
    CUresult probe_r = (call);                                \
    if (probe_r != CUDA_SUCCESS) return fail(#call, probe_r); \
  } while (0)

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

template <class T>
std::vector<T> download(CUdeviceptr d, size_t n) {
  std::vector<T> v(n);
  if (cuMemcpyDtoH(v.data(), d, n * sizeof(T)) != CUDA_SUCCESS) v.clear();
  return v;
}

CUdeviceptr zeros(size_t bytes) {
  CUdeviceptr d = 0;
  if (cuMemAlloc(&d, bytes) != CUDA_SUCCESS || cuMemsetD8(d, 0, bytes) != CUDA_SUCCESS) return 0;
  return d;
}

int order(const char* ptx_path) {
  std::ifstream in(ptx_path, std::ios::binary);
  std::string ptx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (ptx.empty()) return fail("cannot read the PTX");
  CUmodule m = nullptr;
  PROBE_CHECK(cuModuleLoadData(&m, ptx.c_str()));
  CUfunction tickets, exchange, cas_push, float_sum, count_parallel, coop_tickets;
  PROBE_CHECK(cuModuleGetFunction(&tickets, m, "tickets"));
  PROBE_CHECK(cuModuleGetFunction(&exchange, m, "exchange"));
  PROBE_CHECK(cuModuleGetFunction(&cas_push, m, "cas_push"));
  PROBE_CHECK(cuModuleGetFunction(&float_sum, m, "float_sum"));
  PROBE_CHECK(cuModuleGetFunction(&count_parallel, m, "count_parallel"));
  PROBE_CHECK(cuModuleGetFunction(&coop_tickets, m, "coop_tickets"));
  const unsigned blocks = 256, threads = 64, n = blocks * threads;

  {  // atomicInc tickets: a permutation of 0..n-1
    CUdeviceptr counter = zeros(4), out = zeros(n * 4);
    void* args[] = {&counter, &out};
    PROBE_CHECK(cuLaunchKernel(tickets, blocks, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr));
    auto v = download<unsigned>(out, n);
    auto sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (unsigned i = 0; i < n; ++i)
      if (sorted.size() != n || sorted[i] != i) return fail("tickets are not a permutation");
    std::printf("tickets %016llx\n", static_cast<unsigned long long>(fnv1a(v.data(), n * 4)));
  }
  {  // atomicExch: every value 0..n appears once among the results and the final slot
    CUdeviceptr slot = zeros(4), out = zeros(n * 4);
    void* args[] = {&slot, &out};
    PROBE_CHECK(cuLaunchKernel(exchange, blocks, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr));
    auto v = download<unsigned>(out, n);
    auto last = download<unsigned>(slot, 1);
    if (last.size() != 1) return fail("cannot read the slot");
    v.push_back(last[0]);
    auto sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (unsigned i = 0; i <= n; ++i)
      if (sorted[i] != i) return fail("exchanged values are not a permutation");
    std::printf("exchange %016llx\n",
                static_cast<unsigned long long>(fnv1a(v.data(), v.size() * 4)));
  }
  {  // atomicCAS list push: following next[] from head visits every node once
    CUdeviceptr head = zeros(4), next = zeros(n * 4);
    void* args[] = {&head, &next};
    PROBE_CHECK(cuLaunchKernel(cas_push, blocks, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr));
    auto v = download<unsigned>(next, n);
    auto h = download<unsigned>(head, 1);
    if (h.size() != 1) return fail("cannot read the head");
    std::vector<char> seen(n + 1, 0);
    unsigned steps = 0;
    for (unsigned node = h[0]; node != 0; node = v[node - 1]) {
      if (node > n || seen[node] || ++steps > n) return fail("the CAS list is not one chain");
      seen[node] = 1;
    }
    if (steps != n) return fail("the CAS list lost nodes");
    v.push_back(h[0]);
    std::printf("cas_push %016llx\n",
                static_cast<unsigned long long>(fnv1a(v.data(), v.size() * 4)));
  }
  {  // float atomicAdd: close to the exact sum, bits depend on the order of the adds
    std::vector<float> values(n);
    double exact = 0;
    for (unsigned i = 0; i < n; ++i) {
      values[i] = (i % 5 == 0 ? 3.0e5f : 0.7f) * (1.0f + static_cast<float>(i % 11) * 0.173f);
      exact += values[i];
    }
    CUdeviceptr dv = zeros(n * 4), sum = zeros(4);
    PROBE_CHECK(cuMemcpyHtoD(dv, values.data(), n * 4));
    int count = static_cast<int>(n);
    void* args[] = {&dv, &sum, &count};
    PROBE_CHECK(cuLaunchKernel(float_sum, blocks, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr));
    auto s = download<float>(sum, 1);
    if (s.size() != 1 || std::fabs(s[0] - exact) > exact * 1e-3)
      return fail("the float sum is wrong");
    uint32_t bits;
    std::memcpy(&bits, &s[0], 4);
    std::printf("float_sum %08x\n", bits);
  }
  {  // commutative integer counting
    CUdeviceptr count = zeros(4);
    int limit = static_cast<int>(n) - 5;
    void* args[] = {&count, &limit};
    PROBE_CHECK(
        cuLaunchKernel(count_parallel, blocks, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr));
    auto c = download<unsigned>(count, 1);
    if (c.size() != 1 || c[0] != n - 5) return fail("the count is wrong");
    std::printf("count_parallel %u\n", c[0]);
  }
  {  // cooperative: tickets, grid barrier, everyone sees the total
    const unsigned cb = 8, ct = 64, cn = cb * ct;
    CUdeviceptr counter = zeros(4), out = zeros(cn * 4), total = zeros(cn * 4);
    void* args[] = {&counter, &out, &total};
    PROBE_CHECK(cuLaunchCooperativeKernel(coop_tickets, cb, 1, 1, ct, 1, 1, 0, nullptr, args));
    auto v = download<unsigned>(out, cn);
    auto t = download<unsigned>(total, cn);
    auto sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (unsigned i = 0; i < cn; ++i) {
      if (sorted.size() != cn || sorted[i] != i)
        return fail("cooperative tickets are not a permutation");
      if (t.size() != cn || t[i] != cn)
        return fail("a thread passed the grid barrier before every ticket");
    }
    std::printf("coop_tickets %016llx\n", static_cast<unsigned long long>(fnv1a(v.data(), cn * 4)));
  }
  {  // printf from a parallel kernel (written to stdout when the launch ends)
    CUfunction hello;
    PROBE_CHECK(cuModuleGetFunction(&hello, m, "hello"));
    std::fflush(stdout);
    CUdeviceptr sink = zeros(4);
    void* args[] = {&sink};
    PROBE_CHECK(cuLaunchKernel(hello, 64, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
    PROBE_CHECK(cuCtxSynchronize());
  }
  PROBE_CHECK(cuCtxSynchronize());
  return 0;
}

const char* kForeverPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry forever(.param .u64 out)
{
  .reg .b32 %r<2>;
  mov.u32 %r1, 0;
SPIN:
  add.u32 %r1, %r1, 1;
  bra.uni SPIN;
}
)";

// Block 1 sets a flag that block 0 waits for. The ordered load makes the kernel serialised
// (blocks in index order), so block 0 waits for a block that can only run after it.
const char* kSpinPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry spin(.param .u64 flag)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<3>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [flag];
  mov.u32 %r1, %ctaid.x;
  setp.eq.u32 %p1, %r1, 1;
  @%p1 bra SET;
WAIT:
  ld.volatile.global.u32 %r2, [%rd1];
  setp.eq.u32 %p2, %r2, 0;
  @%p2 bra WAIT;
  ret;
SET:
  st.volatile.global.u32 [%rd1], 1;
  ret;
}
)";

int expect_timeout(const char* ptx, const char* name, unsigned grid) {
  CUmodule m = nullptr;
  PROBE_CHECK(cuModuleLoadData(&m, ptx));
  CUfunction f = nullptr;
  PROBE_CHECK(cuModuleGetFunction(&f, m, name));
  CUdeviceptr flag = zeros(4);
  void* args[] = {&flag};
  PROBE_CHECK(cuLaunchKernel(f, grid, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  CUresult r = cuCtxSynchronize();
  if (r != CUDA_ERROR_LAUNCH_TIMEOUT) return fail("the launch did not time out", r);
  CUdeviceptr p = 0;
  r = cuMemAlloc(&p, 16);
  if (r != CUDA_ERROR_LAUNCH_TIMEOUT) return fail("the timeout is not sticky", r);
  return 0;
}

int finite(unsigned n) {
  CUmodule m = nullptr;
  PROBE_CHECK(cuModuleLoadData(&m, cusnap::emu_test::kBusyPtx));
  CUfunction f = nullptr;
  PROBE_CHECK(cuModuleGetFunction(&f, m, "busy"));
  CUdeviceptr out = zeros(32 * 4);
  void* args[] = {&out, &n};
  PROBE_CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  PROBE_CHECK(cuCtxSynchronize());
  auto v = download<unsigned>(out, 32);
  for (unsigned t = 0; t < 32; ++t) {
    unsigned x = t;
    for (unsigned i = 0; i < n; ++i) x = (x + i) * 3;
    if (v.size() != 32 || v[t] != x) return fail("the finite loop computed a wrong value");
  }
  return 0;
}

int inject() {
  CUmodule m = nullptr;
  PROBE_CHECK(cuModuleLoadData(&m, cusnap::emu_test::kBusyPtx));
  CUfunction f = nullptr;
  PROBE_CHECK(cuModuleGetFunction(&f, m, "busy"));
  CUdeviceptr out = zeros(32 * 4);
  unsigned n = 100;
  void* args[] = {&out, &n};
  CUevent start = nullptr, stop = nullptr;
  PROBE_CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  PROBE_CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  PROBE_CHECK(cuEventRecord(start, nullptr));
  PROBE_CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  PROBE_CHECK(cuEventRecord(stop, nullptr));
  PROBE_CHECK(cuCtxSynchronize());
  float ms = 0;
  PROBE_CHECK(cuEventElapsedTime(&ms, start, stop));
  auto v = download<unsigned>(out, 32);
  if (v.size() != 32) return fail("download failed");
  unsigned wrong = 0, first = 0, x_or = 0;
  for (unsigned t = 0; t < 32; ++t) {
    unsigned x = t;
    for (unsigned i = 0; i < n; ++i) x = (x + i) * 3;
    if (v[t] == x) continue;
    if (wrong++ == 0) {
      first = t;
      x_or = v[t] ^ x;
    }
  }
  std::printf("wrong %u first %u xor %u\nelapsed_ns %lld\n", wrong, first, x_or,
              std::llround(static_cast<double>(ms) * 1e6));
  return 0;
}

int redzone(uint64_t bytes) {
  std::vector<std::pair<CUdeviceptr, size_t>> a;
  for (size_t size : {4096u, 100u, 65536u, 4096u, 1u, 8192u, 4096u, 300u}) {
    CUdeviceptr d = 0;
    PROBE_CHECK(cuMemAlloc(&d, size));
    if (d % 256 != 0) return fail("an allocation is not 256-byte aligned");
    a.push_back({d, size});
  }
  std::sort(a.begin(), a.end());
  for (size_t i = 1; i < a.size(); ++i) {
    if (a[i].first < a[i - 1].first + a[i - 1].second + bytes)
      return fail("two allocations are closer than the redzone");
  }
  for (auto& [d, size] : a) PROBE_CHECK(cuMemFree(d));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  const std::string mode = argv[1];
  if (mode == "inject") {
    if (CUresult r = cuInit(0); r != CUDA_SUCCESS) {
      std::printf("cuInit %d\n", static_cast<int>(r));
      return 0;
    }
  }
  PROBE_CHECK(cuInit(0));
  if (mode == "attribute") {
    int v = -1;
    PROBE_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 0));
    std::printf("%d\n", v);
    return 0;
  }
  CUcontext ctx = nullptr;
  PROBE_CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
  PROBE_CHECK(cuCtxSetCurrent(ctx));
  if (mode == "order" && argc == 3) return order(argv[2]);
  if (mode == "timeout") return expect_timeout(kForeverPtx, "forever", 1);
  if (mode == "spin") return expect_timeout(kSpinPtx, "spin", 2);
  if (mode == "finite" && argc == 3)
    return finite(static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)));
  if (mode == "inject") return inject();
  if (mode == "redzone" && argc == 3) return redzone(std::strtoull(argv[2], nullptr, 10));
  return 64;
}
