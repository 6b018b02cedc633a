target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@arr = addrspace(1) global [4 x i32] [i32 100, i32 200, i32 300, i32 400], align 4
@ptr = addrspace(1) global i32 addrspace(1)* getelementptr ([4 x i32], [4 x i32] addrspace(1)* @arr, i64 0, i64 2), align 8
@gptr = addrspace(1) global [2 x i32*] [i32* addrspacecast (i32 addrspace(1)* @counter to i32*), i32* bitcast ([4 x i32]* addrspacecast ([4 x i32] addrspace(1)* @arr to [4 x i32]*) to i32*)], align 8
@counter = addrspace(1) global i32 0, align 4
@cst = addrspace(4) constant [2 x double] [double 1.5, double -0.25], align 8

%pair = type { i32, i16, i8 }

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.laneid()
declare i32 @llvm.nvvm.read.ptx.sreg.warpsize()

define void @kern2(i32 addrspace(1)* %out, %pair* byval(%pair) align 4 %pp, <2 x i16> addrspace(1)* %hv, i32 %sel) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  %ws = call i32 @llvm.nvvm.read.ptx.sreg.warpsize()
  %local = alloca [8 x i32], align 4
  br label %fill
fill:
  %k = phi i32 [0, %entry], [%k1, %fill]
  %lp = getelementptr [8 x i32], [8 x i32]* %local, i32 0, i32 %k
  %kv = mul i32 %k, %tid
  store volatile i32 %kv, i32* %lp, align 4
  %k1 = add i32 %k, 1
  %c = icmp ult i32 %k1, 8
  br i1 %c, label %fill, label %after
after:
  %ix = and i32 %tid, 7
  %lq = getelementptr [8 x i32], [8 x i32]* %local, i32 0, i32 %ix
  %lv = load volatile i32, i32* %lq, align 4
  %p = load i32 addrspace(1)*, i32 addrspace(1)* addrspace(1)* @ptr, align 8
  %pv0 = load i32, i32 addrspace(1)* %p, align 4
  %gpp = getelementptr [2 x i32*], [2 x i32*] addrspace(1)* @gptr, i32 0, i32 1
  %g = load i32*, i32* addrspace(1)* %gpp, align 8
  %gv = load i32, i32* %g, align 4
  %pv = add i32 %pv0, %gv
  %a0 = getelementptr %pair, %pair* %pp, i32 0, i32 0
  %a1 = getelementptr %pair, %pair* %pp, i32 0, i32 1
  %a2 = getelementptr %pair, %pair* %pp, i32 0, i32 2
  %f0 = load i32, i32* %a0
  %f1 = load i16, i16* %a1
  %f2 = load i8, i8* %a2
  %f1w = sext i16 %f1 to i32
  %f2w = zext i8 %f2 to i32
  %hvv = load <2 x i16>, <2 x i16> addrspace(1)* %hv, align 4
  %h0 = extractelement <2 x i16> %hvv, i32 0
  %h1 = extractelement <2 x i16> %hvv, i32 1
  %hs = add i16 %h0, %h1
  %hsw = zext i16 %hs to i32
  %old = atomicrmw add i32 addrspace(1)* @counter, i32 1 seq_cst
  %cp = getelementptr [2 x double], [2 x double] addrspace(4)* @cst, i32 0, i32 1
  %cd = load double, double addrspace(4)* %cp
  %cdd = fmul double %cd, 8.0
  %cdi = fptosi double %cdd to i32
  switch i32 %sel, label %def [ i32 0, label %s0
                                i32 1, label %s1
                                i32 5, label %s5
                                i32 9, label %s9 ]
s0: br label %join
s1: br label %join
s5: br label %join
s9: br label %join
def: br label %join
join:
  %sw = phi i32 [10, %s0], [11, %s1], [15, %s5], [19, %s9], [-1, %def]
  %base = mul i32 %tid, 12
  %o = getelementptr i32, i32 addrspace(1)* %out, i32 %base
  %o1 = getelementptr i32, i32 addrspace(1)* %o, i32 1
  %o2 = getelementptr i32, i32 addrspace(1)* %o, i32 2
  %o3 = getelementptr i32, i32 addrspace(1)* %o, i32 3
  %o4 = getelementptr i32, i32 addrspace(1)* %o, i32 4
  %o5 = getelementptr i32, i32 addrspace(1)* %o, i32 5
  %o6 = getelementptr i32, i32 addrspace(1)* %o, i32 6
  %o7 = getelementptr i32, i32 addrspace(1)* %o, i32 7
  %o8 = getelementptr i32, i32 addrspace(1)* %o, i32 8
  %o9 = getelementptr i32, i32 addrspace(1)* %o, i32 9
  %o10 = getelementptr i32, i32 addrspace(1)* %o, i32 10
  store i32 %lane, i32 addrspace(1)* %o
  store i32 %ws, i32 addrspace(1)* %o1
  store i32 %lv, i32 addrspace(1)* %o2
  store i32 %pv, i32 addrspace(1)* %o3
  store i32 %f0, i32 addrspace(1)* %o4
  store i32 %f1w, i32 addrspace(1)* %o5
  store i32 %f2w, i32 addrspace(1)* %o6
  store i32 %hsw, i32 addrspace(1)* %o7
  store i32 %old, i32 addrspace(1)* %o8
  store i32 %cdi, i32 addrspace(1)* %o9
  store i32 %sw, i32 addrspace(1)* %o10
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, %pair*, <2 x i16> addrspace(1)*, i32)* @kern2, !"kernel", i32 1}
