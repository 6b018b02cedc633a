// Tensor maps: cuTensorMapEncodeTiled's argument rules (cuda.h), cuTensorMapReplaceAddress, and
// cp.async.bulk.tensor tile copies of 1-, 3- and 5-dimensional boxes (kernels/tma.cu, inline PTX
// for sm_90a) against a host reference: the box at the coordinates, dimension 0 fastest,
// out-of-bounds elements read as 0 and never written; 2D boxes with the 32B/64B/128B swizzles
// against the pattern as the CUDA C++ Programming Guide states it (docs/emulator.md).
#include <bit>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

namespace {

struct Coords {
  int c[5];
};

struct Tiled {
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  cuuint32_t rank = 2;
  void* address = nullptr;
  cuuint64_t dim[5] = {64, 8, 1, 1, 1};
  cuuint64_t stride[4] = {256, 2048, 2048, 2048};
  cuuint32_t box[5] = {16, 4, 1, 1, 1};
  cuuint32_t estride[5] = {1, 1, 1, 1, 1};
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  CUtensorMapFloatOOBfill oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  CUresult encode(CUtensorMap* map) const {
    return cuTensorMapEncodeTiled(map, type, rank, address, dim, stride, box, estride, interleave,
                                  swizzle, l2, oob);
  }
};

}  // namespace

TEST_CASE("tensor maps: cuTensorMapEncodeTiled checks its arguments as cuda.h documents",
          "[tensor_maps]") {
  primary_context();
  CUdeviceptr base = 0;
  REQUIRE_CU(cuMemAlloc(&base, 1 << 16));
  alignas(64) CUtensorMap map;
  Tiled ok;
  ok.address = reinterpret_cast<void*>(base);
  REQUIRE_CU(ok.encode(&map));
  struct Case {
    const char* what;
    void (*change)(Tiled&);
    CUresult want;
  };
  const Case cases[] = {
      {"rank 0", [](Tiled& t) { t.rank = 0; }, CUDA_ERROR_INVALID_VALUE},
      {"rank 6", [](Tiled& t) { t.rank = 6; }, CUDA_ERROR_INVALID_VALUE},
      {"address not 16-byte aligned",
       [](Tiled& t) { t.address = static_cast<char*>(t.address) + 8; }, CUDA_ERROR_INVALID_VALUE},
      {"dimension 0", [](Tiled& t) { t.dim[1] = 0; }, CUDA_ERROR_INVALID_VALUE},
      {"dimension above 2^32", [](Tiled& t) { t.dim[0] = (cuuint64_t{1} << 32) + 1; },
       CUDA_ERROR_INVALID_VALUE},
      {"stride not a multiple of 16", [](Tiled& t) { t.stride[0] = 264; },
       CUDA_ERROR_INVALID_VALUE},
      {"stride of 2^40", [](Tiled& t) { t.stride[0] = cuuint64_t{1} << 40; },
       CUDA_ERROR_INVALID_VALUE},
      {"box 0", [](Tiled& t) { t.box[1] = 0; }, CUDA_ERROR_INVALID_VALUE},
      {"box 257", [](Tiled& t) { t.box[1] = 257; }, CUDA_ERROR_INVALID_VALUE},
      {"inner box not a multiple of 16 bytes", [](Tiled& t) { t.box[0] = 6; },
       CUDA_ERROR_INVALID_VALUE},
      {"element stride 0", [](Tiled& t) { t.estride[1] = 0; }, CUDA_ERROR_INVALID_VALUE},
      {"element stride 9", [](Tiled& t) { t.estride[0] = 9; }, CUDA_ERROR_INVALID_VALUE},
      {"unknown data type", [](Tiled& t) { t.type = static_cast<CUtensorMapDataType>(99); },
       CUDA_ERROR_INVALID_VALUE},
      {"unknown interleave", [](Tiled& t) { t.interleave = static_cast<CUtensorMapInterleave>(3); },
       CUDA_ERROR_INVALID_VALUE},
      {"unknown swizzle", [](Tiled& t) { t.swizzle = static_cast<CUtensorMapSwizzle>(7); },
       CUDA_ERROR_INVALID_VALUE},
      {"unknown L2 promotion", [](Tiled& t) { t.l2 = static_cast<CUtensorMapL2promotion>(4); },
       CUDA_ERROR_INVALID_VALUE},
      {"unknown OOB fill", [](Tiled& t) { t.oob = static_cast<CUtensorMapFloatOOBfill>(2); },
       CUDA_ERROR_INVALID_VALUE},
      {"interleave below rank 3", [](Tiled& t) { t.interleave = CU_TENSOR_MAP_INTERLEAVE_16B; },
       CUDA_ERROR_INVALID_VALUE},
      {"swizzle span smaller than the inner box",
       [](Tiled& t) { t.swizzle = CU_TENSOR_MAP_SWIZZLE_32B; }, CUDA_ERROR_INVALID_VALUE},
      {"NaN fill of an integer type",
       [](Tiled& t) {
         t.type = CU_TENSOR_MAP_DATA_TYPE_INT32;
         t.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
       },
       CUDA_ERROR_INVALID_VALUE},
      // Valid, but not copied exactly by the emulator: refused.
      {"swizzle 128B with a 64-byte inner box",
       [](Tiled& t) { t.swizzle = CU_TENSOR_MAP_SWIZZLE_128B; }, CUDA_ERROR_NOT_SUPPORTED},
      {"swizzle 128B, 32-byte atoms",
       [](Tiled& t) {
         t.box[0] = 32;
         t.swizzle = CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B;
       },
       CUDA_ERROR_NOT_SUPPORTED},
      {"swizzle 128B, 64-byte atoms",
       [](Tiled& t) {
         t.box[0] = 32;
         t.swizzle = CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B;
       },
       CUDA_ERROR_NOT_SUPPORTED},
      // Valid and copied: the swizzle span equal to the inner box.
      {"swizzle 64B", [](Tiled& t) { t.swizzle = CU_TENSOR_MAP_SWIZZLE_64B; }, CUDA_SUCCESS},
      {"swizzle 128B",
       [](Tiled& t) {
         t.box[0] = 32;
         t.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
       },
       CUDA_SUCCESS},
      {"NaN fill", [](Tiled& t) { t.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA; },
       CUDA_ERROR_NOT_SUPPORTED},
      {"element stride 2", [](Tiled& t) { t.estride[1] = 2; }, CUDA_ERROR_NOT_SUPPORTED},
      {"tf32", [](Tiled& t) { t.type = CU_TENSOR_MAP_DATA_TYPE_TFLOAT32; },
       CUDA_ERROR_NOT_SUPPORTED},
      {"interleave 16B",
       [](Tiled& t) {
         t.rank = 3;
         t.interleave = CU_TENSOR_MAP_INTERLEAVE_16B;
       },
       CUDA_ERROR_NOT_SUPPORTED},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Tiled t = ok;
    c.change(t);
    CHECK(t.encode(&map) == c.want);
  }
  // The map itself must be 64-byte aligned.
  alignas(64) unsigned char raw[192];
  CHECK(ok.encode(reinterpret_cast<CUtensorMap*>(raw + 16)) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTensorMapEncodeTiled(nullptr, ok.type, ok.rank, ok.address, ok.dim, ok.stride, ok.box,
                               ok.estride, ok.interleave, ok.swizzle, ok.l2,
                               ok.oob) == CUDA_ERROR_INVALID_VALUE);
  // Replacing the address: the new one must be 16-byte aligned, the map one of ours.
  CHECK_CU(cuTensorMapReplaceAddress(&map, reinterpret_cast<void*>(base + 4096)));
  CHECK(cuTensorMapReplaceAddress(&map, reinterpret_cast<void*>(base + 8)) ==
        CUDA_ERROR_INVALID_VALUE);
  alignas(64) CUtensorMap garbage;
  std::memset(&garbage, 0x5a, sizeof garbage);
  CHECK(cuTensorMapReplaceAddress(&garbage, reinterpret_cast<void*>(base)) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemFree(base));
}

TEST_CASE("tensor maps: im2col encoders check their arguments, then refuse valid maps",
          "[tensor_maps]") {
  primary_context();
  CUdeviceptr base = 0;
  REQUIRE_CU(cuMemAlloc(&base, 1 << 16));
  alignas(64) CUtensorMap map;
  void* address = reinterpret_cast<void*>(base);
  // NHWC: 16 channels of f32, 8 x 8 pixels, 2 images.
  const cuuint64_t dim[4] = {16, 8, 8, 2};
  const cuuint64_t stride[3] = {64, 512, 4096};
  const cuuint32_t estride[4] = {1, 1, 1, 1};
  int lower[2] = {-1, -1}, upper[2] = {-1, -1};
  auto im2col = [&](cuuint32_t rank, const int* lo, const int* hi, cuuint32_t channels,
                    cuuint32_t pixels, CUtensorMapSwizzle swizzle) {
    return cuTensorMapEncodeIm2col(
        &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank, address, dim, stride, lo, hi, channels, pixels,
        estride, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  // Valid: refused, since the engine refuses cp.async.bulk.tensor .im2col at load.
  CHECK(im2col(4, lower, upper, 16, 64, CU_TENSOR_MAP_SWIZZLE_NONE) == CUDA_ERROR_NOT_SUPPORTED);
  // The documented rules, shared with cuTensorMapEncodeTiled and their own.
  CHECK(im2col(2, lower, upper, 16, 64, CU_TENSOR_MAP_SWIZZLE_NONE) == CUDA_ERROR_INVALID_VALUE);
  CHECK(im2col(4, nullptr, upper, 16, 64, CU_TENSOR_MAP_SWIZZLE_NONE) == CUDA_ERROR_INVALID_VALUE);
  int far[2] = {-129, 0};
  CHECK(im2col(4, far, upper, 16, 64, CU_TENSOR_MAP_SWIZZLE_NONE) == CUDA_ERROR_INVALID_VALUE);
  CHECK(im2col(4, lower, upper, 257, 64, CU_TENSOR_MAP_SWIZZLE_NONE) == CUDA_ERROR_INVALID_VALUE);
  CHECK(im2col(4, lower, upper, 16, 1025, CU_TENSOR_MAP_SWIZZLE_NONE) == CUDA_ERROR_INVALID_VALUE);
  // 16 f32 channels are 64 bytes: more than the 32-byte swizzle span.
  CHECK(im2col(4, lower, upper, 16, 64, CU_TENSOR_MAP_SWIZZLE_32B) == CUDA_ERROR_INVALID_VALUE);
  // Rank 3 takes one offset in [-32768, 32767].
  int wide_lo[1] = {-300}, wide_hi[1] = {0};
  CHECK(cuTensorMapEncodeIm2col(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, address, dim, stride,
                                wide_lo, wide_hi, 16, 64, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_ERROR_NOT_SUPPORTED);
  auto wide = [&](int lo, int hi, CUtensorMapIm2ColWideMode mode, cuuint32_t pixels) {
    return cuTensorMapEncodeIm2colWide(
        &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, address, dim, stride, lo, hi, 16, pixels, estride,
        CU_TENSOR_MAP_INTERLEAVE_NONE, mode, CU_TENSOR_MAP_SWIZZLE_NONE,
        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  // Valid: refused (the encoder needs compute capability 10.0; the emulated device is 9.0 here).
  CHECK(wide(-1, 1, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, 64) == CUDA_ERROR_NOT_SUPPORTED);
  // pixelsPerColumn is ignored in W128 mode.
  CHECK(wide(-1, 1, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128, 5000) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(wide(-1, 1, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, 5000) == CUDA_ERROR_INVALID_VALUE);
  CHECK(wide(-40000, 1, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, 64) == CUDA_ERROR_INVALID_VALUE);
  CHECK(wide(0, 0, static_cast<CUtensorMapIm2ColWideMode>(7), 64) == CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemFree(base));
}

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

// The primary context current and the module of kernels/<name> loaded.
CUmodule load_module(const char* name) {
  primary_context();
  CUmodule module = nullptr;
  const std::string ptx = read_file(kernel_path(name));
  REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  return module;
}

// Runs a tma_* kernel on 96 threads (`shift`: tma_2d's box offset in floats), then reads back
// the dumped box (`count` floats) and the output tensor (`words` floats).
void launch_round_trip(CUfunction f, CUtensorMap& in_map, CUtensorMap& out_map, Coords at,
                       uint32_t count, CUdeviceptr dump, CUdeviceptr out, size_t words,
                       uint32_t* shift, std::vector<float>& got, std::vector<float>& result) {
  uint32_t box_bytes = count * 4;
  void* args[] = {&in_map, &out_map, &at, &box_bytes, &dump, shift};
  REQUIRE_CU(cuLaunchKernel(f, 1, 1, 1, 96, 1, 1, 0, nullptr, args, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  got.resize(count);
  result.resize(words);
  REQUIRE_CU(cuMemcpyDtoH(got.data(), dump, count * 4));
  REQUIRE_CU(cuMemcpyDtoH(result.data(), out, words * 4));
}

// The tensor a round trip stored against its reference, word by word; frees the buffers.
void check_output(const std::string& what, const std::vector<float>& result,
                  const std::vector<float>& want, std::initializer_list<CUdeviceptr> buffers) {
  for (size_t i = 0; i < result.size(); ++i) {
    INFO(what << " output word " << i);
    REQUIRE(result[i] == want[i]);
  }
  for (CUdeviceptr p : buffers) CHECK_CU(cuMemFree(p));
}

// One round trip of kernel tma_<rank>d: the tensor (dims with padded strides, floats) is filled
// with distinct values; the box at `at` is dumped and stored back as v * 2 + 1 into a second
// tensor of the same shape (initially -1).
void round_trip(CUmodule module, int rank, const cuuint64_t* dims, const cuuint32_t* box,
                const Coords& at) {
  // Padded rows: dimension 0 takes dims[0] + 4 floats, rounded up to 16 bytes; the others
  // one extra index each.
  cuuint64_t pitch[5];
  pitch[0] = 4;
  cuuint64_t stride[4];
  for (int d = 1; d < rank; ++d) {
    const cuuint64_t extent =
        d == 1 ? ((dims[0] + 4) * 4 + 15) / 16 * 16 : pitch[d - 1] * (dims[d - 1] + 1);
    pitch[d] = extent;
    stride[d - 1] = extent;
  }
  const cuuint64_t bytes = pitch[rank - 1] * (rank == 1 ? dims[0] : dims[rank - 1]) + 64;
  std::vector<float> host(bytes / 4);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 9973) * 0.25f + 1.0f;
  CUdeviceptr in = 0, out = 0, dump = 0;
  REQUIRE_CU(cuMemAlloc(&in, bytes));
  REQUIRE_CU(cuMemAlloc(&out, bytes));
  REQUIRE_CU(cuMemcpyHtoD(in, host.data(), bytes));
  std::vector<float> minus(host.size(), -1.0f);
  REQUIRE_CU(cuMemcpyHtoD(out, minus.data(), bytes));
  uint32_t count = 1;
  for (int d = 0; d < rank; ++d) count *= box[d];
  REQUIRE_CU(cuMemAlloc(&dump, count * 4));
  alignas(64) CUtensorMap in_map, out_map;
  const cuuint32_t ones[5] = {1, 1, 1, 1, 1};
  REQUIRE_CU(cuTensorMapEncodeTiled(
      &in_map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank, reinterpret_cast<void*>(out), dims, stride,
      box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  // Encoded on `out` first: ReplaceAddress points it at the input.
  REQUIRE_CU(cuTensorMapReplaceAddress(&in_map, reinterpret_cast<void*>(in)));
  REQUIRE_CU(cuTensorMapEncodeTiled(
      &out_map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank, reinterpret_cast<void*>(out), dims, stride,
      box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  const std::string name = "tma_" + std::to_string(rank) + "d";
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, name.c_str()));
  std::vector<float> got, result;
  launch_round_trip(f, in_map, out_map, at, count, dump, out, host.size(), nullptr, got, result);
  // The reference: box element (i0, ..., i4) at linear index i0 + box0 * (i1 + box1 * ...).
  std::vector<float> want_out = minus;
  for (uint32_t e = 0; e < count; ++e) {
    uint32_t rest = e;
    bool inside = true;
    cuuint64_t offset = 0;
    for (int d = 0; d < rank; ++d) {
      const long g = static_cast<long>(at.c[d]) + static_cast<long>(rest % box[d]);
      rest /= box[d];
      if (g < 0 || g >= static_cast<long>(dims[d]))
        inside = false;
      else
        offset += static_cast<cuuint64_t>(g) * pitch[d];
    }
    const float v = inside ? host[offset / 4] : 0.0f;
    INFO(name << " element " << e);
    REQUIRE(got[e] == v);
    if (inside) want_out[offset / 4] = v * 2.0f + 1.0f;
  }
  check_output(name, result, want_out, {in, out, dump});
}

}  // namespace

TEST_CASE("tensor maps: cp.async.bulk.tensor tile loads and stores, 1D, 3D and 5D, with OOB",
          "[tensor_maps]") {
  CUmodule module = load_module("tma.ptx");
  {
    const cuuint64_t dims[5] = {100};
    const cuuint32_t box[5] = {32};
    round_trip(module, 1, dims, box, Coords{{8}});
    round_trip(module, 1, dims, box, Coords{{-12}});  // partly before the start
    round_trip(module, 1, dims, box, Coords{{84}});   // partly past the end
  }
  {
    const cuuint64_t dims[5] = {37, 11, 5};
    const cuuint32_t box[5] = {16, 4, 3};
    round_trip(module, 3, dims, box, Coords{{4, 2, 1}});
    round_trip(module, 3, dims, box, Coords{{28, -2, 3}});
    round_trip(module, 3, dims, box, Coords{{-8, 9, -1}});
  }
  {
    const cuuint64_t dims[5] = {9, 3, 4, 2, 3};
    const cuuint32_t box[5] = {8, 2, 3, 2, 2};
    round_trip(module, 5, dims, box, Coords{{0, 0, 0, 0, 0}});
    round_trip(module, 5, dims, box, Coords{{4, 2, 2, 1, 2}});
  }
  CHECK_CU(cuModuleUnload(module));
}

namespace {

// The shared-memory position of every element of a swizzled 2D box, written from the CUDA C++
// Programming Guide's statement of the pattern (not from the emulator's swizzle.h): shared
// memory is seen as 128-byte lines; in line y (the address / 128), 16-byte chunk x moves to
// chunk x ^ (y % n), n = 2, 4, 8 for the 32B, 64B and 128B swizzles, the address being the
// absolute shared address. `base` is the box's shared address modulo 1024.
void swizzled_round_trip(CUmodule module, CUtensorMapSwizzle mode, uint32_t base_floats,
                         const Coords& at) {
  const uint32_t span = mode == CU_TENSOR_MAP_SWIZZLE_32B   ? 32
                        : mode == CU_TENSOR_MAP_SWIZZLE_64B ? 64
                                                            : 128;
  const uint32_t n = span / 16;
  const cuuint64_t dims[2] = {70, 21};
  const cuuint64_t pitch = 80 * 4;  // bytes per row of the tensor
  const cuuint32_t box[2] = {span / 4, 16};
  const uint32_t count = box[0] * box[1];
  const cuuint64_t bytes = pitch * dims[1];
  std::vector<float> host(bytes / 4);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) + 0.5f;
  CUdeviceptr in = 0, out = 0, dump = 0;
  REQUIRE_CU(cuMemAlloc(&in, bytes));
  REQUIRE_CU(cuMemAlloc(&out, bytes));
  REQUIRE_CU(cuMemAlloc(&dump, count * 4));
  REQUIRE_CU(cuMemcpyHtoD(in, host.data(), bytes));
  std::vector<float> minus(host.size(), -1.0f);
  REQUIRE_CU(cuMemcpyHtoD(out, minus.data(), bytes));
  alignas(64) CUtensorMap in_map, out_map;
  const cuuint32_t ones[2] = {1, 1};
  const cuuint64_t stride[1] = {pitch};
  for (auto [map, address] : {std::pair{&in_map, in}, std::pair{&out_map, out}})
    REQUIRE_CU(cuTensorMapEncodeTiled(
        map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, reinterpret_cast<void*>(address), dims, stride,
        box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE, mode, CU_TENSOR_MAP_L2_PROMOTION_NONE,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "tma_2d"));
  std::vector<float> got, result;
  launch_round_trip(f, in_map, out_map, at, count, dump, out, host.size(), &base_floats, got,
                    result);
  std::vector<float> want_out = minus;
  const uint32_t base = base_floats * 4;
  for (uint32_t r = 0; r < box[1]; ++r)
    for (uint32_t i = 0; i < box[0]; ++i) {
      const long gx = at.c[0] + static_cast<long>(i), gy = at.c[1] + static_cast<long>(r);
      const bool inside =
          gx >= 0 && gy >= 0 && gx < static_cast<long>(dims[0]) && gy < static_cast<long>(dims[1]);
      const float v = inside ? host[(gy * pitch) / 4 + gx] : 0.0f;
      const uint32_t logical = base + r * span + i * 4;
      const uint32_t y = logical / 128, x = (logical % 128) / 16;
      const uint32_t physical = y * 128 + (x ^ (y % n)) * 16 + logical % 16;
      INFO("swizzle " << span << "B, box at shared " << base << ", row " << r << ", element " << i);
      REQUIRE(got[(physical - base) / 4] == v);
      if (inside) want_out[(gy * pitch) / 4 + gx] = v * 2.0f + 1.0f;
    }
  check_output("swizzle " + std::to_string(span) + "B, box at shared " + std::to_string(base),
               result, want_out, {in, out, dump});
}

}  // namespace

TEST_CASE("tensor maps: swizzled 2D tile loads and stores follow the documented pattern",
          "[tensor_maps]") {
  CUmodule module = load_module("tma.ptx");
  for (CUtensorMapSwizzle mode :
       {CU_TENSOR_MAP_SWIZZLE_32B, CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B})
    for (uint32_t base : {0u, 32u, 96u, 224u}) {  // floats: 0, 128, 384, 896 bytes
      swizzled_round_trip(module, mode, base, Coords{{8, 3}});
      swizzled_round_trip(module, mode, base, Coords{{64, -5}});  // partly outside
    }
  CHECK_CU(cuModuleUnload(module));
}

TEST_CASE("tensor maps: a map encoded by another driver is refused, never read", "[tensor_maps]") {
  // Another driver's encoding is simulated by changing the key this one writes
  // (CUSNAP_EMU_TENSOR_MAP_KEY; engine.h TensorMapImage::key, bytes 10-13): the copy engine and
  // cuTensorMapReplaceAddress must refuse the map rather than interpret its bytes.
  CUmodule module = load_module("tma.ptx");
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "tma_1d"));
  CUdeviceptr in = 0, out = 0, dump = 0;
  REQUIRE_CU(cuMemAlloc(&in, 256));
  REQUIRE_CU(cuMemAlloc(&out, 256));
  REQUIRE_CU(cuMemAlloc(&dump, 256));
  const cuuint64_t dims[1] = {64};
  const cuuint32_t box[1] = {64}, ones[1] = {1};
  alignas(64) CUtensorMap in_map, out_map, other;
  for (CUtensorMap* map : {&in_map, &out_map})
    REQUIRE_CU(cuTensorMapEncodeTiled(
        map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, reinterpret_cast<void*>(map == &in_map ? in : out),
        dims, nullptr, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  other = in_map;
  reinterpret_cast<uint8_t*>(&other)[11] ^= 0x5a;
  CHECK(cuTensorMapReplaceAddress(&other, reinterpret_cast<void*>(out)) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuTensorMapReplaceAddress(&in_map, reinterpret_cast<void*>(in)));
  Coords at{{0}};
  uint32_t box_bytes = 256;
  void* args[] = {&other, &out_map, &at, &box_bytes, &dump};
  REQUIRE_CU(cuLaunchKernel(f, 1, 1, 1, 96, 1, 1, 0, nullptr, args, nullptr));
  CHECK(cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_INSTRUCTION);
}

TEST_CASE("tensor maps: a TMA (128B swizzle) + wgmma GEMM equals the host's", "[tensor_maps]") {
  CUmodule module = load_module("wgmma.ptx");
  CUfunction f = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&f, module, "tma_gemm"));
  const int m = 128, n = 192, k = 192;
  // Small integers: every product and partial sum is exact, so any summation order agrees.
  auto half = [](int v) { return std::bit_cast<uint16_t>(static_cast<_Float16>(v)); };
  std::vector<int> a(m * k), b(n * k);
  for (int i = 0; i < m * k; ++i) a[i] = static_cast<int>((i * 7 + i / 5) % 9) - 4;
  for (int i = 0; i < n * k; ++i) b[i] = static_cast<int>((i * 5 + i / 3) % 7) - 3;
  std::vector<uint16_t> ha(a.size()), hb(b.size());
  for (size_t i = 0; i < a.size(); ++i) ha[i] = half(a[i]);
  for (size_t i = 0; i < b.size(); ++i) hb[i] = half(b[i]);
  CUdeviceptr da = 0, db = 0, dc = 0;
  REQUIRE_CU(cuMemAlloc(&da, ha.size() * 2));
  REQUIRE_CU(cuMemAlloc(&db, hb.size() * 2));
  REQUIRE_CU(cuMemAlloc(&dc, static_cast<size_t>(m) * n * 4));
  REQUIRE_CU(cuMemcpyHtoD(da, ha.data(), ha.size() * 2));
  REQUIRE_CU(cuMemcpyHtoD(db, hb.data(), hb.size() * 2));
  alignas(64) CUtensorMap a_map, b_map;
  const cuuint32_t box[2] = {64, 64}, ones[2] = {1, 1};
  const cuuint64_t stride[1] = {static_cast<cuuint64_t>(k) * 2};
  const cuuint64_t a_dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(m)};
  const cuuint64_t b_dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(n)};
  REQUIRE_CU(cuTensorMapEncodeTiled(
      &a_map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, reinterpret_cast<void*>(da), a_dims, stride, box,
      ones, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  REQUIRE_CU(cuTensorMapEncodeTiled(
      &b_map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, reinterpret_cast<void*>(db), b_dims, stride, box,
      ones, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  int mm = m, nn = n, kk = k;
  void* args[] = {&a_map, &b_map, &dc, &mm, &nn, &kk};
  REQUIRE_CU(cuLaunchKernel(f, n / 64, m / 64, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  std::vector<float> c(static_cast<size_t>(m) * n);
  REQUIRE_CU(cuMemcpyDtoH(c.data(), dc, c.size() * 4));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      long want = 0;
      for (int p = 0; p < k; ++p) want += static_cast<long>(a[i * k + p]) * b[j * k + p];
      INFO("C[" << i << "][" << j << "]");
      REQUIRE(c[static_cast<size_t>(i) * n + j] == static_cast<float>(want));
    }
  CHECK_CU(cuMemFree(da));
  CHECK_CU(cuMemFree(db));
  CHECK_CU(cuMemFree(dc));
  CHECK_CU(cuModuleUnload(module));
}

#endif
