// compile() and the Program implementation: variable binding, initializer relocations, launch
// validation and the block scheduler (a pool of worker threads; cooperative launches keep all
// blocks resident and round-robin them so that grid-wide barriers make progress; kernels whose
// results depend on block order run on one worker in block-index order; a watchdog stops
// launches that run longer than Limits::timeout_ms).
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>

#include "interp.h"
#include "schedule.h"

namespace cusnap::emu::ptx {
namespace {

class ProgramImpl final : public Program {
 public:
  explicit ProgramImpl(Module m) : m_(std::move(m)), addresses_(m_.symbols.size(), 0) {}

  const std::vector<KernelDesc>& kernels() const override { return m_.kernels; }
  const std::vector<VariableDesc>& variables() const override { return m_.variables; }
  int find_kernel(std::string_view name) const override {
    for (size_t i = 0; i < m_.kernels.size(); ++i)
      if (m_.kernels[i].name == name) return static_cast<int>(i);
    return -1;
  }
  int find_variable(std::string_view name) const override {
    for (size_t i = 0; i < m_.variables.size(); ++i)
      if (m_.variables[i].name == name) return static_cast<int>(i);
    return -1;
  }
  void bind_variable(int index, uint64_t device_address) override {
    if (index < 0 || static_cast<size_t>(index) >= m_.variables.size()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    addresses_[m_.variable_symbol[index]] = device_address;
    relocated_ = false;
  }
  uint32_t ptx_version() const override { return m_.ptx_version; }
  uint32_t target_sm() const override { return m_.target_sm; }

  LaunchResult launch(int kernel_index, const LaunchConfig& config, MemoryHost& memory,
                      const Limits& limits) override {
    try {
      return launch_impl(kernel_index, config, memory, limits);
    } catch (const std::bad_alloc&) {
      return invalid(LaunchStatus::kOutOfResources,
                     "host memory exhausted while emulating the launch");
    } catch (const std::system_error& e) {
      return invalid(LaunchStatus::kOutOfResources,
                     std::string("cannot start worker threads: ") + e.what());
    } catch (const std::exception& e) {
      return invalid(LaunchStatus::kOutOfResources, std::string("emulation failed: ") + e.what());
    } catch (...) {
      return invalid(LaunchStatus::kOutOfResources, "emulation failed");
    }
  }

 private:
  static LaunchResult invalid(LaunchStatus s, std::string msg) {
    LaunchResult r;
    r.status = s;
    r.message = std::move(msg);
    return r;
  }

  // Writes addresses into variables initialised with `generic(sym)` once all are bound.
  std::string apply_relocations(MemoryHost& memory) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (relocated_) return {};
    for (const Module::Relocation& r : m_.relocations) {
      uint64_t var = addresses_[m_.variable_symbol[r.variable]];
      uint64_t target = addresses_[r.target_symbol];
      const Symbol& ts = m_.symbols[r.target_symbol];
      if (ts.space == Space::kFunction)
        target = kFunctionAddressTag | static_cast<uint64_t>(ts.function);
      if (var == 0 || (target == 0 && ts.space != Space::kFunction))
        return "variable " + m_.variables[r.variable].name + " refers to " + ts.name +
               " which is not bound";
      if (!memory.accessible(var + r.offset, r.size, true))
        return "cannot write the initializer of " + m_.variables[r.variable].name;
      uint64_t v = target + static_cast<uint64_t>(r.addend);
      std::memcpy(reinterpret_cast<void*>(var + r.offset), &v, std::min<uint32_t>(r.size, 8));
    }
    relocated_ = true;
    return {};
  }

  LaunchResult launch_impl(int kernel_index, const LaunchConfig& config, MemoryHost& memory,
                           const Limits& limits) {
    if (kernel_index < 0 || static_cast<size_t>(kernel_index) >= m_.kernels.size())
      return invalid(LaunchStatus::kInvalidValue, "no such kernel");
    const KernelDesc& kd = m_.kernels[kernel_index];
    const Dim3& g = config.grid;
    const Dim3& bd = config.block;
    if (g.x == 0 || g.y == 0 || g.z == 0 || bd.x == 0 || bd.y == 0 || bd.z == 0)
      return invalid(LaunchStatus::kInvalidValue, "grid and block dimensions must be non-zero");
    if (g.x > limits.max_grid_x || g.y > limits.max_grid_y || g.z > limits.max_grid_z)
      return invalid(LaunchStatus::kInvalidValue, "grid dimensions exceed the device limits");
    if (bd.x > limits.max_block_x || bd.y > limits.max_block_y || bd.z > limits.max_block_z)
      return invalid(LaunchStatus::kInvalidValue, "block dimensions exceed the device limits");
    if (bd.count() > limits.max_threads_per_block ||
        (kd.max_threads_per_block && bd.count() > kd.max_threads_per_block))
      return invalid(LaunchStatus::kOutOfResources, "too many threads per block for " + kd.name);
    if (kd.reqntid.x && (kd.reqntid.x != bd.x || kd.reqntid.y != bd.y || kd.reqntid.z != bd.z))
      return invalid(LaunchStatus::kInvalidValue,
                     "block shape differs from .reqntid of " + kd.name);
    if (uint64_t{kd.static_shared_bytes} + config.dynamic_shared_bytes >
        limits.max_shared_per_block_optin)
      return invalid(LaunchStatus::kOutOfResources, "too much shared memory for " + kd.name);
    if (config.params_size < kd.param_bytes || (kd.param_bytes && !config.params))
      return invalid(LaunchStatus::kInvalidValue,
                     "parameter buffer is smaller than the kernel's parameters");
    if (config.track_chunk_bytes != 0 && !std::has_single_bit(config.track_chunk_bytes))
      return invalid(LaunchStatus::kInvalidValue, "the access tracking chunk size " +
                                                      std::to_string(config.track_chunk_bytes) +
                                                      " is not a power of two");
    for (size_t i = 0; i < m_.variables.size(); ++i) {
      if (m_.variables[i].is_extern || m_.variables[i].size == 0) continue;
      if (addresses_[m_.variable_symbol[i]] == 0)
        return invalid(LaunchStatus::kInvalidValue,
                       "module variable " + m_.variables[i].name + " is not bound");
    }
    if (std::string err = apply_relocations(memory); !err.empty())
      return invalid(LaunchStatus::kInvalidValue, err);

    // `.reqnctapercluster` fixes the cluster shape: a launch without one runs with it, a launch
    // with another one fails (as on a GPU); `.maxclusterrank` bounds the cluster size.
    LaunchConfig run_config = config;
    Dim3& cl = run_config.cluster;
    const Dim3& req = kd.reqnctapercluster;
    if (req.x) {
      if (cl.count() <= 1)
        cl = req;
      else if (cl.x != req.x || cl.y != req.y || cl.z != req.z)
        return invalid(LaunchStatus::kInvalidValue,
                       "cluster shape differs from .reqnctapercluster of " + kd.name);
    }
    if (kd.max_cluster_rank && cl.count() > kd.max_cluster_rank)
      return invalid(LaunchStatus::kInvalidValue,
                     "cluster larger than .maxclusterrank of " + kd.name);
    if (cl.x == 0 || cl.y == 0 || cl.z == 0)
      return invalid(LaunchStatus::kInvalidValue, "cluster dimensions must be non-zero");
    if (g.x % cl.x || g.y % cl.y || g.z % cl.z)
      return invalid(LaunchStatus::kInvalidValue,
                     "grid dimensions must be multiples of the cluster dimensions");
    if (cl.count() > kMaxClusterSize)
      return invalid(LaunchStatus::kInvalidValue,
                     "a cluster has at most " + std::to_string(kMaxClusterSize) + " CTAs");
    // A cluster's CTAs share one worker (interp_cluster.cpp); cluster launches schedule clusters.
    const bool clustered = cl.count() > 1;
    const uint64_t nblocks = g.count();
    if (config.cooperative) {
      uint64_t per_sm = std::clamp<uint64_t>(2048 / bd.count(), 1, 32);
      if (nblocks > per_sm * limits.sm_count)
        return invalid(LaunchStatus::kCooperativeTooLarge,
                       "cooperative grid too large for co-residency");
    }

    Launch launch(m_, static_cast<uint32_t>(kernel_index), run_config, memory, limits, addresses_);
    // hardware_concurrency() reads sysfs on every call: ask once per process.
    static const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    const uint64_t hw = limits.worker_threads ? limits.worker_threads : cpus;
    // Determinism: a kernel whose blocks can observe each other's order runs them one at a time
    // in block-index order (schedule.cpp), so its results do not depend on the worker count. A
    // cooperative one is round-robined in fixed slices on that one worker, which keeps grid-wide
    // barriers working and is just as deterministic.
    const bool serial = kd.serial_blocks && limits.serialize_order_dependent;
    const uint64_t units = clustered ? launch.grid_clusters() : nblocks;
    const uint64_t workers = serial ? 1 : std::min<uint64_t>(hw, units);

    std::atomic<uint64_t> next{0};
    std::atomic<uint64_t> blocks_done{0};
    auto hung = [&](const Block& b) {
      char buf[200];
      std::snprintf(
          buf, sizeof buf,
          "kernel %s, block (%u,%u,%u)%s: every thread waits at a barrier that can never complete",
          kd.name.c_str(), b.ctaid.x, b.ctaid.y, b.ctaid.z,
          b.cluster ? " and every other thread of its cluster" : "");
      launch.fail(LaunchStatus::kHung, buf);
    };
    // Watchdog (Limits::timeout_ms): each worker reads the clock every kWatchdogSlices slices of
    // block execution, so the interpreter loop itself pays nothing.
    using Clock = std::chrono::steady_clock;
    constexpr uint32_t kWatchdogSlices = 16;
    const bool watched = limits.timeout_ms != 0;
    const Clock::time_point deadline =
        watched ? Clock::now() + std::chrono::milliseconds(limits.timeout_ms)
                : Clock::time_point::max();
    // True (and the launch failed) when the deadline has passed; `b` is the block just run.
    auto expired = [&](const Block& b) {
      if (!watched || Clock::now() < deadline) return false;
      std::string where = b.done ? "" : launch.block_position(b) + " was still running";
      if (where.empty()) {
        where = "stopped after " + std::to_string(blocks_done.load()) + " of " +
                std::to_string(nblocks) + " blocks had completed";
      }
      char limit[64];
      std::snprintf(limit, sizeof limit, "%.3g s", static_cast<double>(limits.timeout_ms) / 1000.0);
      std::string message = "kernel " + kd.name + " ran longer than the launch time limit of " +
                            limit + " (CUSNAP_EMU_TIMEOUT): " + where;
      if (serial && !config.cooperative) {
        message += "; its blocks run one at a time in block-index order because of " +
                   kd.serial_reason + ", so a block that waits for a later block never finishes";
      }
      launch.fail(LaunchStatus::kTimeout, message);
      return true;
    };
    auto plain_worker = [&]() {
      Block block;
      uint32_t slices = 0;
      for (;;) {
        uint64_t i = next.fetch_add(1);
        if (i >= nblocks || launch.aborted()) return;
        block.started = false;
        for (;;) {
          SliceResult r = launch.run_block_slice(block, i, 1u << 14);
          if (r == SliceResult::kStuck) {
            hung(block);
            return;
          }
          if (r == SliceResult::kAbort) break;
          if (r == SliceResult::kDone) blocks_done.fetch_add(1, std::memory_order_relaxed);
          if (++slices % kWatchdogSlices == 0 && expired(block)) return;
          if (r == SliceResult::kDone) break;
        }
      }
    };
    auto coop_worker = [&](uint64_t w) {
      std::vector<Block> blocks;
      std::vector<uint64_t> ids;
      for (uint64_t i = w; i < nblocks; i += workers) ids.push_back(i);
      blocks.resize(ids.size());
      size_t remaining = ids.size();
      uint32_t slices = 0;
      while (remaining > 0 && !launch.aborted()) {
        for (size_t k = 0; k < blocks.size(); ++k) {
          if (blocks[k].done) continue;
          SliceResult r = launch.run_block_slice(blocks[k], ids[k], 256);
          if (r == SliceResult::kDone) {
            --remaining;
            blocks_done.fetch_add(1, std::memory_order_relaxed);
          }
          if (r == SliceResult::kAbort) return;
          if (r == SliceResult::kStuck) {
            hung(blocks[k]);
            return;
          }
          if (++slices % (kWatchdogSlices * 4) == 0 && expired(blocks[k])) return;
        }
        if (workers < hw) std::this_thread::yield();
      }
    };
    // Cluster launches: the unit of scheduling is a cluster (all its CTAs on one worker, a
    // slice of each in turn); cooperative ones keep every cluster of a worker resident.
    auto running_block = [](const Cluster& c) -> const Block& {
      for (const Block& b : c.blocks)
        if (!b.done) return b;
      return c.blocks.front();
    };
    auto cluster_worker = [&](uint64_t w) {
      const uint64_t per_cluster = run_config.cluster.count();
      std::vector<Cluster> clusters;
      std::vector<uint64_t> ids;
      if (config.cooperative) {
        for (uint64_t i = w; i < units; i += workers) ids.push_back(i);
      }
      clusters.resize(config.cooperative ? ids.size() : 1);
      size_t remaining = clusters.size();
      uint32_t slices = 0;
      for (;;) {
        if (!config.cooperative) {  // the next cluster, run to completion
          const uint64_t i = next.fetch_add(1);
          if (i >= units || launch.aborted()) return;
          clusters[0].started = false;
          ids.assign(1, i);
          remaining = 1;
        }
        while (remaining > 0 && !launch.aborted()) {
          for (size_t k = 0; k < clusters.size(); ++k) {
            Cluster& c = clusters[k];
            if (c.done && c.started) continue;
            const SliceResult r = launch.run_cluster_slice(c, ids[k], 1u << 10);
            if (r == SliceResult::kAbort) return;
            if (r == SliceResult::kStuck) {
              hung(running_block(c));
              return;
            }
            if (r == SliceResult::kDone) {
              --remaining;
              blocks_done.fetch_add(per_cluster, std::memory_order_relaxed);
            }
            if (++slices % kWatchdogSlices == 0 && expired(running_block(c))) return;
          }
          if (config.cooperative && workers < hw) std::this_thread::yield();
        }
        if (config.cooperative || launch.aborted()) return;
      }
    };
    // Every worker: what escapes it fails the launch instead of terminating the process.
    auto run_worker = [&](uint64_t w) {
      try {
        if (clustered)
          cluster_worker(w);
        else if (config.cooperative)
          coop_worker(w);
        else
          plain_worker();
      } catch (const std::bad_alloc&) {
        launch.fail(LaunchStatus::kOutOfResources,
                    "host memory exhausted while emulating the launch");
      } catch (const std::exception& e) {
        launch.fail(LaunchStatus::kOutOfResources, std::string("emulation failed: ") + e.what());
      }
    };
    if (workers <= 1) {
      run_worker(0);
    } else {
      std::vector<std::thread> threads;
      threads.reserve(workers - 1);
      for (uint64_t w = 1; w < workers; ++w) threads.emplace_back(run_worker, w);
      run_worker(0);
      for (std::thread& t : threads) t.join();
    }
    std::string out = launch.take_output();
    if (!out.empty()) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
    }
    return launch.result();
  }

  Module m_;
  std::vector<uint64_t> addresses_;  // by symbol id
  std::mutex mutex_;
  bool relocated_ = false;
};

}  // namespace

CompileResult compile(std::string_view ptx_text) {
  CompileResult r;
  r.status = CompileStatus::kInvalidPtx;
  try {
    Module m;
    std::string error;
    bool not_supported = false;
    if (!parse_module(ptx_text, m, error, &not_supported)) {
      r.error = error;
      if (not_supported) r.status = CompileStatus::kNotSupported;
      return r;
    }
    classify_block_order(m);
    r.program = std::make_unique<ProgramImpl>(std::move(m));
    r.status = CompileStatus::kSuccess;
  } catch (const std::bad_alloc&) {
    r.error = "out of host memory while compiling PTX";
    r.status = CompileStatus::kOutOfMemory;
  } catch (const std::exception& e) {
    r.error = std::string("internal error while compiling PTX: ") + e.what();
  } catch (...) {
    r.error = "internal error while compiling PTX";
  }
  return r;
}

}  // namespace cusnap::emu::ptx
