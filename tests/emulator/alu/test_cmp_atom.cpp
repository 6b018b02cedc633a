// setp comparisons and atomics.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <thread>

#include "alu_test_util.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

TEST_CASE("integer compares by signedness", "[alu][cmp]") {
  Mods m;
  for (uint64_t a : int_values(32, 30, 3)) {
    for (uint64_t b : int_values(32, 30, 4)) {
      const int32_t sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
      const uint32_t ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
      CHECK(cmp1(CmpOp::kLt, Type::kS32, m, a, b) == (sa < sb));
      CHECK(cmp1(CmpOp::kLt, Type::kU32, m, a, b) == (ua < ub));
      CHECK(cmp1(CmpOp::kGe, Type::kS32, m, a, b) == (sa >= sb));
      CHECK(cmp1(CmpOp::kLo, Type::kS32, m, a, b) == (ua < ub));
      CHECK(cmp1(CmpOp::kHs, Type::kU32, m, a, b) == (ua >= ub));
      CHECK(cmp1(CmpOp::kEq, Type::kB32, m, a, b) == (ua == ub));
      CHECK(cmp1(CmpOp::kNe, Type::kS32, m, a, b) == (ua != ub));
    }
  }
  for (uint64_t a : int_values(64, 20, 5)) {
    for (uint64_t b : int_values(64, 20, 6)) {
      CHECK(cmp1(CmpOp::kLe, Type::kS64, m, a, b) ==
            (static_cast<int64_t>(a) <= static_cast<int64_t>(b)));
      CHECK(cmp1(CmpOp::kGt, Type::kU64, m, a, b) == (a > b));
      CHECK(cmp1(CmpOp::kLt, Type::kS16, m, a, b) ==
            (static_cast<int16_t>(a) < static_cast<int16_t>(b)));
    }
  }
  CHECK_FALSE(compare_supported(CmpOp::kLt, Type::kB32, m));
  CHECK_FALSE(compare_supported(CmpOp::kLo, Type::kF32, m));
}

TEST_CASE("float compares: ordered, unordered, num/nan, ftz", "[alu][cmp]") {
  Mods m;
  const auto vals = f32_values(30);
  for (float a : vals) {
    for (float b : vals) {
      const bool un = std::isnan(a) || std::isnan(b);
      INFO("a=" << a << " b=" << b);
      CHECK(cmp1(CmpOp::kEq, Type::kF32, m, f2u(a), f2u(b)) == (a == b));
      CHECK(cmp1(CmpOp::kNe, Type::kF32, m, f2u(a), f2u(b)) == (!un && a != b));
      CHECK(cmp1(CmpOp::kLt, Type::kF32, m, f2u(a), f2u(b)) == (a < b));
      CHECK(cmp1(CmpOp::kGeu, Type::kF32, m, f2u(a), f2u(b)) == (un || a >= b));
      CHECK(cmp1(CmpOp::kNeu, Type::kF32, m, f2u(a), f2u(b)) == (un || a != b));
      CHECK(cmp1(CmpOp::kNum, Type::kF32, m, f2u(a), f2u(b)) == !un);
      CHECK(cmp1(CmpOp::kNan, Type::kF32, m, f2u(a), f2u(b)) == un);
      CHECK(cmp1(CmpOp::kLe, Type::kF64, m, d2u(a), d2u(b)) == (static_cast<double>(a) <= b));
    }
  }
  Mods ftz;
  ftz.ftz = true;
  CHECK(cmp1(CmpOp::kEq, Type::kF32, ftz, 0x00000001u, 0x80000000u));
  CHECK_FALSE(cmp1(CmpOp::kEq, Type::kF32, m, 0x00000001u, 0x80000000u));
}

TEST_CASE("f16x2 compares give one predicate per half", "[alu][cmp]") {
  Mods m;
  uint64_t a[kWarpSize] = {}, b[kWarpSize] = {};
  a[0] = 0x3c004000;  // hi 1.0, lo 2.0
  b[0] = 0x40003c00;  // hi 2.0, lo 1.0
  a[1] = 0x7e00bc00;  // hi NaN, lo -1.0
  b[1] = 0x3c00bc00;
  uint32_t lo = 0, hi = 0;
  compare_x2(CmpOp::kLt, Type::kF16x2, m, 0x3u, a, b, &lo, &hi);
  CHECK(lo == 0u);
  CHECK(hi == 0x1u);
  compare_x2(CmpOp::kLeu, Type::kF16x2, m, 0x3u, a, b, &lo, &hi);
  CHECK(lo == 0x2u);
  CHECK(hi == 0x3u);
  CHECK(compare(CmpOp::kGt, Type::kF16x2, m, 0x3u, a, b) == 0x1u);
  CHECK(compare(CmpOp::kEq, Type::kBF16, m, 0x3u, a, b) == 0x2u);  // low halves bf16
}

TEST_CASE("atomics: integer ops return the old value and update memory", "[alu][atom]") {
  uint32_t w = 10;
  CHECK(atomic_rmw(AtomOp::kAdd, Type::kU32, &w, 5, 0) == 10u);
  CHECK(w == 15u);
  CHECK(atomic_rmw(AtomOp::kMin, Type::kS32, &w, static_cast<uint32_t>(-3), 0) == 15u);
  CHECK(static_cast<int32_t>(w) == -3);
  CHECK(atomic_rmw(AtomOp::kMin, Type::kU32, &w, 7, 0) == static_cast<uint32_t>(-3));
  CHECK(w == 7u);
  CHECK(atomic_rmw(AtomOp::kMax, Type::kS32, &w, static_cast<uint32_t>(-1), 0) == 7u);
  CHECK(w == 7u);
  CHECK(atomic_rmw(AtomOp::kInc, Type::kU32, &w, 7, 0) == 7u);
  CHECK(w == 0u);  // old >= 7 wraps to 0
  CHECK(atomic_rmw(AtomOp::kInc, Type::kU32, &w, 7, 0) == 0u);
  CHECK(w == 1u);
  CHECK(atomic_rmw(AtomOp::kDec, Type::kU32, &w, 9, 0) == 1u);
  CHECK(w == 0u);
  CHECK(atomic_rmw(AtomOp::kDec, Type::kU32, &w, 9, 0) == 0u);
  CHECK(w == 9u);  // old == 0 wraps to the bound
  CHECK(atomic_rmw(AtomOp::kAnd, Type::kB32, &w, 0xc, 0) == 9u);
  CHECK(w == 8u);
  CHECK(atomic_rmw(AtomOp::kOr, Type::kB32, &w, 3, 0) == 8u);
  CHECK(atomic_rmw(AtomOp::kXor, Type::kB32, &w, 1, 0) == 11u);
  CHECK(w == 10u);
  CHECK(atomic_rmw(AtomOp::kCas, Type::kB32, &w, 99, 5) == 10u);
  CHECK(w == 10u);  // compare failed
  CHECK(atomic_rmw(AtomOp::kCas, Type::kB32, &w, 99, 10) == 10u);
  CHECK(w == 99u);
  CHECK(atomic_rmw(AtomOp::kExch, Type::kB32, &w, 1, 0) == 99u);
  CHECK(w == 1u);
  uint64_t q = ~uint64_t{0} - 1;
  CHECK(atomic_rmw(AtomOp::kAdd, Type::kU64, &q, 3, 0) == ~uint64_t{0} - 1);
  CHECK(q == 1u);
  CHECK(atomic_rmw(AtomOp::kMax, Type::kS64, &q, static_cast<uint64_t>(-5), 0) == 1u);
  CHECK(q == 1u);
  CHECK(atomic_rmw(AtomOp::kMax, Type::kU64, &q, static_cast<uint64_t>(-5), 0) == 1u);
  CHECK(q == static_cast<uint64_t>(-5));
  CHECK(atomic_rmw(AtomOp::kCas, Type::kB64, &q, 7, static_cast<uint64_t>(-5)) ==
        static_cast<uint64_t>(-5));
  CHECK(q == 7u);
  CHECK_FALSE(atomic_supported(AtomOp::kInc, Type::kU64));
  CHECK_FALSE(atomic_supported(AtomOp::kAnd, Type::kF32));
  CHECK(atomic_rmw(AtomOp::kAnd, Type::kF32, &w, 1, 0) == ~uint64_t{0});
  CHECK(w == 1u);  // unsupported: memory untouched
}

TEST_CASE("atomics: float adds (f32 flushes subnormals)", "[alu][atom]") {
  float f = 1.5f;
  CHECK(u2f(atomic_rmw(AtomOp::kAdd, Type::kF32, &f, f2u(2.25f), 0)) == 1.5f);
  CHECK(f == 3.75f);
  float g = 0.0f;
  atomic_rmw(AtomOp::kAdd, Type::kF32, &g, f2u(1e-40f), 0);
  CHECK(f2u(g) == 0u);
  double d = 1.0;
  CHECK(u2d(atomic_rmw(AtomOp::kAdd, Type::kF64, &d, d2u(1e-310), 0)) == 1.0);
  CHECK(d == 1.0 + 1e-310);
  double e = 0.0;
  atomic_rmw(AtomOp::kAdd, Type::kF64, &e, d2u(1e-310), 0);
  CHECK(e == 1e-310);   // f64 keeps subnormals
  uint16_t h = 0x3c00;  // 1.0
  CHECK(atomic_rmw(AtomOp::kAdd, Type::kF16, &h, 0x3800, 0) == 0x3c00u);
  CHECK(h == 0x3e00u);       // 1.5
  uint32_t h2 = 0x3c004000;  // {1.0, 2.0}
  atomic_rmw(AtomOp::kAdd, Type::kF16x2, &h2, 0x3c003c00, 0);
  CHECK(h2 == 0x40004200u);  // {2.0, 3.0}
  uint16_t b = 0x3f80;       // bf16 1.0
  atomic_rmw(AtomOp::kAdd, Type::kBF16, &b, 0x3f80, 0);
  CHECK(b == 0x4000u);
}

TEST_CASE("atomics are atomic across host threads", "[alu][atom]") {
  uint32_t counter = 0;
  uint64_t wide = 0;
  float fsum = 0.0f;
  uint32_t maxv = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        atomic_rmw(AtomOp::kAdd, Type::kU32, &counter, 1, 0);
        atomic_rmw(AtomOp::kAdd, Type::kU64, &wide, 3, 0);
        atomic_rmw(AtomOp::kAdd, Type::kF32, &fsum, f2u(1.0f), 0);
        atomic_rmw(AtomOp::kMax, Type::kU32, &maxv, static_cast<uint32_t>(t * 100000 + i), 0);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(counter == 80000u);
  CHECK(wide == 240000u);
  CHECK(fsum == 80000.0f);
  CHECK(maxv == 319999u);
}
