// Occupancy queries (cuOccupancy*), computed from the emulated device's per-SM limits and the
// function's attributes with one model (docs/emulator.md, "Occupancy"):
//
//   blocks per SM = min(MAX_BLOCKS_PER_MULTIPROCESSOR,
//                       floor(warps per SM / warps per block),
//                       floor(registers per SM / (registers per warp * warps per block)),
//                       floor(shared memory per SM / shared memory per block))
//   warps per block       = ceil(block size / 32)
//   registers per warp    = NUM_REGS * 32 rounded up to 256 (no limit when NUM_REGS is 0)
//   shared memory / block = static + dynamic + RESERVED_SHARED_MEMORY_PER_BLOCK, rounded up to
//                           128 bytes
//
// and 0 for a configuration no launch accepts (a block larger than the function's
// MAX_THREADS_PER_BLOCK, more dynamic shared memory than its MAX_DYNAMIC_SHARED_SIZE_BYTES, more
// registers than MAX_REGISTERS_PER_BLOCK). The preferred carveout and the caching flags change
// nothing: the model always gives a block the SM's whole shared memory.
#include <algorithm>
#include <cstdint>

#include "driver/api.h"
#include "driver/context.h"
#include "driver/device.h"
#include "driver/launch.h"
#include "driver/module.h"
#include "driver/state.h"

namespace cusnap::emu::driver {
int max_dynamic_shared(const Function& f);
int max_threads_per_block(const Function& f);
}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;

namespace {

constexpr uint64_t kRegisterGranularity = 256;  // registers per warp are allocated in these
constexpr uint64_t kSharedGranularity = 128;    // shared memory per block is allocated in these
constexpr int kPortableClusterSize = 8;
constexpr int kNonPortableClusterSize = 16;

uint64_t round_up(uint64_t value, uint64_t unit) { return (value + unit - 1) / unit * unit; }

int attribute(CUdevice_attribute a) {
  int value = 0;
  device_attribute(a, &value);
  return value;
}

struct SmLimits {
  uint64_t blocks = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  uint64_t warps = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) / 32;
  uint64_t registers = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  uint64_t registers_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  uint64_t shared = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  uint64_t reserved_shared = attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  uint64_t sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
};

// Blocks that fit on one SM without the shared-memory limit (0: the configuration is refused).
uint64_t blocks_without_shared(const Function& f, int block_size, const SmLimits& sm) {
  if (block_size <= 0 || block_size > max_threads_per_block(f)) return 0;
  const uint64_t warps = (static_cast<uint64_t>(block_size) + 31) / 32;
  uint64_t blocks = std::min(sm.blocks, sm.warps / warps);
  const uint64_t regs = f.desc->num_regs;
  if (regs != 0) {
    if (regs * static_cast<uint64_t>(block_size) > sm.registers_per_block) return 0;
    const uint64_t per_warp = round_up(regs * 32, kRegisterGranularity);
    blocks = std::min(blocks, sm.registers / (per_warp * warps));
  }
  return blocks;
}

uint64_t shared_per_block(const Function& f, uint64_t dynamic, const SmLimits& sm) {
  return round_up(f.desc->static_shared_bytes + dynamic + sm.reserved_shared, kSharedGranularity);
}

uint64_t active_blocks(const Function& f, int block_size, uint64_t dynamic, const SmLimits& sm) {
  if (dynamic > static_cast<uint64_t>(max_dynamic_shared(f))) return 0;
  return std::min(blocks_without_shared(f, block_size, sm),
                  sm.shared / shared_per_block(f, dynamic, sm));
}

// Occupancy queries need the driver initialised and a current context (documented); a CUkernel
// cast to CUfunction is the same object here (module.h).
CUresult occupancy_function(CUfunction func, Function** out) {
  Context* ctx;
  if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
  *out = function_from_handle(func);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult max_active_blocks(int* numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize,
                           unsigned flags) {
  Function* f;
  if (CUresult r = occupancy_function(func, &f); r != CUDA_SUCCESS) return r;
  if (numBlocks == nullptr || blockSize <= 0 ||
      (flags & ~CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *numBlocks = static_cast<int>(active_blocks(*f, blockSize, dynamicSMemSize, SmLimits{}));
  return CUDA_SUCCESS;
}

// Tries every block size that is a multiple of the warp size, from the largest allowed down, and
// keeps the first with the most resident threads per SM (so ties go to the larger block).
CUresult max_potential_block_size(int* minGridSize, int* blockSize, CUfunction func,
                                  CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                  size_t dynamicSMemSize, int blockSizeLimit, unsigned flags) {
  Function* f;
  if (CUresult r = occupancy_function(func, &f); r != CUDA_SUCCESS) return r;
  if (minGridSize == nullptr || blockSize == nullptr || blockSizeLimit < 0 ||
      (flags & ~CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const SmLimits sm;
  int limit = max_threads_per_block(*f);
  if (blockSizeLimit > 0) limit = std::min(limit, blockSizeLimit);
  uint64_t best_threads = 0, best_blocks = 0;
  int best_size = 0;
  for (int size = static_cast<int>(round_up(static_cast<uint64_t>(limit), 32)); size > 0;
       size -= 32) {
    const int tried = std::min(size, limit);
    const uint64_t dynamic =
        blockSizeToDynamicSMemSize != nullptr ? blockSizeToDynamicSMemSize(tried) : dynamicSMemSize;
    const uint64_t blocks = active_blocks(*f, tried, dynamic, sm);
    if (blocks * static_cast<uint64_t>(tried) > best_threads) {
      best_threads = blocks * static_cast<uint64_t>(tried);
      best_blocks = blocks;
      best_size = tried;
    }
  }
  *blockSize = best_size;
  *minGridSize = static_cast<int>(best_blocks * sm.sm_count);
  return CUDA_SUCCESS;
}

// The cluster size a function requires (launch.h, required_cluster), 0 when none.
int required_cluster_size(const Function& f) {
  return static_cast<int>(required_cluster(f).count());
}

CUresult cluster_config(CUfunction func, const CUlaunchConfig* config, Function** f,
                        uint64_t* blocks_per_sm) {
  if (CUresult r = occupancy_function(func, f); r != CUDA_SUCCESS) return r;
  if (config == nullptr || (config->numAttrs > 0 && config->attrs == nullptr))
    return CUDA_ERROR_INVALID_VALUE;
  const uint64_t threads = uint64_t{config->blockDimX} * config->blockDimY * config->blockDimZ;
  if (threads == 0 || threads > 1024) return CUDA_ERROR_INVALID_VALUE;
  *blocks_per_sm =
      active_blocks(**f, static_cast<int>(threads), config->sharedMemBytes, SmLimits{});
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks,
                                                                           CUfunction func,
                                                                           int blockSize,
                                                                           size_t dynamicSMemSize) {
  return guarded("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                 [&] { return max_active_blocks(numBlocks, func, blockSize, dynamicSMemSize, 0); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags) {
  return guarded("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", [&] {
    return max_active_blocks(numBlocks, func, blockSize, dynamicSMemSize, flags);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(
    int* minGridSize, int* blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit) {
  return guarded("cuOccupancyMaxPotentialBlockSize", [&] {
    return max_potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                    dynamicSMemSize, blockSizeLimit, 0);
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(
    int* minGridSize, int* blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit,
    unsigned int flags) {
  return guarded("cuOccupancyMaxPotentialBlockSizeWithFlags", [&] {
    return max_potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                    dynamicSMemSize, blockSizeLimit, flags);
  });
}

// The largest dynamic shared memory per block that still lets `numBlocks` blocks of `blockSize`
// threads reside on one SM; 0 when the other limits do not allow that many blocks.
CUSNAP_EXPORT CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize,
                                                                       CUfunction func,
                                                                       int numBlocks,
                                                                       int blockSize) {
  return guarded("cuOccupancyAvailableDynamicSMemPerBlock", [&] {
    Function* f;
    if (CUresult r = occupancy_function(func, &f); r != CUDA_SUCCESS) return r;
    if (dynamicSmemSize == nullptr || numBlocks <= 0 || blockSize <= 0)
      return CUDA_ERROR_INVALID_VALUE;
    const SmLimits sm;
    *dynamicSmemSize = 0;
    if (blocks_without_shared(*f, blockSize, sm) < static_cast<uint64_t>(numBlocks))
      return CUDA_SUCCESS;
    const uint64_t per_block =
        sm.shared / static_cast<uint64_t>(numBlocks) / kSharedGranularity * kSharedGranularity;
    const uint64_t fixed = f->desc->static_shared_bytes + sm.reserved_shared;
    if (per_block <= fixed) return CUDA_SUCCESS;
    *dynamicSmemSize =
        std::min<uint64_t>(per_block - fixed, static_cast<uint64_t>(max_dynamic_shared(*f)));
    return CUDA_SUCCESS;
  });
}

// Clusters: the required size when the function has one, else the largest portable size (8; 16
// when CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED is set), and 0 when not even one
// block of the configuration fits on an SM.
CUSNAP_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(int* clusterSize, CUfunction func,
                                                                  const CUlaunchConfig* config) {
  return guarded("cuOccupancyMaxPotentialClusterSize", [&] {
    Function* f;
    uint64_t blocks = 0;
    if (CUresult r = cluster_config(func, config, &f, &blocks); r != CUDA_SUCCESS) return r;
    if (clusterSize == nullptr) return CUDA_ERROR_INVALID_VALUE;
    int size = required_cluster_size(*f);
    if (size == 0)
      size = f->non_portable_cluster.load() != 0 ? kNonPortableClusterSize : kPortableClusterSize;
    *clusterSize = blocks == 0 ? 0 : size;
    return CUDA_SUCCESS;
  });
}

// floor(blocks per SM * SM count / cluster size), the cluster size coming from the function's
// requirement or the configuration's CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (one must be given).
CUSNAP_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func,
                                                            const CUlaunchConfig* config) {
  return guarded("cuOccupancyMaxActiveClusters", [&] {
    Function* f;
    uint64_t blocks = 0;
    if (CUresult r = cluster_config(func, config, &f, &blocks); r != CUDA_SUCCESS) return r;
    if (numClusters == nullptr) return CUDA_ERROR_INVALID_VALUE;
    uint64_t configured = 0;
    for (unsigned i = 0; i < config->numAttrs; ++i) {
      const CUlaunchAttribute& a = config->attrs[i];
      if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
        configured = uint64_t{a.value.clusterDim.x} * a.value.clusterDim.y * a.value.clusterDim.z;
        if (configured == 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
      }
    }
    const uint64_t required = static_cast<uint64_t>(required_cluster_size(*f));
    if (required != 0 && configured != 0 && required != configured)
      return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    const uint64_t size = required != 0 ? required : configured;
    if (size == 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    const int limit =
        f->non_portable_cluster.load() != 0 ? kNonPortableClusterSize : kPortableClusterSize;
    if (size > static_cast<uint64_t>(limit)) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    *numClusters = static_cast<int>(blocks * SmLimits{}.sm_count / size);
    return CUDA_SUCCESS;
  });
}
