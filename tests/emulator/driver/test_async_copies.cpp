// Asynchronous copies and host memory, as the driver API's "API synchronization behavior"
// describes them: a copy into pageable host memory returns only once it has completed, one from
// pageable memory has taken its bytes before it returns, host-to-host copies are synchronous, and
// pinned or registered memory stays truly asynchronous.
//
// The stream is held back by a host function queued before the copy, so that "has the copy
// happened when the call returns?" has a definite answer: either the call waited for the stream
// (then the data is there, however long the host function takes) or it did not (then the data
// cannot be there before the host function ends).
#include <cudaTypedefs.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;
using namespace std::chrono_literals;

namespace {

template <class Pfn>
Pfn proc(const char* name, int version) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  REQUIRE(cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                           &status) == CUDA_SUCCESS);
  REQUIRE(fn != nullptr);
  return reinterpret_cast<Pfn>(fn);
}

// Holds a stream back for a while. Only a wrong implementation can observe the delay: a copy
// that returns before completing would find its data missing, whatever the delay is.
void CUDA_CB hold_stream(void*) { std::this_thread::sleep_for(150ms); }

// Holds a stream until the test opens it (bounded, so a wrongly blocking call cannot hang the
// test; it fails its checks instead).
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  bool timed_out = false;
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    changed.notify_all();
  }
};

void CUDA_CB wait_gate(void* p) {
  auto* gate = static_cast<Gate*>(p);
  std::unique_lock lock(gate->mutex);
  gate->timed_out = !gate->changed.wait_for(lock, 10s, [&] { return gate->open; });
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

constexpr size_t kBytes = 64 * 1024;

}  // namespace

TEST_CASE("async copies into pageable host memory return only after the copy has completed",
          "[copy][async]") {
  CUcontext ctx = primary_context();
  const auto expected = pattern(kBytes, 3);
  CUdeviceptr d = 0;
  REQUIRE_CU(cuMemAlloc(&d, kBytes));
  REQUIRE_CU(cuMemcpyHtoD(d, expected.data(), kBytes));
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  auto dtoh_async_ptsz = proc<PFN_cuMemcpyDtoHAsync_v7000_ptsz>("cuMemcpyDtoHAsync", 7000);
  auto memcpy_async_ptsz = proc<PFN_cuMemcpyAsync_v7000_ptsz>("cuMemcpyAsync", 7000);
  auto host_func_ptsz = proc<PFN_cuLaunchHostFunc_v10000_ptsz>("cuLaunchHostFunc", 10000);
  auto sync_ptsz = proc<PFN_cuStreamSynchronize_v7000_ptsz>("cuStreamSynchronize", 7000);

  std::vector<uint8_t> out(kBytes, 0);
  SECTION("cuMemcpyDtoHAsync on a stream") {
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpyDtoHAsync(out.data(), d, kBytes, s));
  }
  SECTION("cuMemcpyDtoHAsync on the legacy default stream") {
    REQUIRE_CU(cuLaunchHostFunc(nullptr, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpyDtoHAsync(out.data(), d, kBytes, nullptr));
  }
  SECTION("cuMemcpyDtoHAsync_ptsz on the per-thread default stream") {
    REQUIRE_CU(host_func_ptsz(nullptr, hold_stream, nullptr));
    REQUIRE_CU(dtoh_async_ptsz(out.data(), d, kBytes, nullptr));
  }
  SECTION("cuMemcpyAsync (unified addressing) to a host pointer") {
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(out.data()), d, kBytes, s));
  }
  SECTION("cuMemcpyAsync_ptsz to a host pointer") {
    REQUIRE_CU(host_func_ptsz(nullptr, hold_stream, nullptr));
    REQUIRE_CU(memcpy_async_ptsz(reinterpret_cast<CUdeviceptr>(out.data()), d, kBytes, nullptr));
  }
  SECTION("cuMemcpy2DAsync into host memory") {
    CUDA_MEMCPY2D p{};
    p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = d;
    p.srcPitch = 1024;
    p.dstMemoryType = CU_MEMORYTYPE_HOST;
    p.dstHost = out.data();
    p.dstPitch = 1024;
    p.WidthInBytes = 1024;
    p.Height = kBytes / 1024;
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpy2DAsync(&p, s));
  }
  SECTION("cuMemcpy3DAsync into unified (host) memory") {
    CUDA_MEMCPY3D p{};
    p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = d;
    p.srcPitch = 1024;
    p.srcHeight = 16;
    p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    p.dstDevice = reinterpret_cast<CUdeviceptr>(out.data());
    p.dstPitch = 1024;
    p.dstHeight = 16;
    p.WidthInBytes = 1024;
    p.Height = 16;
    p.Depth = kBytes / (1024 * 16);
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpy3DAsync(&p, s));
  }
  SECTION("cuMemcpy3DPeerAsync into host memory") {
    CUDA_MEMCPY3D_PEER p{};
    p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = d;
    p.srcContext = ctx;
    p.dstMemoryType = CU_MEMORYTYPE_HOST;
    p.dstHost = out.data();
    p.dstContext = ctx;
    p.WidthInBytes = kBytes;
    p.Height = 1;
    p.Depth = 1;
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpy3DPeerAsync(&p, s));
  }
  SECTION("host-to-host cuMemcpyAsync is synchronous") {
    std::vector<uint8_t> src = expected;
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(out.data()),
                             reinterpret_cast<CUdeviceptr>(src.data()), kBytes, s));
  }
  SECTION("host-to-host cuMemcpyAsync between pinned buffers is synchronous") {
    void* a = nullptr;
    void* b = nullptr;
    REQUIRE_CU(cuMemAllocHost(&a, kBytes));
    REQUIRE_CU(cuMemAllocHost(&b, kBytes));
    std::memcpy(a, expected.data(), kBytes);
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(b), reinterpret_cast<CUdeviceptr>(a),
                             kBytes, s));
    std::memcpy(out.data(), b, kBytes);
    REQUIRE_CU(cuMemFreeHost(a));
    REQUIRE_CU(cuMemFreeHost(b));
  }
  CHECK(out == expected);  // no synchronisation before this read: the call itself waited
  REQUIRE_CU(cuStreamSynchronize(s));
  REQUIRE_CU(sync_ptsz(nullptr));
  REQUIRE_CU(cuStreamDestroy(s));
  REQUIRE_CU(cuMemFree(d));
}

TEST_CASE("async copies from pageable host memory take the source bytes before returning",
          "[copy][async]") {
  primary_context();
  const auto expected = pattern(kBytes, 5);
  CUdeviceptr d = 0;
  REQUIRE_CU(cuMemAlloc(&d, kBytes));
  REQUIRE_CU(cuMemsetD8(d, 0, kBytes));
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  auto htod_async_ptsz = proc<PFN_cuMemcpyHtoDAsync_v7000_ptsz>("cuMemcpyHtoDAsync", 7000);
  auto host_func_ptsz = proc<PFN_cuLaunchHostFunc_v10000_ptsz>("cuLaunchHostFunc", 10000);
  auto sync_ptsz = proc<PFN_cuStreamSynchronize_v7000_ptsz>("cuStreamSynchronize", 7000);

  std::vector<uint8_t> src = expected;
  SECTION("cuMemcpyHtoDAsync") {
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpyHtoDAsync(d, src.data(), kBytes, s));
  }
  SECTION("cuMemcpyHtoDAsync_ptsz") {
    REQUIRE_CU(host_func_ptsz(nullptr, hold_stream, nullptr));
    REQUIRE_CU(htod_async_ptsz(d, src.data(), kBytes, nullptr));
  }
  SECTION("cuMemcpyAsync from a host pointer") {
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpyAsync(d, reinterpret_cast<CUdeviceptr>(src.data()), kBytes, s));
  }
  SECTION("cuMemcpy2DAsync from host memory") {
    CUDA_MEMCPY2D p{};
    p.srcMemoryType = CU_MEMORYTYPE_HOST;
    p.srcHost = src.data();
    p.srcPitch = 2048;
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.dstDevice = d;
    p.dstPitch = 2048;
    p.WidthInBytes = 2048;
    p.Height = kBytes / 2048;
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpy2DAsync(&p, s));
  }
  SECTION("cuMemcpy3DAsync from host memory") {
    CUDA_MEMCPY3D p{};
    p.srcMemoryType = CU_MEMORYTYPE_HOST;
    p.srcHost = src.data();
    p.srcPitch = 512;
    p.srcHeight = 8;
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.dstDevice = d;
    p.dstPitch = 512;
    p.dstHeight = 8;
    p.WidthInBytes = 512;
    p.Height = 8;
    p.Depth = kBytes / (512 * 8);
    REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));
    REQUIRE_CU(cuMemcpy3DAsync(&p, s));
  }
  std::fill(src.begin(), src.end(), 0xee);  // the program may reuse its buffer at once
  REQUIRE_CU(cuStreamSynchronize(s));
  REQUIRE_CU(sync_ptsz(nullptr));
  std::vector<uint8_t> out(kBytes);
  REQUIRE_CU(cuMemcpyDtoH(out.data(), d, kBytes));
  CHECK(out == expected);
  REQUIRE_CU(cuStreamDestroy(s));
  REQUIRE_CU(cuMemFree(d));
}

TEST_CASE("async copies with pinned or registered host memory stay asynchronous", "[copy][async]") {
  primary_context();
  const auto expected = pattern(kBytes, 9);
  CUdeviceptr d = 0;
  REQUIRE_CU(cuMemAlloc(&d, kBytes));
  REQUIRE_CU(cuMemcpyHtoD(d, expected.data(), kBytes));
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));

  void* pinned = nullptr;
  REQUIRE_CU(cuMemAllocHost(&pinned, kBytes));
  void* registered = std::aligned_alloc(4096, kBytes);
  REQUIRE(registered != nullptr);
  REQUIRE_CU(cuMemHostRegister(registered, kBytes, 0));

  for (void* host : {pinned, registered}) {
    INFO("host buffer " << (host == pinned ? "pinned" : "registered"));
    // Device to host: returns before the copy; the buffer fills in stream order.
    std::memset(host, 0, kBytes);
    Gate gate;
    REQUIRE_CU(cuLaunchHostFunc(s, wait_gate, &gate));
    REQUIRE_CU(cuMemcpyDtoHAsync(host, d, kBytes, s));
    CHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
    CHECK(static_cast<uint8_t*>(host)[0] == 0);
    gate.release();
    REQUIRE_CU(cuStreamSynchronize(s));
    CHECK_FALSE(gate.timed_out);
    CHECK(std::memcmp(host, expected.data(), kBytes) == 0);

    // Host to device: not staged, so the copy reads the buffer when it runs.
    Gate gate2;
    REQUIRE_CU(cuLaunchHostFunc(s, wait_gate, &gate2));
    REQUIRE_CU(cuMemcpyHtoDAsync(d, host, kBytes, s));
    CHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
    std::memset(host, 0x77, kBytes);
    gate2.release();
    REQUIRE_CU(cuStreamSynchronize(s));
    CHECK_FALSE(gate2.timed_out);
    std::vector<uint8_t> out(kBytes);
    REQUIRE_CU(cuMemcpyDtoH(out.data(), d, kBytes));
    CHECK(out == std::vector<uint8_t>(kBytes, 0x77));
    REQUIRE_CU(cuMemcpyHtoD(d, expected.data(), kBytes));
  }

  REQUIRE_CU(cuStreamDestroy(s));
  REQUIRE_CU(cuMemHostUnregister(registered));
  std::free(registered);
  REQUIRE_CU(cuMemFreeHost(pinned));
  REQUIRE_CU(cuMemFree(d));
}

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE
TEST_CASE("an async copy into pageable memory after a failed launch reports the launch's error",
          "[copy][async]") {
  primary_context();
  CUcontext ctx = nullptr;
  REQUIRE_CU(cuCtxCreate(&ctx, nullptr, 0, 0));
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry bad_store(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx));
  CUfunction bad = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&bad, module, "bad_store"));
  CUdeviceptr d = 0;
  REQUIRE_CU(cuMemAlloc(&d, 256));
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  CUdeviceptr wild = 16;
  void* params[] = {&wild};
  REQUIRE_CU(cuLaunchHostFunc(s, hold_stream, nullptr));  // the launch is still queued below
  REQUIRE_CU(cuLaunchKernel(bad, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr));
  std::vector<uint8_t> out(256, 0xab);
  // The copy never ran (the context died first): the caller must not read `out` as valid.
  CHECK(cuMemcpyDtoHAsync(out.data(), d, 256, s) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(out == std::vector<uint8_t>(256, 0xab));
  CHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
  REQUIRE_CU(cuCtxDestroy(ctx));
}
#endif
