// Hand-written PTX shared by the driver-level diagnostics tests: a kernel that writes one 32-bit
// value per thread (so a grid larger than the buffer goes out of bounds) and a module holding an
// instruction the emulator does not implement.
#pragma once

namespace cusnap_test {

// `store_tid(out)`: out[tid.x] = tid.x. The store is on PTX line kStoreLine.
inline constexpr int kStoreLine = 12;
inline constexpr const char* kStorePtx = R"(.version 9.0
.target sm_90
.address_size 64
.visible .entry store_tid(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
}
)";

// `brx.idx` (an indirect branch the emulator does not implement) on line kBrxLine of kernel
// `switchy`.
inline constexpr int kBrxLine = 10;
inline constexpr const char* kBrxPtx = R"(.version 9.0
.target sm_90
.address_size 64
.visible .entry switchy(.param .u32 sel)
{
  .reg .b32 %r<2>;
  ld.param.u32 %r1, [sel];
A:
TARGETS: .branchtargets A, B;
  brx.idx %r1, TARGETS;
B:
  ret;
}
)";

}  // namespace cusnap_test
