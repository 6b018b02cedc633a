; Hand-written LLVM IR for Debian's llc (see regenerate.sh), compiled for three targets
; (llc_vectors.<sm>.ptx): vector memory access, fp16 and f64 forms nvcc writes differently.
; vectors(f4, h2, d, s4, q2, n), per i < n:
;   f4[i] (<4 x float>, ld/st .v4.f32):  v * reverse(v) + (v.x > v.y ? v : -v)
;   h2[i] (<2 x half>):  (h + h.yx) * h, in f16 (add/mul .f16x2 on sm_75 and sm_86, through f32 on sm_50)
;   d[i]  (double):      sqrt(|x|) / (1 + floor(x)^2) + minnum(x, 0.5) * copysign(3, x)
;   s4[i] (<4 x i16>, .v4.u16):  s * 3 + (s >> 2) (logical), then umax(s, 1000) in lane 3
;   q2[i] (<2 x i64>, .v2.u64):  (q.x + q.y, q.x ^ (q.y << 7))
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare double @llvm.sqrt.f64(double)
declare double @llvm.fabs.f64(double)
declare double @llvm.floor.f64(double)
declare double @llvm.minnum.f64(double, double)
declare double @llvm.copysign.f64(double, double)

define void @vectors(<4 x float> addrspace(1)* %f4, <2 x half> addrspace(1)* %h2,
                     double addrspace(1)* %d, <4 x i16> addrspace(1)* %s4,
                     <2 x i64> addrspace(1)* %q2, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %done

body:
  %fp = getelementptr <4 x float>, <4 x float> addrspace(1)* %f4, i32 %i
  %v = load <4 x float>, <4 x float> addrspace(1)* %fp, align 16
  %w = shufflevector <4 x float> %v, <4 x float> undef, <4 x i32> <i32 3, i32 2, i32 1, i32 0>
  %vw = fmul <4 x float> %v, %w
  %vx = extractelement <4 x float> %v, i32 0
  %vy = extractelement <4 x float> %v, i32 1
  %gt = fcmp ogt float %vx, %vy
  %neg = fneg <4 x float> %v
  %pick = select i1 %gt, <4 x float> %v, <4 x float> %neg
  %fr = fadd <4 x float> %vw, %pick
  store <4 x float> %fr, <4 x float> addrspace(1)* %fp, align 16

  %hp = getelementptr <2 x half>, <2 x half> addrspace(1)* %h2, i32 %i
  %h = load <2 x half>, <2 x half> addrspace(1)* %hp, align 4
  %hs = shufflevector <2 x half> %h, <2 x half> undef, <2 x i32> <i32 1, i32 0>
  %ha = fadd <2 x half> %h, %hs
  %hm = fmul <2 x half> %ha, %h
  store <2 x half> %hm, <2 x half> addrspace(1)* %hp, align 4

  %dp = getelementptr double, double addrspace(1)* %d, i32 %i
  %x = load double, double addrspace(1)* %dp, align 8
  %ax = call double @llvm.fabs.f64(double %x)
  %sq = call double @llvm.sqrt.f64(double %ax)
  %fl = call double @llvm.floor.f64(double %x)
  %fl2 = fmul double %fl, %fl
  %den = fadd double %fl2, 1.0
  %q = fdiv double %sq, %den
  %mn = call double @llvm.minnum.f64(double %x, double 0.5)
  %cs = call double @llvm.copysign.f64(double 3.0, double %x)
  %t = fmul double %mn, %cs
  %dr = fadd double %q, %t
  store double %dr, double addrspace(1)* %dp, align 8

  %sp = getelementptr <4 x i16>, <4 x i16> addrspace(1)* %s4, i32 %i
  %s = load <4 x i16>, <4 x i16> addrspace(1)* %sp, align 8
  %s3 = mul <4 x i16> %s, <i16 3, i16 3, i16 3, i16 3>
  %ssh = lshr <4 x i16> %s, <i16 2, i16 2, i16 2, i16 2>
  %sr = add <4 x i16> %s3, %ssh
  %l3 = extractelement <4 x i16> %s, i32 3
  %big = icmp ugt i16 %l3, 1000
  %um = select i1 %big, i16 %l3, i16 1000
  %sr2 = insertelement <4 x i16> %sr, i16 %um, i32 3
  store <4 x i16> %sr2, <4 x i16> addrspace(1)* %sp, align 8

  %qp = getelementptr <2 x i64>, <2 x i64> addrspace(1)* %q2, i32 %i
  %qv = load <2 x i64>, <2 x i64> addrspace(1)* %qp, align 16
  %qx = extractelement <2 x i64> %qv, i32 0
  %qy = extractelement <2 x i64> %qv, i32 1
  %qs = add i64 %qx, %qy
  %qsh = shl i64 %qy, 7
  %qxr = xor i64 %qx, %qsh
  %q0 = insertelement <2 x i64> undef, i64 %qs, i32 0
  %q1 = insertelement <2 x i64> %q0, i64 %qxr, i32 1
  store <2 x i64> %q1, <2 x i64> addrspace(1)* %qp, align 16
  br label %done

done:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (<4 x float> addrspace(1)*, <2 x half> addrspace(1)*, double addrspace(1)*, <4 x i16> addrspace(1)*, <2 x i64> addrspace(1)*, i32)* @vectors, !"kernel", i32 1}
