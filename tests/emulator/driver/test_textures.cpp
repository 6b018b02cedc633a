// CUDA arrays, texture objects and surface objects on the emulator, driven by nvcc-built kernels
// (kernels/texture.cu). Every sampled value is checked against the host reference below, written
// from the CUDA C++ Programming Guide's "Texture Fetching" appendix and independent of the
// emulator's code: normalized coordinates scale by the extent, nearest-point reads T[floor(x)],
// linear filtering weights the neighbours of x - 0.5 by frac(x - 0.5) in 1/256 steps, address
// modes wrap / clamp / mirror / border act on texel indices.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

// ---- host reference ------------------------------------------------------------------------

enum class Mode { kWrap, kClamp, kMirror, kBorder };

// Texel index `i` of an n-texel axis after the address mode; nullopt-like -1 for the border.
long ref_index(long i, long n, Mode m, bool normalized) {
  if (!normalized && m != Mode::kBorder) m = Mode::kClamp;  // wrap/mirror need normalized coords
  if (m == Mode::kBorder) return (i < 0 || i >= n) ? -1 : i;
  if (m == Mode::kClamp) return i < 0 ? 0 : (i >= n ? n - 1 : i);
  if (m == Mode::kWrap) {
    long r = i % n;
    return r < 0 ? r + n : r;
  }
  long period = 2 * n, r = i % period;
  if (r < 0) r += period;
  return r < n ? r : period - 1 - r;
}

// One axis of a lookup: the two texel indices and the weight of the second (linear), or one
// index (point).
struct Axis {
  long lo = 0, hi = 0;
  double w_hi = 0;
};

Axis ref_axis(float coord, long n, Mode m, bool normalized, bool linear) {
  float x = normalized ? coord * static_cast<float>(n) : coord;
  Axis a;
  if (!linear) {
    a.lo = a.hi = ref_index(static_cast<long>(std::floor(x)), n, m, normalized);
    return a;
  }
  float xb = x - 0.5f;
  double base = std::floor(static_cast<double>(xb));
  double frac = static_cast<double>(xb) - base;
  a.w_hi = std::round(frac * 256.0) / 256.0;  // 9-bit fixed point, 8 fractional bits
  a.lo = ref_index(static_cast<long>(base), n, m, normalized);
  a.hi = ref_index(static_cast<long>(base) + 1, n, m, normalized);
  return a;
}

// A float-channel image (already normalized where the read mode asks), `ch` channels per texel.
struct RefImage {
  long w = 1, h = 1, d = 1;
  int ch = 1;
  std::vector<double> v;  // [z][y][x][c]
  double at(long x, long y, long z, int c) const { return v[((z * h + y) * w + x) * ch + c]; }
};

struct RefSampler {
  Mode mode[3] = {Mode::kClamp, Mode::kClamp, Mode::kClamp};
  bool normalized = false, linear = false;
  double border[4] = {0, 0, 0, 0};
};

// Samples (x[, y[, z]]) of a `dims`-dimensional image: channel c, as the f32 the kernel returns.
float ref_sample(const RefImage& im, const RefSampler& s, int dims, const float* coord, int c,
                 long layer = 0) {
  Axis ax[3];
  const long ext[3] = {im.w, im.h, im.d};
  for (int k = 0; k < dims; ++k)
    ax[k] = ref_axis(coord[k], ext[k], s.mode[k], s.normalized, s.linear);
  double sum = 0;
  for (int corner = 0; corner < (1 << dims); ++corner) {
    double weight = 1;
    long idx[3] = {0, 0, layer};
    bool border = false;
    for (int k = 0; k < dims; ++k) {
      bool hi = (corner >> k) & 1;
      if (!s.linear && hi) weight = 0;
      weight *= s.linear ? (hi ? ax[k].w_hi : 1 - ax[k].w_hi) : 1;
      idx[k] = hi ? ax[k].hi : ax[k].lo;
      border = border || idx[k] < 0;
    }
    if (weight == 0) continue;
    double texel = c >= im.ch ? 0 : (border ? s.border[c] : im.at(idx[0], idx[1], idx[2], c));
    sum += weight * texel;
  }
  // To f32: nearest, ties away from zero, as an H200 rounds filtered fetches (the texture
  // sample's capture, tests/replayer/captures/h200): std::round of the sum in units of the
  // result's last place.
  if (sum == 0 || !std::isfinite(sum)) return static_cast<float>(sum);
  const double unit = std::ldexp(1.0, std::max(std::ilogb(sum), -126) - 23);
  return static_cast<float>(std::round(sum / unit) * unit);
}

// ---- driver helpers ------------------------------------------------------------------------

struct Module {
  CUmodule module = nullptr;
  Module() {
    const std::string ptx = read_file(kernel_path("texture.ptx"));
    REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  }
  ~Module() { cuModuleUnload(module); }
  CUfunction get(const char* name) const {
    CUfunction f = nullptr;
    REQUIRE_CU(cuModuleGetFunction(&f, module, name));
    return f;
  }
};

template <class T>
CUdeviceptr upload(const std::vector<T>& v) {
  CUdeviceptr p = 0;
  REQUIRE_CU(cuMemAlloc(&p, v.size() * sizeof(T) + 16));
  REQUIRE_CU(cuMemcpyHtoD(p, v.data(), v.size() * sizeof(T)));
  return p;
}

template <class T>
std::vector<T> download(CUdeviceptr p, size_t n) {
  std::vector<T> v(n);
  REQUIRE_CU(cuMemcpyDtoH(v.data(), p, n * sizeof(T)));
  return v;
}

CUresult launch(CUfunction f, unsigned grid, unsigned block, std::vector<void*> args) {
  CUresult r = cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, args.data(), nullptr);
  if (r != CUDA_SUCCESS) return r;
  return cuCtxSynchronize();
}

CUarray make_array(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch, unsigned flags) {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = w;
  desc.Height = h;
  desc.Depth = d;
  desc.Format = f;
  desc.NumChannels = ch;
  desc.Flags = flags;
  CUarray a = nullptr;
  REQUIRE_CU(cuArray3DCreate(&a, &desc));
  return a;
}

void fill_array(CUarray a, const void* host, size_t row_bytes, size_t h, size_t d) {
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = host;
  c.srcPitch = row_bytes;
  c.srcHeight = h;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = a;
  c.WidthInBytes = row_bytes;
  c.Height = h;
  c.Depth = d;
  REQUIRE_CU(cuMemcpy3D(&c));
}

CUtexObject make_texture(CUarray a, CUaddress_mode m0, CUaddress_mode m1, bool linear,
                         bool normalized, bool as_integer = false) {
  CUDA_RESOURCE_DESC res{};
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = a;
  CUDA_TEXTURE_DESC td{};
  td.addressMode[0] = m0;
  td.addressMode[1] = m1;
  td.addressMode[2] = m1;
  td.filterMode = linear ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
  td.flags = (normalized ? CU_TRSF_NORMALIZED_COORDINATES : 0) |
             (as_integer ? CU_TRSF_READ_AS_INTEGER : 0);
  td.borderColor[0] = 0.25f;
  td.borderColor[1] = 0.5f;
  td.borderColor[2] = 0.75f;
  td.borderColor[3] = 1.0f;
  CUtexObject t = 0;
  REQUIRE_CU(cuTexObjectCreate(&t, &res, &td, nullptr));
  return t;
}

Mode mode_of(CUaddress_mode m) {
  switch (m) {
    case CU_TR_ADDRESS_MODE_WRAP:
      return Mode::kWrap;
    case CU_TR_ADDRESS_MODE_MIRROR:
      return Mode::kMirror;
    case CU_TR_ADDRESS_MODE_BORDER:
      return Mode::kBorder;
    default:
      return Mode::kClamp;
  }
}

// Coordinates that hit texel centres, texel borders exactly, fractions in between, negative
// values and values past the far edge.
std::vector<float> probe_coords(long n, bool normalized) {
  std::vector<float> c;
  for (float t = -1.25f; t <= n + 1.25f; t += 0.125f) c.push_back(t);
  c.push_back(0.0f);
  c.push_back(-0.0f);
  c.push_back(static_cast<float>(n));
  c.push_back(0.3f);
  c.push_back(1.7f);
  c.push_back(-7.9f);
  c.push_back(3.0f * n + 0.4f);
  if (normalized)
    for (float& x : c) x /= static_cast<float>(n);
  return c;
}

}  // namespace

TEST_CASE(
    "textures: 2D linear filtering of float4 texels, normalized and unnormalized, every "
    "address mode",
    "[textures]") {
  primary_context();
  Module m;
  const long w = 5, h = 3;
  std::vector<float> texels(w * h * 4);
  RefImage ref;
  ref.w = w;
  ref.h = h;
  ref.ch = 4;
  for (size_t i = 0; i < texels.size(); ++i) {
    texels[i] = static_cast<float>((i * 7919) % 101) * 0.37f - 11.0f;
    ref.v.push_back(texels[i]);
  }
  CUarray a = make_array(w, h, 0, CU_AD_FORMAT_FLOAT, 4, 0);
  fill_array(a, texels.data(), w * 16, h, 1);
  const CUaddress_mode modes[] = {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_CLAMP,
                                  CU_TR_ADDRESS_MODE_MIRROR, CU_TR_ADDRESS_MODE_BORDER};
  for (bool normalized : {true, false}) {
    for (bool linear : {true, false}) {
      for (CUaddress_mode mx : modes) {
        for (CUaddress_mode my : modes) {
          CUtexObject t = make_texture(a, mx, my, linear, normalized);
          std::vector<float> cx = probe_coords(w, normalized), cy = probe_coords(h, normalized);
          std::vector<float> xs, ys;
          for (size_t i = 0; i < cx.size(); ++i)
            for (size_t j = 0; j < cy.size(); j += 3) {
              xs.push_back(cx[i]);
              ys.push_back(cy[(j + i) % cy.size()]);
            }
          int n = static_cast<int>(xs.size());
          CUdeviceptr dx = upload(xs), dy = upload(ys), dout = 0;
          REQUIRE_CU(cuMemAlloc(&dout, n * 16));
          CUfunction f = m.get("sample2d");
          REQUIRE_CU(launch(f, (n + 127) / 128, 128, {&t, &dout, &dx, &dy, &n}));
          std::vector<float> out = download<float>(dout, n * 4);
          RefSampler s;
          s.mode[0] = mode_of(mx);
          s.mode[1] = mode_of(my);
          s.normalized = normalized;
          s.linear = linear;
          s.border[0] = 0.25;
          s.border[1] = 0.5;
          s.border[2] = 0.75;
          s.border[3] = 1.0;
          int mismatches = 0;
          for (int i = 0; i < n; ++i) {
            const float c[2] = {xs[i], ys[i]};
            for (int ch = 0; ch < 4; ++ch) {
              float expect = ref_sample(ref, s, 2, c, ch);
              if (out[i * 4 + ch] != expect && mismatches++ < 5) {
                INFO("normalized " << normalized << " linear " << linear << " modes " << mx << ","
                                   << my << " at (" << xs[i] << ", " << ys[i] << ") channel "
                                   << ch);
                CHECK(out[i * 4 + ch] == expect);
              }
            }
          }
          CHECK(mismatches == 0);
          cuMemFree(dx);
          cuMemFree(dy);
          cuMemFree(dout);
          REQUIRE_CU(cuTexObjectDestroy(t));
        }
      }
    }
  }
  REQUIRE_CU(cuArrayDestroy(a));
}

TEST_CASE("textures: 8-bit texels as normalized floats (linear) and as integers (point)",
          "[textures]") {
  primary_context();
  Module m;
  const long w = 4, h = 4;
  std::vector<unsigned char> texels(w * h * 4);
  for (size_t i = 0; i < texels.size(); ++i) texels[i] = static_cast<unsigned char>(i * 37 + 5);
  CUarray a = make_array(w, h, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
  fill_array(a, texels.data(), w * 4, h, 1);
  std::vector<float> xs, ys;
  for (float x = -0.5f; x <= 4.5f; x += 0.3f)
    for (float y = -0.5f; y <= 4.5f; y += 0.7f) {
      xs.push_back(x);
      ys.push_back(y);
    }
  int n = static_cast<int>(xs.size());
  CUdeviceptr dx = upload(xs), dy = upload(ys), dout = 0;
  REQUIRE_CU(cuMemAlloc(&dout, n * 16));
  RefImage ref;
  ref.w = w;
  ref.h = h;
  ref.ch = 4;
  for (unsigned char v : texels) ref.v.push_back(v / 255.0);
  {
    CUtexObject t =
        make_texture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_BORDER, true, false);
    REQUIRE_CU(launch(m.get("sample2d"), (n + 63) / 64, 64, {&t, &dout, &dx, &dy, &n}));
    std::vector<float> out = download<float>(dout, n * 4);
    RefSampler s;
    s.mode[0] = Mode::kClamp;
    s.mode[1] = Mode::kBorder;
    s.linear = true;
    s.border[0] = 0.25;
    s.border[1] = 0.5;
    s.border[2] = 0.75;
    s.border[3] = 1.0;
    for (int i = 0; i < n; ++i)
      for (int ch = 0; ch < 4; ++ch) {
        const float c[2] = {xs[i], ys[i]};
        INFO("(" << xs[i] << ", " << ys[i] << ") channel " << ch);
        CHECK(out[i * 4 + ch] == ref_sample(ref, s, 2, c, ch));
      }
    cuTexObjectDestroy(t);
  }
  {
    CUtexObject t =
        make_texture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP, false, false, true);
    REQUIRE_CU(launch(m.get("sample2d_int"), (n + 63) / 64, 64, {&t, &dout, &dx, &dy, &n}));
    std::vector<unsigned char> out = download<unsigned char>(dout, n * 4);
    for (int i = 0; i < n; ++i) {
      long x = std::lround(std::floor(xs[i])), y = std::lround(std::floor(ys[i]));
      x = std::min<long>(std::max<long>(x, 0), w - 1);
      y = std::min<long>(std::max<long>(y, 0), h - 1);
      for (int ch = 0; ch < 4; ++ch) CHECK(out[i * 4 + ch] == texels[(y * w + x) * 4 + ch]);
    }
    cuTexObjectDestroy(t);
  }
  cuMemFree(dx);
  cuMemFree(dy);
  cuMemFree(dout);
  cuArrayDestroy(a);
}

TEST_CASE("textures: tex1Dfetch on linear memory reads 0 outside the range", "[textures]") {
  primary_context();
  Module m;
  const int count = 10;
  std::vector<int> data(count * 4);
  for (int i = 0; i < count * 4; ++i) data[i] = i * 1000 - 7;
  CUdeviceptr d = upload(data);
  CUDA_RESOURCE_DESC res{};
  res.resType = CU_RESOURCE_TYPE_LINEAR;
  res.res.linear.devPtr = d;
  res.res.linear.format = CU_AD_FORMAT_SIGNED_INT32;
  res.res.linear.numChannels = 4;
  res.res.linear.sizeInBytes = data.size() * sizeof(int);
  CUDA_TEXTURE_DESC td{};
  td.flags = CU_TRSF_READ_AS_INTEGER;
  CUtexObject t = 0;
  REQUIRE_CU(cuTexObjectCreate(&t, &res, &td, nullptr));
  int n = count + 4;
  CUdeviceptr out = 0;
  REQUIRE_CU(cuMemAlloc(&out, n * 16));
  REQUIRE_CU(launch(m.get("fetch1d"), 1, 32, {&t, &out, &n}));
  std::vector<int> got = download<int>(out, n * 4);
  for (int i = 0; i < n; ++i) {
    const int index = i - 2;
    for (int ch = 0; ch < 4; ++ch)
      CHECK(got[i * 4 + ch] == (index >= 0 && index < count ? data[index * 4 + ch] : 0));
  }
  CUDA_RESOURCE_DESC back{};
  REQUIRE_CU(cuTexObjectGetResourceDesc(&back, t));
  CHECK(back.resType == CU_RESOURCE_TYPE_LINEAR);
  CHECK(back.res.linear.devPtr == d);
  CUDA_TEXTURE_DESC tback{};
  REQUIRE_CU(cuTexObjectGetTextureDesc(&tback, t));
  CHECK(tback.flags == CU_TRSF_READ_AS_INTEGER);
  REQUIRE_CU(cuTexObjectDestroy(t));
  CHECK(cuTexObjectDestroy(t) == CUDA_ERROR_INVALID_VALUE);
  cuMemFree(d);
  cuMemFree(out);
}

TEST_CASE("textures: tex3D trilinear, layered tex2DLayered and 1D point sampling", "[textures]") {
  primary_context();
  Module m;
  const long w = 4, h = 3, dep = 3;
  std::vector<float> texels(w * h * dep);
  RefImage ref;
  ref.w = w;
  ref.h = h;
  ref.d = dep;
  for (size_t i = 0; i < texels.size(); ++i) {
    texels[i] = static_cast<float>(i * i % 17) - 3.5f;
    ref.v.push_back(texels[i]);
  }
  std::vector<float> xs, ys, zs;
  for (float x = -0.75f; x <= 4.75f; x += 0.5f)
    for (float y = -0.25f; y <= 3.5f; y += 0.75f)
      for (float z = -0.5f; z <= 3.5f; z += 0.625f) {
        xs.push_back(x);
        ys.push_back(y);
        zs.push_back(z);
      }
  int n = static_cast<int>(xs.size());
  CUdeviceptr dx = upload(xs), dy = upload(ys), dz = upload(zs), dout = 0;
  REQUIRE_CU(cuMemAlloc(&dout, n * 4));
  SECTION("3D") {
    CUarray a = make_array(w, h, dep, CU_AD_FORMAT_FLOAT, 1, 0);
    fill_array(a, texels.data(), w * 4, h, dep);
    CUtexObject t =
        make_texture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP, true, false);
    REQUIRE_CU(launch(m.get("sample3d"), (n + 127) / 128, 128, {&t, &dout, &dx, &dy, &dz, &n}));
    std::vector<float> out = download<float>(dout, n);
    RefSampler s;
    s.linear = true;
    for (int i = 0; i < n; ++i) {
      const float c[3] = {xs[i], ys[i], zs[i]};
      INFO("(" << xs[i] << ", " << ys[i] << ", " << zs[i] << ")");
      CHECK(out[i] == ref_sample(ref, s, 3, c, 0));
    }
    cuTexObjectDestroy(t);
    cuArrayDestroy(a);
  }
  SECTION("layered") {
    CUarray a = make_array(w, h, dep, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED);
    fill_array(a, texels.data(), w * 4, h, dep);
    CUtexObject t = make_texture(a, CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_MIRROR, true, true);
    for (int layer : {0, 2}) {
      std::vector<float> nx(xs), ny(ys);
      for (float& x : nx) x /= w;
      for (float& y : ny) y /= h;
      CUdeviceptr ndx = upload(nx), ndy = upload(ny);
      REQUIRE_CU(launch(m.get("sample_layered"), (n + 127) / 128, 128,
                        {&t, &dout, &ndx, &ndy, &layer, &n}));
      std::vector<float> out = download<float>(dout, n);
      RefSampler s;
      s.linear = true;
      s.normalized = true;
      s.mode[0] = Mode::kWrap;
      s.mode[1] = Mode::kMirror;
      for (int i = 0; i < n; ++i) {
        const float c[2] = {nx[i], ny[i]};
        CHECK(out[i] == ref_sample(ref, s, 2, c, 0, layer));
      }
      cuMemFree(ndx);
      cuMemFree(ndy);
    }
    cuTexObjectDestroy(t);
    cuArrayDestroy(a);
  }
  SECTION("1D point, mirror and border") {
    CUarray a = nullptr;
    CUDA_ARRAY_DESCRIPTOR d1{};
    d1.Width = w;
    d1.Format = CU_AD_FORMAT_FLOAT;
    d1.NumChannels = 1;
    REQUIRE_CU(cuArrayCreate(&a, &d1));
    REQUIRE_CU(cuMemcpyHtoA(a, 0, texels.data(), w * 4));
    RefImage r1;
    r1.w = w;
    r1.v.assign(texels.begin(), texels.begin() + w);
    for (CUaddress_mode mode : {CU_TR_ADDRESS_MODE_MIRROR, CU_TR_ADDRESS_MODE_BORDER}) {
      CUtexObject t = make_texture(a, mode, mode, false, true);
      std::vector<float> cx = probe_coords(w, true);
      int n1 = static_cast<int>(cx.size());
      CUdeviceptr dcx = upload(cx);
      REQUIRE_CU(launch(m.get("sample1d"), 1, 128, {&t, &dout, &dcx, &n1}));
      std::vector<float> out = download<float>(dout, n1);
      RefSampler s;
      s.normalized = true;
      s.mode[0] = mode_of(mode);
      s.border[0] = 0.25;
      for (int i = 0; i < n1; ++i) {
        INFO("x " << cx[i] << " mode " << mode);
        CHECK(out[i] == ref_sample(r1, s, 1, &cx[i], 0));
      }
      cuMemFree(dcx);
      cuTexObjectDestroy(t);
    }
    cuArrayDestroy(a);
  }
  cuMemFree(dx);
  cuMemFree(dy);
  cuMemFree(dz);
  cuMemFree(dout);
}

TEST_CASE("textures: tex2DLod on a mipmapped array, point and linear mipmap filtering",
          "[textures]") {
  primary_context();
  Module m;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = 8;
  desc.Height = 4;
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.NumChannels = 1;
  CUmipmappedArray mip = nullptr;
  REQUIRE_CU(cuMipmappedArrayCreate(&mip, &desc, 4));
  CHECK(cuMipmappedArrayCreate(&mip, &desc, 5) == CUDA_ERROR_INVALID_VALUE);
  std::vector<RefImage> levels;
  for (unsigned l = 0; l < 4; ++l) {
    CUarray level = nullptr;
    REQUIRE_CU(cuMipmappedArrayGetLevel(&level, mip, l));
    CUDA_ARRAY3D_DESCRIPTOR ld{};
    REQUIRE_CU(cuArray3DGetDescriptor(&ld, level));
    CHECK(ld.Width == std::max<size_t>(8 >> l, 1));
    CHECK(ld.Height == std::max<size_t>(4 >> l, 1));
    RefImage r;
    r.w = static_cast<long>(ld.Width);
    r.h = static_cast<long>(ld.Height);
    std::vector<float> v(r.w * r.h);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(100 * l + i);
    r.v.assign(v.begin(), v.end());
    fill_array(level, v.data(), r.w * 4, r.h, 1);
    levels.push_back(r);
  }
  CHECK(cuArrayDestroy(reinterpret_cast<CUarray>(0)) == CUDA_ERROR_INVALID_HANDLE);
  CUarray level0 = nullptr;
  REQUIRE_CU(cuMipmappedArrayGetLevel(&level0, mip, 0));
  CHECK(cuArrayDestroy(level0) == CUDA_ERROR_INVALID_HANDLE);  // owned by the mipmapped array
  std::vector<float> xs, ys;
  for (float x = 0.0f; x <= 1.0f; x += 0.1f)
    for (float y = 0.05f; y <= 1.0f; y += 0.3f) {
      xs.push_back(x);
      ys.push_back(y);
    }
  int n = static_cast<int>(xs.size());
  CUdeviceptr dx = upload(xs), dy = upload(ys), dout = 0;
  REQUIRE_CU(cuMemAlloc(&dout, n * 4));
  for (bool mip_linear : {false, true}) {
    CUDA_RESOURCE_DESC res{};
    res.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    res.res.mipmap.hMipmappedArray = mip;
    CUDA_TEXTURE_DESC td{};
    td.addressMode[0] = td.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
    td.filterMode = CU_TR_FILTER_MODE_LINEAR;
    td.mipmapFilterMode = mip_linear ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
    td.flags = CU_TRSF_NORMALIZED_COORDINATES;
    td.maxMipmapLevelClamp = 3;
    CUtexObject t = 0;
    REQUIRE_CU(cuTexObjectCreate(&t, &res, &td, nullptr));
    for (float lod : {-1.0f, 0.0f, 0.25f, 1.5f, 2.75f, 9.0f}) {
      REQUIRE_CU(launch(m.get("sample_lod"), 1, 128, {&t, &dout, &dx, &dy, &lod, &n}));
      std::vector<float> out = download<float>(dout, n);
      RefSampler s;
      s.linear = true;
      s.normalized = true;
      float l = std::min(std::max(lod, 0.0f), 3.0f);
      for (int i = 0; i < n; ++i) {
        const float c[2] = {xs[i], ys[i]};
        double expect;
        if (!mip_linear) {
          expect = ref_sample(levels[static_cast<int>(std::floor(l + 0.5f))], s, 2, c, 0);
        } else {
          int l0 = static_cast<int>(std::floor(l));
          int l1 = std::min(l0 + 1, 3);
          double f = l - l0;
          expect = static_cast<float>((1 - f) * ref_sample(levels[l0], s, 2, c, 0) +
                                      f * ref_sample(levels[l1], s, 2, c, 0));
        }
        INFO("lod " << lod << " mip_linear " << mip_linear << " at " << xs[i] << "," << ys[i]);
        CHECK(out[i] == Approx(expect).epsilon(1e-6));
      }
    }
    cuTexObjectDestroy(t);
  }
  REQUIRE_CU(cuMipmappedArrayDestroy(mip));
  cuMemFree(dx);
  cuMemFree(dy);
  cuMemFree(dout);
}

TEST_CASE("textures: tld4 gathers one channel of the bilinear footprint", "[textures]") {
  primary_context();
  Module m;
  const long w = 4, h = 3;
  std::vector<float> texels(w * h * 2);
  for (size_t i = 0; i < texels.size(); ++i) texels[i] = static_cast<float>(i) + 0.5f;
  CUarray a = make_array(w, h, 0, CU_AD_FORMAT_FLOAT, 2, CUDA_ARRAY3D_TEXTURE_GATHER);
  fill_array(a, texels.data(), w * 8, h, 1);
  CUtexObject t = make_texture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP, false, false);
  std::vector<float> xs = {0.5f, 1.0f, 2.3f, 3.9f, -1.0f}, ys = {0.5f, 1.0f, 2.7f, 0.1f, 5.0f};
  int n = static_cast<int>(xs.size());
  CUdeviceptr dx = upload(xs), dy = upload(ys), dout = 0;
  REQUIRE_CU(cuMemAlloc(&dout, n * 16));
  REQUIRE_CU(launch(m.get("gather"), 1, 32, {&t, &dout, &dx, &dy, &n}));
  std::vector<float> out = download<float>(dout, n * 4);
  auto texel = [&](long x, long y) {
    x = std::min(std::max(x, 0L), w - 1);
    y = std::min(std::max(y, 0L), h - 1);
    return texels[(y * w + x) * 2 + 1];  // component 1 (green)
  };
  for (int i = 0; i < n; ++i) {
    long x0 = static_cast<long>(std::floor(xs[i] - 0.5f)),
         y0 = static_cast<long>(std::floor(ys[i] - 0.5f));
    INFO("at " << xs[i] << "," << ys[i]);
    CHECK(out[i * 4 + 0] == texel(x0, y0 + 1));
    CHECK(out[i * 4 + 1] == texel(x0 + 1, y0 + 1));
    CHECK(out[i * 4 + 2] == texel(x0 + 1, y0));
    CHECK(out[i * 4 + 3] == texel(x0, y0));
  }
  cuTexObjectDestroy(t);
  cuArrayDestroy(a);
  cuMemFree(dx);
  cuMemFree(dy);
  cuMemFree(dout);
}

TEST_CASE("textures: a NaN coordinate fails the launch instead of guessing", "[textures]") {
  primary_context();
  Module m;
  CUarray a = make_array(4, 4, 0, CU_AD_FORMAT_FLOAT, 4, 0);
  CUtexObject t = make_texture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP, true, true);
  std::vector<float> xs = {0.5f, std::numeric_limits<float>::quiet_NaN()}, ys = {0.5f, 0.5f};
  int n = 2;
  CUdeviceptr dx = upload(xs), dy = upload(ys), dout = 0;
  REQUIRE_CU(cuMemAlloc(&dout, n * 16));
  CHECK(launch(m.get("sample2d"), 1, 32, {&t, &dout, &dx, &dy, &n}) ==
        CUDA_ERROR_ILLEGAL_INSTRUCTION);
  // The error is sticky, as every launch error; the test process keeps its primary context.
  cuDevicePrimaryCtxReset(0);
}

TEST_CASE("surfaces: surf2Dread/surf2Dwrite with trap, clamp and zero boundaries", "[surfaces]") {
  primary_context();
  Module m;
  const unsigned w = 8, h = 3;
  std::vector<unsigned char> texels(w * h * 4);
  for (size_t i = 0; i < texels.size(); ++i) texels[i] = static_cast<unsigned char>(i * 11);
  CUarray a = make_array(w, h, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, CUDA_ARRAY3D_SURFACE_LDST);
  fill_array(a, texels.data(), w * 4, h, 1);
  CUDA_RESOURCE_DESC res{};
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = a;
  CUsurfObject s = 0;
  REQUIRE_CU(cuSurfObjectCreate(&s, &res));
  CUdeviceptr edge = 0;
  REQUIRE_CU(cuMemAlloc(&edge, w * h * 4));
  REQUIRE_CU(cuLaunchKernel(m.get("surface_rw"), h, 1, 1, w, 1, 1, 0, nullptr,
                            std::vector<void*>{&s, &edge}.data(), nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  std::vector<unsigned char> back(w * h * 4);
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = a;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = back.data();
  c.dstPitch = w * 4;
  c.WidthInBytes = w * 4;
  c.Height = h;
  REQUIRE_CU(cuMemcpy2D(&c));
  for (size_t i = 0; i < texels.size(); ++i)
    CHECK(back[i] == static_cast<unsigned char>(texels[i] + (i % 4 == 0 ? 1 : 0)));
  CHECK(download<unsigned>(edge, w * h) == std::vector<unsigned>(w * h, 0u));

  CUdeviceptr out = 0;
  REQUIRE_CU(cuMemAlloc(&out, 4));
  int x = 100, y = -5;  // clamps to texel (7, 0)
  REQUIRE_CU(launch(m.get("surface_clamp"), 1, 1, {&s, &x, &y, &out}));
  unsigned word;
  std::memcpy(&word, &back[7 * 4], 4);
  CHECK(download<unsigned>(out, 1)[0] == word);
  unsigned after = 0;
  CHECK(cuMemcpyAtoH(&after, a, 0, 4) == CUDA_ERROR_INVALID_VALUE);  // not a 1D array
  CUDA_MEMCPY2D one{};
  one.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  one.srcArray = a;
  one.srcXInBytes = 7 * 4;
  one.dstMemoryType = CU_MEMORYTYPE_HOST;
  one.dstHost = &after;
  one.WidthInBytes = 4;
  one.Height = 1;
  REQUIRE_CU(cuMemcpy2D(&one));
  CHECK(after == word + 1000u);

  int bad_x = static_cast<int>(w);
  CHECK(launch(m.get("surface_trap"), 1, 1, {&s, &bad_x}) == CUDA_ERROR_ILLEGAL_ADDRESS);
  cuDevicePrimaryCtxReset(0);
}

TEST_CASE("textures: txq, suq and istypep answer for the objects", "[textures]") {
  primary_context();
  Module m;
  CUarray a = make_array(6, 5, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  CUtexObject t = make_texture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP, false, false);
  CUDA_RESOURCE_DESC res{};
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = a;
  CUsurfObject s = 0;
  REQUIRE_CU(cuSurfObjectCreate(&s, &res));
  CUdeviceptr out = 0;
  REQUIRE_CU(cuMemAlloc(&out, 8 * 4));
  REQUIRE_CU(launch(m.get("queries"), 1, 1, {&t, &s, &out}));
  CHECK(download<unsigned>(out, 8) == std::vector<unsigned>{6, 5, 1, 6, 5, 1, 1, 0});
  CUDA_RESOURCE_DESC back{};
  REQUIRE_CU(cuSurfObjectGetResourceDesc(&back, s));
  CHECK(back.res.array.hArray == a);
  CHECK(cuSurfObjectGetResourceDesc(&back, t) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuSurfObjectDestroy(s));
  REQUIRE_CU(cuTexObjectDestroy(t));
  REQUIRE_CU(cuArrayDestroy(a));
  cuMemFree(out);
}

// Forms nvcc's CUDA C++ intrinsics do not produce, in hand-written PTX: 1D, 3D and layered
// surfaces with every out-of-bounds mode and vector widths, integer texture coordinates, a
// layered 1D texture, and the txq/suq queries.
TEST_CASE("textures: hand-written PTX surface, texture and query forms", "[textures]") {
  primary_context();
  const char* ptx = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .entry surf_forms(.param .u64 s1d, .param .u64 s3d, .param .u64 sa1d, .param .u64 out)
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  .reg .b16 %rs<4>;
  ld.param.u64 %rd1, [s1d];
  ld.param.u64 %rd2, [s3d];
  ld.param.u64 %rd3, [sa1d];
  ld.param.u64 %rd4, [out];
  mov.b32 %r1, 1000;
  suld.b.1d.b32.clamp {%r2}, [%rd1, {%r1}];
  st.global.u32 [%rd4], %r2;
  mov.b32 %r1, -4;
  suld.b.1d.b32.zero {%r3}, [%rd1, {%r1}];
  st.global.u32 [%rd4+4], %r3;
  mov.b32 %r1, 4;
  suld.b.1d.v2.b16 {%rs1, %rs2}, [%rd1, {%r1}];
  cvt.u32.u16 %r4, %rs1;
  cvt.u32.u16 %r5, %rs2;
  st.global.u32 [%rd4+8], %r4;
  st.global.u32 [%rd4+12], %r5;
  mov.b32 %r6, 8;
  mov.b32 %r7, 1;
  mov.b32 %r8, 1;
  mov.b32 %r9, 11259375;
  sust.b.3d.b32.trap [%rd2, {%r6, %r7, %r8, %r8}], {%r9};
  mov.b32 %r8, 5;
  sust.b.3d.b32.zero [%rd2, {%r6, %r7, %r8, %r8}], {%r9};
  mov.b32 %r10, 2;
  mov.b32 %r11, 4;
  suld.b.a1d.b32.trap {%r12}, [%rd3, {%r10, %r11}];
  st.global.u32 [%rd4+16], %r12;
  suq.width.b32 %r13, [%rd2];
  suq.height.b32 %r14, [%rd2];
  suq.depth.b32 %r15, [%rd2];
  suq.array_size.b32 %r16, [%rd3];
  st.global.u32 [%rd4+20], %r13;
  st.global.u32 [%rd4+24], %r14;
  st.global.u32 [%rd4+28], %r15;
  st.global.u32 [%rd4+32], %r16;
  ret;
}
.visible .entry tex_forms(.param .u64 t2d, .param .u64 ta1d, .param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .f32 %f<16>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [t2d];
  ld.param.u64 %rd2, [ta1d];
  ld.param.u64 %rd3, [out];
  mov.b32 %r1, -3;
  mov.b32 %r2, 1;
  tex.2d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {%r1, %r2}];
  st.global.f32 [%rd3], %f1;
  st.global.f32 [%rd3+4], %f2;
  st.global.f32 [%rd3+8], %f4;
  mov.b32 %r3, 1;
  mov.f32 %f5, 0f3FC00000;
  tex.a1d.v4.f32.f32 {%f6, %f7, %f8, %f9}, [%rd2, {%r3, %f5}];
  st.global.f32 [%rd3+12], %f6;
  txq.array_size.b32 %r4, [%rd2];
  txq.normalized_coords.b32 %r5, [%rd1];
  txq.depth.b32 %r6, [%rd1];
  st.global.u32 [%rd3+16], %r4;
  st.global.u32 [%rd3+20], %r5;
  st.global.u32 [%rd3+24], %r6;
  ret;
}
)";
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx));
  CUfunction surf_forms = nullptr, tex_forms = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&surf_forms, module, "surf_forms"));
  REQUIRE_CU(cuModuleGetFunction(&tex_forms, module, "tex_forms"));

  auto surface_of = [](CUarray a) {
    CUDA_RESOURCE_DESC res{};
    res.resType = CU_RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = a;
    CUsurfObject s = 0;
    REQUIRE_CU(cuSurfObjectCreate(&s, &res));
    return s;
  };
  CUarray a1 = make_array(8, 0, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, CUDA_ARRAY3D_SURFACE_LDST);
  std::vector<unsigned> v1(8);
  for (unsigned i = 0; i < 8; ++i) v1[i] = 0x10002000u + i * 0x00010001u;
  REQUIRE_CU(cuMemcpyHtoA(a1, 0, v1.data(), 32));
  CUarray a3 = make_array(4, 3, 2, CU_AD_FORMAT_UNSIGNED_INT32, 1, CUDA_ARRAY3D_SURFACE_LDST);
  std::vector<unsigned> v3(24, 7);
  fill_array(a3, v3.data(), 16, 3, 2);
  CUarray al = make_array(4, 0, 3, CU_AD_FORMAT_UNSIGNED_INT32, 1,
                          CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_LAYERED);
  std::vector<unsigned> vl(12);
  for (unsigned i = 0; i < 12; ++i) vl[i] = 500 + i;
  fill_array(al, vl.data(), 16, 1, 3);
  CUsurfObject s1 = surface_of(a1), s3 = surface_of(a3), sl = surface_of(al);
  CUdeviceptr out = 0;
  REQUIRE_CU(cuMemAlloc(&out, 64));
  REQUIRE_CU(launch(surf_forms, 1, 1, {&s1, &s3, &sl, &out}));
  std::vector<unsigned> got = download<unsigned>(out, 9);
  CHECK(got[0] == v1[7]);             // x = 1000 bytes clamps to the last element
  CHECK(got[1] == 0u);                // .zero
  CHECK(got[2] == (v1[1] & 0xffff));  // v2.b16 at byte 4: element 1, low then high half
  CHECK(got[3] == (v1[1] >> 16));
  CHECK(got[4] == vl[2 * 4 + 1]);  // layer 2, element 1
  CHECK(got[5] == 4u);
  CHECK(got[6] == 3u);
  CHECK(got[7] == 2u);
  CHECK(got[8] == 3u);
  std::vector<unsigned> back3(24, 0);
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = a3;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = back3.data();
  c.dstPitch = 16;
  c.dstHeight = 3;
  c.WidthInBytes = 16;
  c.Height = 3;
  c.Depth = 2;
  REQUIRE_CU(cuMemcpy3D(&c));
  for (unsigned i = 0; i < 24; ++i) CHECK(back3[i] == (i == 12 + 4 + 2 ? 11259375u : 7u));

  CUarray t2 = make_array(3, 2, 0, CU_AD_FORMAT_FLOAT, 2, 0);
  std::vector<float> tv = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  fill_array(t2, tv.data(), 24, 2, 1);
  CUtexObject tex2 =
      make_texture(t2, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP, true, false);
  CUarray tl = make_array(4, 0, 3, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED);
  std::vector<float> tlv(12);
  for (int i = 0; i < 12; ++i) tlv[i] = 0.5f * i;
  fill_array(tl, tlv.data(), 16, 1, 3);
  CUtexObject texl =
      make_texture(tl, CU_TR_ADDRESS_MODE_BORDER, CU_TR_ADDRESS_MODE_BORDER, false, false);
  REQUIRE_CU(launch(tex_forms, 1, 1, {&tex2, &texl, &out}));
  std::vector<float> f = download<float>(out, 4);
  CHECK(f[0] == 7.0f);  // integer coordinates (-3, 1): clamped to texel (0, 1), no filtering
  CHECK(f[1] == 8.0f);
  CHECK(f[2] == 0.0f);        // a 2-channel texture's missing channels read 0
  CHECK(f[3] == tlv[4 + 1]);  // layer 1, x = 1.5: texel 1
  std::vector<unsigned> q = download<unsigned>(out + 16, 3);
  CHECK(q == std::vector<unsigned>{3, 0, 1});
  for (CUsurfObject s : {s1, s3, sl}) cuSurfObjectDestroy(s);
  cuTexObjectDestroy(tex2);
  cuTexObjectDestroy(texl);
  for (CUarray a : {a1, a3, al, t2, tl}) cuArrayDestroy(a);
  cuMemFree(out);
  cuModuleUnload(module);
}

TEST_CASE("arrays: create, describe, copy in every direction, destroy", "[arrays]") {
  primary_context();
  CUDA_ARRAY_DESCRIPTOR d{};
  d.Width = 16;
  d.Height = 4;
  d.Format = CU_AD_FORMAT_UNSIGNED_INT16;
  d.NumChannels = 2;
  CUarray a = nullptr, b = nullptr;
  CHECK(cuArrayCreate(nullptr, &d) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuArrayCreate(&a, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CUDA_ARRAY_DESCRIPTOR bad = d;
  bad.NumChannels = 3;
  CHECK(cuArrayCreate(&a, &bad) == CUDA_ERROR_INVALID_VALUE);
  bad = d;
  bad.Width = 0;
  CHECK(cuArrayCreate(&a, &bad) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuArrayCreate(&a, &d));
  REQUIRE_CU(cuArrayCreate(&b, &d));
  CUDA_ARRAY_DESCRIPTOR got{};
  REQUIRE_CU(cuArrayGetDescriptor(&got, a));
  CHECK(got.Width == 16);
  CHECK(got.Height == 4);
  CHECK(got.Format == CU_AD_FORMAT_UNSIGNED_INT16);
  CHECK(got.NumChannels == 2);
  CUDA_ARRAY3D_DESCRIPTOR got3{};
  REQUIRE_CU(cuArray3DGetDescriptor(&got3, a));
  CHECK(got3.Depth == 0);
  CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
  REQUIRE_CU(cuArrayGetMemoryRequirements(&req, a, 0));
  CHECK(req.size >= 16 * 4 * 4);

  const size_t row = 16 * 4;
  std::vector<unsigned char> host(row * 4), back(row * 4, 0);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 3 + 1);
  CUdeviceptr dev = 0, dev2 = 0;
  size_t pitch = 0;
  REQUIRE_CU(cuMemAllocPitch(&dev, &pitch, row, 4, 4));
  REQUIRE_CU(cuMemAlloc(&dev2, row * 4));
  // host -> array (a 2x2-texel window at texel (3, 1), then the whole array)
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = host.data();
  c.srcPitch = row;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = a;
  c.WidthInBytes = row;
  c.Height = 4;
  REQUIRE_CU(cuMemcpy2D(&c));
  // array -> pitched device -> array b -> linear device -> host
  CUDA_MEMCPY2D c2{};
  c2.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c2.srcArray = a;
  c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c2.dstDevice = dev;
  c2.dstPitch = pitch;
  c2.WidthInBytes = row;
  c2.Height = 4;
  REQUIRE_CU(cuMemcpy2D(&c2));
  CUDA_MEMCPY2D c3{};
  c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c3.srcDevice = dev;
  c3.srcPitch = pitch;
  c3.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c3.dstArray = b;
  c3.WidthInBytes = row;
  c3.Height = 4;
  REQUIRE_CU(cuMemcpy2DAsync(&c3, nullptr));
  CUDA_MEMCPY3D c4{};
  c4.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c4.srcArray = b;
  c4.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c4.dstDevice = dev2;
  c4.dstPitch = row;
  c4.WidthInBytes = row;
  c4.Height = 4;
  c4.Depth = 1;
  REQUIRE_CU(cuMemcpy3D(&c4));
  REQUIRE_CU(cuMemcpyDtoH(back.data(), dev2, back.size()));
  CHECK(back == host);
  // A window: 2 texels (8 bytes) of rows 1..2 starting at texel 3, out of b into host.
  std::vector<unsigned char> window(16, 0);
  CUDA_MEMCPY2D c5{};
  c5.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c5.srcArray = b;
  c5.srcXInBytes = 12;
  c5.srcY = 1;
  c5.dstMemoryType = CU_MEMORYTYPE_HOST;
  c5.dstHost = window.data();
  c5.dstPitch = 8;
  c5.WidthInBytes = 8;
  c5.Height = 2;
  REQUIRE_CU(cuMemcpy2D(&c5));
  for (int y = 0; y < 2; ++y)
    for (int i = 0; i < 8; ++i) CHECK(window[y * 8 + i] == host[(y + 1) * row + 12 + i]);
  // Out of the array's extent, misaligned to the texel, or a destroyed array.
  c5.srcY = 3;
  CHECK(cuMemcpy2D(&c5) == CUDA_ERROR_INVALID_VALUE);
  c5.srcY = 0;
  c5.srcXInBytes = 2;
  CHECK(cuMemcpy2D(&c5) == CUDA_ERROR_INVALID_VALUE);
  // 1D copies need 1D arrays.
  CHECK(cuMemcpyHtoA(a, 0, host.data(), 16) == CUDA_ERROR_INVALID_VALUE);
  CUarray line = nullptr;
  CUDA_ARRAY_DESCRIPTOR d1{};
  d1.Width = 32;
  d1.Format = CU_AD_FORMAT_FLOAT;
  d1.NumChannels = 1;
  REQUIRE_CU(cuArrayCreate(&line, &d1));
  std::vector<float> f(32), fb(32, 0), fc(32, 0);
  for (int i = 0; i < 32; ++i) f[i] = i * 0.5f;
  REQUIRE_CU(cuMemcpyHtoA(line, 0, f.data(), 128));
  REQUIRE_CU(cuMemcpyAtoD(dev2, line, 16, 64));
  REQUIRE_CU(cuMemcpyDtoA(line, 0, dev2, 64));
  REQUIRE_CU(cuMemcpyAtoH(fb.data(), line, 0, 128));
  for (int i = 0; i < 32; ++i) CHECK(fb[i] == (i < 16 ? f[i + 4] : f[i]));
  CUarray line2 = nullptr;
  REQUIRE_CU(cuArrayCreate(&line2, &d1));
  REQUIRE_CU(cuMemcpyAtoA(line2, 8, line, 0, 120));
  REQUIRE_CU(cuMemcpyAtoHAsync(fc.data(), line2, 0, 128, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  for (int i = 2; i < 32; ++i) CHECK(fc[i] == fb[i - 2]);
  CHECK(cuMemcpyHtoA(line, 64, f.data(), 128) == CUDA_ERROR_INVALID_VALUE);  // past the end
  REQUIRE_CU(cuArrayDestroy(line));
  REQUIRE_CU(cuArrayDestroy(line2));
  CHECK(cuMemcpyAtoH(fb.data(), line, 0, 4) == CUDA_ERROR_INVALID_HANDLE);
  REQUIRE_CU(cuArrayDestroy(a));
  REQUIRE_CU(cuArrayDestroy(b));
  CHECK(cuArrayDestroy(a) == CUDA_ERROR_INVALID_HANDLE);
  cuMemFree(dev);
  cuMemFree(dev2);
}

TEST_CASE("textures: what the emulator cannot filter exactly is refused at creation",
          "[textures]") {
  primary_context();
  CUarray a = make_array(4, 4, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
  CUDA_RESOURCE_DESC res{};
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = a;
  CUDA_TEXTURE_DESC td{};
  CUtexObject t = 0;
  td.flags = CU_TRSF_SRGB;
  CHECK(cuTexObjectCreate(&t, &res, &td, nullptr) == CUDA_ERROR_NOT_SUPPORTED);
  td.flags = 0;
  td.maxAnisotropy = 4;
  CHECK(cuTexObjectCreate(&t, &res, &td, nullptr) == CUDA_ERROR_NOT_SUPPORTED);
  td.maxAnisotropy = 0;
  td.flags = CU_TRSF_READ_AS_INTEGER;
  td.filterMode = CU_TR_FILTER_MODE_LINEAR;
  CHECK(cuTexObjectCreate(&t, &res, &td, nullptr) == CUDA_ERROR_NOT_SUPPORTED);
  td = CUDA_TEXTURE_DESC{};
  CUDA_RESOURCE_VIEW_DESC view{};
  view.format = CU_RES_VIEW_FORMAT_UINT_4X8;
  view.width = 4;
  view.height = 4;
  CHECK(cuTexObjectCreate(&t, &res, &td, &view) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(cuTexObjectCreate(&t, &res, nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE);
  td.addressMode[0] = static_cast<CUaddress_mode>(9);
  CHECK(cuTexObjectCreate(&t, &res, &td, nullptr) == CUDA_ERROR_INVALID_VALUE);
  // Surfaces need CUDA_ARRAY3D_SURFACE_LDST.
  CUsurfObject s = 0;
  CHECK(cuSurfObjectCreate(&s, &res) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuArrayDestroy(a));
  CHECK(cuTexObjectCreate(&t, &res, &td, nullptr) == CUDA_ERROR_INVALID_HANDLE);
  size_t width = 0;
  REQUIRE_CU(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 4, 0));
  CHECK(width == (size_t{1} << 28));
}

// ---- legacy texture and surface references (cuTexRef*, cuSurfRef*) ----------------------------
// Hand-written PTX (nvcc 13 no longer emits references from CUDA C++) in unified texture mode:
// module-scope `.global .texref` / `.global .surfref` variables named by tex, txq, suld, sust and
// suq. The samples are checked against the same host reference as the texture objects above.
// (The reference API is deprecated in cuda.h; it is what these tests exercise.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

const char* kReferencePtx = R"(
.version 7.0
.target sm_75, texmode_unified
.address_size 64
.global .texref tex2;
.global .texref texlin, texpitch;
.global .surfref surf;
.visible .entry ref_sample2d(.param .u64 out, .param .u64 xs, .param .u64 ys, .param .u32 n,
                             .param .u32 as_int)
{
  .reg .pred %p<3>;
  .reg .b32 %r<16>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [xs];
  ld.param.u64 %rd3, [ys];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r10, [as_int];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.wide.s32 %rd4, %r5, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.global.f32 %f1, [%rd5];
  add.s64 %rd6, %rd3, %rd4;
  ld.global.f32 %f2, [%rd6];
  mul.wide.s32 %rd7, %r5, 16;
  add.s64 %rd8, %rd1, %rd7;
  setp.ne.u32 %p2, %r10, 0;
  @%p2 bra INTS;
  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [tex2, {%f1, %f2}];
  st.global.v4.f32 [%rd8], {%f3, %f4, %f5, %f6};
  bra DONE;
INTS:
  tex.2d.v4.u32.f32 {%r6, %r7, %r8, %r9}, [tex2, {%f1, %f2}];
  st.global.v4.u32 [%rd8], {%r6, %r7, %r8, %r9};
DONE:
  ret;
}
.visible .entry ref_fetch1d(.param .u64 out, .param .u32 n)
{
  .reg .pred %p1;
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  setp.ge.s32 %p1, %r2, %r1;
  @%p1 bra DONE;
  sub.s32 %r3, %r2, 2;
  tex.1d.v4.s32.s32 {%r4, %r5, %r6, %r7}, [texlin, {%r3}];
  mul.wide.s32 %rd2, %r2, 16;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r4, %r5, %r6, %r7};
DONE:
  ret;
}
.visible .entry ref_pitch(.param .u64 out)
{
  .reg .b32 %r<12>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.y;
  cvt.rn.f32.u32 %f1, %r1;
  cvt.rn.f32.u32 %f2, %r2;
  add.f32 %f1, %f1, 0f3F000000;
  add.f32 %f2, %f2, 0f3F000000;
  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [texpitch, {%f1, %f2}];
  mov.u32 %r3, %ntid.x;
  mad.lo.s32 %r4, %r2, %r3, %r1;
  mul.wide.s32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f3;
  ret;
}
.visible .entry ref_query(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  txq.width.b32 %r1, [tex2];
  txq.height.b32 %r2, [tex2];
  txq.normalized_coords.b32 %r3, [tex2];
  suq.width.b32 %r4, [surf];
  suq.height.b32 %r5, [surf];
  st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
  st.global.u32 [%rd1+16], %r5;
  ret;
}
.visible .entry ref_surface()
{
  .reg .b32 %r<8>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.y;
  shl.b32 %r3, %r1, 2;
  suld.b.2d.b32.trap {%r4}, [surf, {%r3, %r2}];
  mad.lo.s32 %r5, %r4, 3, 1;
  sust.b.2d.b32.trap [surf, {%r3, %r2}], {%r5};
  ret;
}
)";

struct RefModule {
  CUmodule module = nullptr;
  RefModule() { REQUIRE_CU(cuModuleLoadData(&module, kReferencePtx)); }
  ~RefModule() { cuModuleUnload(module); }
  CUfunction get(const char* name) const {
    CUfunction f = nullptr;
    REQUIRE_CU(cuModuleGetFunction(&f, module, name));
    return f;
  }
  CUtexref tex(const char* name) const {
    CUtexref t = nullptr;
    REQUIRE_CU(cuModuleGetTexRef(&t, module, name));
    return t;
  }
};

// Samples `xs`, `ys` through ref_sample2d (4 channels each, f32 or u32 bits).
std::vector<uint32_t> sample_reference(const RefModule& m, const std::vector<float>& xs,
                                       const std::vector<float>& ys, bool as_int) {
  int n = static_cast<int>(xs.size());
  int ints = as_int ? 1 : 0;
  CUdeviceptr dx = upload(xs), dy = upload(ys), dout = 0;
  REQUIRE_CU(cuMemAlloc(&dout, n * 16));
  REQUIRE_CU(launch(m.get("ref_sample2d"), (n + 127) / 128, 128, {&dout, &dx, &dy, &n, &ints}));
  std::vector<uint32_t> out = download<uint32_t>(dout, n * 4);
  cuMemFree(dx);
  cuMemFree(dy);
  cuMemFree(dout);
  return out;
}

}  // namespace

TEST_CASE("texture references: 2D sampling through cuTexRefSet* state, every address mode",
          "[texrefs]") {
  primary_context();
  RefModule m;
  CUtexref t = m.tex("tex2");
  const long w = 5, h = 3;
  std::vector<float> texels(w * h * 4);
  RefImage ref;
  ref.w = w;
  ref.h = h;
  ref.ch = 4;
  for (size_t i = 0; i < texels.size(); ++i) {
    texels[i] = static_cast<float>((i * 7919) % 101) * 0.37f - 11.0f;
    ref.v.push_back(texels[i]);
  }
  CUarray a = make_array(w, h, 0, CU_AD_FORMAT_FLOAT, 4, 0);
  fill_array(a, texels.data(), w * 16, h, 1);
  REQUIRE_CU(cuTexRefSetArray(t, a, CU_TRSA_OVERRIDE_FORMAT));
  float border[4] = {0.25f, 0.5f, 0.75f, 1.0f};
  REQUIRE_CU(cuTexRefSetBorderColor(t, border));
  const CUaddress_mode modes[] = {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_CLAMP,
                                  CU_TR_ADDRESS_MODE_MIRROR, CU_TR_ADDRESS_MODE_BORDER};
  for (bool normalized : {true, false})
    for (bool linear : {true, false})
      for (CUaddress_mode mx : modes)
        for (CUaddress_mode my : modes) {
          // The state is set between launches of the same module: each launch samples the
          // state of its time.
          REQUIRE_CU(cuTexRefSetAddressMode(t, 0, mx));
          REQUIRE_CU(cuTexRefSetAddressMode(t, 1, my));
          REQUIRE_CU(cuTexRefSetFilterMode(
              t, linear ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT));
          REQUIRE_CU(cuTexRefSetFlags(t, normalized ? CU_TRSF_NORMALIZED_COORDINATES : 0));
          std::vector<float> cx = probe_coords(w, normalized), cy = probe_coords(h, normalized);
          std::vector<float> xs, ys;
          for (size_t i = 0; i < cx.size(); ++i)
            for (size_t j = 0; j < cy.size(); j += 5) {
              xs.push_back(cx[i]);
              ys.push_back(cy[(j + i) % cy.size()]);
            }
          std::vector<uint32_t> out = sample_reference(m, xs, ys, false);
          RefSampler s;
          s.mode[0] = mode_of(mx);
          s.mode[1] = mode_of(my);
          s.normalized = normalized;
          s.linear = linear;
          for (int c = 0; c < 4; ++c) s.border[c] = border[c];
          int mismatches = 0;
          for (size_t i = 0; i < xs.size(); ++i) {
            const float c[2] = {xs[i], ys[i]};
            for (int ch = 0; ch < 4; ++ch) {
              const float got = std::bit_cast<float>(out[i * 4 + ch]);
              const float expect = ref_sample(ref, s, 2, c, ch);
              if (got != expect && mismatches++ < 5) {
                INFO("normalized " << normalized << " linear " << linear << " modes " << mx << ","
                                   << my << " at (" << xs[i] << ", " << ys[i] << ") channel "
                                   << ch);
                CHECK(got == expect);
              }
            }
          }
          CHECK(mismatches == 0);
        }
  // What was set reads back.
  CUarray back = nullptr;
  REQUIRE_CU(cuTexRefGetArray(&back, t));
  CHECK(back == a);
  CUarray_format format{};
  int channels = 0;
  REQUIRE_CU(cuTexRefGetFormat(&format, &channels, t));
  CHECK(format == CU_AD_FORMAT_FLOAT);
  CHECK(channels == 4);
  CUaddress_mode am{};
  REQUIRE_CU(cuTexRefGetAddressMode(&am, t, 1));
  CHECK(am == CU_TR_ADDRESS_MODE_BORDER);
  CUfilter_mode fm{};
  REQUIRE_CU(cuTexRefGetFilterMode(&fm, t));
  CHECK(fm == CU_TR_FILTER_MODE_POINT);
  unsigned flags = 7;
  REQUIRE_CU(cuTexRefGetFlags(&flags, t));
  CHECK(flags == 0);
  float got_border[4] = {};
  REQUIRE_CU(cuTexRefGetBorderColor(got_border, t));
  CHECK(got_border[2] == 0.75f);
  CUdeviceptr address = 0;
  CHECK(cuTexRefGetAddress(&address, t) == CUDA_ERROR_INVALID_VALUE);  // bound to an array
  // txq through the reference.
  CUdeviceptr q = 0;
  REQUIRE_CU(cuMemAlloc(&q, 32));
  CUsurfref sref = nullptr;
  REQUIRE_CU(cuModuleGetSurfRef(&sref, m.module, "surf"));
  CUarray sa = make_array(6, 2, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, CUDA_ARRAY3D_SURFACE_LDST);
  REQUIRE_CU(cuSurfRefSetArray(sref, sa, 0));
  REQUIRE_CU(cuTexRefSetFlags(t, CU_TRSF_NORMALIZED_COORDINATES));
  REQUIRE_CU(launch(m.get("ref_query"), 1, 1, {&q}));
  std::vector<uint32_t> qv = download<uint32_t>(q, 5);
  CHECK(qv == std::vector<uint32_t>{5, 3, 1, 6, 2});
  cuMemFree(q);
  REQUIRE_CU(cuArrayDestroy(sa));
  REQUIRE_CU(cuArrayDestroy(a));
}

TEST_CASE("texture references: 8-bit texels as normalized floats and as integers", "[texrefs]") {
  primary_context();
  RefModule m;
  CUtexref t = m.tex("tex2");
  const long w = 4, h = 4;
  std::vector<unsigned char> texels(w * h * 4);
  for (size_t i = 0; i < texels.size(); ++i) texels[i] = static_cast<unsigned char>(i * 37 + 5);
  CUarray a = make_array(w, h, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
  fill_array(a, texels.data(), w * 4, h, 1);
  REQUIRE_CU(cuTexRefSetArray(t, a, CU_TRSA_OVERRIDE_FORMAT));
  std::vector<float> xs, ys;
  for (float x = -0.5f; x <= 4.5f; x += 0.3f)
    for (float y = -0.5f; y <= 4.5f; y += 0.7f) {
      xs.push_back(x);
      ys.push_back(y);
    }
  RefImage ref;
  ref.w = w;
  ref.h = h;
  ref.ch = 4;
  for (unsigned char v : texels) ref.v.push_back(v / 255.0);
  REQUIRE_CU(cuTexRefSetFilterMode(t, CU_TR_FILTER_MODE_LINEAR));
  REQUIRE_CU(cuTexRefSetAddressMode(t, 0, CU_TR_ADDRESS_MODE_CLAMP));
  REQUIRE_CU(cuTexRefSetAddressMode(t, 1, CU_TR_ADDRESS_MODE_CLAMP));
  std::vector<uint32_t> out = sample_reference(m, xs, ys, false);
  RefSampler s;
  s.linear = true;
  for (size_t i = 0; i < xs.size(); ++i)
    for (int ch = 0; ch < 4; ++ch) {
      const float c[2] = {xs[i], ys[i]};
      INFO("(" << xs[i] << ", " << ys[i] << ") channel " << ch);
      CHECK(std::bit_cast<float>(out[i * 4 + ch]) == ref_sample(ref, s, 2, c, ch));
    }
  REQUIRE_CU(cuTexRefSetFilterMode(t, CU_TR_FILTER_MODE_POINT));
  REQUIRE_CU(cuTexRefSetFlags(t, CU_TRSF_READ_AS_INTEGER));
  out = sample_reference(m, xs, ys, true);
  for (size_t i = 0; i < xs.size(); ++i) {
    long x = std::lround(std::floor(xs[i])), y = std::lround(std::floor(ys[i]));
    x = std::min<long>(std::max<long>(x, 0), w - 1);
    y = std::min<long>(std::max<long>(y, 0), h - 1);
    for (int ch = 0; ch < 4; ++ch) CHECK(out[i * 4 + ch] == texels[(y * w + x) * 4 + ch]);
  }
  // Linear filtering of integer reads has no exact GPU definition: the launch fails, naming the
  // reference, instead of guessing.
  REQUIRE_CU(cuTexRefSetFilterMode(t, CU_TR_FILTER_MODE_LINEAR));
  int n = 1, ints = 1;
  CUdeviceptr d = upload(std::vector<float>{0.5f}), dout = 0;
  REQUIRE_CU(cuMemAlloc(&dout, 16));
  CHECK(launch(m.get("ref_sample2d"), 1, 1, {&dout, &d, &d, &n, &ints}) ==
        CUDA_ERROR_ILLEGAL_INSTRUCTION);
  cuDevicePrimaryCtxReset(0);
}

TEST_CASE("texture references: linear memory (cuTexRefSetAddress) and pitch 2D memory",
          "[texrefs]") {
  primary_context();
  RefModule m;
  CUtexref lin = m.tex("texlin");
  const int count = 10;
  std::vector<int> data(count * 4 + 16);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int>(i) * 1000 - 7;
  CUdeviceptr d = upload(data);
  REQUIRE_CU(cuTexRefSetFormat(lin, CU_AD_FORMAT_SIGNED_INT32, 4));
  REQUIRE_CU(cuTexRefSetFlags(lin, CU_TRSF_READ_AS_INTEGER));
  // A base that is not texture-aligned is bound at the alignment below it, and the offset
  // (in bytes) comes back, as the driver documents: fetch index i + offset / 16 reads dptr[i].
  size_t offset = 99;
  REQUIRE_CU(cuTexRefSetAddress(&offset, lin, d + 64, count * 16));
  CHECK(offset == 64);
  CUdeviceptr base = 0;
  REQUIRE_CU(cuTexRefGetAddress(&base, lin));
  CHECK(base == d);
  int n = count + 4 + 4;
  CUdeviceptr out = 0;
  REQUIRE_CU(cuMemAlloc(&out, n * 16));
  REQUIRE_CU(launch(m.get("ref_fetch1d"), 1, 32, {&out, &n}));
  std::vector<int> got = download<int>(out, n * 4);
  for (int i = 0; i < n; ++i) {
    const int index = i - 2;  // texel index from the base d: 4 texels of offset, then the range
    for (int ch = 0; ch < 4; ++ch)
      CHECK(got[i * 4 + ch] == (index >= 0 && index < count + 4 ? data[index * 4 + ch] : 0));
  }
  // Errors: a range outside any allocation, a bad format, a NULL reference.
  CHECK(cuTexRefSetAddress(nullptr, lin, d + (1 << 20), 64) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTexRefSetFormat(lin, static_cast<CUarray_format>(0x77), 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTexRefSetFormat(lin, CU_AD_FORMAT_FLOAT, 3) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTexRefSetFilterMode(nullptr, CU_TR_FILTER_MODE_POINT) == CUDA_ERROR_INVALID_VALUE);

  // Pitch 2D: float texels in cuMemAllocPitch memory, point-sampled at texel centres.
  CUtexref pt = m.tex("texpitch");
  const unsigned w = 7, h = 3;
  CUdeviceptr p = 0;
  size_t pitch = 0;
  REQUIRE_CU(cuMemAllocPitch(&p, &pitch, w * 4, h, 4));
  std::vector<float> rows(pitch / 4 * h);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i) * 0.5f + 1;
  REQUIRE_CU(cuMemcpyHtoD(p, rows.data(), rows.size() * 4));
  CUDA_ARRAY_DESCRIPTOR desc{};
  desc.Width = w;
  desc.Height = h;
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.NumChannels = 1;
  CHECK(cuTexRefSetAddress2D(pt, &desc, p + 4, pitch) == CUDA_ERROR_INVALID_VALUE);  // unaligned
  REQUIRE_CU(cuTexRefSetAddress2D(pt, &desc, p, pitch));
  CUdeviceptr pout = 0;
  REQUIRE_CU(cuMemAlloc(&pout, w * h * 4));
  CUresult r = cuLaunchKernel(m.get("ref_pitch"), 1, 1, 1, w, h, 1, 0, nullptr,
                              std::vector<void*>{&pout}.data(), nullptr);
  REQUIRE_CU(r);
  REQUIRE_CU(cuCtxSynchronize());
  std::vector<float> pv = download<float>(pout, w * h);
  for (unsigned y = 0; y < h; ++y)
    for (unsigned x = 0; x < w; ++x) CHECK(pv[y * w + x] == rows[y * (pitch / 4) + x]);
  // The format of a pitch binding is its descriptor's: changing it afterwards makes the
  // reference unreadable rather than reinterpreted.
  REQUIRE_CU(cuTexRefSetFormat(pt, CU_AD_FORMAT_SIGNED_INT32, 1));
  CHECK(cuLaunchKernel(m.get("ref_pitch"), 1, 1, 1, w, h, 1, 0, nullptr,
                       std::vector<void*>{&pout}.data(), nullptr) == CUDA_SUCCESS);
  CHECK(cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_INSTRUCTION);
  cuDevicePrimaryCtxReset(0);
}

TEST_CASE("surface references: suld/sust through cuSurfRefSetArray", "[texrefs]") {
  primary_context();
  RefModule m;
  CUsurfref s = nullptr;
  REQUIRE_CU(cuModuleGetSurfRef(&s, m.module, "surf"));
  CUarray back = nullptr;
  CHECK(cuSurfRefGetArray(&back, s) == CUDA_ERROR_INVALID_VALUE);  // nothing bound yet
  const unsigned w = 6, h = 4;
  CUarray plain = make_array(w, h, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, 0);
  CHECK(cuSurfRefSetArray(s, plain, 0) == CUDA_ERROR_INVALID_VALUE);  // no SURFACE_LDST
  CUarray a = make_array(w, h, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, CUDA_ARRAY3D_SURFACE_LDST);
  CHECK(cuSurfRefSetArray(s, a, 1) == CUDA_ERROR_INVALID_VALUE);  // Flags must be 0
  std::vector<uint32_t> v(w * h);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint32_t>(i * 11 + 2);
  fill_array(a, v.data(), w * 4, h, 1);
  REQUIRE_CU(cuSurfRefSetArray(s, a, 0));
  REQUIRE_CU(cuSurfRefGetArray(&back, s));
  CHECK(back == a);
  REQUIRE_CU(cuLaunchKernel(m.get("ref_surface"), 1, 1, 1, w, h, 1, 0, nullptr, nullptr, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  std::vector<uint32_t> got(w * h);
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = a;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = got.data();
  c.dstPitch = w * 4;
  c.WidthInBytes = w * 4;
  c.Height = h;
  REQUIRE_CU(cuMemcpy2D(&c));
  for (size_t i = 0; i < v.size(); ++i) CHECK(got[i] == v[i] * 3 + 1);
  REQUIRE_CU(cuArrayDestroy(plain));
  REQUIRE_CU(cuArrayDestroy(a));
}

TEST_CASE("texture references: handles, lookups and the errors the driver documents", "[texrefs]") {
  primary_context();
  RefModule m;
  CUtexref t = nullptr;
  CHECK(cuModuleGetTexRef(&t, m.module, "nothing") == CUDA_ERROR_NOT_FOUND);
  CHECK(cuModuleGetTexRef(&t, m.module, "surf") == CUDA_ERROR_NOT_FOUND);  // a surface
  CHECK(cuModuleGetTexRef(nullptr, m.module, "tex2") == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuModuleGetTexRef(&t, m.module, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CUsurfref sr = nullptr;
  CHECK(cuModuleGetSurfRef(&sr, m.module, "tex2") == CUDA_ERROR_NOT_FOUND);
  // References are not global variables.
  CUdeviceptr g = 0;
  size_t bytes = 0;
  CHECK(cuModuleGetGlobal(&g, &bytes, m.module, "tex2") == CUDA_ERROR_NOT_FOUND);
  CUtexref a = m.tex("tex2"), b = m.tex("tex2");
  CHECK(a == b);  // one reference per variable
  // A module's reference belongs to it: not destroyed by cuTexRefDestroy.
  CHECK(cuTexRefDestroy(a) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuParamSetTexRef(m.get("ref_query"), CU_PARAM_TR_DEFAULT, a) == CUDA_SUCCESS);
  CHECK(cuParamSetTexRef(m.get("ref_query"), 0, a) == CUDA_ERROR_INVALID_VALUE);
  // Fresh state: nothing bound, no format, point filtering, wrap.
  CUarray arr = nullptr;
  CHECK(cuTexRefGetArray(&arr, a) == CUDA_ERROR_INVALID_VALUE);
  CUmipmappedArray mip = nullptr;
  CHECK(cuTexRefGetMipmappedArray(&mip, a) == CUDA_ERROR_INVALID_VALUE);
  CUaddress_mode am = CU_TR_ADDRESS_MODE_BORDER;
  REQUIRE_CU(cuTexRefGetAddressMode(&am, a, 0));
  CHECK(am == CU_TR_ADDRESS_MODE_WRAP);
  CHECK(cuTexRefGetAddressMode(&am, a, 3) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTexRefSetAddressMode(a, 0, static_cast<CUaddress_mode>(9)) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTexRefSetFilterMode(a, static_cast<CUfilter_mode>(5)) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTexRefSetFlags(a, 0x100) == CUDA_ERROR_INVALID_VALUE);
  // What the emulator cannot filter exactly is refused when it is set.
  CHECK(cuTexRefSetFlags(a, CU_TRSF_SRGB) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(cuTexRefSetMaxAnisotropy(a, 8) == CUDA_ERROR_NOT_SUPPORTED);
  REQUIRE_CU(cuTexRefSetMaxAnisotropy(a, 1));
  int aniso = 0;
  REQUIRE_CU(cuTexRefGetMaxAnisotropy(&aniso, a));
  CHECK(aniso == 1);
  REQUIRE_CU(cuTexRefSetMipmapFilterMode(a, CU_TR_FILTER_MODE_LINEAR));
  REQUIRE_CU(cuTexRefSetMipmapLevelBias(a, 0.5f));
  REQUIRE_CU(cuTexRefSetMipmapLevelClamp(a, 1.0f, 3.0f));
  CUfilter_mode fm{};
  REQUIRE_CU(cuTexRefGetMipmapFilterMode(&fm, a));
  CHECK(fm == CU_TR_FILTER_MODE_LINEAR);
  float bias = 0, lo = 0, hi = 0;
  REQUIRE_CU(cuTexRefGetMipmapLevelBias(&bias, a));
  REQUIRE_CU(cuTexRefGetMipmapLevelClamp(&lo, &hi, a));
  CHECK(bias == 0.5f);
  CHECK(lo == 1.0f);
  CHECK(hi == 3.0f);
  // A mipmapped array binds and reads back.
  CUDA_ARRAY3D_DESCRIPTOR md{};
  md.Width = 8;
  md.Height = 8;
  md.Format = CU_AD_FORMAT_FLOAT;
  md.NumChannels = 1;
  REQUIRE_CU(cuMipmappedArrayCreate(&mip, &md, 3));
  CHECK(cuTexRefSetMipmappedArray(a, mip, 0) == CUDA_ERROR_INVALID_VALUE);  // needs the flag
  REQUIRE_CU(cuTexRefSetMipmappedArray(a, mip, CU_TRSA_OVERRIDE_FORMAT));
  CUmipmappedArray mback = nullptr;
  REQUIRE_CU(cuTexRefGetMipmappedArray(&mback, a));
  CHECK(mback == mip);
  REQUIRE_CU(cuMipmappedArrayDestroy(mip));
  // Created references: live until destroyed, then stale.
  CUtexref own = nullptr;
  REQUIRE_CU(cuTexRefCreate(&own));
  REQUIRE_CU(cuTexRefSetFilterMode(own, CU_TR_FILTER_MODE_LINEAR));
  REQUIRE_CU(cuTexRefDestroy(own));
  CHECK(cuTexRefSetFilterMode(own, CU_TR_FILTER_MODE_LINEAR) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTexRefDestroy(own) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTexRefSetFilterMode(reinterpret_cast<CUtexref>(0x1234), CU_TR_FILTER_MODE_POINT) ==
        CUDA_ERROR_INVALID_VALUE);
  // A surface reference is not a texture reference.
  CHECK(cuTexRefSetFilterMode(reinterpret_cast<CUtexref>(sr), CU_TR_FILTER_MODE_POINT) ==
        CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("texture references: fetching through a reference never bound fails the launch",
          "[texrefs]") {
  primary_context();
  RefModule m;
  int n = 4;
  CUdeviceptr out = 0;
  REQUIRE_CU(cuMemAlloc(&out, n * 16));
  CHECK(launch(m.get("ref_fetch1d"), 1, 32, {&out, &n}) == CUDA_ERROR_ILLEGAL_INSTRUCTION);
  cuDevicePrimaryCtxReset(0);
}

TEST_CASE("texture references: sampling a reference whose array was destroyed fails the launch",
          "[texrefs]") {
  primary_context();
  RefModule m;
  CUtexref t = m.tex("tex2");
  CUarray a = make_array(4, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0);
  REQUIRE_CU(cuTexRefSetArray(t, a, CU_TRSA_OVERRIDE_FORMAT));
  REQUIRE_CU(cuArrayDestroy(a));  // the binding no longer names a live array
  int n = 1, ints = 0;
  CUdeviceptr d = upload(std::vector<float>{0.5f}), dout = 0;
  REQUIRE_CU(cuMemAlloc(&dout, 16));
  CHECK(launch(m.get("ref_sample2d"), 1, 1, {&dout, &d, &d, &n, &ints}) ==
        CUDA_ERROR_ILLEGAL_INSTRUCTION);
  cuDevicePrimaryCtxReset(0);
}
#pragma GCC diagnostic pop

#endif  // CUSNAP_TEST_HAVE_PTX_ENGINE
