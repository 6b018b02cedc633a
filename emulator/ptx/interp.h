// The SIMT interpreter: executes a lowered Module's kernel for one launch.
//
// Scheduling model. A block is a set of warps of 32 lanes. Every lane has its own program
// counter; a warp step executes the instruction at the smallest PC among its runnable lanes for
// all lanes at that PC together. nvcc lays out structured control flow so that reconvergence
// points follow the divergent paths, so "minimum PC first" reconverges lanes where a GPU would,
// and because lanes are truly independent, code written for independent thread scheduling
// (__syncwarp between divergent paths) also works. A warp whose runnable lanes all share one PC
// is "uniform" and skips the per-lane bookkeeping (the common, fast case).
//
// Blocking: lanes wait at block barriers (bar.sync/barrier.sync, per thread, released when the
// expected number of threads arrived), at bar.warp.sync (released when every lane named by all
// waiters' masks waits or has exited) and at warp collectives (shfl/vote/match/redux execute once
// every named lane is at the same instruction). A block is a resumable state machine, so the
// cooperative-launch scheduler can round-robin many blocks per worker thread.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir.h"

namespace cusnap::emu::ptx {

// Lanes in a mask. std::popcount compiles to a libgcc call for the baseline x86-64 target; this
// is the same count in a few inline instructions (the interpreter counts lanes per instruction).
inline uint32_t lane_count(uint32_t m) {
  m = m - ((m >> 1) & 0x55555555u);
  m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
  return (((m + (m >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
}

struct CallFrame {
  uint32_t return_pc = 0;
  uint32_t call_pc = 0;
  uint32_t callee = 0;
  uint64_t frame_base = 0;
  uint64_t stack_ptr = 0;       // the caller's alloca stack pointer, restored at ret
  std::vector<uint64_t> saved;  // callee registers of this lane (recursive callees only)
};

struct Warp {
  uint32_t index = 0;
  uint32_t valid = 0;  // lanes that exist (partial last warp)
  uint32_t exited = 0;
  uint32_t runnable = 0;
  uint32_t bar_wait = 0;
  uint32_t wsync_wait = 0;
  uint32_t coll_wait = 0;
  // mbarrier.try_wait: lanes parked until the phase they wait for completes (interp_async.cpp),
  // at the barrier's shared-memory offset, waiting while its phase parity equals mbar_parity;
  // lanes in mbar_timed_out were woken by the try_wait time limit and read false once.
  uint32_t mbar_wait = 0;
  uint32_t mbar_timed_out = 0;
  // barrier.cluster (interp_cluster.cpp): lanes that arrived and have not waited yet, with the
  // cluster barrier phase they arrived in; lanes parked at barrier.cluster.wait until it ends.
  uint32_t cbar_arrived = 0;
  uint32_t cbar_wait = 0;
  bool uniform = true;  // every live lane is at upc, none waits at a collective
  uint32_t upc = 0;
  uint32_t pc[kWarpSize] = {};
  uint8_t bar_id[kWarpSize] = {};
  uint32_t wsync_mask[kWarpSize] = {};
  uint64_t mbar_offset[kWarpSize] = {};
  uint8_t mbar_parity[kWarpSize] = {};
  uint32_t cbar_phase[kWarpSize] = {};
  uint64_t frame_base[kWarpSize] = {};
  // alloca's stack pointer (a local address): the dynamic stack grows down from the end of the
  // thread's local window towards the call frames, which grow up (interp_call.cpp).
  uint64_t stack_ptr[kWarpSize] = {};
  std::vector<CallFrame> stack[kWarpSize];
  std::vector<uint64_t> regs;
  CarryFlags carry;
  uint64_t icount = 0;
  uint64_t slept_cycles = 0;     // nanosleep time: part of the warp's emulated clock
  uint32_t divergent_steps = 0;  // fairness: see run_warp

  uint64_t* slot(uint32_t s) { return regs.data() + static_cast<size_t>(s) * kWarpSize; }
  uint32_t live() const { return valid & ~exited; }
};

struct BarrierState {
  uint32_t arrived = 0;
  uint32_t expected = 0;  // 0: every live thread of the block
  uint32_t popc = 0;
  bool all = true;
  bool any = false;
  BarKind red = BarKind::kSync;
  uint32_t red_slot = 0;
  uint32_t red_type_bits = 32;
};

inline constexpr int kBarriers = 16;

// barrier.cluster of one cluster: the current phase and how many live threads arrived in it.
struct ClusterBarrier {
  uint32_t phase = 0;
  uint64_t arrived = 0;
};

struct Cluster;

struct Block {
  Dim3 ctaid;
  uint64_t linear = 0;
  uint32_t nthreads = 0;
  uint32_t live = 0;
  std::vector<uint8_t> shared_store;
  uint8_t* shared = nullptr;
  uint64_t shared_size = 0;
  std::vector<uint8_t> local_store;
  uint8_t* local = nullptr;
  uint64_t local_window = 0;
  std::vector<Warp> warps;
  BarrierState bars[kBarriers];
  // mbarrier bookkeeping for the try_wait time limit (interp_async.cpp): changes made to any
  // mbarrier of the block, and consecutive time-limit wake-ups that saw no change.
  uint64_t mbar_changes = 0;
  uint64_t mbar_changes_at_timeout = 0;
  uint32_t mbar_idle_timeouts = 0;
  bool started = false;
  bool done = false;
  // The cluster of a cluster launch (LaunchConfig::cluster larger than one CTA) and this CTA's
  // %cluster_ctarank in it; null otherwise (every CTA is its own cluster of one).
  Cluster* cluster = nullptr;
  uint32_t rank = 0;
  ClusterBarrier solo_barrier;  // barrier.cluster when the CTA is its own cluster
  // Access tracking: chunk indices (address >> shift) this block read / wrote, merged into the
  // launch's sets when it finishes (so workers never share a set), and the last chunk of each,
  // which spares the hash lookup for the common run of accesses to one chunk.
  std::unordered_set<uint64_t> read_chunks, written_chunks;
  uint64_t last_read = ~uint64_t{0}, last_written = ~uint64_t{0};
};

enum class SliceResult : uint8_t { kProgress, kDone, kStuck, kAbort };

// The CTAs of one cluster of a cluster launch (interp_cluster.cpp). They are co-resident: one
// worker thread runs all of them, a slice of each in rank order, so distributed shared memory
// and the cluster barrier need no host synchronisation and the interleaving is the same for
// every worker count.
struct Cluster {
  std::vector<Block> blocks;  // by rank (%cluster_ctarank); never resized while running
  uint64_t index = 0;         // linear cluster index (x fastest, as %clusterid)
  bool started = false;
  bool done = false;
  ClusterBarrier barrier;
  // The try_wait time limit, at cluster scope (see release_mbarrier_waits).
  uint64_t mbar_changes_at_timeout = 0;
  uint32_t mbar_idle_timeouts = 0;
};

// One launch: shared by the worker threads that run its blocks.
class Launch {
 public:
  Launch(const Module& module, uint32_t kernel_index, const LaunchConfig& config,
         MemoryHost& memory, const Limits& limits, const std::vector<uint64_t>& symbol_addresses);

  // Prepares (first call) and runs a block for up to `budget` warp-instructions per warp.
  SliceResult run_block_slice(Block& block, uint64_t linear_block, uint64_t budget);

  // Cluster launches: prepares (first call) every CTA of cluster `index` and runs a slice of
  // each; kStuck when no thread of the cluster can make progress any more.
  SliceResult run_cluster_slice(Cluster& c, uint64_t index, uint64_t budget);
  uint64_t grid_clusters() const;

  bool aborted() const { return abort_.load(std::memory_order_relaxed); }
  void fail(LaunchStatus status, std::string message);
  LaunchResult result();
  std::string take_output();  // in block-index order, at most Limits::printf_fifo_bytes of printf
  uint64_t grid_blocks() const { return config_.grid.count(); }
  // Where a started block is: "block (x,y,z), warp W at PTX line L" (the first warp with live
  // lanes, at its lowest PC), for the watchdog's message.
  std::string block_position(const Block& b) const;

 private:
  void init_block(Block& b, uint64_t linear);
  void run_warp(Block& b, Warp& w, uint64_t budget);
  bool release_barriers(Block& b);

  // Clusters (interp_cluster.cpp).
  void init_cluster(Cluster& c, uint64_t index);
  void exec_barrier_cluster(Block& b, Warp& w, const Instr& in, uint32_t group, uint32_t exec);
  void exec_mapa(Block& b, Warp& w, const Instr& in, uint32_t exec);
  // Ends the cluster barrier's phase once every live thread of the cluster arrived.
  static ClusterBarrier& cluster_barrier(Block& b) {
    return b.cluster ? b.cluster->barrier : b.solo_barrier;
  }
  static void complete_cluster_barrier(Block& b);
  // Makes the lanes of `b` parked at barrier.cluster.wait runnable once their phase ended.
  static bool release_cluster_waits(Block& b);
  void exit_cluster_barrier(Block& b, Warp& w, uint32_t lanes);
  // The CTA of the executing CTA's cluster that owns the shared::cluster address `addr` (see
  // kClusterWindowShift) and the offset in its shared memory; null (after fail()) when `addr`
  // names no CTA of the cluster, bytes outside its shared memory or (size > 0) an exited CTA.
  Block* cluster_shared(Block& b, Warp& w, int lane, uint64_t addr, uint64_t size, const Instr& in,
                        uint64_t* offset);
  // The CTA of the cluster whose shared memory holds the generic address `addr` (the executing
  // one included), or null.
  Block* generic_shared_owner(Block& b, uint64_t addr) const;

  // Memory (interp_memory.cpp).
  uint64_t symbol_value(const Warp& w, int lane, uint32_t symbol) const;
  uint8_t* translate(Block& b, Warp& w, int lane, Space space, uint64_t addr, uint32_t size,
                     bool write, const Instr& in);
  Space effective_space(const Instr& in, const Operand& a) const;
  // Host pointers for every lane in `exec`, checking the whole warp's address range at once
  // when it falls in one window or allocation, lane by lane otherwise. False after fail().
  bool resolve_lanes(Block& b, Warp& w, const Instr& in, const Operand& a, uint32_t exec,
                     uint32_t size, bool write, uint8_t** ptrs, Space space = Space::kNone);
  void exec_cp_async(Block& b, Warp& w, const Instr& in, uint32_t exec);
  void exec_ld(Block& b, Warp& w, const Instr& in, uint32_t exec);
  void exec_st(Block& b, Warp& w, const Instr& in, uint32_t exec);
  void exec_atom(Block& b, Warp& w, const Instr& in, uint32_t exec);
  void exec_cvta(Block& b, Warp& w, const Instr& in, uint32_t exec);
  void exec_stack(Block& b, Warp& w, const Instr& in, uint32_t exec);  // alloca, stacksave/restore
  void exec_cvt_pack(Warp& w, const Instr& in, uint32_t exec);
  void exec_compare(Warp& w, const Instr& in, uint32_t exec);  // setp, set
  // Textures and surfaces (interp_texture.cpp).
  void exec_texture(Block& b, Warp& w, const Instr& in, uint32_t exec);      // tex, tld4
  void exec_surface(Block& b, Warp& w, const Instr& in, uint32_t exec);      // suld, sust
  void exec_image_query(Block& b, Warp& w, const Instr& in, uint32_t exec);  // txq, suq, istypep
  bool read_c_string(Block& b, Warp& w, int lane, uint64_t addr, std::string& out, const Instr& in);
  // Access tracking (LaunchConfig::track_chunk_bytes; callers test tracking_ first, so a launch
  // without it pays one branch per memory instruction): records the chunks of driver memory
  // that `size` bytes at each lane's pointer (or at `p`) cover; shared, local, parameter and
  // grid-workspace pointers are skipped.
  // Out of line and cold: the hot ld/st paths keep their size when tracking is off.
  [[gnu::cold, gnu::noinline]] void track_lanes(Block& b, uint8_t* const* ptrs, uint32_t exec,
                                                uint64_t size, bool read, bool write);
  [[gnu::cold, gnu::noinline]] void track(Block& b, const uint8_t* p, uint64_t size, bool read,
                                          bool write);
  void merge_accesses(Block& b);

  // Calls and built-ins (interp_call.cpp).
  void exec_call(Block& b, Warp& w, const Instr& in, uint32_t pc, uint32_t group, uint32_t exec);
  void exec_ret(Block& b, Warp& w, uint32_t group, uint32_t exec);
  void builtin_vprintf(Block& b, Warp& w, int lane, const Instr& in, uint64_t fmt, uint64_t args);
  void builtin_assert(Block& b, Warp& w, int lane, const Instr& in, const uint64_t* argv);

  // Collectives (interp_collective.cpp). Return false when lanes must wait.
  bool exec_collective(Block& b, Warp& w, const Instr& in, uint32_t pc, uint32_t group,
                       uint32_t exec);
  void exec_bar(Block& b, Warp& w, const Instr& in, uint32_t group, uint32_t exec);
  void exec_warp_sync(Warp& w, const Instr& in, uint32_t group, uint32_t exec);
  void try_release_warp_sync(Warp& w);

  // mbarrier and bulk copies (interp_async.cpp). exec_mbarrier returns kMbarAdvance when the
  // lanes of `group` move on, kMbarYield when the warp should let the others run.
  static constexpr int kMbarAdvance = 1, kMbarYield = 2;
  int exec_mbarrier(Block& b, Warp& w, const Instr& in, uint32_t group, uint32_t exec);
  // Wakes parked try_wait lanes whose phase completed; with `time_limit`, every parked lane
  // (the block has nothing else to run). False when none woke.
  // `per_block_limit`: the time limit counts the block's idle wake-ups (cluster launches count
  // them per cluster instead, in run_cluster_slice).
  bool release_mbarrier_waits(Block& b, bool time_limit, bool per_block_limit = true);
  void exec_bulk_copy(Block& b, Warp& w, const Instr& in, uint32_t exec);
  void exec_bulk_tensor(Block& b, Warp& w, const Instr& in, uint32_t exec);
  // complete_tx of `bytes` on the mbarrier at `a` (shared) for lane l; false after fail().
  bool bulk_complete_tx(Block& b, Warp& w, const Instr& in, int l, const Operand& a,
                        uint64_t bytes);
  // The mbarrier word of each lane in `exec` (8 bytes of this block's shared memory; `a` is a
  // shared or generic address as `sp` says), with its shared-space offset in offsets[l]. False
  // after fail().
  // `owners[l]` (when given): the CTA whose shared memory holds the word, another CTA of the
  // cluster for a shared::cluster or generic address naming one (else only this CTA's).
  bool mbarrier_words(Block& b, Warp& w, const Instr& in, const Operand& a, uint32_t exec, Space sp,
                      uint8_t** words, uint64_t* offsets, Block** owners = nullptr);

  // Warp-wide matrix instructions (interp_matrix.cpp). Return false when lanes must wait.
  bool exec_matrix(Block& b, Warp& w, const Instr& in, uint32_t group, uint32_t exec);
  void exec_mma(Warp& w, const Instr& in, uint32_t exec);
  void exec_wmma_memory(Block& b, Warp& w, const Instr& in, uint32_t exec);
  void exec_wgmma(Block& b, Warp& w, const Instr& in);
  // The 32-lane arrays of the elements of a vector operand.
  void vector_operand(Warp& w, const Operand& v, uint32_t exec, const uint64_t** out);

  // PC bookkeeping (interp_core.cpp).
  static void diverge(Warp& w);
  static void advance(Warp& w, uint32_t group);
  static void jump(Warp& w, uint32_t group, uint32_t taken, uint32_t target);
  // brx.idx: each lane of `exec` to its index's target (an index past the list fails the launch).
  void exec_brx(Block& b, Warp& w, const Instr& in, uint32_t group, uint32_t exec);
  void exit_lanes(Block& b, Warp& w, uint32_t lanes);

  std::string where(const Block& b, const Warp& w, int lane, const Instr& in) const;
  // The 32-lane value array of a source operand. Registers and immediates (the common cases) are
  // returned in place; negated predicates and symbol addresses are computed into `scratch`.
  const uint64_t* operand(Warp& w, const Operand& o, uint32_t exec, uint32_t scratch) {
    if (!o.negate) {
      if (o.kind == Operand::kReg) return w.slot(o.index);
      if (o.kind == Operand::kConst)
        return m_.const_pool.data() + static_cast<size_t>(o.index) * kWarpSize;
    }
    return computed_operand(w, o, exec, scratch);
  }
  const uint64_t* computed_operand(Warp& w, const Operand& o, uint32_t exec, uint32_t scratch);
  uint64_t* dest(Warp& w, const Operand& o) {
    return w.slot(o.kind == Operand::kReg ? o.index
                                          : static_cast<uint32_t>(kSpScratch3));  // else a sink
  }

  const Module& m_;
  const Function& fn_;
  const KernelInfo& ki_;
  const KernelDesc& kd_;
  LaunchConfig config_;
  MemoryHost& memory_;
  Limits limits_;
  const std::vector<uint64_t>& symbol_addresses_;  // by symbol id (global/const variables)
  std::vector<uint8_t> params_;
  alignas(16) uint64_t grid_workspace_[8] = {};
  uint64_t shared_bytes_ = 0;
  uint64_t local_window_ = 0;
  std::atomic<bool> abort_{false};
  std::mutex mutex_;
  LaunchResult result_;
  // Device printf/assert output, one chunk per call, tagged with its block. A block runs on one
  // worker, so its chunks are in program order; take_output() orders blocks by index, which makes
  // the output independent of how blocks were spread over worker threads.
  struct OutputChunk {
    uint64_t block = 0;
    std::string text;
    bool printf = true;  // bounded by the printf FIFO (assert messages are not)
  };
  void add_output(const Block& b, std::string text, bool always);
  std::vector<OutputChunk> output_;
  size_t output_bytes_ = 0;
  std::atomic<uint64_t> instructions_{0};         // warp-instructions
  std::atomic<uint64_t> thread_instructions_{0};  // lanes that issued them (LaunchResult)
  uint64_t start_ns_ = 0;
  uint64_t grid_id_ = 0;  // %gridid
  // The longest emulated time of a finished warp (warp_time_ns), a lower bound of the launch's.
  std::atomic<uint64_t> longest_warp_ns_{0};
  bool tracking_ = false;
  int track_shift_ = 0;                                        // log2(track_chunk_bytes)
  std::unordered_set<uint64_t> read_chunks_, written_chunks_;  // chunk indices, under mutex_
};

}  // namespace cusnap::emu::ptx
