; Hand-written LLVM IR for the NVPTX back end of Debian's llc (see regenerate.sh).
; stats(out, hist, in, n): a grid-stride loop over in[0..n): y = fma(x, 1.5, -0.25) clamped to
; [-2, 2] with minnum/maxnum, plus a constant picked by a switch on i % 4; hist[bin] += 1 for
; bin = clamp(trunc(x * 2) + 4, 0, 7); then a warp-shuffle sum of the per-thread counts, which
; lane 0 of each warp adds to hist[8].
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare float @llvm.fma.f32(float, float, float)
declare float @llvm.minnum.f32(float, float)
declare float @llvm.maxnum.f32(float, float)
declare i32 @llvm.nvvm.shfl.sync.down.i32(i32, i32, i32, i32)

define void @stats(float addrspace(1)* %out, i32 addrspace(1)* %hist, float addrspace(1)* %in,
                   i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %gdim = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %base = mul i32 %bid, %bdim
  %start = add i32 %base, %tid
  %stride = mul i32 %bdim, %gdim
  br label %head

head:
  %i = phi i32 [ %start, %entry ], [ %next, %join ]
  %count = phi i32 [ 0, %entry ], [ %count1, %join ]
  %more = icmp slt i32 %i, %n
  br i1 %more, label %body, label %reduce

body:
  %ip = getelementptr float, float addrspace(1)* %in, i32 %i
  %x = load float, float addrspace(1)* %ip, align 4
  %y = call float @llvm.fma.f32(float %x, float 1.5, float -0.25)
  %lo = call float @llvm.maxnum.f32(float %y, float -2.0)
  %cl = call float @llvm.minnum.f32(float %lo, float 2.0)
  %sel = srem i32 %i, 4
  switch i32 %sel, label %c3 [ i32 0, label %c0
                               i32 1, label %c1
                               i32 2, label %c2 ]
c0:
  br label %join
c1:
  br label %join
c2:
  br label %join
c3:
  br label %join

join:
  %k = phi float [ 10.0, %c0 ], [ 20.0, %c1 ], [ 30.0, %c2 ], [ 40.0, %c3 ]
  %r = fadd float %cl, %k
  %op = getelementptr float, float addrspace(1)* %out, i32 %i
  store float %r, float addrspace(1)* %op, align 4
  %x2 = fmul float %x, 2.0
  %t = fptosi float %x2 to i32
  %b0 = add i32 %t, 4
  %neg = icmp slt i32 %b0, 0
  %b1 = select i1 %neg, i32 0, i32 %b0
  %big = icmp sgt i32 %b1, 7
  %bin = select i1 %big, i32 7, i32 %b1
  %hp = getelementptr i32, i32 addrspace(1)* %hist, i32 %bin
  %old = atomicrmw add i32 addrspace(1)* %hp, i32 1 monotonic
  %count1 = add i32 %count, 1
  %next = add i32 %i, %stride
  br label %head

reduce:
  %s1 = call i32 @llvm.nvvm.shfl.sync.down.i32(i32 -1, i32 %count, i32 16, i32 31)
  %a1 = add i32 %count, %s1
  %s2 = call i32 @llvm.nvvm.shfl.sync.down.i32(i32 -1, i32 %a1, i32 8, i32 31)
  %a2 = add i32 %a1, %s2
  %s3 = call i32 @llvm.nvvm.shfl.sync.down.i32(i32 -1, i32 %a2, i32 4, i32 31)
  %a3 = add i32 %a2, %s3
  %s4 = call i32 @llvm.nvvm.shfl.sync.down.i32(i32 -1, i32 %a3, i32 2, i32 31)
  %a4 = add i32 %a3, %s4
  %s5 = call i32 @llvm.nvvm.shfl.sync.down.i32(i32 -1, i32 %a4, i32 1, i32 31)
  %a5 = add i32 %a4, %s5
  %lane = and i32 %tid, 31
  %first = icmp eq i32 %lane, 0
  br i1 %first, label %publish, label %done

publish:
  %tp = getelementptr i32, i32 addrspace(1)* %hist, i32 8
  %old2 = atomicrmw add i32 addrspace(1)* %tp, i32 %a5 monotonic
  br label %done

done:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, i32 addrspace(1)*, float addrspace(1)*, i32)* @stats,
       !"kernel", i32 1}
