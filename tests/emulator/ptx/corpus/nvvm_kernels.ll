; Hand-written NVVM IR for the toolkit's libNVVM (see regenerate.sh).
; block_sum(out, in, n): each thread maps in[i] (0 past n) to q + 7 * r, where q and r are the
; quotient and remainder of (x * 2654435761) by 1000 in 64 bits, and the block sums those in
; shared memory by a barrier-separated tree; thread 0 stores the block's sum to out[blockIdx].
; norms(out, in, n): out[i] = sqrt(a*a + b*b) / (1 + |a|) for (a, b) = in[2i], in[2i+1], in f64.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@partial = internal addrspace(3) global [128 x i64] undef, align 8

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare void @llvm.nvvm.barrier0()
declare double @llvm.sqrt.f64(double)
declare double @llvm.fabs.f64(double)

define void @block_sum(i64 addrspace(1)* %out, i32 addrspace(1)* %in, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %load, label %map

load:
  %ip = getelementptr i32, i32 addrspace(1)* %in, i32 %i
  %x0 = load i32, i32 addrspace(1)* %ip, align 4
  br label %map

map:
  %x = phi i32 [ %x0, %load ], [ 0, %entry ]
  %xw = zext i32 %x to i64
  %h = mul i64 %xw, 2654435761
  %q = udiv i64 %h, 1000
  %r = urem i64 %h, 1000
  %r7 = mul i64 %r, 7
  %v = add i64 %q, %r7
  %tid64 = zext i32 %tid to i64
  %sp = getelementptr [128 x i64], [128 x i64] addrspace(3)* @partial, i64 0, i64 %tid64
  store i64 %v, i64 addrspace(3)* %sp, align 8
  call void @llvm.nvvm.barrier0()
  br label %step

step:
  %half = phi i32 [ 64, %map ], [ %half1, %next ]
  %active = icmp ult i32 %tid, %half
  br i1 %active, label %add, label %next

add:
  %other = add i32 %tid, %half
  %other64 = zext i32 %other to i64
  %op = getelementptr [128 x i64], [128 x i64] addrspace(3)* @partial, i64 0, i64 %other64
  %a = load i64, i64 addrspace(3)* %sp, align 8
  %b = load i64, i64 addrspace(3)* %op, align 8
  %s = add i64 %a, %b
  store i64 %s, i64 addrspace(3)* %sp, align 8
  br label %next

next:
  call void @llvm.nvvm.barrier0()
  %half1 = lshr i32 %half, 1
  %again = icmp ne i32 %half1, 0
  br i1 %again, label %step, label %finish

finish:
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %store, label %done

store:
  %total = load i64, i64 addrspace(3)* getelementptr ([128 x i64], [128 x i64] addrspace(3)* @partial, i64 0, i64 0), align 8
  %outp = getelementptr i64, i64 addrspace(1)* %out, i32 %bid
  store i64 %total, i64 addrspace(1)* %outp, align 8
  br label %done

done:
  ret void
}

define void @norms(double addrspace(1)* %out, double addrspace(1)* %in, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %done

body:
  %j = shl i32 %i, 1
  %ap = getelementptr double, double addrspace(1)* %in, i32 %j
  %j1 = add i32 %j, 1
  %bp = getelementptr double, double addrspace(1)* %in, i32 %j1
  %a = load double, double addrspace(1)* %ap, align 8
  %b = load double, double addrspace(1)* %bp, align 8
  %aa = fmul double %a, %a
  %bb = fmul double %b, %b
  %sum = fadd double %aa, %bb
  %len = call double @llvm.sqrt.f64(double %sum)
  %abs = call double @llvm.fabs.f64(double %a)
  %den = fadd double %abs, 1.0
  %q = fdiv double %len, %den
  %outp = getelementptr double, double addrspace(1)* %out, i32 %i
  store double %q, double addrspace(1)* %outp, align 8
  br label %done

done:
  ret void
}

!nvvm.annotations = !{!0, !1}
!0 = !{void (i64 addrspace(1)*, i32 addrspace(1)*, i32)* @block_sum, !"kernel", i32 1}
!1 = !{void (double addrspace(1)*, double addrspace(1)*, i32)* @norms, !"kernel", i32 1}
!nvvmir.version = !{!2}
!2 = !{i32 2, i32 0, i32 3, i32 2}
