// wgmma (sm_90a warpgroup MMA) against host GEMMs. The kernels are PTX written here from the
// ISA's text, one per case: 128 threads copy host-built images of A and B into shared memory,
// build the matrix descriptors, load C into the accumulator fragment, run K / 16 wgmma.mma_async
// (fence, commit_group, wait_group 0) and store D. Everything the emulator must get right is
// computed here independently of it:
// * the shared-memory images follow the ISA's canonical layouts as CuTe layouts
//   ("Shared Memory Matrix Layout": K-major ((8,m),(T,2k)), MN-major ((T,W,m),(8,k)) with their
//   strides), evaluated by a small CuTe-style evaluator, then Swizzle<B,4,3> on the byte address;
// * the accumulator and A register fragments are the ISA's figures (warp w: rows 16w..16w+15;
//   lane (g, t): row g + 8 ((i >> 1) & 1), column 8 (i >> 2) + 2t + (i & 1) of D), turned into
//   per-register address constants in the generated PTX.
// Values are small integers (exact in f16/bf16, and every partial sum is exact in f32), so the
// comparison is exact whatever the accumulation order; NaN and infinity cases check propagation.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

enum class Sw { kNone = 0, k32 = 1, k64 = 2, k128 = 3 };  // bytes: 16 << mode

uint16_t f16_bits(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
uint16_t bf16_bits(float f) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16); }

// A CuTe layout mode: shape and stride of up to three sub-modes, evaluated colexicographically.
struct Mode {
  int shape[3];
  long stride[3];
  int parts;
  long operator()(int i) const {
    long off = 0;
    for (int p = 0; p < parts; ++p) {
      const int extent = shape[p] > 0 ? shape[p] : 1;
      off += (i % extent) * stride[p];
      i /= extent;
    }
    return off;
  }
};

// A (rows x K) or B (N x K, row = N) operand in shared memory: its layout and descriptor fields.
// eb: bytes per element (2: f16/bf16, 4: tf32, 1: s8/u8); MN-major layouts are 16-bit only.
struct Operand2D {
  int rows = 0, k = 0, eb = 2;
  bool mn_major = false;
  Sw sw = Sw::kNone;
  long lbo = 0, sbo = 0;  // bytes
  // Byte offset of element (row, k) from the (1024-byte aligned) base, before the swizzle.
  long offset(int row, int kk) const {
    const int T = 16 / eb;  // elements per 128 bits
    const int W = sw == Sw::kNone ? 1 : (16 << static_cast<int>(sw)) / 16;
    const long lbo_e = lbo / eb, sbo_e = sbo / eb;
    long e;
    if (!mn_major && sw == Sw::kNone) {
      const Mode mrow{{8, rows / 8, 1}, {T, sbo_e, 0}, 2};
      const Mode mk{{T, k / T, 1}, {1, lbo_e, 0}, 2};
      e = mrow(row) + mk(kk);
    } else if (!mn_major) {
      // One atom holds W T elements of K; further atoms along K follow all the rows.
      const Mode mrow{{8, rows / 8, 1}, {W * T, sbo_e, 0}, 2};
      const Mode mk{{W * T, k / (W * T) > 0 ? k / (W * T) : 1, 1}, {1, (rows / 8) * sbo_e, 0}, 2};
      e = mrow(row) + mk(kk);
    } else if (sw == Sw::kNone) {
      const Mode mrow{{T, 1, rows / T}, {1, T, sbo_e}, 3};
      const Mode mk{{8, k / 8, 1}, {T, lbo_e, 0}, 2};
      e = mrow(row) + mk(kk);
    } else {
      const Mode mrow{{T, W, rows / (T * W)}, {1, T, lbo_e}, 3};
      const Mode mk{{8, k / 8, 1}, {W * T, sbo_e, 0}, 2};
      e = mrow(row) + mk(kk);
    }
    return e * eb;
  }
  // CuTe's Swizzle<B,4,3> on the byte address: bits [7, 7+B) XORed into bits [4, 4+B).
  long swizzled(long a) const {
    const int B = static_cast<int>(sw);
    const long yyy = ((1L << B) - 1) << 7;
    return a ^ ((a & yyy) >> 3);
  }
  uint64_t desc_fields() const {
    static const uint64_t kMode[] = {0, 3, 2, 1};  // descriptor bits 62-63: 1 = 128B, 3 = 32B
    return ((static_cast<uint64_t>(lbo) & 0x3ffff) >> 4) << 16 |
           ((static_cast<uint64_t>(sbo) & 0x3ffff) >> 4) << 32 | kMode[static_cast<int>(sw)] << 62;
  }
};

// Dense layouts for a rows x K operand (rows a multiple of 8, or of 8 W when MN-major swizzled).
Operand2D make_layout(int rows, int k, bool mn_major, Sw sw, int eb) {
  Operand2D o;
  o.rows = rows;
  o.k = k;
  o.eb = eb;
  o.mn_major = mn_major;
  o.sw = sw;
  const long span = 16L << static_cast<int>(sw);
  if (!mn_major) {
    if (sw == Sw::kNone) {
      o.lbo = 128;                 // next 16-byte column of core matrices
      o.sbo = 128L * k * eb / 16;  // next 8 rows: after all K core matrices
    } else {
      o.lbo = 16;        // unused ("assumed 1")
      o.sbo = 8 * span;  // 8 rows of one span
    }
  } else {
    if (sw == Sw::kNone) {
      o.sbo = 128;              // next 8 rows (MN) of core matrices
      o.lbo = 128L * rows / 8;  // next 8 k
    } else {
      o.lbo = 8 * span;                      // next span-wide group of MN
      o.sbo = 8 * span * (rows * 2 / span);  // next 8 k
    }
  }
  return o;
}

enum class In { kF16, kBF16, kTF32, kS8, kU8 };
const char* in_name(In t) {
  static const char* const kNames[] = {"f16", "bf16", "tf32", "s8", "u8"};
  return kNames[static_cast<int>(t)];
}
int in_bytes(In t) { return t == In::kTF32 ? 4 : t == In::kS8 || t == In::kU8 ? 1 : 2; }
bool in_integer(In t) { return t == In::kS8 || t == In::kU8; }

struct Case {
  int n = 8, kdim = 16;
  bool bf16 = false, f16_acc = false;
  std::optional<In> in, in_b;  // tf32, s8, u8 (in_b: B's type when it differs); else bf16 says
  bool satfinite = false;
  int64_t c_bias = 0;  // integer: added to every C element (overflow cases)
  In a_in() const { return in ? *in : bf16 ? In::kBF16 : In::kF16; }
  In b_in() const { return in_b ? *in_b : a_in(); }
  int eb() const { return in_bytes(a_in()); }
  int k_step() const { return 32 / eb(); }  // K of one instruction: 256 bits of a row
  bool integer() const { return in_integer(a_in()); }
  bool a_regs = false;
  bool trans_a = false, trans_b = false;
  Sw sw_a = Sw::kNone, sw_b = Sw::kNone;
  int scale_a = 1, scale_b = 1;
  bool scale_d = true;
};

// The kernel: params (a image, b image, a global [64 x K row-major, for register A], c, d).
std::string kernel_ptx(const Case& c, const Operand2D& la, const Operand2D& lb, size_t bytes_a,
                       size_t bytes_b) {
  const int n = c.n;
  const int dregs = c.f16_acc ? n / 4 : n / 2;
  std::ostringstream s;
  s << ".version 8.4\n.target sm_90a\n.address_size 64\n"
    << ".visible .entry wg(.param .u64 pia, .param .u64 pib, .param .u64 pa, .param .u64 pc, "
       ".param .u64 pd)\n{\n"
    << "  .reg .b32 %r<32>;\n  .reg .b64 %rd<32>;\n  .reg .pred %p<4>;\n"
    << "  .reg .b32 %d<" << dregs << ">;\n  .reg .b32 %a<4>;\n"
    << "  .shared .align 1024 .b8 sa[" << bytes_a << "];\n"
    << "  .shared .align 1024 .b8 sb[" << bytes_b << "];\n"
    << "  ld.param.u64 %rd1, [pia];\n  ld.param.u64 %rd2, [pib];\n  ld.param.u64 %rd3, [pa];\n"
    << "  ld.param.u64 %rd4, [pc];\n  ld.param.u64 %rd5, [pd];\n"
    << "  mov.u32 %r1, %tid.x;\n";
  // Copy the images, one .b32 per thread per step.
  auto copy = [&](const char* img, const char* sym, size_t bytes, const char* tag) {
    s << "  shl.b32 %r2, %r1, 2;\n"
      << tag << "_loop:\n"
      << "  setp.ge.u32 %p1, %r2, " << bytes << ";\n  @%p1 bra " << tag << "_done;\n"
      << "  cvt.u64.u32 %rd6, %r2;\n  add.u64 %rd7, " << img << ", %rd6;\n"
      << "  ld.global.b32 %r3, [%rd7];\n  mov.u32 %r4, " << sym << ";\n  add.u32 %r4, %r4, %r2;\n"
      << "  st.shared.b32 [%r4], %r3;\n  add.u32 %r2, %r2, 512;\n  bra " << tag << "_loop;\n"
      << tag << "_done:\n";
  };
  copy("%rd1", "sa", bytes_a, "ca");
  copy("%rd2", "sb", bytes_b, "cb");
  s << "  bar.sync 0;\n";
  // warp w = tid / 32, g = lane / 4, t = lane % 4: the thread's first row 16 w + g, column 2 t.
  s << "  shr.u32 %r5, %r1, 5;\n  and.b32 %r6, %r1, 31;\n  shr.u32 %r7, %r6, 2;\n"
    << "  and.b32 %r8, %r6, 3;\n  shl.b32 %r9, %r5, 4;\n  add.u32 %r9, %r9, %r7;\n"  // row
    << "  shl.b32 %r10, %r8, 1;\n";                                                  // column
  // C/D element pointer base: (row * n + col) * esize.
  const int es = c.f16_acc ? 2 : 4;
  s << "  mad.lo.u32 %r11, %r9, " << n << ", %r10;\n  mul.wide.u32 %rd8, %r11, " << es << ";\n"
    << "  add.u64 %rd9, %rd4, %rd8;\n  add.u64 %rd10, %rd5, %rd8;\n";
  // Register i of D: f32: element i; f16: elements 2i, 2i + 1 (one .b32).
  auto d_offset = [&](int i) {  // element offset of fragment element i from (row, col) base
    return (8 * ((i >> 1) & 1)) * n + 8 * (i >> 2) + (i & 1);
  };
  for (int r = 0; r < dregs; ++r) {
    const int e = c.f16_acc ? 2 * r : r;
    s << "  ld.global.b32 %d" << r << ", [%rd9+" << d_offset(e) * es << "];\n";
  }
  // A registers (register A): reg j holds row g + 8 (j & 1), columns 2t + 8 (j >> 1) (+1).
  // Other types as mma.m16n8kK's A: lane (g, t) starts at column t 4 / eb, register j adds
  // 8 (j & 1) rows and (j >> 1) 16 / eb columns.
  const int eb = c.eb();
  if (c.a_regs) {
    s << "  mul.lo.u32 %r17, %r8, " << 4 / eb << ";\n"
      << "  mad.lo.u32 %r12, %r9, " << c.kdim << ", %r17;\n  mul.wide.u32 %rd11, %r12, " << eb
      << ";\n  add.u64 %rd12, %rd3, %rd11;\n";
  }
  s << "  mov.u32 %r13, sa;\n  mov.u32 %r14, sb;\n";
  s << "  setp.ne.u32 %p2, " << (c.scale_d ? 1 : 0) << ", 0;\n  setp.eq.u32 %p3, 0, 0;\n";
  s << "  wgmma.fence.sync.aligned;\n";
  const int ks = c.k_step();
  for (int kb = 0; kb < c.kdim / ks; ++kb) {
    // Descriptor start addresses: the element (0, ks kb) of each operand.
    const long offa = la.offset(0, ks * kb), offb = lb.offset(0, ks * kb);
    s << "  add.u32 %r15, %r14, " << offb << ";\n  cvt.u64.u32 %rd13, %r15;\n"
      << "  and.b64 %rd13, %rd13, 262143;\n  shr.u64 %rd13, %rd13, 4;\n"
      << "  or.b64 %rd13, %rd13, " << lb.desc_fields() << ";\n";
    std::string a_operand;
    if (c.a_regs) {
      for (int j = 0; j < 4; ++j)
        s << "  ld.global.b32 %a" << j << ", [%rd12+"
          << (8 * (j & 1) * c.kdim + (j >> 1) * (16 / eb) + ks * kb) * eb << "];\n";
      a_operand = "{%a0, %a1, %a2, %a3}";
    } else {
      s << "  add.u32 %r16, %r13, " << offa << ";\n  cvt.u64.u32 %rd14, %r16;\n"
        << "  and.b64 %rd14, %rd14, 262143;\n  shr.u64 %rd14, %rd14, 4;\n"
        << "  or.b64 %rd14, %rd14, " << la.desc_fields() << ";\n";
      a_operand = "%rd14";
    }
    s << "  wgmma.mma_async.sync.aligned.m64n" << n << "k" << ks
      << (c.satfinite ? ".satfinite." : ".")
      << (c.integer() ? "s32"
          : c.f16_acc ? "f16"
                      : "f32")
      << "." << in_name(c.a_in()) << "." << in_name(c.b_in()) << " {";
    for (int r = 0; r < dregs; ++r) s << (r ? ", " : "") << "%d" << r;
    s << "}, " << a_operand << ", %rd13, " << (kb == 0 ? "%p2" : "%p3");
    if (!c.integer()) s << ", " << c.scale_a << ", " << c.scale_b;  // integer: no immediates
    if (eb == 2) {                                                  // 16-bit: the transposes
      if (!c.a_regs) s << ", " << (c.trans_a ? 1 : 0);
      s << ", " << (c.trans_b ? 1 : 0);
    }
    s << ";\n";
  }
  s << "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;\n";
  for (int r = 0; r < dregs; ++r) {
    const int e = c.f16_acc ? 2 * r : r;
    s << "  st.global.b32 [%rd10+" << d_offset(e) * es << "], %d" << r << ";\n";
  }
  s << "  ret;\n}\n";
  return s.str();
}

// Runs one case with values from `value(matrix, row, col)` and checks D against the host GEMM.
template <class Value>
void run_case(const Case& c, Value value) {
  const int m = 64, n = c.n, k = c.kdim;
  INFO("N " << n << " K " << k << " " << in_name(c.a_in()) << "." << in_name(c.b_in())
            << (c.f16_acc ? " f16-acc" : "") << (c.satfinite ? " satfinite" : "")
            << (c.a_regs ? " A-regs" : " A-desc") << " trans " << c.trans_a << c.trans_b
            << " swizzle " << static_cast<int>(c.sw_a) << "/" << static_cast<int>(c.sw_b)
            << " scales " << c.scale_a << "," << c.scale_b << " scale-d " << c.scale_d);
  std::vector<float> a(m * k), b(static_cast<size_t>(k) * n), cin(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < k; ++j) a[i * k + j] = value(0, i, j);
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < n; ++j) b[i * n + j] = value(1, i, j);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) cin[i * n + j] = value(2, i, j);
  const int eb = c.eb();
  // An element's bytes: tf32 carries junk in the 13 low bits the instruction ignores.
  auto encode = [&](In t, float f, uint32_t junk) -> uint32_t {
    switch (t) {
      case In::kF16:
        return f16_bits(f);
      case In::kBF16:
        return bf16_bits(f);
      case In::kTF32:
        return std::bit_cast<uint32_t>(f) | (junk & 0x1fffu);
      default:
        return static_cast<uint32_t>(static_cast<int>(f)) & 0xffu;
    }
  };
  const Operand2D la = make_layout(m, k, c.trans_a, c.sw_a, eb);
  const Operand2D lb = make_layout(n, k, c.trans_b, c.sw_b, eb);
  // Images: every element at its swizzled offset; sizes rounded up to 1024 bytes.
  auto image = [&](const Operand2D& l, auto element) {
    long size = 0;
    for (int r = 0; r < l.rows; ++r)
      for (int kk = 0; kk < l.k; ++kk) size = std::max(size, l.swizzled(l.offset(r, kk)) + eb);
    std::vector<uint8_t> img(static_cast<size_t>((size + 1023) / 1024 * 1024), 0);
    std::vector<bool> used(img.size() / static_cast<size_t>(eb), false);
    for (int r = 0; r < l.rows; ++r)
      for (int kk = 0; kk < l.k; ++kk) {
        const long at = l.swizzled(l.offset(r, kk));
        REQUIRE(at % eb == 0);
        REQUIRE(!used[at / eb]);  // the layout is one-to-one
        used[at / eb] = true;
        const uint32_t bits = element(r, kk);
        std::memcpy(&img[at], &bits, static_cast<size_t>(eb));
      }
    return img;
  };
  std::vector<uint8_t> ia = image(la, [&](int r, int kk) {
    return encode(c.a_in(), a[r * k + kk], static_cast<uint32_t>(r * 7919 + kk * 104729));
  });
  std::vector<uint8_t> ib = image(lb, [&](int col, int kk) {
    return encode(c.b_in(), b[kk * n + col], static_cast<uint32_t>(col * 6007 + kk * 3571));
  });
  std::vector<uint8_t> a_rowmajor(a.size() * eb);
  for (size_t i = 0; i < a.size(); ++i) {
    const uint32_t bits = encode(c.a_in(), a[i], static_cast<uint32_t>(i * 2654435761u));
    std::memcpy(&a_rowmajor[i * eb], &bits, static_cast<size_t>(eb));
  }
  HostMemory mem;
  uint8_t* dia = mem.upload(ia);
  uint8_t* dib = mem.upload(ib);
  uint8_t* da = mem.upload(a_rowmajor);
  void* dc = nullptr;
  void* dd = nullptr;
  std::vector<int32_t> cint(cin.size());
  for (size_t i = 0; i < cin.size(); ++i)
    cint[i] = static_cast<int32_t>(static_cast<int64_t>(cin[i]) + c.c_bias);
  if (c.f16_acc) {
    std::vector<uint16_t> ch(cin.size());
    for (size_t i = 0; i < cin.size(); ++i) ch[i] = f16_bits(cin[i]);
    dc = mem.upload(ch);
    dd = mem.zeros<uint16_t>(cin.size());
  } else if (c.integer()) {
    dc = mem.upload(cint);
    dd = mem.zeros<int32_t>(cin.size());
  } else {
    dc = mem.upload(cin);
    dd = mem.zeros<float>(cin.size());
  }
  const std::string ptx = kernel_ptx(c, la, lb, ia.size(), ib.size());
  INFO(ptx);
  auto prog = compile_or_fail(ptx);
  require_success(
      run(*prog, "wg", {1}, {128}, Args().add(dia).add(dib).add(da).add(dc).add(dd), mem));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      INFO("D[" << i << "][" << j << "]");
      if (c.integer()) {
        int64_t want = c.scale_d ? cint[i * n + j] : 0;
        for (int kk = 0; kk < k; ++kk)
          want += static_cast<int64_t>(a[i * k + kk]) * static_cast<int64_t>(b[kk * n + j]);
        const int32_t expect =
            c.satfinite ? static_cast<int32_t>(std::clamp<int64_t>(want, INT32_MIN, INT32_MAX))
                        : static_cast<int32_t>(static_cast<uint32_t>(want));
        REQUIRE(static_cast<int32_t*>(dd)[i * n + j] == expect);
        continue;
      }
      float want = c.scale_d ? cin[i * n + j] : 0.0f;
      for (int kk = 0; kk < k; ++kk)
        want += (c.scale_a * a[i * k + kk]) * (c.scale_b * b[kk * n + j]);
      float got;
      if (c.f16_acc)
        got = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t*>(dd)[i * n + j]));
      else
        got = static_cast<float>(static_cast<float*>(dd)[i * n + j]);
      if (std::isnan(want))
        REQUIRE(std::isnan(got));
      else
        REQUIRE(got == want);
    }
}

float small(uint32_t seed, int which, int r, int col) {
  uint32_t h = seed * 2654435761u ^ (which * 40503u + r * 977u + col * 131u);
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return static_cast<float>(static_cast<int>(h % 9) - 4);  // -4..4
}

}  // namespace

TEST_CASE("wgmma m64nNk16 f16 and bf16 for every N, A from a descriptor and from registers",
          "[ptx][wgmma]") {
  for (int n = 8; n <= 256; n += 8) {
    Case c;
    c.n = n;
    c.bf16 = (n / 8) % 2 == 0;
    c.a_regs = (n / 8) % 3 == 0;
    run_case(c, [&](int w, int r, int col) { return small(static_cast<uint32_t>(n), w, r, col); });
  }
}

TEST_CASE("wgmma canonical layouts: K- and MN-major, no swizzle, 32B, 64B and 128B",
          "[ptx][wgmma]") {
  for (Sw sw : {Sw::kNone, Sw::k32, Sw::k64, Sw::k128})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Case c;
        c.n = 64;
        c.kdim = 64;  // four k steps: descriptors advance inside and across the swizzle atoms
        c.trans_a = ta;
        c.trans_b = tb;
        c.sw_a = sw;
        c.sw_b = sw;
        c.bf16 = ta;
        run_case(c,
                 [&](int w, int r, int col) { return small(7 + static_cast<int>(sw), w, r, col); });
      }
  // Mixed: A in registers with a 128B-swizzled N-major B; A K-major 32B with B MN-major 128B.
  Case c;
  c.n = 128;
  c.kdim = 32;
  c.a_regs = true;
  c.trans_b = true;
  c.sw_b = Sw::k128;
  run_case(c, [&](int w, int r, int col) { return small(11, w, r, col); });
  c.a_regs = false;
  c.sw_a = Sw::k32;
  c.trans_b = true;
  run_case(c, [&](int w, int r, int col) { return small(12, w, r, col); });
}

TEST_CASE("wgmma scale-d, imm-scale-a/b and the f16 accumulator", "[ptx][wgmma]") {
  for (int sa : {1, -1})
    for (int sb : {1, -1})
      for (bool sd : {true, false}) {
        Case c;
        c.n = 24;
        c.kdim = 32;
        c.scale_a = sa;
        c.scale_b = sb;
        c.scale_d = sd;
        c.sw_a = Sw::k64;
        c.sw_b = Sw::k128;
        run_case(c, [&](int w, int r, int col) { return small(20 + sa + 3 * sb, w, r, col); });
      }
  Case h;
  h.n = 32;
  h.f16_acc = true;
  h.sw_b = Sw::k128;
  run_case(h, [&](int w, int r, int col) { return small(30, w, r, col); });
  h.a_regs = true;
  h.trans_b = true;
  h.sw_b = Sw::k64;  // an N-major swizzle atom is span / 2 columns wide: 32 for 64B
  run_case(h, [&](int w, int r, int col) { return small(31, w, r, col); });
}

TEST_CASE("wgmma propagates NaN and infinities", "[ptx][wgmma]") {
  Case c;
  c.n = 16;
  const float inf = std::numeric_limits<float>::infinity();
  run_case(c, [&](int w, int r, int col) {
    if (w == 0 && r == 3 && col == 5) return std::numeric_limits<float>::quiet_NaN();
    if (w == 0 && r == 10 && col == 0) return inf;  // row 10: inf * values (some 0: NaN)
    if (w == 1 && col == 7 && r == 2) return -inf;  // column 7
    if (w == 2 && r == 40 && col == 9) return inf;  // C
    return small(40, w, r, col);
  });
}

float full_range(In t, uint32_t seed, int which, int r, int col) {
  uint32_t h = seed * 2654435761u ^ (which * 40503u + r * 977u + col * 131u);
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  if (which == 2) return static_cast<float>(static_cast<int>(h % 20001) - 10000);  // C
  return t == In::kU8 ? static_cast<float>(h % 256)
                      : static_cast<float>(static_cast<int>(h % 256) - 128);
}

TEST_CASE("wgmma m64nNk8 tf32: every N, A from a descriptor and from registers, low bits ignored",
          "[ptx][wgmma]") {
  for (int n = 8; n <= 256; n += 8) {
    Case c;
    c.n = n;
    c.in = In::kTF32;
    c.kdim = 16;  // two k steps
    c.a_regs = (n / 8) % 3 == 0;
    c.sw_a = static_cast<Sw>((n / 8) % 4);
    c.sw_b = static_cast<Sw>((n / 16) % 4);
    c.scale_a = (n / 8) % 2 ? 1 : -1;
    c.scale_d = (n / 8) % 5 != 0;
    run_case(
        c, [&](int w, int r, int col) { return small(static_cast<uint32_t>(n) + 50, w, r, col); });
  }
}

TEST_CASE("wgmma m64nNk32 s8 and u8: every N, mixed signedness, wrap and .satfinite",
          "[ptx][wgmma]") {
  const In kinds[] = {In::kS8, In::kU8};
  int i = 0;
  for (int n : {8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256}) {
    Case c;
    c.n = n;
    c.in = kinds[i % 2];
    c.in_b = kinds[(i / 2) % 2];
    c.kdim = 64;
    c.a_regs = i % 3 == 0;
    c.sw_a = static_cast<Sw>(i % 4);
    c.sw_b = static_cast<Sw>((i / 3) % 4);
    c.scale_d = i % 5 != 4;
    const In ta = *c.in, tb = *c.in_b;
    run_case(c, [&](int w, int r, int col) {
      return full_range(w == 0 ? ta : tb, static_cast<uint32_t>(n), w, r, col);
    });
    ++i;
  }
  // Sums past the s32 range: two's complement wrap, or clamped with .satfinite.
  for (bool sat : {false, true})
    for (int64_t bias : {int64_t{INT32_MAX} - 20000, int64_t{INT32_MIN} + 20000}) {
      Case c;
      c.n = 16;
      c.in = In::kU8;
      c.in_b = bias > 0 ? In::kU8 : In::kS8;
      c.kdim = 32;
      c.satfinite = sat;
      c.c_bias = bias;
      run_case(c, [&](int w, int r, int col) {
        if (w == 2) return 0.0f;
        if (w == 1 && bias < 0) return -100.0f;  // B negative: the sums go below INT32_MIN
        return static_cast<float>(200 + (r + col) % 50);
      });
    }
}

#ifndef CUSNAP_TEST_THROUGH_DRIVER  // the emulator's refusals: not sent to a GPU
TEST_CASE("wgmma forms that are not emulated are refused at load with their line", "[ptx][wgmma]") {
  auto body = [](const std::string& instr) {
    return ".version 8.4\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
           "  .reg .f32 %f<8>;\n  .reg .b64 %rd<4>;\n  .reg .b32 %r<8>;\n  .reg .pred %p<2>;\n" +
           instr + "\n  ret;\n}\n";
  };
  auto refused = [&](const char* instr, CompileStatus status) {
    INFO(instr);
    CompileResult r = compile(body(instr));
    REQUIRE(r.program == nullptr);
    CHECK(r.status == status);
    return r;
  };
  for (const char* instr :
       {"  wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%f0, %f1, %f2, %f3}, %rd1, %rd2, "
        "%p1, 1, 1;",
        "  wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc {%r0, %r1, %r2, %r3}, %rd1, "
        "%rd2, %p1;",
        "  wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd2, "
        "%r1, 0, %p1, 1, 1, 0, 0;"}) {
    CompileResult r = refused(instr, CompileStatus::kNotSupported);
    CHECK(r.error.find("line 10") != std::string::npos);
    CHECK(r.error.find("wgmma.mma_async") != std::string::npos);
  }
  // Bad immediates are invalid PTX.
  CompileResult bad = compile(
      body("  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd2, "
           "%p1, 2, 1, 0, 0;"));
  REQUIRE(bad.program == nullptr);
  CHECK(bad.error.find("imm-scale-a") != std::string::npos);
  for (const char* instr :
       {"  wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%f0, %f1, %f2, %f3}, %rd1, %rd2, "
        "%p1, 1, 1, 0, 0;",
        "  wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8 {%r0, %r1, %r2, %r3}, %rd1, %rd2, %p1, "
        "1, 1;",
        "  wgmma.mma_async.sync.aligned.m64n40k32.s32.s8.s8 {%r0, %r1, %r2, %r3, %r4, %r5, %r6, "
        "%r7, %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r0, %r1, %r2, %r3}, %rd1, %rd2, %p1;"})
    refused(instr, CompileStatus::kInvalidPtx);
  CompileResult regs = compile(body("  setmaxnreg.inc.sync.aligned.u32 100;"));
  REQUIRE(regs.program == nullptr);
  CHECK(regs.error.find("imm-reg-count") != std::string::npos);
}
#endif  // CUSNAP_TEST_THROUGH_DRIVER
