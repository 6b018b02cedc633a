; Hand-written LLVM IR for Debian's llc (see regenerate.sh), compiled for three targets
; (llc_calls.<sm>.ptx): the call ABI and control flow llc writes. calls(out, x, n), per i < n
; with v = x[i], u = v & 0x7fffffff:
;   out[6i]   = ops[i & 3](v, i), an indirect call (call via .callprototype) through a table of
;               function addresses in a global initializer: add, sub, mul, (a << 3) ^ b
;   out[6i+1] = weak_scale(v) = v * 5 + 1 (a .weak function)
;   out[6i+2..3] = combine(S{v, (v & 1023) * 0.25f, (i64) v << 8} byval, (i8)(i - 50)), which
;               returns R{s.c + (i64) s.a * c, s.b * 2 + c}: out[6i+2] = low 32 bits of R.a,
;               out[6i+3] = the bits of R.b
;   out[6i+4] = digits(u, 0) (recursive, its digit kept in a local array) + table13(u % 13)
;               (a 10-case switch: a jump chain in llc 14)
;   out[6i+5] = walk(v) (an irreducible loop) ^ asm_mix(v, i) ^ asm_min(v, 7i) (inline asm with
;               { } blocks that declare .reg and .pred)
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

%S = type { i32, float, i64 }
%R = type { i64, float }

@ops = internal addrspace(1) global [4 x i32 (i32, i32)*] [i32 (i32, i32)* @op_add, i32 (i32, i32)* @op_sub, i32 (i32, i32)* @op_mul, i32 (i32, i32)* @op_mix], align 8

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define internal i32 @op_add(i32 %a, i32 %b) noinline {
  %r = add i32 %a, %b
  ret i32 %r
}
define internal i32 @op_sub(i32 %a, i32 %b) noinline {
  %r = sub i32 %a, %b
  ret i32 %r
}
define internal i32 @op_mul(i32 %a, i32 %b) noinline {
  %r = mul i32 %a, %b
  ret i32 %r
}
define internal i32 @op_mix(i32 %a, i32 %b) noinline {
  %s = shl i32 %a, 3
  %r = xor i32 %s, %b
  ret i32 %r
}

define weak i32 @weak_scale(i32 %x) noinline {
  %m = mul i32 %x, 5
  %r = add i32 %m, 1
  ret i32 %r
}

define internal %R @combine(%S* byval(%S) align 8 %s, i8 signext %c) noinline {
  %pa = getelementptr %S, %S* %s, i32 0, i32 0
  %a = load i32, i32* %pa, align 8
  %pb = getelementptr %S, %S* %s, i32 0, i32 1
  %b = load float, float* %pb, align 4
  %pc = getelementptr %S, %S* %s, i32 0, i32 2
  %cc = load i64, i64* %pc, align 8
  %aw = sext i32 %a to i64
  %cw = sext i8 %c to i64
  %prod = mul i64 %aw, %cw
  %ra = add i64 %cc, %prod
  %b2 = fmul float %b, 2.0
  %cf = sitofp i8 %c to float
  %rb = fadd float %b2, %cf
  %r0 = insertvalue %R undef, i64 %ra, 0
  %r1 = insertvalue %R %r0, float %rb, 1
  ret %R %r1
}

define internal i32 @digits(i32 %x, i32 %depth) noinline {
entry:
  %buf = alloca [8 x i32], align 4
  %small = icmp ult i32 %x, 10
  br i1 %small, label %leaf, label %rec

leaf:
  ret i32 %x

rec:
  %slot = and i32 %depth, 7
  %p = getelementptr [8 x i32], [8 x i32]* %buf, i32 0, i32 %slot
  %d = urem i32 %x, 10
  store volatile i32 %d, i32* %p, align 4
  %q = udiv i32 %x, 10
  %dn = add i32 %depth, 1
  %r = call i32 @digits(i32 %q, i32 %dn)
  %back = load volatile i32, i32* %p, align 4
  %sum = add i32 %r, %back
  ret i32 %sum
}

define internal i32 @table13(i32 %k) noinline {
entry:
  switch i32 %k, label %other [
    i32 0, label %c0
    i32 1, label %c1
    i32 2, label %c2
    i32 3, label %c3
    i32 4, label %c4
    i32 5, label %c5
    i32 7, label %c7
    i32 8, label %c8
    i32 10, label %c10
    i32 12, label %c12
  ]
c0:
  ret i32 1000
c1:
  ret i32 2001
c2:
  ret i32 3003
c3:
  ret i32 4006
c4:
  ret i32 5010
c5:
  ret i32 6015
c7:
  ret i32 7021
c8:
  ret i32 8028
c10:
  ret i32 9036
c12:
  ret i32 10045
other:
  %m = mul i32 %k, -1
  ret i32 %m
}

; An irreducible loop: entered at A or at B. A: s = s * 3 + 1; B: s ^= s >> 3; after each step
; k++; leave after 40 steps; from B go to A when bit 2 of s is set.
define internal i32 @walk(i32 %x) noinline {
entry:
  %odd = and i32 %x, 1
  %startA = icmp ne i32 %odd, 0
  br i1 %startA, label %A, label %B

A:
  %sa = phi i32 [ %x, %entry ], [ %sb2, %Bnext ]
  %ka = phi i32 [ 0, %entry ], [ %kb2, %Bnext ]
  %sa3 = mul i32 %sa, 3
  %sa2 = add i32 %sa3, 1
  %ka2 = add i32 %ka, 1
  %enda = icmp uge i32 %ka2, 40
  br i1 %enda, label %exit, label %B

B:
  %sb = phi i32 [ %x, %entry ], [ %sa2, %A ], [ %sb2, %Bstay ]
  %kb = phi i32 [ 0, %entry ], [ %ka2, %A ], [ %kb2, %Bstay ]
  %sh = lshr i32 %sb, 3
  %sb2 = xor i32 %sb, %sh
  %kb2 = add i32 %kb, 1
  %endb = icmp uge i32 %kb2, 40
  br i1 %endb, label %exit, label %Bnext

Bnext:
  %bit = and i32 %sb2, 4
  %toA = icmp ne i32 %bit, 0
  br i1 %toA, label %A, label %Bstay

Bstay:
  br label %B

exit:
  %r = phi i32 [ %sa2, %A ], [ %sb2, %B ]
  ret i32 %r
}

define void @calls(i32 addrspace(1)* %out, i32 addrspace(1)* %x, i32 %n) {
entry:
  %s = alloca %S, align 8
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %done

body:
  %xp = getelementptr i32, i32 addrspace(1)* %x, i32 %i
  %v = load i32, i32 addrspace(1)* %xp, align 4
  %o = mul i32 %i, 6
  %sel = and i32 %i, 3
  %fpp = getelementptr [4 x i32 (i32, i32)*], [4 x i32 (i32, i32)*] addrspace(1)* @ops, i32 0, i32 %sel
  %fp = load i32 (i32, i32)*, i32 (i32, i32)* addrspace(1)* %fpp, align 8
  %r0 = call i32 %fp(i32 %v, i32 %i)
  %p0 = getelementptr i32, i32 addrspace(1)* %out, i32 %o
  store i32 %r0, i32 addrspace(1)* %p0, align 4

  %r1 = call i32 @weak_scale(i32 %v)
  %o1 = add i32 %o, 1
  %p1 = getelementptr i32, i32 addrspace(1)* %out, i32 %o1
  store i32 %r1, i32 addrspace(1)* %p1, align 4

  %sa = getelementptr %S, %S* %s, i32 0, i32 0
  store i32 %v, i32* %sa, align 8
  %v10 = and i32 %v, 1023
  %vf = uitofp i32 %v10 to float
  %vq = fmul float %vf, 0.25
  %sb = getelementptr %S, %S* %s, i32 0, i32 1
  store float %vq, float* %sb, align 4
  %vw = sext i32 %v to i64
  %v8 = shl i64 %vw, 8
  %sc = getelementptr %S, %S* %s, i32 0, i32 2
  store i64 %v8, i64* %sc, align 8
  %i8 = trunc i32 %i to i8
  %c = sub i8 %i8, 50
  %rr = call %R @combine(%S* byval(%S) align 8 %s, i8 signext %c)
  %ra = extractvalue %R %rr, 0
  %rb = extractvalue %R %rr, 1
  %ra32 = trunc i64 %ra to i32
  %rb32 = bitcast float %rb to i32
  %o2 = add i32 %o, 2
  %p2 = getelementptr i32, i32 addrspace(1)* %out, i32 %o2
  store i32 %ra32, i32 addrspace(1)* %p2, align 4
  %o3 = add i32 %o, 3
  %p3 = getelementptr i32, i32 addrspace(1)* %out, i32 %o3
  store i32 %rb32, i32 addrspace(1)* %p3, align 4

  %u = and i32 %v, 2147483647
  %dg = call i32 @digits(i32 %u, i32 0)
  %k = urem i32 %u, 13
  %tb = call i32 @table13(i32 %k)
  %r4 = add i32 %dg, %tb
  %o4 = add i32 %o, 4
  %p4 = getelementptr i32, i32 addrspace(1)* %out, i32 %o4
  store i32 %r4, i32 addrspace(1)* %p4, align 4

  %w = call i32 @walk(i32 %v)
  %m1 = call i32 asm "{\0A\09.reg .u32 t1, t2;\0A\09mul.lo.u32 t1, $1, $2;\0A\09add.u32 t2, t1, $1;\0A\09xor.b32 $0, t2, 0x55;\0A\09}", "=r,r,r"(i32 %v, i32 %i)
  %i7 = mul i32 %i, 7
  %m2 = call i32 asm "{\0A\09.reg .pred p;\0A\09setp.lt.u32 p, $1, $2;\0A\09selp.u32 $0, $1, $2, p;\0A\09}", "=r,r,r"(i32 %v, i32 %i7)
  %x1 = xor i32 %w, %m1
  %r5 = xor i32 %x1, %m2
  %o5 = add i32 %o, 5
  %p5 = getelementptr i32, i32 addrspace(1)* %out, i32 %o5
  store i32 %r5, i32 addrspace(1)* %p5, align 4
  br label %done

done:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, i32 addrspace(1)*, i32)* @calls, !"kernel", i32 1}
