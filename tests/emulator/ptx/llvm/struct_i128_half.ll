target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

%f2 = type { float, float }

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.lanemask.lt()
declare i32 @llvm.nvvm.shfl.sync.bfly.i32(i32, i32, i32, i32)

define internal %f2 @pairf(float %a, <4 x i32> %v) noinline {
  %e0 = extractelement <4 x i32> %v, i32 0
  %e3 = extractelement <4 x i32> %v, i32 3
  %s = add i32 %e0, %e3
  %sf = uitofp i32 %s to float
  %x = fadd float %a, %sf
  %y = fmul float %a, 2.0
  %r0 = insertvalue %f2 undef, float %x, 0
  %r1 = insertvalue %f2 %r0, float %y, 1
  ret %f2 %r1
}

define void @kern3(i32 addrspace(1)* %out, i128 %big, half addrspace(1)* %hp) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %lm = call i32 @llvm.nvvm.read.ptx.sreg.lanemask.lt()
  %sh = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %tid, i32 1, i32 31)
  %tf = uitofp i32 %tid to float
  %v0 = insertelement <4 x i32> undef, i32 %tid, i32 0
  %v1 = insertelement <4 x i32> %v0, i32 1, i32 1
  %v2 = insertelement <4 x i32> %v1, i32 2, i32 2
  %v3 = insertelement <4 x i32> %v2, i32 %sh, i32 3
  %p = call %f2 @pairf(float %tf, <4 x i32> %v3)
  %px = extractvalue %f2 %p, 0
  %py = extractvalue %f2 %p, 1
  %pxi = fptoui float %px to i32
  %pyi = fptoui float %py to i32
  %t128 = zext i32 %tid to i128
  %t128s = shl i128 %t128, 60
  %bs = add i128 %big, %t128s
  %blo = trunc i128 %bs to i32
  %bhi0 = lshr i128 %bs, 64
  %bhi = trunc i128 %bhi0 to i32
  %h = load half, half addrspace(1)* %hp
  %h2 = fadd half %h, 0xH3C00
  %hb = bitcast half %h2 to i16
  %hw = zext i16 %hb to i32
  %base = mul i32 %tid, 8
  %o = getelementptr i32, i32 addrspace(1)* %out, i32 %base
  %o1 = getelementptr i32, i32 addrspace(1)* %o, i32 1
  %o2 = getelementptr i32, i32 addrspace(1)* %o, i32 2
  %o3 = getelementptr i32, i32 addrspace(1)* %o, i32 3
  %o4 = getelementptr i32, i32 addrspace(1)* %o, i32 4
  %o5 = getelementptr i32, i32 addrspace(1)* %o, i32 5
  %o6 = getelementptr i32, i32 addrspace(1)* %o, i32 6
  store i32 %lm, i32 addrspace(1)* %o
  store i32 %sh, i32 addrspace(1)* %o1
  store i32 %pxi, i32 addrspace(1)* %o2
  store i32 %pyi, i32 addrspace(1)* %o3
  store i32 %blo, i32 addrspace(1)* %o4
  store i32 %bhi, i32 addrspace(1)* %o5
  store i32 %hw, i32 addrspace(1)* %o6
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, i128, half addrspace(1)*)* @kern3, !"kernel", i32 1}
