target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@table = internal addrspace(1) global [4 x float] [float 1.0, float 2.5, float -3.0, float 0.125], align 16
@sh = internal addrspace(3) global [64 x i32] undef, align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare void @llvm.nvvm.barrier0()

define internal i32 @helper(i32 %a, i32 %b) noinline {
  %s = mul i32 %a, %b
  %t = add i32 %s, 7
  ret i32 %t
}

define void @kern(float addrspace(1)* %out, <4 x float> addrspace(1)* %vin, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %m = mul i32 %bid, %bdim
  %i = add i32 %m, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %done
body:
  %vp = getelementptr <4 x float>, <4 x float> addrspace(1)* %vin, i32 %i
  %v = load <4 x float>, <4 x float> addrspace(1)* %vp, align 16
  %x = extractelement <4 x float> %v, i32 0
  %y = extractelement <4 x float> %v, i32 3
  %idx = and i32 %i, 3
  %tp = getelementptr [4 x float], [4 x float] addrspace(1)* @table, i32 0, i32 %idx
  %tv = load float, float addrspace(1)* %tp, align 4
  %xy = fmul float %x, %y
  %r0 = fadd float %xy, %tv
  %r1 = fadd float %r0, 0x3FB99999A0000000
  %shp = getelementptr [64 x i32], [64 x i32] addrspace(3)* @sh, i32 0, i32 %tid
  %h = call i32 @helper(i32 %i, i32 3)
  store i32 %h, i32 addrspace(3)* %shp, align 4
  call void @llvm.nvvm.barrier0()
  %tid2 = xor i32 %tid, 1
  %shp2 = getelementptr [64 x i32], [64 x i32] addrspace(3)* @sh, i32 0, i32 %tid2
  %hv = load i32, i32 addrspace(3)* %shp2, align 4
  %hf = sitofp i32 %hv to float
  %neg = icmp slt i32 %i, 5
  %sel = select i1 %neg, float -1.5, float %hf
  %r2 = fadd float %r1, %sel
  %op = getelementptr float, float addrspace(1)* %out, i32 %i
  store float %r2, float addrspace(1)* %op, align 4
  br label %done
done:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, <4 x float> addrspace(1)*, i32)* @kern, !"kernel", i32 1}
