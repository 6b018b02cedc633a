// texture_refs: the legacy texture and surface reference API (deprecated in cuda.h, still
// exported by the driver) with hand-written PTX in unified texture mode, since nvcc 13 no longer
// emits references from CUDA C++. Three kernels of one module:
//  - sample2d: a 2-D float CUDA array bound to `tex2d` (cuModuleGetTexRef, cuTexRefSetArray,
//    cuTexRefSetFormat, cuTexRefSetAddressMode wrap x / clamp y, cuTexRefSetFilterMode linear,
//    cuTexRefSetFlags normalized coordinates), sampled at quarter-texel coordinates inside, on
//    borders and outside [0, 1]; the host computes each sample as the CUDA Programming Guide's
//    "Texture Fetching" appendix defines linear filtering (weights multiples of 1/4: exact in the
//    hardware's 9-bit fixed-point weights; a small tolerance covers the weighted sum's rounding).
//  - fetch1d: linear device memory bound to `texlin` with cuTexRefSetAddress at an address that
//    is not texture-aligned, so the driver returns a byte offset that the kernel must add to its
//    element index (passed as a parameter); each fetched int4 is checked exactly.
//  - write_surface: a 2-D int array created with CUDA_ARRAY3D_SURFACE_LDST bound to the surface
//    reference `surf` (cuModuleGetSurfRef, cuSurfRefSetArray); the kernel writes every texel with
//    sust, the array is copied back (cuMemcpy2D) and checked exactly.
#include <cmath>

#include "sample_common.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

using namespace cusnap::samples;

namespace {

const char* kPtx = R"(
.version 7.0
.target sm_75, texmode_unified
.address_size 64
.global .texref tex2d;
.global .texref texlin;
.global .surfref surf;
.visible .entry sample2d(.param .u64 out, .param .u64 coords, .param .u32 n)
{
  .reg .pred %p1;
  .reg .b32 %r<8>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [coords];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd3, %r5, 8;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.v2.f32 {%f1, %f2}, [%rd4];
  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [tex2d, {%f1, %f2}];
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd1, %rd5;
  st.global.f32 [%rd6], %f3;
DONE:
  ret;
}
.visible .entry fetch1d(.param .u64 out, .param .u32 first, .param .u32 n)
{
  .reg .pred %p1;
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [first];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r6, %r2;
  @%p1 bra DONE;
  add.s32 %r7, %r6, %r1;
  tex.1d.v4.s32.s32 {%r8, %r9, %r10, %r11}, [texlin, {%r7}];
  mul.wide.u32 %rd2, %r6, 16;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r8, %r9, %r10, %r11};
DONE:
  ret;
}
.visible .entry write_surface(.param .u32 width, .param .u32 height)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  ld.param.u32 %r1, [width];
  ld.param.u32 %r2, [height];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  mov.u32 %r7, %ctaid.y;
  setp.ge.u32 %p1, %r6, %r1;
  setp.ge.u32 %p2, %r7, %r2;
  or.pred %p1, %p1, %p2;
  @%p1 bra DONE;
  mad.lo.s32 %r8, %r7, 1000, %r6;
  mul.lo.s32 %r8, %r8, 3;
  sub.s32 %r8, %r8, 7;
  shl.b32 %r9, %r6, 2;
  sust.b.2d.b32.trap [surf, {%r9, %r7}], {%r8};
DONE:
  ret;
}
)";

constexpr size_t kWidth = 64, kHeight = 32;

long wrap(long i, long n) { return ((i % n) + n) % n; }
long clamp(long i, long n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

float host_sample(const std::vector<float>& texels, float u, float v) {
  const float x = u * kWidth - 0.5f, y = v * kHeight - 0.5f;
  const float fx = std::floor(x), fy = std::floor(y);
  const double a = x - fx, b = y - fy;
  const long i = static_cast<long>(fx), j = static_cast<long>(fy);
  auto t = [&](long xi, long yj) {
    return static_cast<double>(texels[clamp(yj, kHeight) * kWidth + wrap(xi, kWidth)]);
  };
  return static_cast<float>((1 - a) * (1 - b) * t(i, j) + a * (1 - b) * t(i + 1, j) +
                            (1 - a) * b * t(i, j + 1) + a * b * t(i + 1, j + 1));
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 10, " (samples and fetches)");
  const size_t n = options.size;
  if (n > (1u << 20)) fail_usage("--size must be at most 1048576");

  // 2-D sampling inputs and the host reference.
  std::vector<float> texels(kWidth * kHeight);
  Lcg rng(11);
  for (float& t : texels) t = rng.next_float(-1.0f, 1.0f);
  std::vector<float> coords(2 * n), samples_ref(n);
  for (size_t i = 0; i < n; ++i) {
    const long qx = static_cast<long>(i * 37 % (16 * kWidth)) - 6 * static_cast<long>(kWidth);
    const long qy = static_cast<long>(i * 53 % (16 * kHeight)) - 6 * static_cast<long>(kHeight);
    coords[2 * i] = static_cast<float>(qx) / (4 * kWidth);
    coords[2 * i + 1] = static_cast<float>(qy) / (4 * kHeight);
    samples_ref[i] = host_sample(texels, coords[2 * i], coords[2 * i + 1]);
  }
  maybe_inject_error(options, samples_ref);
  // 1-D linear memory: int4 elements; the texture starts `skip` elements into the allocation.
  constexpr size_t kSkip = 5;
  std::vector<int> linear(4 * (n + kSkip));
  for (size_t i = 0; i < linear.size(); ++i) linear[i] = static_cast<int>(i * 7919 % 100003) - 500;
  std::vector<int> fetch_ref(linear.begin() + 4 * kSkip, linear.end());
  // Surface contents the kernel writes.
  const size_t sw = 40, sh = 12;
  std::vector<int> surface_ref(sw * sh);
  for (size_t y = 0; y < sh; ++y)
    for (size_t x = 0; x < sw; ++x)
      surface_ref[y * sw + x] = static_cast<int>((y * 1000 + x) * 3) - 7;

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction sample2d, fetch1d, write_surface;
  CU_CHECK(cuModuleGetFunction(&sample2d, module, "sample2d"));
  CU_CHECK(cuModuleGetFunction(&fetch1d, module, "fetch1d"));
  CU_CHECK(cuModuleGetFunction(&write_surface, module, "write_surface"));

  // The 2-D texture reference over an array.
  CUDA_ARRAY_DESCRIPTOR desc = {};
  desc.Width = kWidth;
  desc.Height = kHeight;
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.NumChannels = 1;
  CUarray array;
  CU_CHECK(cuArrayCreate(&array, &desc));
  CUDA_MEMCPY2D up = {};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = texels.data();
  up.srcPitch = kWidth * sizeof(float);
  up.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  up.dstArray = array;
  up.WidthInBytes = kWidth * sizeof(float);
  up.Height = kHeight;
  CU_CHECK(cuMemcpy2D(&up));
  CUtexref tex2d;
  CU_CHECK(cuModuleGetTexRef(&tex2d, module, "tex2d"));
  CU_CHECK(cuTexRefSetArray(tex2d, array, CU_TRSA_OVERRIDE_FORMAT));
  CU_CHECK(cuTexRefSetFormat(tex2d, CU_AD_FORMAT_FLOAT, 1));
  CU_CHECK(cuTexRefSetAddressMode(tex2d, 0, CU_TR_ADDRESS_MODE_WRAP));
  CU_CHECK(cuTexRefSetAddressMode(tex2d, 1, CU_TR_ADDRESS_MODE_CLAMP));
  CU_CHECK(cuTexRefSetFilterMode(tex2d, CU_TR_FILTER_MODE_LINEAR));
  CU_CHECK(cuTexRefSetFlags(tex2d, CU_TRSF_NORMALIZED_COORDINATES));

  CUdeviceptr d_coords, d_samples;
  CU_CHECK(cuMemAlloc(&d_coords, coords.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_samples, n * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_coords, coords.data(), coords.size() * sizeof(float)));
  unsigned count = static_cast<unsigned>(n);
  const unsigned block = 128;
  void* sample_params[] = {&d_samples, &d_coords, &count};
  CU_CHECK(cuLaunchKernel(sample2d, blocks_for(n, block), 1, 1, block, 1, 1, 0, nullptr,
                          sample_params, nullptr));
  std::vector<float> samples(n);
  CU_CHECK(cuMemcpyDtoH(samples.data(), d_samples, n * sizeof(float)));
  bool ok = compare_close(samples_ref, samples, 1e-5, 1e-5);

  // The 1-D linear texture reference, bound past the allocation's (aligned) start.
  CUdeviceptr d_linear, d_fetched;
  CU_CHECK(cuMemAlloc(&d_linear, linear.size() * sizeof(int)));
  CU_CHECK(cuMemcpyHtoD(d_linear, linear.data(), linear.size() * sizeof(int)));
  CU_CHECK(cuMemAlloc(&d_fetched, fetch_ref.size() * sizeof(int)));
  CUtexref texlin;
  CU_CHECK(cuModuleGetTexRef(&texlin, module, "texlin"));
  CU_CHECK(cuTexRefSetFormat(texlin, CU_AD_FORMAT_SIGNED_INT32, 4));
  CU_CHECK(cuTexRefSetFlags(texlin, CU_TRSF_READ_AS_INTEGER));
  size_t offset = 0;
  CU_CHECK(cuTexRefSetAddress(&offset, texlin, d_linear + kSkip * 16, n * 16));
  if (offset % 16 != 0) {
    std::printf("texture offset %zu is not a whole element\n", offset);
    return 1;
  }
  unsigned first = static_cast<unsigned>(offset / 16);
  void* fetch_params[] = {&d_fetched, &first, &count};
  CU_CHECK(cuLaunchKernel(fetch1d, blocks_for(n, block), 1, 1, block, 1, 1, 0, nullptr,
                          fetch_params, nullptr));
  std::vector<int> fetched(fetch_ref.size());
  CU_CHECK(cuMemcpyDtoH(fetched.data(), d_fetched, fetched.size() * sizeof(int)));
  ok = compare_exact(fetch_ref, fetched) && ok;

  // The surface reference over a surface-capable array.
  CUDA_ARRAY3D_DESCRIPTOR sdesc = {};
  sdesc.Width = sw;
  sdesc.Height = sh;
  sdesc.Format = CU_AD_FORMAT_SIGNED_INT32;
  sdesc.NumChannels = 1;
  sdesc.Flags = CUDA_ARRAY3D_SURFACE_LDST;
  CUarray surface_array;
  CU_CHECK(cuArray3DCreate(&surface_array, &sdesc));
  CUsurfref surf;
  CU_CHECK(cuModuleGetSurfRef(&surf, module, "surf"));
  CU_CHECK(cuSurfRefSetArray(surf, surface_array, 0));
  unsigned width = sw, height = sh;
  void* surface_params[] = {&width, &height};
  CU_CHECK(cuLaunchKernel(write_surface, blocks_for(sw, 32), sh, 1, 32, 1, 1, 0, nullptr,
                          surface_params, nullptr));
  std::vector<int> surface(sw * sh);
  CUDA_MEMCPY2D down = {};
  down.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  down.srcArray = surface_array;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = surface.data();
  down.dstPitch = sw * sizeof(int);
  down.WidthInBytes = sw * sizeof(int);
  down.Height = sh;
  CU_CHECK(cuMemcpy2D(&down));
  ok = compare_exact(surface_ref, surface) && ok;

  CU_CHECK(cuArrayDestroy(surface_array));
  CU_CHECK(cuArrayDestroy(array));
  CU_CHECK(cuMemFree(d_coords));
  CU_CHECK(cuMemFree(d_samples));
  CU_CHECK(cuMemFree(d_linear));
  CU_CHECK(cuMemFree(d_fetched));
  CU_CHECK(cuModuleUnload(module));
  return finish("texture_refs", ok,
                "n=" + std::to_string(n) + ", 2D linear texref, 1D linear texref at offset " +
                    std::to_string(offset) + ", surface reference");
}
