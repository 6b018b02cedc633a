// State spaces and memory instructions: symbol addresses, generic-address classification,
// bounds/allocation checks, ld/st (scalar and vector), atomics/reductions, cvta and isspacep.
//
// Address model: global and const addresses are host addresses of driver allocations (checked
// with MemoryHost::accessible). Shared-space addresses are offsets into the block's shared
// buffer; local-space and frame `.param` addresses are offsets into the thread's local window;
// kernel `.param` addresses are offsets into the launch's parameter copy. Their generic forms
// are the host addresses of those buffers, so a generic pointer is classified by range.
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>

#include "interp.h"

namespace cusnap::emu::ptx {
namespace {

uint32_t type_size(Type t) {
  if (t == Type::kPred) return 1;
  return static_cast<uint32_t>(type_bits(t) / 8);
}

bool is_signed_int(Type t) {
  return t == Type::kS8 || t == Type::kS16 || t == Type::kS32 || t == Type::kS64;
}

const char* space_name(Space s) {
  switch (s) {
    case Space::kGeneric:
      return "generic";
    case Space::kGlobal:
      return "global";
    case Space::kConst:
      return "const";
    case Space::kShared:
      return "shared";
    case Space::kLocal:
      return "local";
    case Space::kParamKernel:
      return "param";
    case Space::kParamFrame:
      return "param";
    default:
      return "?";
  }
}

inline uint64_t mask_bits(int bits) {
  return bits >= 64 ? ~uint64_t{0} : ((uint64_t{1} << bits) - 1);
}

constexpr uint64_t kFunctionTag = kFunctionAddressTag;

}  // namespace

uint64_t Launch::symbol_value(const Warp& w, int lane, uint32_t symbol) const {
  const Symbol& s = m_.symbols[symbol];
  switch (s.space) {
    case Space::kGlobal:
    case Space::kConst:
      return symbol_addresses_[symbol];
    case Space::kShared: {
      int64_t off = ki_.shared_offset[s.shared_id];
      return off < 0 ? 0 : static_cast<uint64_t>(off);
    }
    case Space::kLocal:
    case Space::kParamFrame:
      return w.frame_base[lane] + s.offset;
    case Space::kParamKernel:
      return s.offset;
    case Space::kFunction:
      return kFunctionTag | static_cast<uint64_t>(s.function);
    default:
      return 0;
  }
}

Space Launch::effective_space(const Instr& in, const Operand& a) const {
  if (a.has_symbol) {
    Space s = m_.symbols[a.symbol].space;
    if (in.space == Space::kGeneric || in.space == Space::kParamKernel || in.space == s) return s;
    // e.g. `ld.global [sym]` where sym is global: same; mismatches use the instruction's space
    return in.space;
  }
  if (in.space == Space::kParamKernel && !in.in_kernel) return Space::kParamFrame;
  return in.space;
}

uint8_t* Launch::translate(Block& b, Warp& w, int lane, Space space, uint64_t addr, uint32_t size,
                           bool write, const Instr& in) {
  const uint64_t t = w.index * kWarpSize + static_cast<uint64_t>(lane);
  auto bad = [&](const char* why, bool global = false) -> uint8_t* {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s: %s %s of %u bytes at %s address 0x%llx, ", why,
                  in.op == Op::kAtom || in.op == Op::kRed ? "atomic"
                  : write                                 ? "write"
                                                          : "read",
                  "access", size, space_name(space), static_cast<unsigned long long>(addr));
    std::string message = buf;
    // For memory the driver owns: which allocation the access overflowed, by how much.
    if (global) {
      std::string detail = memory_.describe(addr, size, write);
      if (!detail.empty()) message += detail + ", ";
    }
    fail(LaunchStatus::kIllegalAddress, message + where(b, w, lane, in));
    return nullptr;
  };
  if (size > 1 && (addr & (size - 1)) != 0 && space != Space::kGeneric && space != Space::kGlobal &&
      space != Space::kConst) {
    // Natural alignment is checked on the space-relative address for windows.
    char buf[128];
    std::snprintf(buf, sizeof buf, "misaligned %u-byte access at %s address 0x%llx, ", size,
                  space_name(space), static_cast<unsigned long long>(addr));
    fail(LaunchStatus::kMisalignedAddress, buf + where(b, w, lane, in));
    return nullptr;
  }
  switch (space) {
    case Space::kShared:
      if (in.cluster_space && addr > kClusterWindowMask) {  // another CTA's (interp_cluster.cpp)
        uint64_t off = 0;
        Block* owner = cluster_shared(b, w, lane, addr, size, in, &off);
        return owner ? owner->shared + off : nullptr;
      }
      if (addr > b.shared_size || size > b.shared_size - addr) return bad("illegal address");
      return b.shared + addr;
    case Space::kLocal:
    case Space::kParamFrame:
      if (addr > b.local_window || size > b.local_window - addr) return bad("illegal address");
      return b.local + t * b.local_window + addr;
    case Space::kParamKernel:
      if (write) return bad("illegal address (kernel parameters are read-only)");
      if (addr > params_.size() || size > params_.size() - addr) return bad("illegal address");
      return params_.data() + addr;
    case Space::kGeneric: {
      const uint64_t sh = reinterpret_cast<uint64_t>(b.shared);
      if (addr >= sh && addr - sh < b.shared_size) {
        if (size > b.shared_size - (addr - sh)) return bad("illegal address");
        break;
      }
      const uint64_t lo = reinterpret_cast<uint64_t>(b.local);
      const uint64_t local_total = b.local_window * b.nthreads;
      if (addr >= lo && addr - lo < local_total) {
        if (size > local_total - (addr - lo)) return bad("illegal address");
        break;
      }
      const uint64_t pa = reinterpret_cast<uint64_t>(params_.data());
      if (addr >= pa && addr - pa < params_.size()) {
        if (write || size > params_.size() - (addr - pa)) return bad("illegal address");
        break;
      }
      // Distributed shared memory: the generic address of another CTA's shared memory.
      if (b.cluster) {
        if (Block* owner = generic_shared_owner(b, addr)) {
          const uint64_t off = addr - reinterpret_cast<uint64_t>(owner->shared);
          if (owner->live == 0) {
            char buf[96];
            std::snprintf(buf, sizeof buf,
                          "illegal address (CTA rank %u of the cluster has exited)", owner->rank);
            return bad(buf);
          }
          if (size > owner->shared_size - off) return bad("illegal address");
          break;
        }
      }
      [[fallthrough]];
    }
    case Space::kGlobal:
    case Space::kConst: {
      const uint64_t ws = reinterpret_cast<uint64_t>(&grid_workspace_[0]);
      if (config_.cooperative && addr >= ws && addr + size <= ws + sizeof grid_workspace_) break;
      if (space == Space::kConst && write)
        return bad("illegal address (constant memory is read-only)");
      if (!memory_.accessible(addr, size, write)) return bad("illegal address", true);
      break;
    }
    default:
      return bad("illegal address (bad state space)");
  }
  if (size > 1 && (addr & (size - 1)) != 0) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "misaligned %u-byte access at %s address 0x%llx, ", size,
                  space_name(space), static_cast<unsigned long long>(addr));
    fail(LaunchStatus::kMisalignedAddress, buf + where(b, w, lane, in));
    return nullptr;
  }
  return reinterpret_cast<uint8_t*>(addr);
}

bool Launch::resolve_lanes(Block& b, Warp& w, const Instr& in, const Operand& a, uint32_t exec,
                           uint32_t size, bool write, uint8_t** ptrs, Space space) {
  const Space sp = space != Space::kNone ? space : effective_space(in, a);
  const uint64_t* base = a.base_is_reg ? w.slot(a.index) : nullptr;
  uint64_t addr[kWarpSize];
  uint64_t lo = ~uint64_t{0}, hi = 0, bits = 0;
  // Frame symbols (.local, frame .param) depend on the lane's call depth; others do not.
  const bool per_lane_symbol = a.has_symbol && (m_.symbols[a.symbol].space == Space::kLocal ||
                                                m_.symbols[a.symbol].space == Space::kParamFrame);
  const uint64_t sym = a.has_symbol && !per_lane_symbol ? symbol_value(w, 0, a.symbol) : 0;
  if (base && !per_lane_symbol) {
    // The common form, [reg + offset] (or [reg + sym + offset]): a loop without per-lane branches.
    const uint64_t off = static_cast<uint64_t>(a.offset) + sym;
    for_lanes(exec, [&](int l) {
      const uint64_t v = base[l] + off;
      addr[l] = v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      bits |= v;
    });
  } else {
    for (uint32_t m = exec; m; m &= m - 1) {
      int l = std::countr_zero(m);
      uint64_t v = static_cast<uint64_t>(a.offset) + (base ? base[l] : 0) +
                   (per_lane_symbol ? symbol_value(w, l, a.symbol) : sym);
      addr[l] = v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      bits |= v;
    }
  }
  const bool aligned = size <= 1 || (bits & (size - 1)) == 0;
  const uint64_t span = hi - lo + size;
  bool fast = false;
  // Where lane pointers are `window base + addr` (shared, local) or the address itself.
  uint8_t* window = nullptr;
  bool per_thread_window = false;
  if (aligned && hi >= lo && span >= size) {
    switch (sp) {
      case Space::kShared:
        fast = hi < b.shared_size && size <= b.shared_size - hi;
        window = b.shared;
        break;
      case Space::kLocal:
      case Space::kParamFrame:
        fast = hi < b.local_window && size <= b.local_window - hi;
        window = b.local;
        per_thread_window = true;
        break;
      case Space::kParamKernel:
        fast = !write && hi < params_.size() && size <= params_.size() - hi;
        window = params_.data();
        break;
      case Space::kGlobal:
      case Space::kConst:
        fast = !(sp == Space::kConst && write) && memory_.accessible(lo, span, write);
        break;
      case Space::kGeneric: {
        const uint64_t sh = reinterpret_cast<uint64_t>(b.shared);
        const uint64_t lb = reinterpret_cast<uint64_t>(b.local);
        const uint64_t lt = b.local_window * b.nthreads;
        const uint64_t pa = reinterpret_cast<uint64_t>(params_.data());
        auto outside = [&](uint64_t s, uint64_t n) { return hi + size <= s || lo >= s + n; };
        if (lo >= sh && hi + size <= sh + b.shared_size)
          fast = true;
        else if (lo >= lb && hi + size <= lb + lt)
          fast = true;
        else if (outside(sh, b.shared_size) && outside(lb, lt) && outside(pa, params_.size()))
          fast = memory_.accessible(lo, span, write);
        break;
      }
      default:
        break;
    }
  }
  if (fast) {
    if (window && per_thread_window) {
      for_lanes(exec, [&](int l) {
        ptrs[l] =
            window + (w.index * kWarpSize + static_cast<uint64_t>(l)) * b.local_window + addr[l];
      });
    } else if (window) {
      for_lanes(exec, [&](int l) { ptrs[l] = window + addr[l]; });
    } else {
      for_lanes(exec, [&](int l) { ptrs[l] = reinterpret_cast<uint8_t*>(addr[l]); });
    }
    return true;
  }
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    ptrs[l] = translate(b, w, l, sp, addr[l], size, write, in);
    if (!ptrs[l]) return false;
  }
  return true;
}

namespace {

template <uint32_t kSize>
struct Word;
template <>
struct Word<1> {
  using U = uint8_t;
  using S = int8_t;
};
template <>
struct Word<2> {
  using U = uint16_t;
  using S = int16_t;
};
template <>
struct Word<4> {
  using U = uint32_t;
  using S = int32_t;
};
template <>
struct Word<8> {
  using U = uint64_t;
  using S = int64_t;
};

// The lane loops of ld/st, one instantiation per access size so the size switch is not inside
// the loop (ld/st are the bulk of most kernels' instructions).
template <uint32_t kSize>
void load_lanes(uint64_t* d, uint8_t* const* ptrs, uint32_t offset, uint32_t exec, uint64_t mask,
                bool sext) {
  using U = typename Word<kSize>::U;
  using S = typename Word<kSize>::S;
  for_lanes(exec, [&](int l) {
    U v;
    std::memcpy(&v, ptrs[l] + offset, kSize);
    const uint64_t x = sext ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<S>(v))) : v;
    d[l] = x & mask;
  });
}

template <uint32_t kSize>
void store_lanes(const uint64_t* s, uint8_t* const* ptrs, uint32_t offset, uint32_t exec) {
  using U = typename Word<kSize>::U;
  for_lanes(exec, [&](int l) {
    const U v = static_cast<U>(s[l]);
    std::memcpy(ptrs[l] + offset, &v, kSize);
  });
}

// Non-weak ld/st (.relaxed/.acquire/.release/.volatile): the same lane loops as C++ atomic
// accesses, so that PTX synchronisation across blocks (which run on different host threads) is
// also synchronisation in the C++ memory model. Addresses are naturally aligned here
// (resolve_lanes/translate reject misaligned ones), which std::atomic_ref requires.
template <uint32_t kSize>
void load_lanes_atomic(uint64_t* d, uint8_t* const* ptrs, uint32_t offset, uint32_t exec,
                       uint64_t mask, bool sext, std::memory_order order) {
  using U = typename Word<kSize>::U;
  using S = typename Word<kSize>::S;
  static_assert(std::atomic_ref<U>::required_alignment == kSize);
  for_lanes(exec, [&](int l) {
    const U v = std::atomic_ref<U>(*reinterpret_cast<U*>(ptrs[l] + offset)).load(order);
    const uint64_t x = sext ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<S>(v))) : v;
    d[l] = x & mask;
  });
}

template <uint32_t kSize>
void store_lanes_atomic(const uint64_t* s, uint8_t* const* ptrs, uint32_t offset, uint32_t exec,
                        std::memory_order order) {
  using U = typename Word<kSize>::U;
  static_assert(std::atomic_ref<U>::required_alignment == kSize);
  for_lanes(exec, [&](int l) {
    std::atomic_ref<U>(*reinterpret_cast<U*>(ptrs[l] + offset)).store(static_cast<U>(s[l]), order);
  });
}

// The C++ order of a non-weak access. `.volatile` is `.relaxed.sys` in the PTX memory model.
std::memory_order cpp_order(MemOrder o) {
  switch (o) {
    case MemOrder::kAcquire:
      return std::memory_order_acquire;
    case MemOrder::kRelease:
      return std::memory_order_release;
    default:
      return std::memory_order_relaxed;
  }
}

}  // namespace

void Launch::exec_ld(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint32_t es = type_size(in.type);
  const uint32_t n = in.vec;
  if (es > 8) {
    fail(LaunchStatus::kIllegalInstruction,
         "128-bit loads are not supported: " + where(b, w, std::countr_zero(exec), in));
    return;
  }
  uint64_t* dst[8] = {};
  uint64_t dmask[8] = {};
  const int access_bits = static_cast<int>(es * 8);
  if (n == 1) {
    dst[0] = dest(w, in.ops[0]);
    dmask[0] = mask_bits(std::max<int>(
        in.ops[0].kind == Operand::kReg ? m_.slot_bits[in.ops[0].index] : 64, access_bits));
  } else {
    for (uint32_t i = 0; i < n; ++i) {
      const Operand& e = m_.vec_pool[in.ops[0].index + i];
      dst[i] = e.kind == Operand::kReg ? w.slot(e.index) : w.slot(kSpScratch3);
      dmask[i] = mask_bits(
          std::max<int>(e.kind == Operand::kReg ? m_.slot_bits[e.index] : 64, access_bits));
    }
  }
  uint8_t* ptrs[kWarpSize];
  if (!resolve_lanes(b, w, in, in.ops[1], exec, es * n, false, ptrs)) return;
  if (tracking_) [[unlikely]]
    track_lanes(b, ptrs, exec, es * n, true, false);
  const bool sext = is_signed_int(in.type) && es < 8;
  if (in.order != MemOrder::kWeak) {
    // Vector elements are separate atomic accesses, as on a GPU (a .v2/.v4 access is not one
    // single-copy-atomic access).
    const std::memory_order order = cpp_order(in.order);
    for (uint32_t i = 0; i < n; ++i) {
      switch (es) {
        case 1:
          load_lanes_atomic<1>(dst[i], ptrs, i * es, exec, dmask[i], sext, order);
          break;
        case 2:
          load_lanes_atomic<2>(dst[i], ptrs, i * es, exec, dmask[i], sext, order);
          break;
        case 4:
          load_lanes_atomic<4>(dst[i], ptrs, i * es, exec, dmask[i], sext, order);
          break;
        default:
          load_lanes_atomic<8>(dst[i], ptrs, i * es, exec, dmask[i], sext, order);
          break;
      }
    }
    return;
  }
  for (uint32_t i = 0; i < n; ++i) {
    switch (es) {
      case 1:
        load_lanes<1>(dst[i], ptrs, i * es, exec, dmask[i], sext);
        break;
      case 2:
        load_lanes<2>(dst[i], ptrs, i * es, exec, dmask[i], sext);
        break;
      case 4:
        load_lanes<4>(dst[i], ptrs, i * es, exec, dmask[i], sext);
        break;
      default:
        load_lanes<8>(dst[i], ptrs, i * es, exec, dmask[i], sext);
        break;
    }
  }
}

void Launch::exec_st(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint32_t es = type_size(in.type);
  const uint32_t n = in.vec;
  if (es > 8) {
    fail(LaunchStatus::kIllegalInstruction,
         "128-bit stores are not supported: " + where(b, w, std::countr_zero(exec), in));
    return;
  }
  const uint64_t* src[8] = {};
  if (n == 1) {
    src[0] = operand(w, in.ops[1], exec, kSpScratch0);
  } else {
    for (uint32_t i = 0; i < n; ++i)
      src[i] = operand(w, m_.vec_pool[in.ops[1].index + i], exec, kSpScratch0 + (i & 3));
  }
  uint8_t* ptrs[kWarpSize];
  if (!resolve_lanes(b, w, in, in.ops[0], exec, es * n, true, ptrs)) return;
  if (tracking_) [[unlikely]]
    track_lanes(b, ptrs, exec, es * n, false, true);
  if (in.order != MemOrder::kWeak) {
    const std::memory_order order = cpp_order(in.order);
    for (uint32_t i = 0; i < n; ++i) {
      switch (es) {
        case 1:
          store_lanes_atomic<1>(src[i], ptrs, i * es, exec, order);
          break;
        case 2:
          store_lanes_atomic<2>(src[i], ptrs, i * es, exec, order);
          break;
        case 4:
          store_lanes_atomic<4>(src[i], ptrs, i * es, exec, order);
          break;
        default:
          store_lanes_atomic<8>(src[i], ptrs, i * es, exec, order);
          break;
      }
    }
    return;
  }
  for (uint32_t i = 0; i < n; ++i) {
    switch (es) {
      case 1:
        store_lanes<1>(src[i], ptrs, i * es, exec);
        break;
      case 2:
        store_lanes<2>(src[i], ptrs, i * es, exec);
        break;
      case 4:
        store_lanes<4>(src[i], ptrs, i * es, exec);
        break;
      default:
        store_lanes<8>(src[i], ptrs, i * es, exec);
        break;
    }
  }
}

void Launch::exec_atom(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint32_t es = type_size(in.type);
  const uint64_t* bv = operand(w, in.ops[2], exec, kSpScratch0);
  const uint64_t* cv =
      in.ops[3].kind != Operand::kNone ? operand(w, in.ops[3], exec, kSpScratch1) : nullptr;
  uint64_t* d = dest(w, in.ops[0]);
  const AtomOp op = static_cast<AtomOp>(in.sub);
  uint8_t* ptrs[kWarpSize];
  if (!resolve_lanes(b, w, in, in.ops[1], exec, es, true, ptrs)) return;
  // An atomic or reduction reads the old value and writes the new one. A failed CAS is listed
  // as written too: the code may write there, and a chunk listed as written is only compared.
  if (tracking_) [[unlikely]]
    track_lanes(b, ptrs, exec, es, true, true);
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    // atom.cas d, [a], b, c: b is the compare value, c the new value.
    d[l] = op == AtomOp::kCas ? atomic_rmw(op, in.type, ptrs[l], cv[l], bv[l])
                              : atomic_rmw(op, in.type, ptrs[l], bv[l], 0);
  }
}

void Launch::exec_cp_async(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint64_t* cp = operand(w, in.ops[2], exec, kSpScratch0);
  const int first = std::countr_zero(exec);
  const uint32_t size = static_cast<uint32_t>(cp[first]);
  if (size != 4 && size != 8 && size != 16) {
    fail(LaunchStatus::kIllegalInstruction,
         "cp.async copy size must be 4, 8 or 16: " + where(b, w, first, in));
    return;
  }
  const uint64_t* src_size =
      in.ops[3].kind != Operand::kNone ? operand(w, in.ops[3], exec, kSpScratch1) : nullptr;
  uint8_t* dst[kWarpSize];
  uint8_t* src[kWarpSize];
  if (!resolve_lanes(b, w, in, in.ops[0], exec, size, true, dst, Space::kShared)) return;
  // The source is only read up to src-size bytes; the rest of the destination is zero-filled.
  if (!resolve_lanes(b, w, in, in.ops[1], exec, size, false, src, Space::kGlobal)) return;
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    // ops[3]: src-size (bytes read, the rest zero-filled) or, with sub 1, ignore-src.
    uint32_t n = !src_size     ? size
                 : in.sub == 1 ? (src_size[l] ? 0 : size)
                               : static_cast<uint32_t>(std::min<uint64_t>(src_size[l], size));
    if (tracking_ && n != 0) [[unlikely]]
      track(b, src[l], n, true, false);
    std::memmove(dst[l], src[l], n);
    std::memset(dst[l] + n, 0, size - n);
  }
}

void Launch::exec_cvta(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
  uint64_t* d = dest(w, in.ops[0]);
  const uint64_t wm = mask_bits(type_bits(in.type));
  const uint64_t sh = reinterpret_cast<uint64_t>(b.shared);
  const uint64_t pa = reinterpret_cast<uint64_t>(params_.data());
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    const uint64_t lo =
        reinterpret_cast<uint64_t>(b.local) + (w.index * kWarpSize + l) * b.local_window;
    uint64_t v = a[l];
    uint64_t r = v;
    if (in.op == Op::kCvta) {
      switch (in.space) {
        case Space::kShared:
          if (in.cluster_space && v > kClusterWindowMask) {
            uint64_t off = 0;
            Block* owner = cluster_shared(b, w, l, v, 0, in, &off);
            if (!owner) return;
            r = reinterpret_cast<uint64_t>(owner->shared) + off;
          } else {
            r = sh + v;
          }
          break;
        case Space::kLocal:
          r = lo + v;
          break;
        case Space::kParamKernel:
          r = in.in_kernel ? pa + v : lo + v;
          break;
        default:
          break;
      }
    } else if (in.op == Op::kCvtaTo) {
      switch (in.space) {
        case Space::kShared:
          r = v - sh;
          if (in.cluster_space && b.cluster) {
            const Block* owner = generic_shared_owner(b, v);
            if (owner && owner != &b)
              r = uint64_t{owner->rank + 1} << kClusterWindowShift |
                  (v - reinterpret_cast<uint64_t>(owner->shared));
          }
          break;
        case Space::kLocal:
          r = v - lo;
          break;
        case Space::kParamKernel:
          r = in.in_kernel ? v - pa : v - lo;
          break;
        default:
          break;
      }
    } else {  // isspacep
      const bool in_shared = v >= sh && v - sh < b.shared_size;
      // Another CTA's shared memory is in the shared::cluster window only.
      const bool in_cluster = !in_shared && b.cluster && generic_shared_owner(b, v) != nullptr;
      if (in.space == Space::kShared && in.cluster_space) {
        d[l] = in_shared || in_cluster;
        continue;
      }
      if (in_cluster) {
        d[l] = 0;
        continue;
      }
      const bool in_local = v >= lo && v - lo < b.local_window;
      const bool in_param = v >= pa && v - pa < params_.size();
      switch (in.space) {
        case Space::kShared:
          r = in_shared;
          break;
        case Space::kLocal:
          r = in_local;
          break;
        case Space::kParamKernel:
          r = in_param;
          break;
        case Space::kConst:
          r = !in_shared && !in_local && !in_param && memory_.accessible(v, 1, false);
          break;
        default:
          r = !in_shared && !in_local && !in_param;
          break;
      }
      d[l] = r;
      continue;
    }
    d[l] = r & wm;
  }
}

bool Launch::read_c_string(Block& b, Warp& w, int lane, uint64_t addr, std::string& out,
                           const Instr& in) {
  out.clear();
  for (size_t i = 0; i < (1u << 16); ++i) {
    uint8_t* p = translate(b, w, lane, Space::kGeneric, addr + i, 1, false, in);
    if (!p) return false;
    if (tracking_) [[unlikely]]
      track(b, p, 1, true, false);
    if (*p == 0) return true;
    out.push_back(static_cast<char>(*p));
  }
  return true;
}

void Launch::track(Block& b, const uint8_t* p, uint64_t size, bool read, bool write) {
  const uint64_t a = reinterpret_cast<uint64_t>(p);
  auto inside = [a](const void* base, uint64_t n) {
    const uint64_t s = reinterpret_cast<uint64_t>(base);
    return a >= s && a - s < n;
  };
  if (inside(b.shared, b.shared_size) || inside(b.local, b.local_window * b.nthreads) ||
      inside(params_.data(), params_.size()) || inside(grid_workspace_, sizeof grid_workspace_) ||
      (b.cluster && generic_shared_owner(b, a)))
    return;
  const uint64_t last = (a + size - 1) >> track_shift_;
  for (uint64_t c = a >> track_shift_; c <= last; ++c) {
    if (read && c != b.last_read) {
      b.read_chunks.insert(c);
      b.last_read = c;
    }
    if (write && c != b.last_written) {
      b.written_chunks.insert(c);
      b.last_written = c;
    }
  }
}

void Launch::track_lanes(Block& b, uint8_t* const* ptrs, uint32_t exec, uint64_t size, bool read,
                         bool write) {
  for (uint32_t m = exec; m; m &= m - 1) track(b, ptrs[std::countr_zero(m)], size, read, write);
}

void Launch::merge_accesses(Block& b) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    read_chunks_.insert(b.read_chunks.begin(), b.read_chunks.end());
    written_chunks_.insert(b.written_chunks.begin(), b.written_chunks.end());
  }
  b.read_chunks.clear();
  b.written_chunks.clear();
  b.last_read = b.last_written = ~uint64_t{0};
}

}  // namespace cusnap::emu::ptx
