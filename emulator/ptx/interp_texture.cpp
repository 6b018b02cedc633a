// Texture and surface instructions (tex, tld4, txq, suld, sust, suq, istypep) on the objects the
// driver layer describes (engine.h: TextureView, SurfaceView), as the CUDA C++ Programming
// Guide's "Texture Fetching" appendix documents the filtering:
//   - normalized coordinates are scaled by the extent (x * N) first;
//   - nearest-point sampling reads T[floor(x)];
//   - linear filtering reads the 2 (1D), 4 (2D) or 8 (3D) texels around x - 0.5 and weights them
//     with alpha = frac(x - 0.5) held in 9-bit fixed point with 8 fractional bits (rounded to
//     the nearest 1/256 here: the guide gives the format, not the rounding), summed in double
//     and rounded to f32 once, to nearest with ties away from zero (as an H200 does);
//   - address modes apply to texel indices: wrap (modulo N), mirror (reflected, period 2N),
//     clamp (to [0, N-1]) and border (the border colour outside [0, N)); wrap and mirror are
//     defined for normalized coordinates only and behave as clamp otherwise (the guide: "only
//     supported for normalized texture coordinates").
// What the guide leaves undefined is refused at run time with CUDA_ERROR_ILLEGAL_INSTRUCTION and
// a message rather than guessed: NaN or infinite coordinates, a layer index past the layers, an
// implicit LOD on a mipmapped texture, a result type that does not match the texture's read
// mode, floating-point coordinates on linear memory.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "interp.h"

namespace cusnap::emu::ptx {
namespace {

// The sample's f32 value: nearest, ties away from zero. An H200's filtered fetches are the exact
// weighted sum rounded so (4096 of 4096 bilinear samples of the texture sample with quarter
// weights, where a third of the sums fall exactly halfway; docs/emulator.md), not ties-to-even.
float to_f32_ties_away(double v) {
  const float f = static_cast<float>(v);
  if (static_cast<double>(f) == v || !std::isfinite(v)) return f;
  const float other = std::nextafter(f, v > static_cast<double>(f) ? INFINITY : -INFINITY);
  const double df = std::fabs(v - static_cast<double>(f)),
               dother = std::fabs(static_cast<double>(other) - v);
  if (df != dother) return f;
  return std::fabs(other) > std::fabs(f) ? other : f;
}

float half_to_float(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int man = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31)
    v = man != 0 ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
  return (h & 0x8000) ? -v : v;
}

// One texel's channels: integers sign- or zero-extended to 32 bits, halves widened, floats as is.
struct Texel {
  uint32_t raw[4] = {0, 0, 0, 0};
};

Texel read_texel(const ImageView& im, int64_t x, int64_t y, int64_t z) {
  const uint8_t* p = im.data + static_cast<uint64_t>(z) * im.slice_pitch +
                     static_cast<uint64_t>(y) * im.row_pitch +
                     static_cast<uint64_t>(x) * im.texel_bytes();
  Texel t;
  for (int c = 0; c < im.channels; ++c) {
    switch (im.format) {
      case TexelFormat::kU8:
        t.raw[c] = p[c];
        break;
      case TexelFormat::kS8:
        t.raw[c] = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(p[c])));
        break;
      case TexelFormat::kU16:
      case TexelFormat::kS16:
      case TexelFormat::kF16: {
        uint16_t v;
        std::memcpy(&v, p + 2 * c, 2);
        if (im.format == TexelFormat::kU16)
          t.raw[c] = v;
        else if (im.format == TexelFormat::kS16)
          t.raw[c] = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(v)));
        else
          t.raw[c] = std::bit_cast<uint32_t>(half_to_float(v));
        break;
      }
      default:
        std::memcpy(&t.raw[c], p + 4 * c, 4);
        break;
    }
  }
  return t;
}

// A channel as the float a filtered or float read returns (8/16-bit integers normalized).
double channel_value(TexelFormat f, uint32_t raw) {
  switch (f) {
    case TexelFormat::kU8:
      return raw / 255.0;
    case TexelFormat::kU16:
      return raw / 65535.0;
    case TexelFormat::kS8:
      return std::max(static_cast<int32_t>(raw) / 127.0, -1.0);
    case TexelFormat::kS16:
      return std::max(static_cast<int32_t>(raw) / 32767.0, -1.0);
    case TexelFormat::kF16:
    case TexelFormat::kF32:
      return std::bit_cast<float>(raw);
    default:
      return 0;  // 32-bit integers are always read as integers (the driver sets that mode)
  }
}

// A texel index after the address mode; -1: outside, the border colour.
int64_t address(int64_t i, int64_t n, AddressMode m, bool normalized) {
  if (!normalized && (m == AddressMode::kWrap || m == AddressMode::kMirror))
    m = AddressMode::kClamp;
  switch (m) {
    case AddressMode::kWrap:
      return ((i % n) + n) % n;
    case AddressMode::kMirror: {
      const int64_t k = ((i % (2 * n)) + 2 * n) % (2 * n);
      return k < n ? k : 2 * n - 1 - k;
    }
    case AddressMode::kClamp:
      return std::clamp<int64_t>(i, 0, n - 1);
    case AddressMode::kBorder:
      return i >= 0 && i < n ? i : -1;
  }
  return -1;
}

struct Sample {
  double f[4] = {0, 0, 0, 0};    // float results
  uint32_t i[4] = {0, 0, 0, 0};  // integer results (read_as_integer, point sampling)
};

class Sampler {
 public:
  explicit Sampler(const TextureView& t) : t_(t) {}

  // The texel at integer indices (already addressed; -1 in any: border) of one level.
  Texel fetch(const ImageView& im, int64_t x, int64_t y, int64_t z, bool* border) const {
    *border = x < 0 || y < 0 || z < 0;
    if (*border) return Texel{};
    return read_texel(im, x, y, z);
  }

  // Filtered (or point) sample of one level at float coordinates c[0..dims) and layer.
  Sample at_level(const ImageView& im, const float* c, int64_t layer) const {
    const int dims = im.dims;
    const int64_t extent[3] = {im.width, im.height, im.depth};
    int64_t i0[3] = {0, 0, 0}, i1[3] = {0, 0, 0};
    double a[3] = {0, 0, 0};
    for (int d = 0; d < dims; ++d) {
      const float x = t_.normalized_coords ? c[d] * static_cast<float>(extent[d]) : c[d];
      if (t_.linear_filter) {
        const float xb = x - 0.5f;
        const double fl = std::floor(static_cast<double>(xb));
        a[d] = std::nearbyint((static_cast<double>(xb) - fl) * 256.0) / 256.0;
        const int64_t i = clamp_index(fl);
        i0[d] = address(i, extent[d], t_.address[d], t_.normalized_coords);
        i1[d] = address(i + 1, extent[d], t_.address[d], t_.normalized_coords);
      } else {
        i0[d] = address(clamp_index(std::floor(static_cast<double>(x))), extent[d], t_.address[d],
                        t_.normalized_coords);
      }
    }
    const int64_t zl = im.layers != 0 ? layer : 0;
    Sample s;
    if (!t_.linear_filter) {
      bool border;
      Texel tx = fetch(im, i0[0], i0[1], dims == 3 ? i0[2] : zl, &border);
      for (int ch = 0; ch < 4; ++ch) {
        if (t_.read_as_integer) {
          s.i[ch] =
              border ? static_cast<uint32_t>(t_.border[ch]) : (ch < im.channels ? tx.raw[ch] : 0);
        } else {
          s.f[ch] = border ? t_.border[ch]
                           : (ch < im.channels ? channel_value(im.format, tx.raw[ch]) : 0);
        }
      }
      return s;
    }
    const int corners = 1 << dims;
    for (int k = 0; k < corners; ++k) {
      double w = 1;
      int64_t idx[3] = {0, 0, zl};
      for (int d = 0; d < dims; ++d) {
        const bool hi = (k >> d) & 1;
        w *= hi ? a[d] : 1 - a[d];
        idx[d] = hi ? i1[d] : i0[d];
      }
      if (w == 0) continue;
      bool border;
      Texel tx = fetch(im, idx[0], idx[1], idx[2], &border);
      for (int ch = 0; ch < 4; ++ch) {
        const double v =
            border ? t_.border[ch] : (ch < im.channels ? channel_value(im.format, tx.raw[ch]) : 0);
        s.f[ch] += w * v;
      }
    }
    return s;
  }

  // The four texels of the bilinear footprint, one component each (tld4), counter-clockwise
  // from the lower left: (i, j+1), (i+1, j+1), (i+1, j), (i, j).
  Sample gather(const ImageView& im, const float* c, int comp) const {
    int64_t i0[2], i1[2];
    const int64_t extent[2] = {im.width, im.height};
    for (int d = 0; d < 2; ++d) {
      const float x = t_.normalized_coords ? c[d] * static_cast<float>(extent[d]) : c[d];
      const int64_t i = clamp_index(std::floor(static_cast<double>(x - 0.5f)));
      i0[d] = address(i, extent[d], t_.address[d], t_.normalized_coords);
      i1[d] = address(i + 1, extent[d], t_.address[d], t_.normalized_coords);
    }
    const int64_t xy[4][2] = {{i0[0], i1[1]}, {i1[0], i1[1]}, {i1[0], i0[1]}, {i0[0], i0[1]}};
    Sample s;
    for (int k = 0; k < 4; ++k) {
      bool border;
      Texel tx = fetch(im, xy[k][0], xy[k][1], 0, &border);
      const bool present = comp < im.channels;
      if (t_.read_as_integer)
        s.i[k] = border ? static_cast<uint32_t>(t_.border[comp]) : (present ? tx.raw[comp] : 0);
      else
        s.f[k] = border ? t_.border[comp] : (present ? channel_value(im.format, tx.raw[comp]) : 0);
    }
    return s;
  }

 private:
  // Coordinates far outside the texture all address the same texel (clamp/border) or wrap with
  // float spacing above 1 anyway; this keeps the index arithmetic in range.
  static int64_t clamp_index(double v) { return static_cast<int64_t>(std::clamp(v, -1e15, 1e15)); }

  const TextureView& t_;
};

bool is_array(TexGeom g) { return g == TexGeom::kA1d || g == TexGeom::kA2d; }
int geom_dims(TexGeom g) {
  switch (g) {
    case TexGeom::k1d:
    case TexGeom::kA1d:
      return 1;
    case TexGeom::k2d:
    case TexGeom::kA2d:
      return 2;
    default:
      return 3;
  }
}

// Why a lookup failed: an object handle that names no live object, or a reference that is not
// bound (or whose binding the driver cannot sample).
std::string not_live(const Module& m, const Operand& o, bool surface) {
  const char* what = surface ? "surface" : "texture";
  if (o.kind == Operand::kRefHandle)
    return std::string(what) + " reference '" + m.symbols[o.symbol].name +
           "' has no binding the emulator can " + (surface ? "access" : "sample") +
           " (nothing bound, a destroyed array, a format set that disagrees with the binding" +
           (surface ? "" : ", or linear filtering of texels read as integers") + ")";
  return std::string("the operand is not a live ") + what + " object";
}

}  // namespace

void Launch::exec_texture(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint64_t* handles = operand(w, in.ops[1], exec, kSpScratch0);
  const TexGeom g = static_cast<TexGeom>(in.sub);
  const int nc = kTexCoords[in.sub];
  const uint64_t* coord[4] = {};
  for (int k = 0; k < nc; ++k)
    coord[k] = operand(w, m_.vec_pool[in.ops[2].index + k], exec, kSpScratch1 + (k % 2));
  // Scratch slots are shared: copy the coordinate lanes before anything else is computed.
  uint64_t cvals[4][kWarpSize];
  for (int k = 0; k < nc; ++k) std::memcpy(cvals[k], coord[k], sizeof cvals[k]);
  float lods[kWarpSize] = {};
  if (in.op == Op::kTex && in.image == 1) {
    const uint64_t* l = operand(w, in.ops[3], exec, kSpScratch2);
    for (int i = 0; i < kWarpSize; ++i) lods[i] = std::bit_cast<float>(static_cast<uint32_t>(l[i]));
  }
  uint64_t* dst[4];
  for (int k = 0; k < 4; ++k) dst[k] = dest(w, m_.vec_pool[in.ops[0].index + k]);
  const bool int_coords = in.type2 == Type::kS32;
  const bool float_result = in.type == Type::kF32;
  const int dims = geom_dims(g);
  for (uint32_t m = exec; m; m &= m - 1) {
    const int lane = std::countr_zero(m);
    TextureView t;
    auto refuse = [&](const std::string& why) {
      fail(LaunchStatus::kIllegalInstruction, why + ": " + where(b, w, lane, in));
    };
    if (!memory_.texture(handles[lane], &t)) {
      refuse(not_live(m_, in.ops[1], false));
      return;
    }
    const ImageView& base = t.levels[0];
    if (base.dims != dims || (base.layers != 0) != is_array(g)) {
      refuse("the texture's geometry does not match the instruction's");
      return;
    }
    // Texels in device memory are reported whole (any of them may be sampled).
    if (tracking_ && t.device_memory) [[unlikely]]
      track(b, base.data, (base.height - 1) * base.row_pitch + base.width * base.texel_bytes(),
            true, false);
    if (t.read_as_integer == float_result) {
      refuse(std::string("a .") + (float_result ? "f32" : "s32/.u32") +
             " result from a texture that returns " + (t.read_as_integer ? "integers" : "floats") +
             " is undefined");
      return;
    }
    const int first = is_array(g) ? 1 : 0;
    int64_t layer = 0;
    if (is_array(g)) {
      layer = static_cast<uint32_t>(cvals[0][lane]);
      if (layer >= base.layers) {
        refuse("a layer index past the layered texture's layers (the result is undocumented)");
        return;
      }
    }
    float c[3] = {0, 0, 0};
    int64_t ic[3] = {0, 0, 0};
    for (int d = 0; d < dims; ++d) {
      const uint32_t bits = static_cast<uint32_t>(cvals[first + d][lane]);
      if (int_coords) {
        ic[d] = static_cast<int32_t>(bits);
      } else {
        c[d] = std::bit_cast<float>(bits);
        if (!std::isfinite(c[d])) {
          refuse("a NaN or infinite texture coordinate (the result is undocumented)");
          return;
        }
      }
    }
    Sample s;
    if (in.op == Op::kTld4) {
      if (int_coords) {
        refuse("tld4 with integer coordinates");
        return;
      }
      s = Sampler(t).gather(base, c, in.image);
    } else if (t.linear_memory) {
      // tex1Dfetch: an integer index; outside [0, width) every channel reads 0.
      if (!int_coords) {
        refuse("floating-point coordinates on a linear-memory texture");
        return;
      }
      if (ic[0] >= 0 && ic[0] < base.width) {
        Texel tx = read_texel(base, ic[0], 0, 0);
        for (int ch = 0; ch < base.channels; ++ch) {
          if (t.read_as_integer)
            s.i[ch] = tx.raw[ch];
          else
            s.f[ch] = channel_value(base.format, tx.raw[ch]);
        }
      }
    } else if (int_coords) {
      // Integer coordinates fetch the texel at that index (no filtering, no normalization).
      int64_t idx[3] = {0, 0, 0};
      const int64_t extent[3] = {base.width, base.height, base.depth};
      for (int d = 0; d < dims; ++d) idx[d] = address(ic[d], extent[d], t.address[d], false);
      const bool border = idx[0] < 0 || idx[1] < 0 || idx[2] < 0;
      Texel tx = border ? Texel{} : read_texel(base, idx[0], idx[1], dims == 3 ? idx[2] : layer);
      for (int ch = 0; ch < 4; ++ch) {
        const bool present = ch < base.channels;
        if (t.read_as_integer)
          s.i[ch] = border ? static_cast<uint32_t>(t.border[ch]) : (present ? tx.raw[ch] : 0);
        else
          s.f[ch] = border ? t.border[ch] : (present ? channel_value(base.format, tx.raw[ch]) : 0);
      }
    } else {
      Sampler sampler(t);
      if (t.level_count == 1) {
        s = sampler.at_level(base, c, layer);
      } else {
        if (in.image != 1) {
          refuse("an implicit level of detail on a mipmapped texture (no derivatives)");
          return;
        }
        float lod = lods[lane] + t.lod_bias;
        if (!std::isfinite(lod)) {
          refuse("a NaN or infinite level of detail");
          return;
        }
        lod = std::clamp(lod, t.min_lod, t.max_lod);
        lod = std::clamp(lod, 0.0f, static_cast<float>(t.level_count - 1));
        if (!t.mip_linear) {
          const uint32_t level = static_cast<uint32_t>(std::floor(lod + 0.5f));
          s = sampler.at_level(t.levels[std::min(level, t.level_count - 1)], c, layer);
        } else {
          const uint32_t l0 = static_cast<uint32_t>(std::floor(lod));
          const uint32_t l1 = std::min(l0 + 1, t.level_count - 1);
          const double f = lod - static_cast<float>(l0);
          Sample s0 = sampler.at_level(t.levels[l0], c, layer);
          Sample s1 = sampler.at_level(t.levels[l1], c, layer);
          for (int ch = 0; ch < 4; ++ch) s.f[ch] = (1 - f) * s0.f[ch] + f * s1.f[ch];
          if (t.read_as_integer) {
            refuse("linear mipmap filtering of texels read as integers");
            return;
          }
        }
      }
    }
    for (int k = 0; k < 4; ++k) {
      dst[k][lane] = float_result ? std::bit_cast<uint32_t>(to_f32_ties_away(s.f[k])) : s.i[k];
    }
  }
}

void Launch::exec_surface(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const bool load = in.op == Op::kSuld;
  const int hs = load ? 1 : 0, cs = load ? 2 : 1;
  const uint64_t* handles = operand(w, in.ops[hs], exec, kSpScratch0);
  const TexGeom g = static_cast<TexGeom>(in.sub);
  const int nc = kTexCoords[in.sub];
  uint64_t cvals[4][kWarpSize];
  for (int k = 0; k < nc; ++k)
    std::memcpy(cvals[k], operand(w, m_.vec_pool[in.ops[cs].index + k], exec, kSpScratch1),
                sizeof cvals[k]);
  const uint32_t es = static_cast<uint32_t>(type_bits(in.type) / 8);
  const uint32_t n = in.vec;
  const uint32_t access = es * n;
  const SurfaceClamp mode = static_cast<SurfaceClamp>(in.image);
  const int dims = geom_dims(g);
  for (uint32_t m = exec; m; m &= m - 1) {
    const int lane = std::countr_zero(m);
    SurfaceView sv;
    if (!memory_.surface(handles[lane], &sv)) {
      fail(LaunchStatus::kIllegalInstruction,
           not_live(m_, in.ops[hs], true) + ": " + where(b, w, lane, in));
      return;
    }
    const ImageView& im = sv.image;
    if (im.dims != dims || (im.layers != 0) != is_array(g)) {
      fail(LaunchStatus::kIllegalInstruction,
           "the surface's geometry does not match the instruction's: " + where(b, w, lane, in));
      return;
    }
    const int first = is_array(g) ? 1 : 0;
    int64_t pos[4] = {0, 0, 0, 0};  // byte x, y, z, layer
    for (int d = 0; d < dims; ++d)
      pos[d] = static_cast<int32_t>(static_cast<uint32_t>(cvals[first + d][lane]));
    if (is_array(g)) pos[3] = static_cast<uint32_t>(cvals[0][lane]);
    const int64_t row_bytes = int64_t{im.width} * im.texel_bytes();
    if (row_bytes < access) {
      fail(LaunchStatus::kIllegalAddress,
           "a " + std::to_string(access) + "-byte surface access is wider than the surface's " +
               std::to_string(row_bytes) + "-byte rows: " + where(b, w, lane, in));
      return;
    }
    const int64_t limit[4] = {row_bytes - access + 1, im.height, im.depth,
                              im.layers != 0 ? im.layers : 1};
    if (pos[0] % access != 0) {
      fail(LaunchStatus::kMisalignedAddress,
           "surface x coordinate " + std::to_string(pos[0]) + " is not a multiple of the " +
               std::to_string(access) + "-byte access: " + where(b, w, lane, in));
      return;
    }
    bool outside = false;
    for (int d = 0; d < 4; ++d) outside |= pos[d] < 0 || pos[d] >= limit[d];
    if (outside) {
      if (mode == SurfaceClamp::kTrap) {
        fail(LaunchStatus::kIllegalAddress,
             "surface access out of bounds (.trap): " + where(b, w, lane, in));
        return;
      }
      if (mode == SurfaceClamp::kZero) {
        if (load) {
          for (uint32_t k = 0; k < n; ++k) {
            const Operand& o = n > 1 ? m_.vec_pool[in.ops[0].index + k] : in.ops[0];
            dest(w, o)[lane] = 0;
          }
        }
        continue;
      }
      for (int d = 0; d < 4; ++d) pos[d] = std::clamp<int64_t>(pos[d], 0, limit[d] - 1);
      pos[0] -= pos[0] % access;
    }
    const int64_t slice = dims == 3 ? pos[2] : pos[3];
    uint8_t* p = im.data + static_cast<uint64_t>(slice) * im.slice_pitch +
                 static_cast<uint64_t>(pos[1]) * im.row_pitch + static_cast<uint64_t>(pos[0]);
    for (uint32_t k = 0; k < n; ++k) {
      const Operand& o = n > 1 ? m_.vec_pool[in.ops[load ? 0 : 2].index + k] : in.ops[load ? 0 : 2];
      if (load) {
        uint64_t v = 0;
        std::memcpy(&v, p + k * es, es);
        dest(w, o)[lane] = v;
      } else {
        const uint64_t v = operand(w, o, exec, kSpScratch2)[lane];
        std::memcpy(p + k * es, &v, es);
      }
    }
  }
}

void Launch::exec_image_query(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint64_t* handles = operand(w, in.ops[1], exec, kSpScratch0);
  uint64_t* d = dest(w, in.ops[0]);
  for (uint32_t m = exec; m; m &= m - 1) {
    const int lane = std::countr_zero(m);
    const uint64_t h = handles[lane];
    TextureView t;
    SurfaceView s;
    if (in.op == Op::kIstypep) {
      const ImageType type = static_cast<ImageType>(in.image);
      // Texture objects carry their sampler (unified mode): a handle is a texref and a
      // samplerref of itself, as the ISA's istypep describes for texture objects.
      bool is = false;
      if (type == ImageType::kSurfref)
        is = memory_.surface(h, &s);
      else
        is = memory_.texture(h, &t);
      d[lane] = is ? 1 : 0;
      continue;
    }
    const bool ok = in.op == Op::kTxq ? memory_.texture(h, &t) : memory_.surface(h, &s);
    if (!ok) {
      fail(LaunchStatus::kIllegalInstruction,
           not_live(m_, in.ops[1], in.op != Op::kTxq) + ": " + where(b, w, lane, in));
      return;
    }
    const ImageView& im = in.op == Op::kTxq ? t.levels[0] : s.image;
    uint32_t v = 0;
    switch (static_cast<ImageQuery>(in.image)) {
      case ImageQuery::kWidth:
        v = im.width;
        break;
      case ImageQuery::kHeight:
        v = im.height;
        break;
      case ImageQuery::kDepth:
        v = im.depth;
        break;
      case ImageQuery::kArraySize:
        v = im.layers;
        break;
      case ImageQuery::kNumMipmapLevels:
        v = t.level_count;
        break;
      case ImageQuery::kNormalizedCoords:
        v = t.normalized_coords ? 1 : 0;
        break;
    }
    d[lane] = v;
  }
}

}  // namespace cusnap::emu::ptx
