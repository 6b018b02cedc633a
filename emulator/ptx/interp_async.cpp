// mbarrier objects (mbarrier.*, cp.async.mbarrier.arrive) and the try_wait scheduler hooks.
//
// An mbarrier is 8 bytes of the block's shared memory, and its whole state lives IN those bytes,
// in the emulator's own encoding (the PTX ISA leaves the object opaque; docs/emulator.md,
// "Asynchronous barriers and copies", documents this layout):
//   bits  0..19  expected arrival count (per phase)
//   bits 20..39  pending arrival count (of the current phase)
//   bits 40..60  tx-count, 21-bit two's complement (a copy may complete before its expect_tx)
//   bit  61      initialized (mbarrier.init sets it, mbarrier.inval clears the word)
//   bit  63      current phase parity
// The state token mbarrier.arrive returns is the word as it was just before that arrive-on, so
// its bit 63 is the phase the arrive belonged to. A kernel that reads the raw word (ld.shared)
// reads this documented encoding; an operation on a word without bit 61 fails the launch.
//
// The warps of a block run on one host thread, one at a time, so an operation on the word is
// atomic with respect to the block's other threads and every memory-ordering qualifier
// (.release, .acquire, .relaxed, .cta, .cluster) holds. The CTAs of a cluster run on one host
// thread too (interp_cluster.cpp), so the same holds for the arrive-on, expect_tx and complete_tx
// operations (and bulk copies) that reach another CTA's mbarrier through a shared::cluster or
// generic address; waits, init and inval take this CTA's own mbarriers only.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "interp.h"
#include "swizzle.h"

namespace cusnap::emu::ptx {
namespace {

constexpr uint64_t kCountMask = (uint64_t{1} << 20) - 1;
constexpr int kPendingShift = 20;
constexpr int kTxShift = 40;
constexpr uint64_t kTxMask = (uint64_t{1} << 21) - 1;
constexpr uint64_t kInitializedBit = uint64_t{1} << 61;
constexpr uint64_t kPhaseBit = uint64_t{1} << 63;
constexpr int64_t kMaxCount = (int64_t{1} << 20) - 1;  // counts and tx-counts: the ISA's range
// Consecutive try_wait time-limit wake-ups of a block, with no mbarrier of the block changing in
// between, after which the block counts as hung (see release_mbarrier_waits).
constexpr uint32_t kMaxIdleTimeouts = 1024;

struct MbarState {
  uint32_t expected = 0;
  uint32_t pending = 0;
  int32_t tx = 0;
  bool initialized = false;
  uint32_t phase = 0;
};

MbarState decode(uint64_t v) {
  MbarState s;
  s.expected = static_cast<uint32_t>(v & kCountMask);
  s.pending = static_cast<uint32_t>(v >> kPendingShift & kCountMask);
  uint32_t tx = static_cast<uint32_t>(v >> kTxShift & kTxMask);
  s.tx = (tx & (1u << 20)) ? static_cast<int32_t>(tx) - (1 << 21) : static_cast<int32_t>(tx);
  s.initialized = (v & kInitializedBit) != 0;
  s.phase = (v & kPhaseBit) ? 1 : 0;
  return s;
}

uint64_t encode(const MbarState& s) {
  return uint64_t{s.expected} | uint64_t{s.pending} << kPendingShift |
         (static_cast<uint64_t>(static_cast<uint32_t>(s.tx)) & kTxMask) << kTxShift |
         (s.initialized ? kInitializedBit : 0) | (s.phase ? kPhaseBit : 0);
}

uint64_t load_word(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void store_word(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

const char* op_name(MbarOp op) {
  switch (op) {
    case MbarOp::kInit:
      return "mbarrier.init";
    case MbarOp::kInval:
      return "mbarrier.inval";
    case MbarOp::kArrive:
      return "mbarrier.arrive";
    case MbarOp::kArriveDrop:
      return "mbarrier.arrive_drop";
    case MbarOp::kExpectTx:
      return "mbarrier.expect_tx";
    case MbarOp::kCompleteTx:
      return "mbarrier.complete_tx";
    case MbarOp::kTestWait:
      return "mbarrier.test_wait";
    case MbarOp::kTryWait:
      return "mbarrier.try_wait";
    case MbarOp::kCpAsyncArrive:
      return "cp.async.mbarrier.arrive";
  }
  return "mbarrier";
}

// The phase completes when every pending arrival arrived and every expected byte landed: the
// parity flips and the counts reload for the next phase.
void complete_if_done(MbarState& s) {
  if (s.pending != 0 || s.tx != 0) return;
  s.phase ^= 1;
  s.pending = s.expected;
  s.tx = 0;
}

}  // namespace

bool Launch::mbarrier_words(Block& b, Warp& w, const Instr& in, const Operand& a, uint32_t exec,
                            Space sp, uint8_t** words, uint64_t* offsets, Block** owners) {
  if (!resolve_lanes(b, w, in, a, exec, 8, true, words, sp)) return false;
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    // A generic address must name shared memory (this CTA's, or with `owners` one of its
    // cluster's): mbarriers live nowhere else.
    Block* owner = generic_shared_owner(b, reinterpret_cast<uint64_t>(words[l]));
    if (owner != nullptr && owner != &b && owners == nullptr) owner = nullptr;
    if (owner == nullptr || words[l] + 8 > owner->shared + owner->shared_size) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s: the address 0x%llx is not in the %s shared memory, ",
                    in.op == Op::kBulkCopy ? "cp.async.bulk" : op_name(static_cast<MbarOp>(in.sub)),
                    static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(words[l])),
                    owners ? "cluster's" : "block's");
      fail(LaunchStatus::kIllegalAddress, buf + where(b, w, l, in));
      return false;
    }
    offsets[l] = static_cast<uint64_t>(words[l] - owner->shared);
    if (owners) owners[l] = owner;
  }
  return true;
}

int Launch::exec_mbarrier(Block& b, Warp& w, const Instr& in, uint32_t group, uint32_t exec) {
  if (exec == 0) return kMbarAdvance;
  const MbarOp op = static_cast<MbarOp>(in.sub);
  uint8_t* words[kWarpSize];
  uint64_t offsets[kWarpSize];
  Block* owners[kWarpSize];
  const Space sp = in.space == Space::kShared ? Space::kShared : Space::kGeneric;
  // Arrive-on and tx-count operations may reach another CTA's mbarrier; the others only this
  // CTA's (the ISA gives them no .shared::cluster form).
  const bool remote_ok = op == MbarOp::kArrive || op == MbarOp::kArriveDrop ||
                         op == MbarOp::kExpectTx || op == MbarOp::kCompleteTx;
  if (!mbarrier_words(b, w, in, in.ops[1], exec, sp, words, offsets, remote_ok ? owners : nullptr))
    return 0;
  if (!remote_ok) for_lanes(exec, [&](int l) { owners[l] = &b; });
  const uint64_t* arg =
      in.ops[2].kind != Operand::kNone ? operand(w, in.ops[2], exec, kSpScratch0) : nullptr;
  auto bad = [&](int l, const char* why) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s on the mbarrier at shared offset 0x%llx: %s, ", op_name(op),
                  static_cast<unsigned long long>(offsets[l]), why);
    fail(LaunchStatus::kIllegalInstruction, buf + where(b, w, l, in));
    return 0;
  };

  if (op == MbarOp::kTestWait || op == MbarOp::kTryWait) {
    uint64_t* d = dest(w, in.ops[0]);
    uint32_t incomplete = 0;
    for (uint32_t m = exec; m; m &= m - 1) {
      int l = std::countr_zero(m);
      const MbarState s = decode(load_word(words[l]));
      if (!s.initialized) return bad(l, "the mbarrier is not initialized");
      // The phase waited for: the token's (bit 63 of the word before the arrive) or, with
      // .parity, the operand's; it has completed once the current parity differs.
      const uint32_t waited =
          (in.image & kMbarParity) ? static_cast<uint32_t>(arg[l] & 1) : (arg[l] >> 63 ? 1 : 0);
      const bool done = s.phase != waited;
      d[l] = done ? 1 : 0;
      if (!done) {
        incomplete |= 1u << l;
        w.mbar_offset[l] = offsets[l];
        w.mbar_parity[l] = static_cast<uint8_t>(waited);
      }
    }
    if (op == MbarOp::kTestWait) return kMbarAdvance | (incomplete ? kMbarYield : 0);
    // try_wait: lanes woken by the time limit read false once and go on; the other incomplete
    // lanes stay at this instruction, parked until their phase completes (they execute it again
    // then, and read true).
    const uint32_t timed_out = incomplete & w.mbar_timed_out;
    w.mbar_timed_out &= ~exec;
    const uint32_t park = incomplete & ~timed_out;
    if (park == 0) return kMbarAdvance;
    diverge(w);
    for (uint32_t m = group & ~park; m; m &= m - 1) ++w.pc[std::countr_zero(m)];
    w.mbar_wait |= park;
    w.runnable &= ~park;
    return kMbarYield;
  }

  uint64_t* d = in.ops[0].kind == Operand::kReg ? w.slot(in.ops[0].index) : nullptr;
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    const uint64_t before = load_word(words[l]);
    MbarState s = decode(before);
    ++owners[l]->mbar_changes;
    switch (op) {
      case MbarOp::kInit: {
        const uint64_t count = arg[l] & 0xffffffffu;
        if (count < 1 || count > static_cast<uint64_t>(kMaxCount))
          return bad(l, "the count must be in [1, 2^20 - 1]");
        s = MbarState{};
        s.expected = s.pending = static_cast<uint32_t>(count);
        s.initialized = true;
        store_word(words[l], encode(s));
        continue;
      }
      case MbarOp::kInval:
        if (!s.initialized) return bad(l, "the mbarrier is not initialized");
        store_word(words[l], 0);
        continue;
      default:
        break;
    }
    if (!s.initialized) return bad(l, "the mbarrier is not initialized");
    if (op == MbarOp::kExpectTx || op == MbarOp::kCompleteTx) {
      const int64_t tx = static_cast<int64_t>(arg[l] & 0xffffffffu);
      if (tx > kMaxCount) return bad(l, "the txCount must be in [0, 2^20 - 1]");
      const int64_t next = s.tx + (op == MbarOp::kExpectTx ? tx : -tx);
      if (next > kMaxCount || next < -kMaxCount)
        return bad(l, "the tx-count leaves its range [-(2^20 - 1), 2^20 - 1]");
      s.tx = static_cast<int32_t>(next);
      if (op == MbarOp::kCompleteTx) complete_if_done(s);
      store_word(words[l], encode(s));
      continue;
    }
    // Arrive-on operations.
    if (d && owners[l] != &b)
      return bad(l, "an arrive-on on another CTA's mbarrier returns no state (write '_')");
    uint32_t count = 1;
    if (op == MbarOp::kCpAsyncArrive) {
      // The arrive-on that cp.async.mbarrier.arrive triggers once the thread's prior cp.async
      // copies complete; they completed when issued, so it happens now. Without .noinc the
      // pending count is first incremented, so the pair leaves it unchanged.
      if (!(in.image & kMbarNoInc)) {
        store_word(words[l], before);
        continue;
      }
    } else if (arg && !(in.image & kMbarExpectTx)) {
      count = static_cast<uint32_t>(arg[l] & 0xffffffffu);
      if (count < 1 || count > kMaxCount) return bad(l, "the count must be in [1, 2^20 - 1]");
    }
    if (in.image & kMbarExpectTx) {
      const int64_t tx = static_cast<int64_t>(arg[l] & 0xffffffffu);
      if (tx > kMaxCount) return bad(l, "the txCount must be in [0, 2^20 - 1]");
      if (s.tx + tx > kMaxCount) return bad(l, "the tx-count leaves its range");
      s.tx = static_cast<int32_t>(s.tx + tx);
    }
    if (count > s.pending) return bad(l, "more arrivals than the phase has pending");
    if (op == MbarOp::kArriveDrop) {
      if (count > s.expected) return bad(l, "arrive_drop drops more than the expected count");
      s.expected -= count;
    }
    s.pending -= count;
    if ((in.image & kMbarNoComplete) && s.pending == 0 && s.tx == 0)
      return bad(l, ".noComplete arrive-on would complete the phase (undefined in the PTX ISA)");
    complete_if_done(s);
    store_word(words[l], encode(s));
    if (d) d[l] = before;
  }
  return kMbarAdvance;
}

bool Launch::release_mbarrier_waits(Block& b, bool time_limit, bool per_block_limit) {
  if (time_limit && per_block_limit) {
    // The block has nothing else to run: on a GPU the parked try_waits would return false
    // after their time limit, and the thread may do something else before waiting again. Wake
    // them that way; once kMaxIdleTimeouts such wake-ups in a row changed no mbarrier of the
    // block (only its own threads can: other CTAs reach it only in a cluster launch, which
    // counts per cluster), nothing can complete the phases any more and the block is hung.
    if (b.mbar_changes != b.mbar_changes_at_timeout) {
      b.mbar_changes_at_timeout = b.mbar_changes;
      b.mbar_idle_timeouts = 0;
    }
    if (++b.mbar_idle_timeouts > kMaxIdleTimeouts) return false;
  }
  bool woke = false;
  for (Warp& w : b.warps) {
    if (!w.mbar_wait) continue;
    uint32_t lanes = 0;
    for (uint32_t m = w.mbar_wait; m; m &= m - 1) {
      int l = std::countr_zero(m);
      const MbarState s = decode(load_word(b.shared + w.mbar_offset[l]));
      // Completed (or re-initialized / invalidated: the lane re-executes try_wait, which
      // decides) or, at the time limit, every parked lane.
      if (time_limit || !s.initialized || s.phase != w.mbar_parity[l]) lanes |= 1u << l;
    }
    if (!lanes) continue;
    if (time_limit) w.mbar_timed_out |= lanes;
    w.mbar_wait &= ~lanes;
    w.runnable |= lanes;
    woke = true;
  }
  return woke;
}

// cp.async.bulk: each executing thread's copy is performed when issued (one of the orders the
// asynchronous proxy allows: the data is there before any wait can observe it), and its bytes
// complete on the mbarrier as complete_tx would.
void Launch::exec_bulk_copy(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint64_t* size = operand(w, in.ops[2], exec, kSpScratch0);
  const bool multicast = (in.image & kBulkMulticast) != 0;
  const uint64_t* mask = multicast ? operand(w, in.ops[4], exec, kSpScratch1) : nullptr;
  const uint64_t ctas = b.cluster ? b.cluster->blocks.size() : 1;
  const Space dst_space = in.sub == 2 ? Space::kGlobal : Space::kShared;
  const Space src_space = in.sub == 0 ? Space::kGlobal : Space::kShared;
  auto lane_address = [&](const Operand& a, int l) {
    return static_cast<uint64_t>(a.offset) + (a.base_is_reg ? w.slot(a.index)[l] : 0) +
           (a.has_symbol ? symbol_value(w, l, a.symbol) : 0);
  };
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    const uint64_t n = size[l] & 0xffffffffu;
    const uint64_t da = lane_address(in.ops[0], l), sa = lane_address(in.ops[1], l);
    char buf[200];
    if (n % 16 != 0 || da % 16 != 0 || sa % 16 != 0) {
      std::snprintf(buf, sizeof buf,
                    "cp.async.bulk needs 16-byte aligned addresses and a size that is a multiple "
                    "of 16: dst 0x%llx, src 0x%llx, size %llu, ",
                    static_cast<unsigned long long>(da), static_cast<unsigned long long>(sa),
                    static_cast<unsigned long long>(n));
      fail(LaunchStatus::kMisalignedAddress, buf + where(b, w, l, in));
      return;
    }
    // The whole range of each side: shared offsets within the block's window, global ranges
    // inside one allocation.
    auto pointer = [&](Space sp, uint64_t a, bool write) -> uint8_t* {
      // The destination of a .shared::cluster form may be another CTA's shared memory.
      if (sp == Space::kShared && write && in.cluster_space) {
        uint64_t off = 0;
        Block* owner = cluster_shared(b, w, l, a, n, in, &off);
        return owner ? owner->shared + off : nullptr;
      }
      if (sp == Space::kShared) {
        if (a <= b.shared_size && n <= b.shared_size - a) return b.shared + a;
      } else if (n == 0 || memory_.accessible(a, n, write)) {
        return reinterpret_cast<uint8_t*>(a);
      }
      std::snprintf(buf, sizeof buf,
                    "illegal address: cp.async.bulk %s of %llu bytes at %s address 0x%llx, ",
                    write ? "write" : "read", static_cast<unsigned long long>(n),
                    sp == Space::kShared ? "shared" : "global", static_cast<unsigned long long>(a));
      std::string detail = sp == Space::kGlobal ? memory_.describe(a, n, write) : "";
      fail(LaunchStatus::kIllegalAddress,
           buf + (detail.empty() ? "" : detail + ", ") + where(b, w, l, in));
      return nullptr;
    };
    uint8_t* src = pointer(src_space, sa, false);
    if (!src) return;
    if (multicast) {
      // .multicast::cluster: the bytes land at dstMem's CTA-relative offset in every CTA whose
      // rank bit ctaMask sets, and complete on the mbarrier at mbar's offset in each of them.
      uint64_t dst_off = 0, bar_off = 0;
      if (!cluster_shared(b, w, l, da, 0, in, &dst_off)) return;
      const Operand& mb = in.ops[3];
      const uint64_t ma = static_cast<uint64_t>(mb.offset) +
                          (mb.base_is_reg ? w.slot(mb.index)[l] : 0) +
                          (mb.has_symbol ? symbol_value(w, l, mb.symbol) : 0);
      if (!cluster_shared(b, w, l, ma, 0, in, &bar_off)) return;
      const uint64_t bits = mask[l] & 0xffff;
      if (bits >> ctas) {
        std::snprintf(buf, sizeof buf,
                      "cp.async.bulk.multicast::cluster: ctaMask 0x%llx names a CTA outside the "
                      "cluster of %llu, ",
                      static_cast<unsigned long long>(bits), static_cast<unsigned long long>(ctas));
        fail(LaunchStatus::kIllegalInstruction, buf + where(b, w, l, in));
        return;
      }
      if (tracking_ && n != 0) [[unlikely]]
        track(b, src, n, true, false);
      for (uint64_t m2 = bits; m2; m2 &= m2 - 1) {
        const uint64_t rank_base = static_cast<uint64_t>(std::countr_zero(m2) + 1)
                                   << kClusterWindowShift;
        uint8_t* dst = pointer(dst_space, rank_base | dst_off, true);
        if (!dst) return;
        std::memmove(dst, src, n);
        Operand target;
        target.kind = Operand::kAddr;
        target.offset = static_cast<int64_t>(rank_base | bar_off);
        if (!bulk_complete_tx(b, w, in, l, target, n)) return;
      }
      continue;
    }
    uint8_t* dst = pointer(dst_space, da, true);
    if (!dst) return;
    if (tracking_ && n != 0) [[unlikely]] {
      if (src_space == Space::kGlobal) track(b, src, n, true, false);
      if (dst_space == Space::kGlobal) track(b, dst, n, false, true);
    }
    std::memmove(dst, src, n);
    if (in.sub != 2 && !bulk_complete_tx(b, w, in, l, in.ops[3], n)) return;
  }
}

bool Launch::bulk_complete_tx(Block& b, Warp& w, const Instr& in, int l, const Operand& a,
                              uint64_t bytes) {
  uint8_t* words[kWarpSize];
  uint64_t offsets[kWarpSize];
  Block* owners[kWarpSize];
  if (!mbarrier_words(b, w, in, a, 1u << l, Space::kShared, words, offsets, owners)) return false;
  char buf[200];
  MbarState s = decode(load_word(words[l]));
  if (!s.initialized) {
    std::snprintf(buf, sizeof buf,
                  "%s completes on the mbarrier at shared offset 0x%llx, which is not "
                  "initialized, ",
                  in.op == Op::kBulkTensor ? "cp.async.bulk.tensor" : "cp.async.bulk",
                  static_cast<unsigned long long>(offsets[l]));
    fail(LaunchStatus::kIllegalInstruction, buf + where(b, w, l, in));
    return false;
  }
  const int64_t next = s.tx - static_cast<int64_t>(bytes);
  if (bytes > static_cast<uint64_t>(kMaxCount) || next < -kMaxCount) {
    std::snprintf(buf, sizeof buf,
                  "a bulk copy of %llu bytes takes the tx-count of the mbarrier at shared offset "
                  "0x%llx out of its range [-(2^20 - 1), 2^20 - 1], ",
                  static_cast<unsigned long long>(bytes),
                  static_cast<unsigned long long>(offsets[l]));
    fail(LaunchStatus::kIllegalInstruction, buf + where(b, w, l, in));
    return false;
  }
  s.tx = static_cast<int32_t>(next);
  complete_if_done(s);
  store_word(words[l], encode(s));
  ++owners[l]->mbar_changes;
  return true;
}

// cp.async.bulk.tensor, tile mode, on maps of the emulator's encoding (TensorMapImage): the box
// at the coordinates, dimension 0 fastest, packed densely in shared memory; elements outside the
// tensor read as zero (load) or are not written (store). The load completes the box's full size
// on the mbarrier, out-of-bounds elements included, as the ISA counts it. A swizzled map's rows
// are exactly one swizzle span; each row's 16-byte chunks sit where swizzle_address puts them
// (the row goes through a dense copy in `staged`).
void Launch::exec_bulk_tensor(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint64_t* coord[5] = {};
  vector_operand(w, in.ops[2], exec, coord);  // registers and constants: read in place
  const uint64_t* map_address = operand(w, in.ops[1], exec, kSpScratch1);
  const bool store = in.sub == 1;
  const char* name = "cp.async.bulk.tensor";
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    char buf[240];
    auto refuse = [&](LaunchStatus status, const char* why) {
      std::snprintf(buf, sizeof buf, "%s: %s, ", name, why);
      fail(status, buf + where(b, w, l, in));
    };
    // The map: 128 bytes at a generic address (a kernel parameter, constant or global memory),
    // read in 8-byte words (the parameter buffer's host address is only 16-byte aligned).
    TensorMapImage map;
    for (int word = 0; word < 16; ++word) {
      const uint8_t* p =
          translate(b, w, l, Space::kGeneric, map_address[l] + 8 * word, 8, false, in);
      if (!p) return;
      std::memcpy(reinterpret_cast<uint8_t*>(&map) + 8 * word, p, 8);
    }
    if (map.magic != kTensorMapMagic || map.version != kTensorMapVersion)
      return refuse(LaunchStatus::kIllegalInstruction,
                    "the tensor map operand is not a map made by cuTensorMapEncodeTiled");
    if (!tensor_map_of(map, limits_.tensor_map_key))
      return refuse(LaunchStatus::kIllegalInstruction,
                    "the tensor map operand was encoded by another driver (its encoding key is "
                    "not this driver's CUSNAP_EMU_TENSOR_MAP_KEY): encode it on this driver");
    if (map.rank != in.vec)
      return refuse(LaunchStatus::kIllegalInstruction,
                    "the instruction's dimension is not the tensor map's rank");
    if (map.swizzle > static_cast<uint8_t>(Swizzle::k128B) ||
        (map.swizzle != 0 &&
         uint64_t{map.box[0]} * map.element_size != swizzle_span(Swizzle{map.swizzle})))
      return refuse(LaunchStatus::kIllegalInstruction,
                    "the tensor map's swizzle is not one cuTensorMapEncodeTiled wrote");
    const uint64_t esize = map.element_size;
    uint64_t count = 1;
    for (int d = 0; d < map.rank; ++d) count *= map.box[d];
    const uint64_t bytes = count * esize;
    const Operand& sa = in.ops[0];
    const uint64_t smem = static_cast<uint64_t>(sa.offset) +
                          (sa.base_is_reg ? w.slot(sa.index)[l] : 0) +
                          (sa.has_symbol ? symbol_value(w, l, sa.symbol) : 0);
    if (smem % 128 != 0)
      return refuse(LaunchStatus::kMisalignedAddress,
                    "the shared-memory box must be 128-byte aligned");
    uint8_t* box = nullptr;
    uint64_t box_offset = smem;        // the box's address in its CTA's shared memory
    if (!store && in.cluster_space) {  // .shared::cluster: possibly another CTA's
      uint64_t off = 0;
      Block* owner = cluster_shared(b, w, l, smem, bytes, in, &off);
      if (!owner) return;
      box = owner->shared + off;
      box_offset = off;
    } else {
      if (smem > b.shared_size || bytes > b.shared_size - smem)
        return refuse(LaunchStatus::kIllegalAddress,
                      "the box does not fit in the block's shared memory");
      box = b.shared + smem;
    }
    // One row (dimension 0) at a time: the in-bounds elements of a row are contiguous.
    uint64_t box_dim[5] = {1, 1, 1, 1, 1};
    for (int d = 0; d < map.rank; ++d) box_dim[d] = map.box[d];
    const uint64_t rows = count / box_dim[0];
    const int64_t c0 = static_cast<int32_t>(coord[0][l]);
    const Swizzle swizzle = static_cast<Swizzle>(map.swizzle);
    const uint64_t row_bytes = box_dim[0] * esize;  // a swizzle span when swizzled
    uint8_t staged[128];
    // Chunk c of the row at shared offset `at` lives at the chunk swizzle_address names.
    auto swizzled_row = [&](uint64_t at, uint8_t* dense, bool to_shared) {
      for (uint64_t c = 0; c < row_bytes; c += 16) {
        uint8_t* s_chunk = box + (swizzle_address(at + c, swizzle) - box_offset);
        if (to_shared)
          std::memcpy(s_chunk, dense + c, 16);
        else
          std::memcpy(dense + c, s_chunk, 16);
      }
    };
    for (uint64_t row = 0; row < rows; ++row) {
      uint8_t* line = box + row * row_bytes;
      const uint64_t line_at = box_offset + row * row_bytes;
      if (swizzle != Swizzle::kNone) {
        if (store) swizzled_row(line_at, staged, false);
        line = staged;
      }
      // A load's row, once dense in `staged`, goes to its swizzled chunks.
      const bool flush = !store && swizzle != Swizzle::kNone;
      bool inside = true;
      uint64_t offset = 0;
      uint64_t rest = row;
      for (int d = 1; d < map.rank; ++d) {
        const int64_t g =
            static_cast<int32_t>(coord[d][l]) + static_cast<int64_t>(rest % box_dim[d]);
        rest /= box_dim[d];
        if (g < 0 || static_cast<uint64_t>(g) >= map.dim[d])
          inside = false;
        else
          offset += static_cast<uint64_t>(g) * map.stride[d];
      }
      const int64_t lo = std::max<int64_t>(0, -c0);
      const int64_t hi = std::min<int64_t>(static_cast<int64_t>(box_dim[0]),
                                           static_cast<int64_t>(map.dim[0]) - c0);
      const bool any = inside && lo < hi;
      if (!store && !any) {
        std::memset(line, 0, row_bytes);
        if (flush) swizzled_row(line_at, staged, true);
        continue;
      }
      if (!any) continue;
      const uint64_t n = static_cast<uint64_t>(hi - lo) * esize;
      const uint64_t ga = map.address + offset + static_cast<uint64_t>(c0 + lo) * esize;
      if (!memory_.accessible(ga, n, store)) {
        std::snprintf(buf, sizeof buf,
                      "illegal address: %s %s of %llu bytes at global address 0x%llx (a row of "
                      "the tensor map's box), ",
                      name, store ? "write" : "read", static_cast<unsigned long long>(n),
                      static_cast<unsigned long long>(ga));
        std::string detail = memory_.describe(ga, n, store);
        fail(LaunchStatus::kIllegalAddress,
             buf + (detail.empty() ? "" : detail + ", ") + where(b, w, l, in));
        return;
      }
      uint8_t* g = reinterpret_cast<uint8_t*>(ga);
      uint8_t* s_elem = line + static_cast<uint64_t>(lo) * esize;
      if (tracking_) [[unlikely]]
        track(b, g, n, !store, store);
      if (store) {
        std::memmove(g, s_elem, n);
      } else {
        std::memset(line, 0, static_cast<uint64_t>(lo) * esize);
        std::memmove(s_elem, g, n);
        std::memset(s_elem + n, 0, (box_dim[0] - static_cast<uint64_t>(hi)) * esize);
        if (flush) swizzled_row(line_at, staged, true);
      }
    }
    if (!store && !bulk_complete_tx(b, w, in, l, in.ops[3], bytes)) return;
  }
}

}  // namespace cusnap::emu::ptx
