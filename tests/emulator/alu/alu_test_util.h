// Helpers for the ALU tests: run one instruction on a warp, edge-value generators.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "alu.h"

namespace cusnap::emu::ptx::test {

inline uint32_t f2u(float f) { return std::bit_cast<uint32_t>(f); }
inline float u2f(uint64_t u) { return std::bit_cast<float>(static_cast<uint32_t>(u)); }
inline uint64_t d2u(double f) { return std::bit_cast<uint64_t>(f); }
inline double u2d(uint64_t u) { return std::bit_cast<double>(u); }

// Runs `op` on a single active lane (the others hold a sentinel that must survive) and returns
// the lane's result.
inline uint64_t run1(AluOp op, Type t, const Mods& m, uint64_t a, uint64_t b = 0, uint64_t c = 0,
                     uint64_t e = 0, CarryFlags* carry = nullptr, int lane = 5) {
  uint64_t va[kWarpSize], vb[kWarpSize], vc[kWarpSize], vd[kWarpSize], ve[kWarpSize];
  for (int i = 0; i < kWarpSize; ++i) {
    va[i] = vb[i] = vc[i] = ve[i] = 0x5555;
    vd[i] = 0xdeadbeefcafef00dull;
  }
  va[lane] = a;
  vb[lane] = b;
  vc[lane] = c;
  ve[lane] = e;
  alu(op, t, m, 1u << lane, va, vb, vc, vd, carry, ve);
  for (int i = 0; i < kWarpSize; ++i) {
    if (i != lane && vd[i] != 0xdeadbeefcafef00dull)
      return 0xbad0bad0bad0bad0ull;  // wrote inactive lane
  }
  return vd[lane];
}

inline uint64_t cvt1(Type dst, Type src, const Mods& m, uint64_t a, uint64_t b = 0) {
  uint64_t va[kWarpSize] = {}, vb[kWarpSize] = {}, vd[kWarpSize] = {};
  va[3] = a;
  vb[3] = b;
  cvt(dst, src, m, 1u << 3, va, vd, vb);
  return vd[3];
}

inline bool cmp1(CmpOp op, Type t, const Mods& m, uint64_t a, uint64_t b) {
  uint64_t va[kWarpSize] = {}, vb[kWarpSize] = {};
  va[7] = a;
  vb[7] = b;
  const uint32_t r = compare(op, t, m, 1u << 7, va, vb);
  return r == (1u << 7);
}

// Interesting integer bit patterns for a width plus random ones.
inline std::vector<uint64_t> int_values(int bits, int random_count, uint64_t seed = 1) {
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  std::vector<uint64_t> v = {0,
                             1,
                             2,
                             3,
                             7,
                             8,
                             31,
                             32,
                             33,
                             63,
                             64,
                             0xff,
                             0x100,
                             0x7fff,
                             0x8000,
                             0xffff,
                             0x7fffffff,
                             0x80000000,
                             0xffffffff,
                             0x100000000,
                             0x7fffffffffffffff,
                             0x8000000000000000,
                             ~uint64_t{0},
                             ~uint64_t{0} - 1,
                             0x123456789abcdef0};
  std::mt19937_64 rng(seed);
  for (int i = 0; i < random_count; ++i) {
    uint64_t r = rng();
    if (i % 3 == 1) r >>= (rng() % 64);
    v.push_back(r);
  }
  for (auto& x : v) x &= mask;
  return v;
}

inline std::vector<float> f32_values(int random_count, uint64_t seed = 2) {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          0.5f,
                          2.0f,
                          3.0f,
                          1e-45f,
                          -1e-45f,
                          1.17549435e-38f,
                          1.1754942e-38f,
                          -1.1754942e-38f,
                          3.4028235e38f,
                          -3.4028235e38f,
                          INFINITY,
                          -INFINITY,
                          NAN,
                          -NAN,
                          1.0f / 3,
                          1e30f,
                          1e-30f,
                          0.1f,
                          100.5f,
                          -2.5f,
                          16777217.0f,
                          8388608.5f};
  std::mt19937_64 rng(seed);
  for (int i = 0; i < random_count; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 4 == 0) u = (u & 0x807fffffu) | (static_cast<uint32_t>(120 + rng() % 16) << 23);
    v.push_back(std::bit_cast<float>(u));
  }
  return v;
}

inline std::vector<double> f64_values(int random_count, uint64_t seed = 3) {
  std::vector<double> v = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.5,
                           2.0,
                           3.0,
                           4.9e-324,
                           -4.9e-324,
                           2.2250738585072014e-308,
                           1.7976931348623157e308,
                           INFINITY,
                           -INFINITY,
                           NAN,
                           1.0 / 3,
                           1e300,
                           1e-300,
                           0.1,
                           9007199254740993.0,
                           -2.5};
  std::mt19937_64 rng(seed);
  for (int i = 0; i < random_count; ++i) {
    uint64_t u = rng();
    if (i % 4 == 0) u = (u & 0x800fffffffffffffull) | ((1000 + rng() % 48) << 52);
    v.push_back(std::bit_cast<double>(u));
  }
  return v;
}

}  // namespace cusnap::emu::ptx::test
