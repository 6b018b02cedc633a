// Warp collectives (shfl.sync, vote.sync, activemask, match.sync, redux.sync), bar.warp.sync and
// block barriers (bar/barrier .sync/.arrive/.red).
#include <bit>
#include <cstring>

#include "interp.h"

namespace cusnap::emu::ptx {

bool Launch::exec_collective(Block& b, Warp& w, const Instr& in, uint32_t /*pc*/, uint32_t group,
                             uint32_t exec) {
  (void)b;
  if (exec == 0) return true;
  const int first = std::countr_zero(exec);
  const Operand* mask_op = nullptr;
  switch (in.op) {
    case Op::kShfl:
      mask_op = &in.ops[5];
      break;
    case Op::kVote:
    case Op::kMatch:
    case Op::kRedux:
    case Op::kElect:
      mask_op = &in.ops[2];
      break;
    default:
      break;
  }
  if (mask_op && mask_op->kind != Operand::kNone) {
    const uint64_t* mv = operand(w, *mask_op, exec, kSpScratch3);
    const uint32_t needed = static_cast<uint32_t>(mv[first]) & w.live();
    if (needed & ~group) {
      // Named lanes are elsewhere: wait here until they arrive at this instruction.
      diverge(w);
      w.coll_wait |= group;
      w.runnable &= ~group;
      return false;
    }
  }
  switch (in.op) {
    case Op::kElect: {  // the lowest participating lane is the leader
      uint64_t* d = dest(w, in.ops[0]);
      uint64_t* p = in.ops[1].kind == Operand::kReg ? w.slot(in.ops[1].index) : nullptr;
      for (uint32_t m = exec; m; m &= m - 1) {
        int l = std::countr_zero(m);
        d[l] = static_cast<uint64_t>(first);
        if (p) p[l] = l == first;
      }
      break;
    }
    case Op::kActivemask: {
      uint64_t* d = dest(w, in.ops[0]);
      for (uint32_t m = exec; m; m &= m - 1) d[std::countr_zero(m)] = exec;
      break;
    }
    case Op::kShfl: {
      const uint64_t* a = operand(w, in.ops[2], exec, kSpScratch0);
      uint64_t av[kWarpSize];
      std::memcpy(av, a, sizeof av);
      const uint64_t* bv = operand(w, in.ops[3], exec, kSpScratch1);
      const uint64_t* cv = operand(w, in.ops[4], exec, kSpScratch2);
      uint64_t* d = dest(w, in.ops[0]);
      uint64_t* p = in.ops[1].kind == Operand::kReg ? w.slot(in.ops[1].index) : nullptr;
      const ShflMode mode = static_cast<ShflMode>(in.sub);
      for (uint32_t m = exec; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        int bval = static_cast<int>(bv[lane] & 31);
        int cval = static_cast<int>(cv[lane] & 31);
        int segmask = static_cast<int>((cv[lane] >> 8) & 31);
        int max_lane = (lane & segmask) | (cval & ~segmask);
        int min_lane = lane & segmask;
        int j = lane;
        bool pval = false;
        switch (mode) {
          case ShflMode::kUp:
            j = lane - bval;
            pval = j >= max_lane;
            break;
          case ShflMode::kDown:
            j = lane + bval;
            pval = j <= max_lane;
            break;
          case ShflMode::kBfly:
            j = lane ^ bval;
            pval = j <= max_lane;
            break;
          case ShflMode::kIdx:
            j = min_lane | (bval & ~segmask);
            pval = j <= max_lane;
            break;
        }
        if (!pval) j = lane;
        d[lane] = av[j & 31] & 0xffffffffu;
        if (p) p[lane] = pval;
      }
      break;
    }
    case Op::kVote: {
      const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
      uint32_t ballot = 0;
      for (uint32_t m = exec; m; m &= m - 1) {
        int l = std::countr_zero(m);
        if (a[l]) ballot |= 1u << l;
      }
      uint64_t r = 0;
      switch (static_cast<VoteMode>(in.sub)) {
        case VoteMode::kAll:
          r = ballot == exec;
          break;
        case VoteMode::kAny:
          r = ballot != 0;
          break;
        case VoteMode::kUni:
          r = ballot == exec || ballot == 0;
          break;
        case VoteMode::kBallot:
          r = ballot;
          break;
      }
      uint64_t* d = dest(w, in.ops[0]);
      for (uint32_t m = exec; m; m &= m - 1) d[std::countr_zero(m)] = r;
      break;
    }
    case Op::kMatch: {
      const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
      uint64_t* d = dest(w, in.ops[0]);
      uint64_t* p = in.ops[3].kind == Operand::kReg ? w.slot(in.ops[3].index) : nullptr;
      uint64_t av[kWarpSize];
      std::memcpy(av, a, sizeof av);
      if (in.sub == 1) {  // .all
        bool all = true;
        for (uint32_t m = exec; m; m &= m - 1)
          if (av[std::countr_zero(m)] != av[first]) all = false;
        for (uint32_t m = exec; m; m &= m - 1) {
          int l = std::countr_zero(m);
          d[l] = all ? exec : 0;
          if (p) p[l] = all;
        }
      } else {
        for (uint32_t m = exec; m; m &= m - 1) {
          int l = std::countr_zero(m);
          uint32_t same = 0;
          for (uint32_t k = exec; k; k &= k - 1) {
            int o = std::countr_zero(k);
            if (av[o] == av[l]) same |= 1u << o;
          }
          d[l] = same;
        }
      }
      break;
    }
    case Op::kRedux: {
      const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
      const ReduxOp op = static_cast<ReduxOp>(in.sub);
      const bool is_signed = in.type == Type::kS32;
      uint32_t acc = static_cast<uint32_t>(a[first]);
      for (uint32_t m = exec & (exec - 1); m; m &= m - 1) {
        uint32_t v = static_cast<uint32_t>(a[std::countr_zero(m)]);
        switch (op) {
          case ReduxOp::kAdd:
            acc += v;
            break;
          case ReduxOp::kMin:
            acc = is_signed ? static_cast<uint32_t>(
                                  std::min(static_cast<int32_t>(acc), static_cast<int32_t>(v)))
                            : std::min(acc, v);
            break;
          case ReduxOp::kMax:
            acc = is_signed ? static_cast<uint32_t>(
                                  std::max(static_cast<int32_t>(acc), static_cast<int32_t>(v)))
                            : std::max(acc, v);
            break;
          case ReduxOp::kAnd:
            acc &= v;
            break;
          case ReduxOp::kOr:
            acc |= v;
            break;
          case ReduxOp::kXor:
            acc ^= v;
            break;
        }
      }
      uint64_t* d = dest(w, in.ops[0]);
      for (uint32_t m = exec; m; m &= m - 1) d[std::countr_zero(m)] = acc;
      break;
    }
    default:
      break;
  }
  return true;
}

void Launch::try_release_warp_sync(Warp& w) {
  const uint32_t waiting = w.wsync_wait;
  const uint32_t live = w.live();
  uint32_t release = 0;
  for (uint32_t m = waiting; m; m &= m - 1) {
    int l = std::countr_zero(m);
    if ((w.wsync_mask[l] & live & ~waiting) == 0) release |= 1u << l;
  }
  w.wsync_wait &= ~release;
  w.runnable |= release;
}

void Launch::exec_warp_sync(Warp& w, const Instr& in, uint32_t group, uint32_t exec) {
  if (exec == 0) {
    advance(w, group);
    return;
  }
  const uint64_t* mv = operand(w, in.ops[0], exec, kSpScratch0);
  const uint32_t mask = static_cast<uint32_t>(mv[std::countr_zero(exec)]);
  if ((mask & w.live() & ~exec) == 0) {  // everyone named is here
    advance(w, group);
    return;
  }
  diverge(w);
  advance(w, group);
  for (uint32_t m = exec; m; m &= m - 1) w.wsync_mask[std::countr_zero(m)] = mask;
  w.wsync_wait |= exec;
  w.runnable &= ~exec;
  try_release_warp_sync(w);
}

void Launch::exec_bar(Block& b, Warp& w, const Instr& in, uint32_t group, uint32_t exec) {
  if (exec == 0) {
    advance(w, group);
    return;
  }
  if (exec != group) diverge(w);
  const int first = std::countr_zero(exec);
  const uint64_t* idv = operand(w, in.ops[1], exec, kSpScratch0);
  if (idv[first] >= kBarriers) {
    fail(LaunchStatus::kIllegalInstruction,
         "barrier " + std::to_string(idv[first]) +
             " does not exist (0..15): " + where(b, w, first, in));
    return;
  }
  const uint32_t id = static_cast<uint32_t>(idv[first]);
  BarrierState& bar = b.bars[id];
  if (in.ops[2].kind != Operand::kNone) {
    const uint64_t* cv = operand(w, in.ops[2], exec, kSpScratch1);
    bar.expected = static_cast<uint32_t>(cv[first]);
  }
  bar.arrived += static_cast<uint32_t>(std::popcount(exec));
  const BarKind kind = static_cast<BarKind>(in.sub);
  if (kind == BarKind::kRedPopc || kind == BarKind::kRedAnd || kind == BarKind::kRedOr) {
    const uint64_t* pv = operand(w, in.ops[3], exec, kSpScratch2);
    for (uint32_t m = exec; m; m &= m - 1) {
      bool p = pv[std::countr_zero(m)] != 0;
      bar.popc += p;
      bar.all = bar.all && p;
      bar.any = bar.any || p;
    }
    bar.red = kind;
    bar.red_slot =
        in.ops[0].kind == Operand::kReg ? in.ops[0].index : static_cast<uint32_t>(kSpScratch3);
  }
  advance(w, group);
  if (kind == BarKind::kArrive) return;
  for (uint32_t m = exec; m; m &= m - 1) w.bar_id[std::countr_zero(m)] = static_cast<uint8_t>(id);
  w.bar_wait |= exec;
  w.runnable &= ~exec;
}

}  // namespace cusnap::emu::ptx
