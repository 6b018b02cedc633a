// Every cuMemcpy*/cuMemset* variant against a host reference computation.
#include <cudaTypedefs.h>

#include <cstring>
#include <random>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

namespace {

std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

template <class Pfn>
Pfn proc(const char* name, int version, cuuint64_t flags) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  REQUIRE(cuGetProcAddress(name, &fn, version, flags, &status) == CUDA_SUCCESS);
  REQUIRE(fn != nullptr);
  return reinterpret_cast<Pfn>(fn);
}

}  // namespace

TEST_CASE("1D copies: every variant round-trips through device memory", "[copy]") {
  CUcontext ctx = primary_context();
  constexpr size_t kN = 10000;
  auto src = random_bytes(kN, 1);
  CUdeviceptr d1 = 0, d2 = 0;
  REQUIRE_CU(cuMemAlloc(&d1, kN));
  REQUIRE_CU(cuMemAlloc(&d2, kN));
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  void* pinned = nullptr;
  REQUIRE_CU(cuMemAllocHost(&pinned, kN));

  constexpr cuuint64_t kPtds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  auto htod_ptds = proc<PFN_cuMemcpyHtoD_v7000_ptds>("cuMemcpyHtoD", 7000, kPtds);
  auto dtod_ptds = proc<PFN_cuMemcpyDtoD_v7000_ptds>("cuMemcpyDtoD", 7000, kPtds);
  auto dtoh_ptds = proc<PFN_cuMemcpyDtoH_v7000_ptds>("cuMemcpyDtoH", 7000, kPtds);
  auto htod_async_ptsz = proc<PFN_cuMemcpyHtoDAsync_v7000_ptsz>("cuMemcpyHtoDAsync", 7000, kPtds);
  auto dtoh_async_ptsz = proc<PFN_cuMemcpyDtoHAsync_v7000_ptsz>("cuMemcpyDtoHAsync", 7000, kPtds);
  auto dtod_async_ptsz = proc<PFN_cuMemcpyDtoDAsync_v7000_ptsz>("cuMemcpyDtoDAsync", 7000, kPtds);
  auto memcpy_ptds = proc<PFN_cuMemcpy_v7000_ptds>("cuMemcpy", 7000, kPtds);
  auto memcpy_async_ptsz = proc<PFN_cuMemcpyAsync_v7000_ptsz>("cuMemcpyAsync", 7000, kPtds);
  auto stream_sync_ptsz =
      proc<PFN_cuStreamSynchronize_v7000_ptsz>("cuStreamSynchronize", 7000, kPtds);

  std::vector<uint8_t> out(kN);
  SECTION("synchronous, legacy default stream") {
    REQUIRE_CU(cuMemcpyHtoD(d1, src.data(), kN));
    REQUIRE_CU(cuMemcpyDtoD(d2, d1, kN));
    REQUIRE_CU(cuMemcpyDtoH(out.data(), d2, kN));
  }
  SECTION("synchronous, per-thread default stream") {
    REQUIRE_CU(htod_ptds(d1, src.data(), kN));
    REQUIRE_CU(dtod_ptds(d2, d1, kN));
    REQUIRE_CU(dtoh_ptds(out.data(), d2, kN));
  }
  SECTION("asynchronous on a stream, pageable source reused at once") {
    std::vector<uint8_t> scratch = src;
    REQUIRE_CU(cuMemcpyHtoDAsync(d1, scratch.data(), kN, s));
    std::fill(scratch.begin(), scratch.end(), 0);  // the copy must have read its source already
    REQUIRE_CU(cuMemcpyDtoDAsync(d2, d1, kN, s));
    REQUIRE_CU(cuMemcpyDtoHAsync(out.data(), d2, kN, s));
    REQUIRE_CU(cuStreamSynchronize(s));
  }
  SECTION("asynchronous, per-thread default stream, pinned staging") {
    std::memcpy(pinned, src.data(), kN);
    REQUIRE_CU(htod_async_ptsz(d1, pinned, kN, nullptr));
    REQUIRE_CU(dtod_async_ptsz(d2, d1, kN, nullptr));
    REQUIRE_CU(dtoh_async_ptsz(out.data(), d2, kN, nullptr));
    REQUIRE_CU(stream_sync_ptsz(nullptr));
  }
  SECTION("unified cuMemcpy / cuMemcpyAsync and peer copies") {
    REQUIRE_CU(cuMemcpy(d1, reinterpret_cast<CUdeviceptr>(src.data()), kN));
    REQUIRE_CU(memcpy_ptds(d2, d1, kN));
    REQUIRE_CU(cuMemcpyPeer(d1, ctx, d2, ctx, kN));
    REQUIRE_CU(memcpy_async_ptsz(d2, d1, kN, s));
    REQUIRE_CU(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(out.data()), d2, kN, s));
    REQUIRE_CU(cuStreamSynchronize(s));
  }
  CHECK(out == src);

  // Out of range: one byte past the allocation, a foreign pointer, an offset inside.
  CHECK(cuMemcpyHtoD(d1, src.data(), kN + 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyDtoH(out.data(), d1 + 1, kN) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyDtoD(reinterpret_cast<CUdeviceptr>(out.data()), d1, 16) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyHtoDAsync(d2 + kN - 4, src.data(), 8, s) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuMemcpyHtoD(d2 + kN - 4, src.data(), 4));

  REQUIRE_CU(cuMemFreeHost(pinned));
  REQUIRE_CU(cuStreamDestroy(s));
  REQUIRE_CU(cuMemFree(d1));
  REQUIRE_CU(cuMemFree(d2));
}

TEST_CASE("memsets: 8/16/32-bit, 1D and 2D, sync and async", "[copy]") {
  primary_context();
  constexpr size_t kPitch = 256, kRows = 5, kBytes = kPitch * kRows;
  CUdeviceptr d = 0;
  REQUIRE_CU(cuMemAlloc(&d, kBytes));
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  std::vector<uint8_t> ref(kBytes, 0x11), out(kBytes);
  REQUIRE_CU(cuMemsetD8(d, 0x11, kBytes));

  auto set16 = [&](size_t offset, uint16_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) std::memcpy(&ref[offset + 2 * i], &v, 2);
  };
  auto set32 = [&](size_t offset, uint32_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) std::memcpy(&ref[offset + 4 * i], &v, 4);
  };
  REQUIRE_CU(cuMemsetD16(d + 2, 0xbeef, 7));
  set16(2, 0xbeef, 7);
  REQUIRE_CU(cuMemsetD32(d + 64, 0xdeadbeefu, 9));
  set32(64, 0xdeadbeefu, 9);
  REQUIRE_CU(cuMemsetD8Async(d + 200, 0x5a, 13, s));
  std::memset(&ref[200], 0x5a, 13);
  REQUIRE_CU(cuMemsetD16Async(d + 230, 0x1234, 3, s));
  set16(230, 0x1234, 3);
  REQUIRE_CU(cuMemsetD32Async(d + 240, 0x01020304u, 4, s));
  set32(240, 0x01020304u, 4);
  REQUIRE_CU(cuStreamSynchronize(s));

  // 2D: a sub-rectangle of each row, the bytes between rows untouched.
  REQUIRE_CU(cuMemsetD2D8(d + kPitch + 3, kPitch, 0x77, 10, 2));
  for (size_t y = 0; y < 2; ++y) std::memset(&ref[kPitch * (1 + y) + 3], 0x77, 10);
  REQUIRE_CU(cuMemsetD2D16(d + kPitch + 40, kPitch, 0xa5a5, 6, 3));
  for (size_t y = 0; y < 3; ++y) set16(kPitch * (1 + y) + 40, 0xa5a5, 6);
  REQUIRE_CU(cuMemsetD2D32(d + 100, kPitch, 0xcafef00du, 5, 4));
  for (size_t y = 0; y < 4; ++y) set32(kPitch * y + 100, 0xcafef00du, 5);
  REQUIRE_CU(cuMemsetD2D8Async(d + 3 * kPitch + 150, kPitch, 0x42, 20, 2, s));
  for (size_t y = 0; y < 2; ++y) std::memset(&ref[kPitch * (3 + y) + 150], 0x42, 20);
  REQUIRE_CU(cuMemsetD2D16Async(d + 2 * kPitch + 180, kPitch, 0x9999, 4, 3, s));
  for (size_t y = 0; y < 3; ++y) set16(kPitch * (2 + y) + 180, 0x9999, 4);
  REQUIRE_CU(cuMemsetD2D32Async(d + 4 * kPitch + 200, kPitch, 0x13572468u, 3, 1, s));
  set32(4 * kPitch + 200, 0x13572468u, 3);
  REQUIRE_CU(cuStreamSynchronize(s));

  REQUIRE_CU(cuMemcpyDtoH(out.data(), d, kBytes));
  CHECK(out == ref);

  CHECK(cuMemsetD32(d + 1, 0, 4) == CUDA_ERROR_INVALID_VALUE);  // misaligned
  CHECK(cuMemsetD8(d, 0, kBytes + 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemsetD2D8(d, kPitch, 0, kPitch + 1, 2) == CUDA_ERROR_INVALID_VALUE);  // pitch < width
  CHECK(cuMemsetD2D8(d + kPitch, kPitch, 0, 10, kRows) ==
        CUDA_ERROR_INVALID_VALUE);  // past the end
  REQUIRE_CU(cuStreamDestroy(s));
  REQUIRE_CU(cuMemFree(d));
}

TEST_CASE("2D copies with pitches and offsets", "[copy]") {
  primary_context();
  constexpr size_t kHostPitch = 70, kHostRows = 9, kWidth = 33, kHeight = 6;
  auto host = random_bytes(kHostPitch * kHostRows, 2);
  CUdeviceptr dev = 0;
  size_t dev_pitch = 0;
  REQUIRE_CU(cuMemAllocPitch(&dev, &dev_pitch, 100, 12, 4));
  REQUIRE_CU(cuMemsetD8(dev, 0, dev_pitch * 12));

  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = host.data();
  up.srcPitch = kHostPitch;
  up.srcXInBytes = 5;
  up.srcY = 2;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = dev;
  up.dstPitch = dev_pitch;
  up.dstXInBytes = 11;
  up.dstY = 3;
  up.WidthInBytes = kWidth;
  up.Height = kHeight;
  REQUIRE_CU(cuMemcpy2D(&up));

  // Device to device within the allocation (unaligned variant), then back to the host with a
  // third layout; compare with the same moves done on host arrays.
  CUDA_MEMCPY2D within{};
  within.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  within.srcDevice = dev;
  within.srcPitch = dev_pitch;
  within.srcXInBytes = 11;
  within.srcY = 3;
  within.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  within.dstDevice = dev;
  within.dstPitch = dev_pitch;
  within.dstXInBytes = 60;
  within.dstY = 0;
  within.WidthInBytes = kWidth;
  within.Height = kHeight;
  REQUIRE_CU(cuMemcpy2DUnaligned(&within));

  constexpr size_t kOutPitch = 40;
  std::vector<uint8_t> out(kOutPitch * kHeight, 0xee);
  CUDA_MEMCPY2D down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = dev;
  down.srcPitch = dev_pitch;
  down.srcXInBytes = 60;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = out.data();
  down.dstPitch = kOutPitch;
  down.dstXInBytes = 2;
  down.WidthInBytes = kWidth;
  down.Height = kHeight;
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  REQUIRE_CU(cuMemcpy2DAsync(&down, s));
  REQUIRE_CU(cuStreamSynchronize(s));

  std::vector<uint8_t> ref(kOutPitch * kHeight, 0xee);
  for (size_t y = 0; y < kHeight; ++y) {
    std::memcpy(&ref[y * kOutPitch + 2], &host[(2 + y) * kHostPitch + 5], kWidth);
  }
  CHECK(out == ref);

  CUDA_MEMCPY2D bad = up;
  bad.dstPitch = kWidth - 1;  // pitch smaller than the width
  CHECK(cuMemcpy2D(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.dstY = 10;  // runs past the allocation's last row
  CHECK(cuMemcpy2D(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.dstMemoryType = CU_MEMORYTYPE_ARRAY;  // dstArray is null: no array
  CHECK(cuMemcpy2D(&bad) == CUDA_ERROR_INVALID_HANDLE);
  REQUIRE_CU(cuStreamDestroy(s));
  REQUIRE_CU(cuMemFree(dev));
}

TEST_CASE("3D copies with pitches, heights and offsets", "[copy]") {
  CUcontext ctx = primary_context();
  constexpr size_t kPitch = 48, kRows = 7, kSlices = 5;
  constexpr size_t kW = 20, kH = 4, kD = 3;
  auto host = random_bytes(kPitch * kRows * kSlices, 3);
  constexpr size_t kDevPitch = 64, kDevRows = 6, kDevSlices = 4;
  CUdeviceptr dev = 0;
  REQUIRE_CU(cuMemAlloc(&dev, kDevPitch * kDevRows * kDevSlices));
  REQUIRE_CU(cuMemsetD8(dev, 0, kDevPitch * kDevRows * kDevSlices));

  CUDA_MEMCPY3D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = host.data();
  up.srcPitch = kPitch;
  up.srcHeight = kRows;
  up.srcXInBytes = 3;
  up.srcY = 2;
  up.srcZ = 1;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = dev;
  up.dstPitch = kDevPitch;
  up.dstHeight = kDevRows;
  up.dstXInBytes = 7;
  up.dstY = 1;
  up.dstZ = 1;
  up.WidthInBytes = kW;
  up.Height = kH;
  up.Depth = kD;
  REQUIRE_CU(cuMemcpy3D(&up));

  // Back through the peer variant into a packed host buffer.
  std::vector<uint8_t> out(kW * kH * kD, 0xcc);
  CUDA_MEMCPY3D_PEER down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = dev;
  down.srcPitch = kDevPitch;
  down.srcHeight = kDevRows;
  down.srcXInBytes = 7;
  down.srcY = 1;
  down.srcZ = 1;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = out.data();
  down.dstPitch = kW;
  down.dstHeight = kH;
  down.WidthInBytes = kW;
  down.Height = kH;
  down.Depth = kD;
  down.srcContext = ctx;
  down.dstContext = ctx;
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  REQUIRE_CU(cuMemcpy3DPeerAsync(&down, s));
  REQUIRE_CU(cuStreamSynchronize(s));

  std::vector<uint8_t> ref(kW * kH * kD);
  for (size_t z = 0; z < kD; ++z) {
    for (size_t y = 0; y < kH; ++y) {
      std::memcpy(&ref[(z * kH + y) * kW], &host[((1 + z) * kRows + 2 + y) * kPitch + 3], kW);
    }
  }
  CHECK(out == ref);

  // The same through cuMemcpy3DAsync and cuMemcpy3DPeer.
  std::vector<uint8_t> out2(kW * kH * kD, 0);
  CUDA_MEMCPY3D down2{};
  down2.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down2.srcDevice = dev;
  down2.srcPitch = kDevPitch;
  down2.srcHeight = kDevRows;
  down2.srcXInBytes = 7;
  down2.srcY = 1;
  down2.srcZ = 1;
  down2.dstMemoryType = CU_MEMORYTYPE_HOST;
  down2.dstHost = out2.data();
  down2.dstPitch = kW;
  down2.dstHeight = kH;
  down2.WidthInBytes = kW;
  down2.Height = kH;
  down2.Depth = kD;
  REQUIRE_CU(cuMemcpy3DAsync(&down2, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK(out2 == ref);
  std::fill(out2.begin(), out2.end(), 0);
  CUDA_MEMCPY3D_PEER down3 = down;
  down3.dstHost = out2.data();
  REQUIRE_CU(cuMemcpy3DPeer(&down3));
  CHECK(out2 == ref);

  CUDA_MEMCPY3D bad = up;
  bad.dstZ = 2;  // the last slice would end past the allocation
  CHECK(cuMemcpy3D(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.dstHeight = kH - 1;  // slice height below the copy height
  CHECK(cuMemcpy3D(&bad) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuStreamDestroy(s));
  REQUIRE_CU(cuMemFree(dev));
}
