; Hand-written LLVM IR for Debian's llc (see regenerate.sh), compiled for three targets
; (llc_atomics.<sm>.ptx): every atomicrmw operation, cmpxchg, atom.inc/dec, on global memory,
; on shared memory and through generic pointers (cvta). atomics(c, c64, f, olds, x, n):
; thread i < n with v = x[i] applies to the i32 counters c[0..15]:
;   c[0] add v, c[1] sub v, c[2] and (v | 0xff00ff00), c[3] or (v & 0x01010101), c[4] xor v,
;   c[5] max v, c[6] min v, c[7] umax v, c[8] umin v, c[9] nand 0x5a5a5a5a (a cmpxchg loop: llc 14
;   cannot select atomicrmw nand),
;   c[10] xchg v (old value kept in olds[2i]), c[11] add 1 (old value kept in olds[2i+1]),
;   c[12] inc mod 7 (atom.inc), c[13] dec from 5 (atom.dec), c[14] += 1 per successful
;   cmpxchg(slot[v & 7], 0 -> i + 1) on c[16..23]; through one generic pointer (atom.add, no
;   space) an odd v goes to a shared counter, which thread 0 adds to c[15] after a barrier, an
;   even v to c[24];
;   to c64[0] add (i64) v * v, c64[1] max (i64) v << 20, c64[2] umin v ^ i, c64[3] xor v << 32;
;   to f[0] fadd (float)(v & 255), to f64 d[0] fadd (double)(v & 1023) (exact: integer sums).
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@ssum = internal addrspace(3) global i32 undef, align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare void @llvm.nvvm.barrier0()
declare i32 @llvm.nvvm.atomic.load.inc.32.p1i32(i32 addrspace(1)*, i32)
declare i32 @llvm.nvvm.atomic.load.dec.32.p1i32(i32 addrspace(1)*, i32)

define void @atomics(i32 addrspace(1)* %c, i64 addrspace(1)* %c64, float addrspace(1)* %f,
                     double addrspace(1)* %d, i32 addrspace(1)* %olds,
                     i32 addrspace(1)* %x, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %zero, label %zeroed

zero:
  store i32 0, i32 addrspace(3)* @ssum, align 4
  br label %zeroed

zeroed:
  call void @llvm.nvvm.barrier0()
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %tail

body:
  %xp = getelementptr i32, i32 addrspace(1)* %x, i32 %i
  %v = load i32, i32 addrspace(1)* %xp, align 4
  %a0 = atomicrmw add i32 addrspace(1)* %c, i32 %v monotonic
  %p1 = getelementptr i32, i32 addrspace(1)* %c, i32 1
  %a1 = atomicrmw sub i32 addrspace(1)* %p1, i32 %v monotonic
  %p2 = getelementptr i32, i32 addrspace(1)* %c, i32 2
  %vand = or i32 %v, 4278255360
  %a2 = atomicrmw and i32 addrspace(1)* %p2, i32 %vand monotonic
  %p3 = getelementptr i32, i32 addrspace(1)* %c, i32 3
  %vor = and i32 %v, 16843009
  %a3 = atomicrmw or i32 addrspace(1)* %p3, i32 %vor monotonic
  %p4 = getelementptr i32, i32 addrspace(1)* %c, i32 4
  %a4 = atomicrmw xor i32 addrspace(1)* %p4, i32 %v seq_cst
  %p5 = getelementptr i32, i32 addrspace(1)* %c, i32 5
  %a5 = atomicrmw max i32 addrspace(1)* %p5, i32 %v monotonic
  %p6 = getelementptr i32, i32 addrspace(1)* %c, i32 6
  %a6 = atomicrmw min i32 addrspace(1)* %p6, i32 %v monotonic
  %p7 = getelementptr i32, i32 addrspace(1)* %c, i32 7
  %a7 = atomicrmw umax i32 addrspace(1)* %p7, i32 %v monotonic
  %p8 = getelementptr i32, i32 addrspace(1)* %c, i32 8
  %a8 = atomicrmw umin i32 addrspace(1)* %p8, i32 %v monotonic
  %p9 = getelementptr i32, i32 addrspace(1)* %c, i32 9
  %n0 = load volatile i32, i32 addrspace(1)* %p9, align 4
  br label %nand

nand:
  %cur = phi i32 [ %n0, %body ], [ %seen, %nand ]
  %and = and i32 %cur, 1515870810
  %new = xor i32 %and, -1
  %np = cmpxchg i32 addrspace(1)* %p9, i32 %cur, i32 %new monotonic monotonic
  %seen = extractvalue { i32, i1 } %np, 0
  %ok = extractvalue { i32, i1 } %np, 1
  br i1 %ok, label %rest, label %nand

rest:
  %p10 = getelementptr i32, i32 addrspace(1)* %c, i32 10
  %a10 = atomicrmw xchg i32 addrspace(1)* %p10, i32 %v monotonic
  %p11 = getelementptr i32, i32 addrspace(1)* %c, i32 11
  %a11 = atomicrmw add i32 addrspace(1)* %p11, i32 1 monotonic
  %i2 = shl i32 %i, 1
  %op0 = getelementptr i32, i32 addrspace(1)* %olds, i32 %i2
  store i32 %a10, i32 addrspace(1)* %op0, align 4
  %i21 = or i32 %i2, 1
  %op1 = getelementptr i32, i32 addrspace(1)* %olds, i32 %i21
  store i32 %a11, i32 addrspace(1)* %op1, align 4
  %p12 = getelementptr i32, i32 addrspace(1)* %c, i32 12
  %a12 = call i32 @llvm.nvvm.atomic.load.inc.32.p1i32(i32 addrspace(1)* %p12, i32 6)
  %p13 = getelementptr i32, i32 addrspace(1)* %c, i32 13
  %a13 = call i32 @llvm.nvvm.atomic.load.dec.32.p1i32(i32 addrspace(1)* %p13, i32 5)
  %slot = and i32 %v, 7
  %sloti = add i32 %slot, 16
  %ps = getelementptr i32, i32 addrspace(1)* %c, i32 %sloti
  %me = add i32 %i, 1
  %pair = cmpxchg i32 addrspace(1)* %ps, i32 0, i32 %me seq_cst seq_cst
  %won = extractvalue { i32, i1 } %pair, 1
  %won32 = zext i1 %won to i32
  %p14 = getelementptr i32, i32 addrspace(1)* %c, i32 14
  %a14 = atomicrmw add i32 addrspace(1)* %p14, i32 %won32 monotonic
  %gs = addrspacecast i32 addrspace(3)* @ssum to i32*
  %p24 = getelementptr i32, i32 addrspace(1)* %c, i32 24
  %gg = addrspacecast i32 addrspace(1)* %p24 to i32*
  %vodd = and i32 %v, 1
  %isodd = icmp ne i32 %vodd, 0
  %gp = select i1 %isodd, i32* %gs, i32* %gg
  %a15 = atomicrmw add i32* %gp, i32 %v monotonic

  %vw = sext i32 %v to i64
  %sq = mul i64 %vw, %vw
  %b0 = atomicrmw add i64 addrspace(1)* %c64, i64 %sq monotonic
  %q1 = getelementptr i64, i64 addrspace(1)* %c64, i32 1
  %sh = shl i64 %vw, 20
  %b1 = atomicrmw max i64 addrspace(1)* %q1, i64 %sh monotonic
  %q2 = getelementptr i64, i64 addrspace(1)* %c64, i32 2
  %iw = zext i32 %i to i64
  %vz = zext i32 %v to i64
  %vi = xor i64 %vz, %iw
  %b2 = atomicrmw umin i64 addrspace(1)* %q2, i64 %vi monotonic
  %q3 = getelementptr i64, i64 addrspace(1)* %c64, i32 3
  %hi = shl i64 %vz, 32
  %b3 = atomicrmw xor i64 addrspace(1)* %q3, i64 %hi monotonic

  %v8 = and i32 %v, 255
  %vf = uitofp i32 %v8 to float
  %f0 = atomicrmw fadd float addrspace(1)* %f, float %vf monotonic
  %v10 = and i32 %v, 1023
  %vd = uitofp i32 %v10 to double
  %d0 = atomicrmw fadd double addrspace(1)* %d, double %vd monotonic
  br label %tail

tail:
  call void @llvm.nvvm.barrier0()
  br i1 %first, label %publish, label %done

publish:
  %s = load volatile i32, i32 addrspace(3)* @ssum, align 4
  %p15 = getelementptr i32, i32 addrspace(1)* %c, i32 15
  %a16 = atomicrmw add i32 addrspace(1)* %p15, i32 %s monotonic
  br label %done

done:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, i64 addrspace(1)*, float addrspace(1)*, double addrspace(1)*, i32 addrspace(1)*, i32 addrspace(1)*, i32)* @atomics, !"kernel", i32 1}
