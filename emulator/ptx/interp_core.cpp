// Block set-up, the warp scheduler (minimum-PC-first with a uniform fast path), the instruction
// dispatch and block barriers.
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "interp.h"

namespace cusnap::emu::ptx {
namespace {

// The warp clock (engine.h, LaunchResult::emulated_ns): 4 cycles per issued instruction plus
// the cycles slept in nanosleep, at clock_khz cycles per ms.
constexpr uint64_t kCyclesPerInstruction = 4;
constexpr uint64_t kMaxNanosleepNs = 1000000;  // the PTX ISA's longest nanosleep (1 ms)
inline uint64_t warp_cycles(const Warp& w) {
  return w.icount * kCyclesPerInstruction + w.slept_cycles;
}
// Cycles to ns and back, rounded up (so a sleep of t ns always reads as at least t ns).
inline uint64_t cycles_to_ns(uint64_t cycles, uint64_t khz) {
  return cycles / khz * 1000000 + ((cycles % khz) * 1000000 + khz - 1) / khz;
}
inline uint64_t ns_to_cycles(uint64_t ns, uint64_t khz) { return (ns * khz + 999999) / 1000000; }

inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

inline uint64_t width_mask(int bits) {
  return bits >= 64 ? ~uint64_t{0} : ((uint64_t{1} << bits) - 1);
}

// Register width of each type (pred: 1), as a table: type_bits() is an out-of-line call and
// mov/selp/cvt ask it on every execution.
constexpr size_t kTypeTableSize = static_cast<size_t>(Type::kE5M2x2) + 1;
const std::array<uint8_t, kTypeTableSize> kTypeBits = [] {
  std::array<uint8_t, kTypeTableSize> bits{};
  for (size_t i = 0; i < kTypeTableSize; ++i) {
    const Type t = static_cast<Type>(i);
    bits[i] = static_cast<uint8_t>(t == Type::kPred ? 1 : type_bits(t));
  }
  return bits;
}();

inline int bits_of(Type t) {
  const size_t i = static_cast<size_t>(t);
  return i < kTypeTableSize ? kTypeBits[i] : type_bits(t);
}

}  // namespace

Launch::Launch(const Module& module, uint32_t kernel_index, const LaunchConfig& config,
               MemoryHost& memory, const Limits& limits,
               const std::vector<uint64_t>& symbol_addresses)
    : m_(module),
      fn_(module.functions[module.kernel_info[kernel_index].function]),
      ki_(module.kernel_info[kernel_index]),
      kd_(module.kernels[kernel_index]),
      config_(config),
      memory_(memory),
      limits_(limits),
      symbol_addresses_(symbol_addresses) {
  params_.assign(std::max<size_t>(kd_.param_bytes, 1), 0);
  if (config.params && config.params_size)
    std::memcpy(params_.data(), config.params,
                std::min<size_t>(config.params_size, kd_.param_bytes));
  shared_bytes_ = static_cast<uint64_t>(ki_.dynamic_shared_offset) + config.dynamic_shared_bytes;
  if (!kd_.uses_dynamic_shared)
    shared_bytes_ = std::max<uint64_t>(ki_.static_shared, shared_bytes_);
  uint64_t frames = ki_.max_frame;
  bool recursive = false;
  for (const Function& f : m_.functions) recursive |= f.recursive;
  recursive |= m_.has_indirect_calls;
  if (recursive || m_.has_dynamic_stack || frames > ((fn_.frame_bytes + 15u) & ~15u))
    frames += limits.stack_bytes_per_thread;
  local_window_ = (frames + 15) & ~uint64_t{15};
  if (local_window_ == 0) local_window_ = 16;
  start_ns_ = now_ns();
  result_.status = LaunchStatus::kSuccess;
  // %gridid: the temporal launch number, distinct for every launch of the process.
  static std::atomic<uint64_t> launches{0};
  grid_id_ = launches.fetch_add(1, std::memory_order_relaxed) + 1;
  tracking_ = config.track_chunk_bytes != 0;
  if (tracking_) track_shift_ = std::countr_zero(config.track_chunk_bytes);
}

void Launch::fail(LaunchStatus status, std::string message) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (result_.status == LaunchStatus::kSuccess) {
    result_.status = status;
    result_.message = std::move(message);
  }
  abort_.store(true, std::memory_order_relaxed);
}

LaunchResult Launch::result() {
  std::lock_guard<std::mutex> lock(mutex_);
  LaunchResult r = result_;
  r.instructions = instructions_.load();
  r.thread_instructions = thread_instructions_.load();
  // A modelled device time: ~1 ns per warp-instruction spread over the SMs, plus launch latency.
  r.emulated_ns =
      3000 + std::max<uint64_t>(r.instructions / std::max<uint32_t>(1, limits_.sm_count),
                                longest_warp_ns_.load());
  if (tracking_) {
    auto sorted = [&](const std::unordered_set<uint64_t>& set) {
      std::vector<uint64_t> v;
      v.reserve(set.size());
      for (uint64_t c : set) v.push_back(c << track_shift_);
      std::sort(v.begin(), v.end());
      return v;
    };
    r.read_chunks = sorted(read_chunks_);
    r.written_chunks = sorted(written_chunks_);
  }
  return r;
}

std::string Launch::take_output() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::stable_sort(output_.begin(), output_.end(),
                   [](const OutputChunk& a, const OutputChunk& b) { return a.block < b.block; });
  std::string out;
  size_t printed = 0;
  bool full = false;
  for (OutputChunk& c : output_) {
    // The FIFO bounds what the kernel printed (once full, later output is lost); assert
    // messages are always shown.
    if (c.printf) {
      full = full || printed + c.text.size() > limits_.printf_fifo_bytes;
      if (full) continue;
      printed += c.text.size();
    }
    out += c.text;
  }
  output_.clear();
  output_bytes_ = 0;
  return out;
}

std::string Launch::where(const Block& b, const Warp& w, int lane, const Instr& in) const {
  uint32_t t = w.index * kWarpSize + static_cast<uint32_t>(lane);
  const Dim3& bd = config_.block;
  char buf[256];
  std::snprintf(buf, sizeof buf, "kernel %s, block (%u,%u,%u), thread (%u,%u,%u), PTX line %u",
                kd_.name.c_str(), b.ctaid.x, b.ctaid.y, b.ctaid.z, t % bd.x, (t / bd.x) % bd.y,
                t / (bd.x * bd.y), in.line);
  return buf;
}

void Launch::init_block(Block& b, uint64_t linear) {
  const Dim3& g = config_.grid;
  const Dim3& bd = config_.block;
  b.linear = linear;
  b.ctaid = Dim3{static_cast<uint32_t>(linear % g.x), static_cast<uint32_t>((linear / g.x) % g.y),
                 static_cast<uint32_t>(linear / (uint64_t{g.x} * g.y))};
  b.nthreads = static_cast<uint32_t>(bd.count());
  b.live = b.nthreads;
  b.done = false;
  b.started = true;
  for (auto& bar : b.bars) bar = BarrierState{};
  b.mbar_changes = b.mbar_changes_at_timeout = 0;
  b.mbar_idle_timeouts = 0;
  b.cluster = nullptr;  // init_cluster sets it (and the rank) for the CTAs of a cluster launch
  b.rank = 0;
  b.solo_barrier = ClusterBarrier{};
  // Shared memory: aligned to 256 so that any declared alignment holds for host addresses too.
  b.shared_store.assign(shared_bytes_ + 256, 0);
  uint8_t* base = b.shared_store.data();
  b.shared = base + ((256 - (reinterpret_cast<uintptr_t>(base) & 255)) & 255);
  b.shared_size = shared_bytes_;
  b.local_window = local_window_;
  b.local_store.assign(local_window_ * b.nthreads + 16, 0);
  base = b.local_store.data();
  b.local = base + ((16 - (reinterpret_cast<uintptr_t>(base) & 15)) & 15);

  const uint32_t nwarps = (b.nthreads + kWarpSize - 1) / kWarpSize;
  b.warps.resize(nwarps);
  const uint64_t ws = reinterpret_cast<uint64_t>(&grid_workspace_[0]);
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    Warp& w = b.warps[wi];
    w.index = wi;
    uint32_t lanes = std::min<uint32_t>(kWarpSize, b.nthreads - wi * kWarpSize);
    w.valid = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1);
    w.exited = 0;
    w.runnable = w.valid;
    w.bar_wait = w.wsync_wait = w.coll_wait = w.mbar_wait = w.mbar_timed_out = 0;
    w.cbar_arrived = w.cbar_wait = 0;
    w.uniform = true;
    w.upc = fn_.first_instr;
    w.carry.bits = 0;
    w.icount = 0;
    w.slept_cycles = 0;
    w.divergent_steps = 0;
    // Registers start at zero (deterministic runs); only the slots this kernel can touch are
    // cleared, so a large module with many kernels does not pay for all of them per block.
    // Special-register slots are zeroed once, when the register file is allocated (clearing them
    // per block was the top cost of short blocks): the per-block ones are rewritten below,
    // %clock/%globaltimer are refreshed before every read, scratch slots are written before
    // they are read, and the rest (kSpZero, %pm, unused %envreg) are never written.
    const size_t reg_values = static_cast<size_t>(m_.slot_count) * kWarpSize;
    if (w.regs.size() != reg_values) w.regs.assign(reg_values, 0);
    for (const auto& [first, end] : ki_.slot_ranges)
      std::fill(w.regs.begin() + static_cast<ptrdiff_t>(first) * kWarpSize,
                w.regs.begin() + static_cast<ptrdiff_t>(end) * kWarpSize, 0);
    for (int l = 0; l < kWarpSize; ++l) {
      w.pc[l] = fn_.first_instr;
      w.frame_base[l] = 0;
      w.stack_ptr[l] = b.local_window;
      w.stack[l].clear();
      uint32_t t = wi * kWarpSize + static_cast<uint32_t>(l);
      w.slot(kSpTidX)[l] = t % bd.x;
      w.slot(kSpTidY)[l] = (t / bd.x) % bd.y;
      w.slot(kSpTidZ)[l] = t / (bd.x * bd.y);
      w.slot(kSpLaneid)[l] = static_cast<uint64_t>(l);
      w.slot(kSpLanemaskEq)[l] = 1u << l;
      w.slot(kSpLanemaskLt)[l] = (1u << l) - 1;
      w.slot(kSpLanemaskLe)[l] = l == 31 ? 0xffffffffu : ((2u << l) - 1);
      w.slot(kSpLanemaskGt)[l] = l == 31 ? 0u : (0xffffffffu << (l + 1));
      w.slot(kSpLanemaskGe)[l] = 0xffffffffu << l;
    }
    auto fill = [&](uint32_t s, uint64_t v) { std::fill_n(w.slot(s), kWarpSize, v); };
    fill(kSpNtidX, bd.x);
    fill(kSpNtidY, bd.y);
    fill(kSpNtidZ, bd.z);
    fill(kSpCtaidX, b.ctaid.x);
    fill(kSpCtaidY, b.ctaid.y);
    fill(kSpCtaidZ, b.ctaid.z);
    fill(kSpNctaidX, g.x);
    fill(kSpNctaidY, g.y);
    fill(kSpNctaidZ, g.z);
    fill(kSpWarpid, wi);
    fill(kSpNwarpid, 64);
    fill(kSpSmid, linear % std::max<uint32_t>(1, limits_.sm_count));
    fill(kSpNsmid, limits_.sm_count);
    fill(kSpGridid, grid_id_);
    fill(kSpDynSmem, config_.dynamic_shared_bytes);
    fill(kSpTotalSmem, shared_bytes_);
    if (config_.cooperative) {
      fill(kSpEnvreg0 + 1, ws >> 32);
      fill(kSpEnvreg0 + 2, ws & 0xffffffffu);
    }
    // Clusters (cuLaunchKernelEx attribute or .reqnctapercluster; interp_cluster.cpp).
    const Dim3 cl{std::max(1u, config_.cluster.x), std::max(1u, config_.cluster.y),
                  std::max(1u, config_.cluster.z)};
    fill(kSpClusterNctaidX, cl.x);
    fill(kSpClusterNctaidY, cl.y);
    fill(kSpClusterNctaidZ, cl.z);
    fill(kSpClusterCtaidX, b.ctaid.x % cl.x);
    fill(kSpClusterCtaidY, b.ctaid.y % cl.y);
    fill(kSpClusterCtaidZ, b.ctaid.z % cl.z);
    fill(kSpClusteridX, b.ctaid.x / cl.x);
    fill(kSpClusteridY, b.ctaid.y / cl.y);
    fill(kSpClusteridZ, b.ctaid.z / cl.z);
    fill(kSpNclusteridX, (g.x + cl.x - 1) / cl.x);
    fill(kSpNclusteridY, (g.y + cl.y - 1) / cl.y);
    fill(kSpNclusteridZ, (g.z + cl.z - 1) / cl.z);
    fill(kSpClusterCtarank,
         (b.ctaid.x % cl.x) + cl.x * ((b.ctaid.y % cl.y) + cl.y * (b.ctaid.z % cl.z)));
    fill(kSpClusterNctarank, cl.count());
    fill(kSpIsExplicitCluster,
         cl.count() > 1 || kd_.explicit_cluster || kd_.reqnctapercluster.x ? 1 : 0);
  }
}

// ---- PC bookkeeping -------------------------------------------------------------------------

void Launch::diverge(Warp& w) {
  if (!w.uniform) return;
  for (uint32_t m = w.live(); m; m &= m - 1) w.pc[std::countr_zero(m)] = w.upc;
  w.uniform = false;
}

void Launch::advance(Warp& w, uint32_t group) {
  if (w.uniform) {
    ++w.upc;
    return;
  }
  for (uint32_t m = group; m; m &= m - 1) ++w.pc[std::countr_zero(m)];
}

void Launch::jump(Warp& w, uint32_t group, uint32_t taken, uint32_t target) {
  if (taken == 0) {
    advance(w, group);
    return;
  }
  if (w.uniform && taken == group) {
    w.upc = target;
    return;
  }
  diverge(w);
  for (uint32_t m = group; m; m &= m - 1) {
    int l = std::countr_zero(m);
    w.pc[l] = (taken >> l & 1) ? target : w.pc[l] + 1;
  }
}

void Launch::exec_brx(Block& b, Warp& w, const Instr& in, uint32_t group, uint32_t exec) {
  if (exec == 0) {
    advance(w, group);
    return;
  }
  const std::vector<uint32_t>& table = m_.branch_tables[in.matrix];
  const uint64_t* index = operand(w, in.ops[0], exec, kSpScratch0);
  uint32_t target[kWarpSize];
  for (uint32_t m = exec; m; m &= m - 1) {
    const int l = std::countr_zero(m);
    const uint32_t i = static_cast<uint32_t>(index[l]);
    // The PTX ISA leaves an index past the list undefined: refuse it rather than guess.
    if (i >= table.size()) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "brx.idx index %u is past its %zu branch targets: ", i,
                    table.size());
      fail(LaunchStatus::kIllegalInstruction, buf + where(b, w, l, in));
      return;
    }
    target[l] = table[i];
  }
  const int first = std::countr_zero(exec);
  bool same = true;
  for (uint32_t m = exec; m; m &= m - 1)
    same = same && target[std::countr_zero(m)] == target[first];
  if (same) {
    jump(w, group, exec, target[first]);
    return;
  }
  diverge(w);
  for (uint32_t m = group; m; m &= m - 1) {
    const int l = std::countr_zero(m);
    w.pc[l] = (exec >> l & 1) ? target[l] : w.pc[l] + 1;
  }
}

void Launch::exit_lanes(Block& b, Warp& w, uint32_t lanes) {
  lanes &= ~w.exited;
  if (!lanes) return;
  w.exited |= lanes;
  w.runnable &= ~lanes;
  w.coll_wait &= ~lanes;
  b.live -= static_cast<uint32_t>(std::popcount(lanes));
  if (w.wsync_wait) try_release_warp_sync(w);
  if (w.cbar_arrived || cluster_barrier(b).arrived) exit_cluster_barrier(b, w, lanes);
}

// ---- operands -------------------------------------------------------------------------------

const uint64_t* Launch::computed_operand(Warp& w, const Operand& o, uint32_t exec,
                                         uint32_t scratch) {
  switch (o.kind) {
    case Operand::kReg: {
      if (!o.negate) return w.slot(o.index);
      uint64_t* s = w.slot(scratch);
      const uint64_t* r = w.slot(o.index);
      for_lanes(exec, [&](int l) { s[l] = r[l] ? 0 : 1; });
      return s;
    }
    case Operand::kConst: {
      const uint64_t* c = m_.const_pool.data() + static_cast<size_t>(o.index) * kWarpSize;
      if (!o.negate) return c;
      uint64_t* s = w.slot(scratch);
      std::fill_n(s, kWarpSize, c[0] ? 0 : 1);
      return s;
    }
    case Operand::kSymbol: {
      uint64_t* s = w.slot(scratch);
      for (uint32_t m = exec; m; m &= m - 1) {
        int l = std::countr_zero(m);
        s[l] = symbol_value(w, l, o.symbol) + static_cast<uint64_t>(o.offset);
      }
      return s;
    }
    case Operand::kRefHandle: {
      uint64_t* s = w.slot(scratch);
      for (uint32_t m = exec; m; m &= m - 1) {
        int l = std::countr_zero(m);
        std::memcpy(&s[l], reinterpret_cast<const void*>(symbol_value(w, l, o.symbol)), 8);
      }
      return s;
    }
    case Operand::kNone:  // an optional operand that is absent (callers test for it first)
      return w.slot(kSpZero);
    default:
      // Lowering gives every source operand one of the kinds above (Parser::src refuses vectors,
      // sinks and addresses as scalar sources): reaching this is an emulator bug, and it must
      // not pass for a value of zero.
      fail(LaunchStatus::kIllegalInstruction, "internal error: an operand of kind " +
                                                  std::to_string(static_cast<int>(o.kind)) +
                                                  " read as a value");
      return w.slot(kSpZero);
  }
}

// setp/set: p[|q] = cmp(a, b) [bool_op c]. For scalar types q receives the complement of the
// comparison; for packed f16x2/bf16x2 p and q receive the low and high halves' comparisons
// (alu.h compare_x2), and `set` writes each half of d separately.
void Launch::exec_compare(Warp& w, const Instr& in, uint32_t exec) {
  const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
  const uint64_t* bb = operand(w, in.ops[2], exec, kSpScratch1);
  const bool packed = in.type2 == Type::kF16x2 || in.type2 == Type::kBF16x2;
  uint32_t r, rq;
  if (packed) {
    compare_x2(in.cmp, in.type2, in.mods, exec, a, bb, &r, &rq);
  } else {
    r = compare(in.cmp, in.type2, in.mods, exec, a, bb);
    rq = ~r & exec;
  }
  if (in.bool_op != BoolOp::kNone) {
    const uint64_t* c = operand(w, in.ops[3], exec, kSpScratch2);
    uint32_t cm = 0;
    for (uint32_t m = exec; m; m &= m - 1) {
      int l = std::countr_zero(m);
      if (c[l]) cm |= 1u << l;
    }
    auto combine = [&](uint32_t x) {
      switch (in.bool_op) {
        case BoolOp::kAnd:
          return x & cm;
        case BoolOp::kOr:
          return x | cm;
        case BoolOp::kXor:
          return x ^ cm;
        default:
          return x;
      }
    };
    r = combine(r) & exec;
    rq = combine(rq) & exec;
  }
  uint64_t* d = dest(w, in.ops[0]);
  if (in.op == Op::kSetp) {
    for_lanes(exec, [&](int l) { d[l] = r >> l & 1; });
    if (in.nops == 5 && in.ops[4].kind == Operand::kReg) {
      uint64_t* q = w.slot(in.ops[4].index);
      for_lanes(exec, [&](int l) { q[l] = rq >> l & 1; });
    }
    return;
  }
  // set: "true" is 1.0 in a float destination, all ones in an integer one (per 16-bit half for
  // packed sources).
  auto true_value = [](Type t) -> uint64_t {
    switch (t) {
      case Type::kF32:
        return 0x3f800000u;
      case Type::kF16:
      case Type::kF16x2:
        return 0x3c00u;
      case Type::kBF16:
      case Type::kBF16x2:
        return 0x3f80u;
      default:
        return width_mask(bits_of(t));
    }
  };
  const bool float_halves = in.type == Type::kF16x2 || in.type == Type::kBF16x2;
  const uint64_t one = !packed || float_halves ? true_value(in.type) : 0xffffu;
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    uint64_t v = (r >> l & 1) ? one : 0;
    if (packed && (rq >> l & 1)) v |= one << 16;
    d[l] = v;
  }
}

// ---- the warp loop --------------------------------------------------------------------------

void Launch::run_warp(Block& b, Warp& w, uint64_t budget) {
  const Instr* code = m_.code.data();
  const uint64_t khz = std::max<uint64_t>(1, limits_.clock_khz);
  uint64_t executed = 0;
  uint64_t lanes_issued = 0;
  while (w.runnable && executed < budget) {
    // Select the lanes to run: all runnable lanes (uniform) or those at the minimum PC.
    uint32_t pc, group;
    if (w.uniform) {
      pc = w.upc;
      group = w.runnable;
    } else {
      pc = UINT32_MAX;
      for (uint32_t m = w.runnable; m; m &= m - 1) pc = std::min(pc, w.pc[std::countr_zero(m)]);
      // Forward progress for diverged lanes: minimum-PC-first alone would let lanes spinning
      // in a loop (waiting for a flag another lane of the same warp sets later in the code)
      // starve that lane. Every so often run the next-higher PC group instead, as independent
      // thread scheduling guarantees progress on a GPU.
      if (++w.divergent_steps >= 1024) {
        w.divergent_steps = 0;
        uint32_t next = UINT32_MAX;
        for (uint32_t m = w.runnable; m; m &= m - 1) {
          uint32_t p = w.pc[std::countr_zero(m)];
          if (p > pc) next = std::min(next, p);
        }
        if (next != UINT32_MAX) pc = next;
      }
      group = 0;
      for (uint32_t m = w.runnable | w.coll_wait; m; m &= m - 1) {
        int l = std::countr_zero(m);
        if (w.pc[l] == pc) group |= 1u << l;
      }
      if (w.coll_wait & group) {
        w.runnable |= group;
        w.coll_wait &= ~group;
      }
      if (group == w.live() && !w.bar_wait && !w.wsync_wait && !w.coll_wait && !w.mbar_wait &&
          !w.cbar_wait) {
        w.uniform = true;
        w.upc = pc;
      }
    }
    const Instr& in = code[pc];
    ++executed;
    lanes_issued += lane_count(group);
    uint32_t exec = group;
    if (in.has_guard) {
      const uint64_t* p = w.slot(in.guard_slot);
      uint32_t t = 0;
      for_lanes(group, [&](int l) { t |= static_cast<uint32_t>(p[l] != 0) << l; });
      exec = (in.guard_negate ? ~t : t) & group;
    }
    if (in.reads_dynamic_special) {
      uint64_t clk = warp_cycles(w) + b.linear * 7;
      uint64_t gt = config_.start_ns + cycles_to_ns(warp_cycles(w), khz);
      std::fill_n(w.slot(kSpClock), kWarpSize, clk & 0xffffffffu);
      std::fill_n(w.slot(kSpClockHi), kWarpSize, clk >> 32);
      std::fill_n(w.slot(kSpClock64), kWarpSize, clk);
      std::fill_n(w.slot(kSpGlobaltimer), kWarpSize, gt);
      std::fill_n(w.slot(kSpGlobaltimerLo), kWarpSize, gt & 0xffffffffu);
      std::fill_n(w.slot(kSpGlobaltimerHi), kWarpSize, gt >> 32);
    }
    ++w.icount;
    switch (in.op) {
      case Op::kFence:
        // membar/fence (sub 1): orders this thread's plain accesses against other blocks' threads.
        if (in.sub == 1) std::atomic_thread_fence(std::memory_order_seq_cst);
        advance(w, group);
        break;
      case Op::kNop:
      case Op::kBrkpt:
        advance(w, group);
        break;
      case Op::kNanosleep: {
        // The warp sleeps as long as its longest-sleeping lane asked (at most 1 ms, as the ISA
        // bounds it) on its emulated clock; the host does not wait.
        if (exec) {
          const uint64_t* t = operand(w, in.ops[0], exec, kSpScratch0);
          uint64_t longest = 0;
          for_lanes(exec,
                    [&](int l) { longest = std::max<uint64_t>(longest, t[l] & 0xffffffffu); });
          w.slept_cycles += ns_to_cycles(std::min(longest, kMaxNanosleepNs), khz);
        }
        advance(w, group);
        break;
      }
      case Op::kAlu: {
        if (exec) {
          const uint64_t* a = in.nops > 1 ? operand(w, in.ops[1], exec, kSpScratch0) : nullptr;
          const uint64_t* bb = in.nops > 2 ? operand(w, in.ops[2], exec, kSpScratch1) : nullptr;
          const uint64_t* c = in.nops > 3 ? operand(w, in.ops[3], exec, kSpScratch2) : nullptr;
          // ops[4] is lop3's LUT and bfi's length (alu.h); lop3 and predicate logic are the ALU's.
          const uint64_t* e = in.nops > 4 ? operand(w, in.ops[4], exec, kSpScratch3) : nullptr;
          alu(in.alu_op, in.type, in.mods, exec, a, bb, c, dest(w, in.ops[0]), &w.carry, e);
        }
        advance(w, group);
        break;
      }
      case Op::kMov: {
        if (exec) {
          const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
          uint64_t* d = dest(w, in.ops[0]);
          const uint64_t wm = width_mask(bits_of(in.type));
          for_lanes(exec, [&](int l) { d[l] = a[l] & wm; });
        }
        advance(w, group);
        break;
      }
      case Op::kMovPack: {
        if (exec) {
          const Operand& v = in.ops[1];
          const int n = v.count;
          const int eb = bits_of(in.type) / n;
          uint64_t* d = dest(w, in.ops[0]);
          uint64_t tmp[kWarpSize] = {};
          for (int i = 0; i < n; ++i) {
            const uint64_t* e = operand(w, m_.vec_pool[v.index + i], exec, kSpScratch0);
            for (uint32_t m = exec; m; m &= m - 1) {
              int l = std::countr_zero(m);
              tmp[l] |= (e[l] & width_mask(eb)) << (eb * i);
            }
          }
          for (uint32_t m = exec; m; m &= m - 1) {
            int l = std::countr_zero(m);
            d[l] = tmp[l];
          }
        }
        advance(w, group);
        break;
      }
      case Op::kMovUnpack: {
        if (exec) {
          const Operand& v = in.ops[0];
          const int n = v.count;
          const int eb = bits_of(in.type) / n;
          const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
          uint64_t src[kWarpSize];
          std::memcpy(src, a, sizeof src);
          for (int i = 0; i < n; ++i) {
            const Operand& e = m_.vec_pool[v.index + i];
            if (e.kind != Operand::kReg) continue;
            uint64_t* d = w.slot(e.index);
            for (uint32_t m = exec; m; m &= m - 1) {
              int l = std::countr_zero(m);
              d[l] = (src[l] >> (eb * i)) & width_mask(eb);
            }
          }
        }
        advance(w, group);
        break;
      }
      case Op::kSelp: {
        if (exec) {
          const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
          const uint64_t* bb = operand(w, in.ops[2], exec, kSpScratch1);
          const uint64_t* c = operand(w, in.ops[3], exec, kSpScratch2);
          uint64_t* d = dest(w, in.ops[0]);
          for (uint32_t m = exec; m; m &= m - 1) {
            int l = std::countr_zero(m);
            bool pick_a;
            if (in.sub == 1) {  // slct: c >= 0 (integer sign; for f32 -0 >= 0, NaN selects b)
              int cb = bits_of(in.type2);
              if (in.type2 == Type::kF32) {
                uint32_t cv = static_cast<uint32_t>(c[l]);
                // .ftz: a subnormal c is flushed to a zero of its sign, and -0 >= 0.
                if (in.mods.ftz && (cv & 0x7f800000u) == 0) cv = 0;
                float f;
                std::memcpy(&f, &cv, 4);
                pick_a = f >= 0.0f;  // ordered: a NaN c selects b
              } else {
                pick_a = !((c[l] >> (cb - 1)) & 1);
              }
            } else {
              pick_a = c[l] != 0;
            }
            d[l] = pick_a ? a[l] : bb[l];
          }
        }
        advance(w, group);
        break;
      }
      case Op::kSetp:
      case Op::kSet:
        if (exec) exec_compare(w, in, exec);
        advance(w, group);
        break;
      case Op::kCvt: {
        if (exec) {
          const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
          const uint64_t* bb = in.nops > 2 ? operand(w, in.ops[2], exec, kSpScratch1) : nullptr;
          cvt(in.type, in.type2, in.mods, exec, a, dest(w, in.ops[0]), bb);
        }
        advance(w, group);
        break;
      }
      case Op::kCvta:
      case Op::kCvtaTo:
      case Op::kIsspacep:
        if (exec) exec_cvta(b, w, in, exec);
        advance(w, group);
        break;
      case Op::kCvtPack:
        if (exec) exec_cvt_pack(w, in, exec);
        advance(w, group);
        break;
      case Op::kAlloca:
      case Op::kStackSave:
      case Op::kStackRestore:
        if (exec) exec_stack(b, w, in, exec);
        if (aborted()) return;
        advance(w, group);
        break;
      case Op::kTex:
      case Op::kTld4:
        if (exec) exec_texture(b, w, in, exec);
        if (aborted()) return;
        advance(w, group);
        break;
      case Op::kSuld:
      case Op::kSust:
        if (exec) exec_surface(b, w, in, exec);
        if (aborted()) return;
        advance(w, group);
        break;
      case Op::kTxq:
      case Op::kSuq:
      case Op::kIstypep:
        if (exec) exec_image_query(b, w, in, exec);
        if (aborted()) return;
        advance(w, group);
        break;
      case Op::kLd:
        if (exec) exec_ld(b, w, in, exec);
        advance(w, group);
        break;
      case Op::kSt:
        if (exec) exec_st(b, w, in, exec);
        advance(w, group);
        break;
      case Op::kAtom:
      case Op::kRed:
        if (exec) exec_atom(b, w, in, exec);
        advance(w, group);
        break;
      case Op::kBra:
        jump(w, group, exec, in.ops[0].index);
        break;
      case Op::kBrx:
        exec_brx(b, w, in, group, exec);
        if (aborted()) return;
        break;
      case Op::kCall:
        exec_call(b, w, in, pc, group, exec);
        break;
      case Op::kRet:
        exec_ret(b, w, group, exec);
        break;
      case Op::kExit:
        advance(w, group & ~exec);
        exit_lanes(b, w, exec);
        break;
      case Op::kTrap:
        if (exec) {
          fail(LaunchStatus::kIllegalInstruction,
               "trap executed: " + where(b, w, std::countr_zero(exec), in));
          return;
        }
        advance(w, group);
        break;
      case Op::kBar:
        exec_bar(b, w, in, group, exec);
        break;
      case Op::kBarWarpSync:
        exec_warp_sync(w, in, group, exec);
        break;
      case Op::kBarCluster:
        if (exec)
          exec_barrier_cluster(b, w, in, group, exec);
        else
          advance(w, group);
        if (aborted()) return;
        break;
      case Op::kMapa:
      case Op::kGetctarank:
        if (exec) exec_mapa(b, w, in, exec);
        if (aborted()) return;
        advance(w, group);
        break;
      case Op::kBmsk:
      case Op::kSzext: {
        if (exec) {
          const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
          const uint64_t* bb = operand(w, in.ops[2], exec, kSpScratch1);
          uint64_t* d = dest(w, in.ops[0]);
          const bool wrap = in.sub == 1;
          for (uint32_t m = exec; m; m &= m - 1) {
            int l = std::countr_zero(m);
            uint32_t x = static_cast<uint32_t>(a[l]), y = static_cast<uint32_t>(bb[l]);
            if (in.op == Op::kBmsk) {
              // Mask of width y starting at bit x (both mod 32 or clamped to 32).
              uint32_t pos = wrap ? (x & 31) : std::min(x, 32u);
              uint32_t len = wrap ? (y & 31) : std::min(y, 32u);
              uint64_t lo = pos >= 32 ? 0 : (uint64_t{0xffffffffu} << pos);
              uint64_t hi = pos + len >= 32 ? 0 : (uint64_t{0xffffffffu} << (pos + len));
              d[l] = (lo & ~hi) & 0xffffffffu;
            } else {
              // Sign- or zero-extend the low y bits of x.
              uint32_t len = wrap ? (y & 31) : std::min(y, 32u);
              uint32_t r = 0;
              if (len >= 32)
                r = x;
              else if (len > 0) {
                uint32_t v = x & ((1u << len) - 1);
                if (in.type == Type::kS32 && (v >> (len - 1) & 1)) v |= ~((1u << len) - 1);
                r = v;
              }
              d[l] = r;
            }
          }
        }
        advance(w, group);
        break;
      }
      case Op::kCpAsync:
        if (exec) exec_cp_async(b, w, in, exec);
        advance(w, group);
        break;
      case Op::kBulkTensor:
        if (exec) exec_bulk_tensor(b, w, in, exec);
        if (aborted()) return;
        advance(w, group);
        break;
      case Op::kBulkCopy:
        if (exec) exec_bulk_copy(b, w, in, exec);
        if (aborted()) return;
        advance(w, group);
        break;
      case Op::kMbarrier: {
        const int r = exec_mbarrier(b, w, in, group, exec);
        if (r & kMbarAdvance) advance(w, group);
        // A failed wait lets the block's other warps run (they are the ones that can complete
        // the phase): the warp's slice ends here.
        if (r & kMbarYield) budget = executed;
        break;
      }
      case Op::kElect:
      case Op::kShfl:
      case Op::kVote:
      case Op::kActivemask:
      case Op::kMatch:
      case Op::kRedux:
        if (exec_collective(b, w, in, pc, group, exec)) advance(w, group);
        break;
      case Op::kMma:
      case Op::kLdmatrix:
      case Op::kStmatrix:
      case Op::kMovmatrix:
      case Op::kWmmaLoad:
      case Op::kWmmaStore:
      case Op::kWgmma:
        if (exec_matrix(b, w, in, group, exec)) advance(w, group);
        break;
    }
    if (abort_.load(std::memory_order_relaxed)) break;
  }
  instructions_.fetch_add(executed, std::memory_order_relaxed);
  thread_instructions_.fetch_add(lanes_issued, std::memory_order_relaxed);
}

// ---- blocks and barriers --------------------------------------------------------------------

bool Launch::release_barriers(Block& b) {
  bool released = false;
  for (int id = 0; id < kBarriers; ++id) {
    BarrierState& bar = b.bars[id];
    if (bar.arrived == 0) continue;
    uint32_t expected = bar.expected ? bar.expected : b.live;
    if (bar.arrived < expected) continue;
    uint64_t red_value = 0;
    if (bar.red == BarKind::kRedPopc) red_value = bar.popc;
    if (bar.red == BarKind::kRedAnd) red_value = bar.all;
    if (bar.red == BarKind::kRedOr) red_value = bar.any;
    for (Warp& w : b.warps) {
      uint32_t lanes = 0;
      for (uint32_t m = w.bar_wait; m; m &= m - 1) {
        int l = std::countr_zero(m);
        if (w.bar_id[l] == id) lanes |= 1u << l;
      }
      if (!lanes) continue;
      if (bar.red != BarKind::kSync && bar.red != BarKind::kArrive) {
        uint64_t* d = w.slot(bar.red_slot);
        for (uint32_t m = lanes; m; m &= m - 1) d[std::countr_zero(m)] = red_value;
      }
      w.bar_wait &= ~lanes;
      w.runnable |= lanes;
    }
    bar = BarrierState{};
    released = true;
  }
  return released;
}

std::string Launch::block_position(const Block& b) const {
  char buf[160];
  int n = std::snprintf(buf, sizeof buf, "block (%u,%u,%u)", b.ctaid.x, b.ctaid.y, b.ctaid.z);
  for (const Warp& w : b.warps) {
    const uint32_t live = w.live();
    if (!live) continue;
    uint32_t pc = w.upc;
    if (!w.uniform) {
      pc = UINT32_MAX;
      for (uint32_t m = live; m; m &= m - 1) pc = std::min(pc, w.pc[std::countr_zero(m)]);
    }
    if (pc < m_.code.size() && n > 0 && static_cast<size_t>(n) < sizeof buf)
      std::snprintf(buf + n, sizeof buf - n, ", warp %u at PTX line %u", w.index, m_.code[pc].line);
    break;
  }
  return buf;
}

SliceResult Launch::run_block_slice(Block& b, uint64_t linear, uint64_t budget) {
  if (!b.started) init_block(b, linear);
  if (b.done) return SliceResult::kDone;
  bool ran = false;
  for (Warp& w : b.warps) {
    if (!w.runnable) continue;
    ran = true;
    run_warp(b, w, budget);
    if (aborted()) return SliceResult::kAbort;
    if (b.live == 0) break;
  }
  bool released = release_barriers(b);
  bool parked = false, cluster_parked = false;
  for (const Warp& w : b.warps) {
    parked |= w.mbar_wait != 0;
    cluster_parked |= w.cbar_wait != 0;
  }
  if (parked) released |= release_mbarrier_waits(b, false);
  if (cluster_parked) released |= release_cluster_waits(b);
  if (b.live == 0) {
    b.done = true;
    if (tracking_) merge_accesses(b);
    uint64_t longest = 0;
    for (const Warp& w : b.warps) longest = std::max(longest, warp_cycles(w));
    longest = cycles_to_ns(longest, std::max<uint64_t>(1, limits_.clock_khz));
    uint64_t seen = longest_warp_ns_.load(std::memory_order_relaxed);
    while (seen < longest &&
           !longest_warp_ns_.compare_exchange_weak(seen, longest, std::memory_order_relaxed)) {
    }
    return SliceResult::kDone;
  }
  // In a cluster launch an idle CTA may be waiting for another one: run_cluster_slice decides.
  if (!ran && !released && (b.cluster || !(parked && release_mbarrier_waits(b, true))))
    return SliceResult::kStuck;
  return SliceResult::kProgress;
}

}  // namespace cusnap::emu::ptx
