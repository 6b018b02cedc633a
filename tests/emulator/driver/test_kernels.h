// PTX kernels shared by the emulator's driver tests and its probe program (two executables).
#pragma once

namespace cusnap::emu_test {

// busy(out, n): out[tid] = the value of x = (x + i) * 3 after n iterations, starting from tid.
// Long-running but finite for large n: used to keep a launch queued or running.
inline constexpr const char* kBusyPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry busy(.param .u64 out, .param .u32 n)
{
  .reg .b64 %rd<4>;
  .reg .b32 %r<6>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, 0;
  mov.u32 %r3, %tid.x;
LOOP:
  add.u32 %r3, %r3, %r2;
  mul.lo.u32 %r3, %r3, 3;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  mov.u32 %r4, %tid.x;
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
}
)";

}  // namespace cusnap::emu_test
