// Batched copies: cuMemcpyBatchAsync and cuMemcpy3DBatchAsync (the failIdx ABI and _v2), checked
// byte by byte against a host reference.
#include <cudaTypedefs.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
  return v;
}

CUmemcpyAttributes attributes(CUmemcpySrcAccessOrder order) {
  CUmemcpyAttributes a = {};
  a.srcAccessOrder = order;
  return a;
}

// The CUDA 12.8 ABI with failIdx, which cuda.h no longer binds to.
PFN_cuMemcpyBatchAsync_v12080 batch_v1() {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  REQUIRE_CU(
      cuGetProcAddress("cuMemcpyBatchAsync", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  REQUIRE(fn != nullptr);
  return reinterpret_cast<PFN_cuMemcpyBatchAsync_v12080>(fn);
}
PFN_cuMemcpy3DBatchAsync_v12080 batch_3d_v1() {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  REQUIRE_CU(
      cuGetProcAddress("cuMemcpy3DBatchAsync", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  REQUIRE(fn != nullptr);
  return reinterpret_cast<PFN_cuMemcpy3DBatchAsync_v12080>(fn);
}

}  // namespace

TEST_CASE("cuMemcpyBatchAsync copies every pair in every direction", "[copy][batch]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const size_t n = 5000;
  std::vector<uint8_t> host_src = pattern(n, 3), host_dst(n, 0);
  CUdeviceptr d_a = 0, d_b = 0, d_c = 0;
  REQUIRE_CU(cuMemAlloc(&d_a, n));
  REQUIRE_CU(cuMemAlloc(&d_b, n));
  REQUIRE_CU(cuMemAlloc(&d_c, n));
  std::vector<uint8_t> device_init = pattern(n, 91);
  REQUIRE_CU(cuMemcpyHtoD(d_b, device_init.data(), n));
  void* pinned = nullptr;
  REQUIRE_CU(cuMemAllocHost(&pinned, n));
  std::vector<uint8_t> pinned_init = pattern(n, 200);
  std::memcpy(pinned, pinned_init.data(), n);
  // host -> d_a, d_b -> d_c (offset 100, 3000 bytes), d_b -> host, pinned -> d_b + 4000 (not
  // overlapping what d_b -> d_c reads: batch copies are unordered).
  CUdeviceptr dsts[] = {d_a, d_c + 100, reinterpret_cast<CUdeviceptr>(host_dst.data()), d_a + 10};
  CUdeviceptr srcs[] = {reinterpret_cast<CUdeviceptr>(host_src.data()), d_b, d_b,
                        reinterpret_cast<CUdeviceptr>(pinned)};
  size_t sizes[] = {n, 3000, n, 0};  // a 0-byte copy is allowed and copies nothing
  CUmemcpyAttributes attrs[] = {attributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM),
                                attributes(CU_MEMCPY_SRC_ACCESS_ORDER_ANY)};
  size_t idxs[] = {0, 2};
  REQUIRE_CU(cuMemcpyBatchAsync(dsts, srcs, sizes, 4, attrs, idxs, 2, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  std::vector<uint8_t> a(n), c(n, 0xee);
  REQUIRE_CU(cuMemcpyDtoH(a.data(), d_a, n));
  CHECK(a == host_src);
  std::vector<uint8_t> c_ref(n, 0);
  REQUIRE_CU(cuMemsetD8(d_c, 0, 100));  // before the copied range: what memset wrote
  REQUIRE_CU(cuMemsetD8(d_c + 3100, 0, n - 3100));
  REQUIRE_CU(cuMemcpyDtoH(c.data(), d_c, n));
  std::copy(device_init.begin(), device_init.begin() + 3000, c_ref.begin() + 100);
  CHECK(c == c_ref);
  CHECK(host_dst == device_init);

  // The failIdx ABI: a copy past the end of an allocation is named.
  size_t fail = 0;
  size_t bad_sizes[] = {n, n + 1, n, 0};
  CHECK(batch_v1()(dsts, srcs, bad_sizes, 4, attrs, idxs, 2, &fail, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == 1);
  REQUIRE_CU(batch_v1()(dsts, srcs, sizes, 4, attrs, idxs, 2, &fail, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK_CU(cuStreamDestroy(s));
  for (CUdeviceptr p : {d_a, d_b, d_c}) CHECK_CU(cuMemFree(p));
  CHECK_CU(cuMemFreeHost(pinned));
}

TEST_CASE("a DURING_API_CALL source is read before the batch call returns", "[copy][batch]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr d = 0, gate = 0;
  REQUIRE_CU(cuMemAlloc(&d, 64));
  REQUIRE_CU(cuMemAlloc(&gate, 4));
  REQUIRE_CU(cuMemsetD32(gate, 0, 1));
  // Hold the stream so the copy cannot run before the source changes.
  REQUIRE_CU(cuStreamWaitValue32(s, gate, 1, CU_STREAM_WAIT_VALUE_EQ));
  void* pinned = nullptr;
  REQUIRE_CU(cuMemAllocHost(&pinned, 64));
  std::memset(pinned, 0x11, 64);
  CUdeviceptr dst[] = {d};
  CUdeviceptr src[] = {reinterpret_cast<CUdeviceptr>(pinned)};
  size_t size[] = {64};
  CUmemcpyAttributes during = attributes(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL);
  size_t idx[] = {0};
  REQUIRE_CU(cuMemcpyBatchAsync(dst, src, size, 1, &during, idx, 1, s));
  std::memset(pinned, 0x22, 64);  // after the call: the copy must not see it
  REQUIRE_CU(cuMemsetD32(gate, 1, 1));
  REQUIRE_CU(cuStreamSynchronize(s));
  std::vector<uint8_t> out(64);
  REQUIRE_CU(cuMemcpyDtoH(out.data(), d, 64));
  CHECK(out == std::vector<uint8_t>(64, 0x11));

  // In stream order instead, the same pinned source is read when the copy runs.
  REQUIRE_CU(cuStreamWaitValue32(s, gate, 2, CU_STREAM_WAIT_VALUE_EQ));
  CUmemcpyAttributes in_order = attributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
  REQUIRE_CU(cuMemcpyBatchAsync(dst, src, size, 1, &in_order, idx, 1, s));
  std::memset(pinned, 0x33, 64);
  REQUIRE_CU(cuMemsetD32(gate, 2, 1));
  REQUIRE_CU(cuStreamSynchronize(s));
  REQUIRE_CU(cuMemcpyDtoH(out.data(), d, 64));
  CHECK(out == std::vector<uint8_t>(64, 0x33));
  CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuMemFree(d));
  CHECK_CU(cuMemFree(gate));
  CHECK_CU(cuMemFreeHost(pinned));
}

TEST_CASE("cuMemcpy3DBatchAsync copies pitched boxes", "[copy][batch]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  // A 10 x 4 x 3 box out of a 16-byte-row, 6-row-layer host volume into a packed device buffer,
  // and back out of it into a host volume with 12-byte rows and 5-row layers.
  const size_t w = 10, h = 4, depth = 3;
  const size_t src_row = 16, src_layer = 6, back_row = 12, back_layer = 5;
  std::vector<uint8_t> volume = pattern(src_row * src_layer * depth, 5);
  std::vector<uint8_t> back(back_row * back_layer * depth, 0xcc);
  CUdeviceptr packed = 0;
  REQUIRE_CU(cuMemAlloc(&packed, w * h * depth));
  CUDA_MEMCPY3D_BATCH_OP ops[2] = {};
  ops[0].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  ops[0].src.op.ptr.ptr = reinterpret_cast<CUdeviceptr>(volume.data());
  ops[0].src.op.ptr.rowLength = src_row;
  ops[0].src.op.ptr.layerHeight = src_layer;
  ops[0].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  ops[0].dst.op.ptr.ptr = packed;  // rowLength, layerHeight 0: tightly packed
  ops[0].extent = {w, h, depth};
  ops[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  REQUIRE_CU(cuMemcpy3DBatchAsync(1, ops, 0, s));
  ops[1].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  ops[1].src.op.ptr.ptr = packed;
  ops[1].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  ops[1].dst.op.ptr.ptr = reinterpret_cast<CUdeviceptr>(back.data());
  ops[1].dst.op.ptr.rowLength = back_row;
  ops[1].dst.op.ptr.layerHeight = back_layer;
  ops[1].extent = {w, h, depth};
  ops[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
  REQUIRE_CU(cuMemcpy3DBatchAsync(1, &ops[1], 0, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  std::vector<uint8_t> got(w * h * depth);
  REQUIRE_CU(cuMemcpyDtoH(got.data(), packed, got.size()));
  std::vector<uint8_t> back_ref(back.size(), 0xcc);
  for (size_t z = 0; z < depth; ++z) {
    for (size_t y = 0; y < h; ++y) {
      for (size_t x = 0; x < w; ++x) {
        const uint8_t v = volume[(z * src_layer + y) * src_row + x];
        INFO("x " << x << " y " << y << " z " << z);
        REQUIRE(got[(z * h + y) * w + x] == v);
        back_ref[(z * back_layer + y) * back_row + x] = v;
      }
    }
  }
  CHECK(back == back_ref);  // padding bytes untouched
  CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuMemFree(packed));
}

TEST_CASE("batched copies check their arguments", "[copy][batch]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  CUdeviceptr d = 0;
  REQUIRE_CU(cuMemAlloc(&d, 256));
  std::vector<uint8_t> host(256);
  CUdeviceptr dsts[] = {d, d + 128};
  CUdeviceptr srcs[] = {reinterpret_cast<CUdeviceptr>(host.data()),
                        reinterpret_cast<CUdeviceptr>(host.data())};
  size_t sizes[] = {128, 128};
  CUmemcpyAttributes ok = attributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
  CUmemcpyAttributes invalid = attributes(CU_MEMCPY_SRC_ACCESS_ORDER_INVALID);
  CUmemcpyAttributes bad_flags = ok;
  bad_flags.flags = 2;
  CUmemcpyAttributes two[] = {ok, ok};
  size_t zero[] = {0};
  size_t from_one[] = {1};
  size_t same[] = {0, 0};
  CHECK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &ok, zero, 1, nullptr) ==
        CUDA_ERROR_INVALID_VALUE);  // the legacy NULL stream
  CHECK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &ok, zero, 1, CU_STREAM_LEGACY) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &ok, from_one, 1, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, two, same, 2, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyBatchAsync(dsts, srcs, sizes, 1, two, same, 2, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &invalid, zero, 1, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &bad_flags, zero, 1, s) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyBatchAsync(nullptr, srcs, sizes, 2, &ok, zero, 1, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyBatchAsync(dsts, srcs, sizes, 0, &ok, zero, 1, s) == CUDA_ERROR_INVALID_VALUE);
  size_t fail = 0;
  CHECK(batch_v1()(dsts, srcs, sizes, 2, &ok, from_one, 1, &fail, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == SIZE_MAX);  // an error of the call, not of one copy
  CUDA_MEMCPY3D_BATCH_OP op = {};
  op.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op.src.op.ptr.ptr = srcs[0];
  op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op.dst.op.ptr.ptr = d;
  op.extent = {16, 2, 1};
  op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  CHECK(cuMemcpy3DBatchAsync(1, &op, 1, s) == CUDA_ERROR_INVALID_VALUE);  // flags must be 0
  CHECK(cuMemcpy3DBatchAsync(0, &op, 0, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpy3DBatchAsync(1, &op, 0, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D_BATCH_OP bad[3] = {op, op, op};
  bad[1].extent.depth = 0;
  CHECK(batch_3d_v1()(3, bad, &fail, 0, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == 1);
  bad[1] = op;
  bad[2].dst.op.ptr.rowLength = 8;  // shorter than the width
  CHECK(batch_3d_v1()(3, bad, &fail, 0, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == 2);
  bad[2] = op;
  bad[2].extent = {16, 17, 1};  // 272 bytes: past the end of the allocation
  CHECK(batch_3d_v1()(3, bad, &fail, 0, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == 2);
  bad[2] = op;
  bad[0].dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;  // arrays are not emulated
  CHECK(batch_3d_v1()(3, bad, &fail, 0, s) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(fail == 0);
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuMemFree(d));
}
