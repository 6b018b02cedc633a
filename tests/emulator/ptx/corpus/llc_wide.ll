; Hand-written LLVM IR for Debian's llc (see regenerate.sh), compiled for three targets
; (llc_wide.<sm>.ptx): 128-bit integers, 8/16-bit memory, the global, const, local and shared
; spaces, generic pointers, a .weak variable and an initializer of generic() pointers.
; wide(out, x, n), per i < n with the 64-bit a = x[2i], b = x[2i+1] (as i128: za/zb zero-,
; sa/sb sign-extended):
;   out[4i], out[4i+1] = low, high half of za * zb + (sb << (a & 127)) - (sa >> (b & 63))
;   out[4i+2] = low half of ((za << 64 | zb) >>arith (b & 127)) ^ ((za:zb) <u (zb:za) ? 1 : 2)
;   out[4i+3] = (bytes[i & 15] (s8) + half16[i & 7] (s16) + weights[i & 3] (.const)
;               + *ptrs[i & 1] (cell, or weights[2] through generic(weights)+16) + weakcell
;               + 3 * loc[a & 3], loc = {a, b, the s8, the s16} a local array)
;               ^ the neighbour's (tid ^ 1) shared slot, where each thread stored a ^ b
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@bytes = internal addrspace(1) global [16 x i8] c"\01\FF\7F\80\05\FB\10\F0\00\02\FE\40\C0\03\FD\11", align 1
@half16 = internal addrspace(1) global [8 x i16] [i16 1, i16 -1, i16 32767, i16 -32768, i16 300, i16 -300, i16 12345, i16 -2], align 2
@weights = internal addrspace(4) constant [4 x i64] [i64 7, i64 -11, i64 1099511627776, i64 -3], align 8
@cell = internal addrspace(1) global i64 123456789, align 8
@ptrs = internal addrspace(1) global [2 x i64*] [i64* addrspacecast (i64 addrspace(1)* @cell to i64*), i64* addrspacecast (i64 addrspace(4)* getelementptr ([4 x i64], [4 x i64] addrspace(4)* @weights, i64 0, i64 2) to i64*)], align 8
@weakcell = weak addrspace(1) global i64 5, align 8
@shbuf = internal addrspace(3) global [64 x i64] undef, align 8

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare void @llvm.nvvm.barrier0()

define void @wide(i64 addrspace(1)* %out, i64 addrspace(1)* %x, i32 %n) {
entry:
  %loc = alloca [4 x i64], align 8
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  %i2 = shl i32 %i, 1
  %ia = select i1 %inb, i32 %i2, i32 0
  %pa = getelementptr i64, i64 addrspace(1)* %x, i32 %ia
  %a = load i64, i64 addrspace(1)* %pa, align 8
  %ib = or i32 %ia, 1
  %pb = getelementptr i64, i64 addrspace(1)* %x, i32 %ib
  %b = load i64, i64 addrspace(1)* %pb, align 8
  ; every thread writes a shared slot through a generic pointer, before the barrier
  %slot = and i32 %tid, 63
  %shp = getelementptr [64 x i64], [64 x i64] addrspace(3)* @shbuf, i32 0, i32 %slot
  %shg = addrspacecast i64 addrspace(3)* %shp to i64*
  %sv = xor i64 %a, %b
  store volatile i64 %sv, i64* %shg, align 8
  call void @llvm.nvvm.barrier0()
  br i1 %inb, label %body, label %done

body:
  %za = zext i64 %a to i128
  %zb = zext i64 %b to i128
  %prod = mul i128 %za, %zb
  %sbw = sext i64 %b to i128
  %am = and i64 %a, 127
  %amw = zext i64 %am to i128
  %shl = shl i128 %sbw, %amw
  %sum = add i128 %prod, %shl
  %saw = sext i64 %a to i128
  %bm = and i64 %b, 63
  %bmw = zext i64 %bm to i128
  %sra = ashr i128 %saw, %bmw
  %w = sub i128 %sum, %sra
  %wlo = trunc i128 %w to i64
  %whi128 = lshr i128 %w, 64
  %whi = trunc i128 %whi128 to i64
  %o = shl i32 %i, 2
  %p0 = getelementptr i64, i64 addrspace(1)* %out, i32 %o
  store i64 %wlo, i64 addrspace(1)* %p0, align 8
  %o1 = or i32 %o, 1
  %p1 = getelementptr i64, i64 addrspace(1)* %out, i32 %o1
  store i64 %whi, i64 addrspace(1)* %p1, align 8

  %ah = shl i128 %za, 64
  %ab = or i128 %ah, %zb
  %bh = shl i128 %zb, 64
  %ba = or i128 %bh, %za
  %bm127 = and i64 %b, 127
  %bm127w = zext i64 %bm127 to i128
  %abs = ashr i128 %ab, %bm127w
  %abslo = trunc i128 %abs to i64
  %lt = icmp ult i128 %ab, %ba
  %flag = select i1 %lt, i64 1, i64 2
  %r2 = xor i64 %abslo, %flag
  %o2 = or i32 %o, 2
  %p2 = getelementptr i64, i64 addrspace(1)* %out, i32 %o2
  store i64 %r2, i64 addrspace(1)* %p2, align 8

  %k16 = and i32 %i, 15
  %bp = getelementptr [16 x i8], [16 x i8] addrspace(1)* @bytes, i32 0, i32 %k16
  %by = load i8, i8 addrspace(1)* %bp, align 1
  %byw = sext i8 %by to i64
  %k8 = and i32 %i, 7
  %hp = getelementptr [8 x i16], [8 x i16] addrspace(1)* @half16, i32 0, i32 %k8
  %hv = load i16, i16 addrspace(1)* %hp, align 2
  %hvw = sext i16 %hv to i64
  %k4 = and i32 %i, 3
  %wp = getelementptr [4 x i64], [4 x i64] addrspace(4)* @weights, i32 0, i32 %k4
  %wv = load i64, i64 addrspace(4)* %wp, align 8
  %k2 = and i32 %i, 1
  %pp = getelementptr [2 x i64*], [2 x i64*] addrspace(1)* @ptrs, i32 0, i32 %k2
  %gp = load i64*, i64* addrspace(1)* %pp, align 8
  %gv = load i64, i64* %gp, align 8
  %wc = load i64, i64 addrspace(1)* @weakcell, align 8
  ; a local array with a dynamic index
  %l0 = getelementptr [4 x i64], [4 x i64]* %loc, i32 0, i32 0
  store volatile i64 %a, i64* %l0, align 8
  %l1 = getelementptr [4 x i64], [4 x i64]* %loc, i32 0, i32 1
  store volatile i64 %b, i64* %l1, align 8
  %l2 = getelementptr [4 x i64], [4 x i64]* %loc, i32 0, i32 2
  store volatile i64 %byw, i64* %l2, align 8
  %l3 = getelementptr [4 x i64], [4 x i64]* %loc, i32 0, i32 3
  store volatile i64 %hvw, i64* %l3, align 8
  %lk = and i64 %a, 3
  %lp = getelementptr [4 x i64], [4 x i64]* %loc, i32 0, i64 %lk
  %lv = load volatile i64, i64* %lp, align 8
  ; the neighbour's shared slot, through a generic pointer cast back to shared
  %nslot = xor i32 %slot, 1
  %nsp = getelementptr [64 x i64], [64 x i64] addrspace(3)* @shbuf, i32 0, i32 %nslot
  %nsg = addrspacecast i64 addrspace(3)* %nsp to i64*
  %nss = addrspacecast i64* %nsg to i64 addrspace(3)*
  %nv = load volatile i64, i64 addrspace(3)* %nss, align 8
  %s1 = add i64 %byw, %hvw
  %s2 = add i64 %s1, %wv
  %s3 = add i64 %s2, %gv
  %s4 = add i64 %s3, %wc
  %s5 = mul i64 %lv, 3
  %s6 = add i64 %s4, %s5
  %s7 = xor i64 %s6, %nv
  %o3 = or i32 %o, 3
  %p3 = getelementptr i64, i64 addrspace(1)* %out, i32 %o3
  store i64 %s7, i64 addrspace(1)* %p3, align 8
  br label %done

done:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i64 addrspace(1)*, i64 addrspace(1)*, i32)* @wide, !"kernel", i32 1}
