// Thread block clusters: the CTAs of a cluster, their co-scheduling, barrier.cluster, mapa,
// getctarank and the shared::cluster address window (distributed shared memory).
//
// A cluster launch (LaunchConfig::cluster larger than one CTA) runs each cluster on one worker
// thread: all its CTAs are set up before any runs (so every CTA's shared memory exists when
// another one maps it), then one slice of each runs in rank order, again and again, until all
// have exited. Accesses to another CTA's shared memory are plain host accesses of its buffer:
// no other host thread touches it, and the interleaving does not depend on the worker count.
// Without a cluster launch every CTA is its own cluster of one (Block::cluster is null).
#include <bit>
#include <cstdio>

#include "interp.h"

namespace cusnap::emu::ptx {
namespace {

Dim3 cluster_dims(const LaunchConfig& config) {
  return Dim3{std::max(1u, config.cluster.x), std::max(1u, config.cluster.y),
              std::max(1u, config.cluster.z)};
}

// Consecutive try_wait time-limit wake-ups of a cluster with no mbarrier of the cluster changing
// in between, after which the cluster counts as hung (as interp_async.cpp counts them per block).
constexpr uint32_t kMaxClusterIdleTimeouts = 1024;

uint64_t cluster_live(const Block& b) {
  if (!b.cluster) return b.live;
  uint64_t live = 0;
  for (const Block& o : b.cluster->blocks) live += o.live;
  return live;
}

}  // namespace

uint64_t Launch::grid_clusters() const {
  return config_.grid.count() / cluster_dims(config_).count();
}

void Launch::init_cluster(Cluster& c, uint64_t index) {
  const Dim3 cl = cluster_dims(config_);
  const Dim3& g = config_.grid;
  const uint32_t n = static_cast<uint32_t>(cl.count());
  if (c.blocks.size() != n) c.blocks.resize(n);
  const uint64_t ncx = g.x / cl.x, ncy = g.y / cl.y;
  const uint64_t cx = index % ncx, cy = index / ncx % ncy, cz = index / (ncx * ncy);
  for (uint32_t r = 0; r < n; ++r) {
    const uint64_t x = cx * cl.x + r % cl.x;
    const uint64_t y = cy * cl.y + r / cl.x % cl.y;
    const uint64_t z = cz * cl.z + r / (uint64_t{cl.x} * cl.y);
    Block& b = c.blocks[r];
    init_block(b, x + g.x * (y + uint64_t{g.y} * z));
    b.cluster = &c;
    b.rank = r;
  }
  c.index = index;
  c.started = true;
  c.done = false;
  c.barrier = ClusterBarrier{};
  c.mbar_changes_at_timeout = 0;
  c.mbar_idle_timeouts = 0;
}

SliceResult Launch::run_cluster_slice(Cluster& c, uint64_t index, uint64_t budget) {
  if (!c.started) init_cluster(c, index);
  if (c.done) return SliceResult::kDone;
  bool progress = false;
  for (Block& b : c.blocks) {
    if (b.done) continue;
    const SliceResult r = run_block_slice(b, b.linear, budget);
    if (r == SliceResult::kAbort) return r;
    progress |= r != SliceResult::kStuck;
  }
  bool done = true;
  for (const Block& b : c.blocks) done = done && b.done;
  if (done) {
    c.done = true;
    return SliceResult::kDone;
  }
  if (progress) return SliceResult::kProgress;
  // Every thread of the cluster waits. Threads parked in try_wait would see their time limit
  // pass on a GPU: wake them that way; once kMaxClusterIdleTimeouts such wake-ups in a row
  // changed no mbarrier of the cluster, nothing can complete a phase any more.
  uint64_t changes = 0;
  bool parked = false;
  for (const Block& b : c.blocks) {
    changes += b.mbar_changes;
    for (const Warp& w : b.warps) parked |= w.mbar_wait != 0;
  }
  if (!parked) return SliceResult::kStuck;
  if (changes != c.mbar_changes_at_timeout) {
    c.mbar_changes_at_timeout = changes;
    c.mbar_idle_timeouts = 0;
  }
  if (++c.mbar_idle_timeouts > kMaxClusterIdleTimeouts) return SliceResult::kStuck;
  bool woke = false;
  for (Block& b : c.blocks)
    if (!b.done) woke |= release_mbarrier_waits(b, true, false);
  return woke ? SliceResult::kProgress : SliceResult::kStuck;
}

// ---- barrier.cluster ------------------------------------------------------------------------

void Launch::complete_cluster_barrier(Block& b) {
  ClusterBarrier& cb = cluster_barrier(b);
  if (cb.arrived == 0 || cb.arrived < cluster_live(b)) return;
  ++cb.phase;
  cb.arrived = 0;
}

bool Launch::release_cluster_waits(Block& b) {
  const uint32_t phase = cluster_barrier(b).phase;
  bool released = false;
  for (Warp& w : b.warps) {
    uint32_t lanes = 0;
    for (uint32_t m = w.cbar_wait; m; m &= m - 1) {
      const int l = std::countr_zero(m);
      if (w.cbar_phase[l] != phase) lanes |= 1u << l;
    }
    if (!lanes) continue;
    w.cbar_wait &= ~lanes;
    w.runnable |= lanes;
    released = true;
  }
  return released;
}

// Exiting threads that arrived and have not waited leave the phase's count; the others are no
// longer waited for, which may end the phase.
void Launch::exit_cluster_barrier(Block& b, Warp& w, uint32_t lanes) {
  ClusterBarrier& cb = cluster_barrier(b);
  for (uint32_t m = w.cbar_arrived & lanes; m; m &= m - 1) {
    const int l = std::countr_zero(m);
    if (w.cbar_phase[l] == cb.phase) --cb.arrived;
  }
  w.cbar_arrived &= ~lanes;
  complete_cluster_barrier(b);
}

// barrier.cluster.arrive (sub 0) marks each executing thread's arrival in the current phase;
// barrier.cluster.wait (sub 1) waits until the phase it arrived in has ended, which is when every
// non-exited thread of the cluster arrived. An arrive must be followed by a wait before the
// thread arrives again (the ISA leaves anything else undefined: the launch fails).
void Launch::exec_barrier_cluster(Block& b, Warp& w, const Instr& in, uint32_t group,
                                  uint32_t exec) {
  ClusterBarrier& cb = cluster_barrier(b);
  if (in.sub == 0) {
    if (const uint32_t twice = exec & w.cbar_arrived) {
      fail(LaunchStatus::kIllegalInstruction,
           "barrier.cluster.arrive by a thread that arrived and has not executed "
           "barrier.cluster.wait: " +
               where(b, w, std::countr_zero(twice), in));
      return;
    }
    for (uint32_t m = exec; m; m &= m - 1) w.cbar_phase[std::countr_zero(m)] = cb.phase;
    w.cbar_arrived |= exec;
    cb.arrived += lane_count(exec);
    complete_cluster_barrier(b);
    advance(w, group);
    return;
  }
  if (const uint32_t early = exec & ~w.cbar_arrived) {
    fail(LaunchStatus::kIllegalInstruction,
         "barrier.cluster.wait by a thread that has not executed barrier.cluster.arrive: " +
             where(b, w, std::countr_zero(early), in));
    return;
  }
  uint32_t park = 0;
  for (uint32_t m = exec; m; m &= m - 1) {
    const int l = std::countr_zero(m);
    if (w.cbar_phase[l] == cb.phase) park |= 1u << l;
  }
  w.cbar_arrived &= ~exec;
  if (park != 0 && park != group) diverge(w);
  advance(w, group);
  w.cbar_wait |= park;
  w.runnable &= ~park;
}

// ---- the shared::cluster window -------------------------------------------------------------

Block* Launch::generic_shared_owner(Block& b, uint64_t addr) const {
  auto inside = [addr](const Block& o) {
    const uint64_t s = reinterpret_cast<uint64_t>(o.shared);
    return addr >= s && addr - s < o.shared_size;
  };
  if (inside(b)) return &b;
  if (!b.cluster) return nullptr;
  for (Block& o : b.cluster->blocks)
    if (&o != &b && inside(o)) return &o;
  return nullptr;
}

Block* Launch::cluster_shared(Block& b, Warp& w, int lane, uint64_t addr, uint64_t size,
                              const Instr& in, uint64_t* offset) {
  const uint64_t ctas = b.cluster ? b.cluster->blocks.size() : 1;
  Block* owner = &b;
  uint64_t off = addr;
  char buf[200];
  if (addr > kClusterWindowMask) {
    const uint64_t rank = (addr >> kClusterWindowShift) - 1;
    off = addr & kClusterWindowMask;
    if (rank >= ctas) {
      std::snprintf(buf, sizeof buf,
                    "illegal address: the shared::cluster address 0x%llx names CTA rank %llu of a "
                    "cluster of %llu CTAs, ",
                    static_cast<unsigned long long>(addr), static_cast<unsigned long long>(rank),
                    static_cast<unsigned long long>(ctas));
      fail(LaunchStatus::kIllegalAddress, buf + where(b, w, lane, in));
      return nullptr;
    }
    if (b.cluster) owner = &b.cluster->blocks[rank];
  }
  // Forming or converting an address (size 0) needs no live CTA; an access does.
  if (size != 0 && owner->live == 0) {
    std::snprintf(buf, sizeof buf,
                  "illegal address: the shared::cluster address 0x%llx is in the shared memory of "
                  "CTA rank %u of the cluster, which has exited, ",
                  static_cast<unsigned long long>(addr), owner->rank);
    fail(LaunchStatus::kIllegalAddress, buf + where(b, w, lane, in));
    return nullptr;
  }
  if (off > owner->shared_size || size > owner->shared_size - off) {
    std::snprintf(buf, sizeof buf,
                  "illegal address: %llu bytes at shared::cluster address 0x%llx are outside the "
                  "%llu bytes of shared memory of CTA rank %u, ",
                  static_cast<unsigned long long>(size), static_cast<unsigned long long>(addr),
                  static_cast<unsigned long long>(owner->shared_size), owner->rank);
    fail(LaunchStatus::kIllegalAddress, buf + where(b, w, lane, in));
    return nullptr;
  }
  *offset = off;
  return owner;
}

// mapa: the address of the same shared-memory byte in CTA `rank` (generic to generic, or a
// shared::cta / shared::cluster address to a shared::cluster address); getctarank: the rank of
// the CTA whose shared memory holds the address.
void Launch::exec_mapa(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
  const uint64_t* r = in.op == Op::kMapa ? operand(w, in.ops[2], exec, kSpScratch1) : nullptr;
  uint64_t* d = dest(w, in.ops[0]);
  const uint64_t ctas = b.cluster ? b.cluster->blocks.size() : 1;
  const char* name = in.op == Op::kMapa ? "mapa" : "getctarank";
  const uint64_t wm = type_bits(in.type) >= 64 ? ~uint64_t{0} : 0xffffffffu;
  uint64_t result[kWarpSize];
  for (uint32_t m = exec; m; m &= m - 1) {
    const int l = std::countr_zero(m);
    const uint64_t addr = a[l] & wm;
    char buf[200];
    Block* owner = nullptr;
    uint64_t off = 0;
    if (in.cluster_space) {
      owner = cluster_shared(b, w, l, addr, 0, in, &off);
      if (!owner) return;
    } else {
      owner = generic_shared_owner(b, addr);
      // One past the end of a CTA's shared memory maps too (a loop's end pointer).
      if (!owner && addr == reinterpret_cast<uint64_t>(b.shared) + b.shared_size) owner = &b;
      if (!owner && b.cluster) {
        for (Block& o : b.cluster->blocks)
          if (addr == reinterpret_cast<uint64_t>(o.shared) + o.shared_size) owner = &o;
      }
      if (!owner) {
        std::snprintf(buf, sizeof buf,
                      "%s: the generic address 0x%llx is not in the shared memory of a CTA of "
                      "the cluster, ",
                      name, static_cast<unsigned long long>(addr));
        fail(LaunchStatus::kIllegalAddress, buf + where(b, w, l, in));
        return;
      }
      off = addr - reinterpret_cast<uint64_t>(owner->shared);
    }
    if (in.op == Op::kGetctarank) {
      result[l] = owner->rank;
      continue;
    }
    const uint64_t rank = r[l] & 0xffffffffu;
    if (rank >= ctas) {
      std::snprintf(buf, sizeof buf, "mapa: CTA rank %llu is not in the cluster of %llu CTAs, ",
                    static_cast<unsigned long long>(rank), static_cast<unsigned long long>(ctas));
      fail(LaunchStatus::kIllegalInstruction, buf + where(b, w, l, in));
      return;
    }
    const Block& target = b.cluster ? b.cluster->blocks[rank] : b;
    result[l] = in.cluster_space ? (rank + 1) << kClusterWindowShift | off
                                 : reinterpret_cast<uint64_t>(target.shared) + off;
  }
  for_lanes(exec, [&](int l) { d[l] = result[l] & wm; });
}

}  // namespace cusnap::emu::ptx
