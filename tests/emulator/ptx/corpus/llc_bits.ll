; Hand-written LLVM IR for Debian's llc (see regenerate.sh): integer forms nvcc rarely emits.
; bits(out, in, n), per i < n with x = in[i]:
;   out[4i]   = ctpop(x) + 33 * ctlz(x) + 1089 * cttz(x)       (popc, clz, brev+clz)
;   out[4i+1] = bitreverse(x) ^ fshl(x, x, i & 31)             (brev, shf.l)
;   out[4i+2] = high 32 bits of zext(x) * zext(x ^ 0x9e3779b9)  (mul.hi.u32)
;   out[4i+3] = (i16) x * 7 + (i8) x >> 1, sign-extended        (16/8-bit arithmetic)
; and a cmpxchg loop that keeps the maximum of x ^ i in out[4n] (atom.cas).
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.ctpop.i32(i32)
declare i32 @llvm.ctlz.i32(i32, i1)
declare i32 @llvm.cttz.i32(i32, i1)
declare i32 @llvm.bitreverse.i32(i32)
declare i32 @llvm.fshl.i32(i32, i32, i32)

define void @bits(i32 addrspace(1)* %out, i32 addrspace(1)* %in, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %done

body:
  %ip = getelementptr i32, i32 addrspace(1)* %in, i32 %i
  %x = load i32, i32 addrspace(1)* %ip, align 4
  %pop = call i32 @llvm.ctpop.i32(i32 %x)
  %lz = call i32 @llvm.ctlz.i32(i32 %x, i1 false)
  %tz = call i32 @llvm.cttz.i32(i32 %x, i1 false)
  %lz33 = mul i32 %lz, 33
  %tz1089 = mul i32 %tz, 1089
  %r0a = add i32 %pop, %lz33
  %r0 = add i32 %r0a, %tz1089
  %rev = call i32 @llvm.bitreverse.i32(i32 %x)
  %sh = and i32 %i, 31
  %rot = call i32 @llvm.fshl.i32(i32 %x, i32 %x, i32 %sh)
  %r1 = xor i32 %rev, %rot
  %xk = xor i32 %x, 2654435769
  %xw = zext i32 %x to i64
  %kw = zext i32 %xk to i64
  %prod = mul i64 %xw, %kw
  %hi = lshr i64 %prod, 32
  %r2 = trunc i64 %hi to i32
  %x16 = trunc i32 %x to i16
  %m16 = mul i16 %x16, 7
  %x8 = trunc i32 %x to i8
  %s8 = ashr i8 %x8, 1
  %s8w = sext i8 %s8 to i16
  %sum16 = add i16 %m16, %s8w
  %r3 = sext i16 %sum16 to i32
  %o = shl i32 %i, 2
  %p0 = getelementptr i32, i32 addrspace(1)* %out, i32 %o
  store i32 %r0, i32 addrspace(1)* %p0, align 4
  %o1 = add i32 %o, 1
  %p1 = getelementptr i32, i32 addrspace(1)* %out, i32 %o1
  store i32 %r1, i32 addrspace(1)* %p1, align 4
  %o2 = add i32 %o, 2
  %p2 = getelementptr i32, i32 addrspace(1)* %out, i32 %o2
  store i32 %r2, i32 addrspace(1)* %p2, align 4
  %o3 = add i32 %o, 3
  %p3 = getelementptr i32, i32 addrspace(1)* %out, i32 %o3
  store i32 %r3, i32 addrspace(1)* %p3, align 4
  %cand = xor i32 %x, %i
  %n4 = shl i32 %n, 2
  %mp = getelementptr i32, i32 addrspace(1)* %out, i32 %n4
  %start = load volatile i32, i32 addrspace(1)* %mp, align 4
  br label %cas

cas:
  %cur = phi i32 [ %start, %body ], [ %seen, %retry ]
  %bigger = icmp ugt i32 %cand, %cur
  br i1 %bigger, label %try, label %done

try:
  %pair = cmpxchg i32 addrspace(1)* %mp, i32 %cur, i32 %cand monotonic monotonic
  %seen = extractvalue { i32, i1 } %pair, 0
  %ok = extractvalue { i32, i1 } %pair, 1
  br i1 %ok, label %done, label %retry

retry:
  br label %cas

done:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, i32 addrspace(1)*, i32)* @bits, !"kernel", i32 1}
