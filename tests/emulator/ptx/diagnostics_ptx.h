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

// `vadd` (valid PTX the emulator does not implement) on line kRefusedLine of kernel
// `refused`.
inline constexpr int kRefusedLine = 10;
inline constexpr const char* kRefusedPtx = R"(.version 9.0
.target sm_90
.address_size 64
.visible .entry refused(.param .u32 sel)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u32 %r1, [sel];
  cvt.u64.u32 %rd1, %r1;
  vadd.s32.s32.s32 %r1, %r1, %r1;
  ret;
}
)";

}  // namespace cusnap_test
