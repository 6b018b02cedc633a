// Occupancy queries against the documented model (docs/emulator.md, "Occupancy"), recomputed
// here from the device's and the functions' attributes for several kernels.
#include <algorithm>
#include <cstdint>
#include <string>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

int device(CUdevice_attribute a) {
  int v = 0;
  REQUIRE_CU(cuDeviceGetAttribute(&v, a, 0));
  return v;
}

int function(CUfunction f, CUfunction_attribute a) {
  int v = 0;
  REQUIRE_CU(cuFuncGetAttribute(&v, a, f));
  return v;
}

uint64_t round_up(uint64_t v, uint64_t unit) { return (v + unit - 1) / unit * unit; }

// The model, written out from the documentation.
int expected_blocks(CUfunction f, int block_size, uint64_t dynamic) {
  if (block_size > function(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)) return 0;
  if (dynamic > static_cast<uint64_t>(function(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)))
    return 0;
  const uint64_t warps = (block_size + 31) / 32;
  uint64_t blocks = device(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  blocks = std::min<uint64_t>(
      blocks, device(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) / 32 / warps);
  const uint64_t regs = function(f, CU_FUNC_ATTRIBUTE_NUM_REGS);
  if (regs > 0) {
    if (regs * block_size >
        static_cast<uint64_t>(device(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)))
      return 0;
    blocks =
        std::min<uint64_t>(blocks, device(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR) /
                                       (round_up(regs * 32, 256) * warps));
  }
  const uint64_t shared = round_up(function(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) + dynamic +
                                       device(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK),
                                   128);
  blocks = std::min<uint64_t>(
      blocks, device(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) / shared);
  return static_cast<int>(blocks);
}

size_t smem_per_thread(int block_size) { return static_cast<size_t>(block_size) * 40; }

}  // namespace

TEST_CASE("occupancy: active blocks per SM follow the documented model", "[occupancy]") {
  primary_context();
  std::string ptx = read_file(kernel_path("surface.ptx"));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  for (const char* name : {"tiny", "resources", "reverse_dynamic", "mixed_args"}) {
    CUfunction f = nullptr;
    REQUIRE_CU(cuModuleGetFunction(&f, module, name));
    for (int block : {1, 32, 33, 64, 96, 128, 256, 257, 512, 1024}) {
      for (size_t dynamic :
           {size_t{0}, size_t{1}, size_t{4096}, size_t{40000}, size_t{48 * 1024}}) {
        INFO(name << " block " << block << " dynamic " << dynamic);
        int blocks = -1;
        REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, block, dynamic));
        CHECK(blocks == expected_blocks(f, block, dynamic));
        REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
            &blocks, f, block, dynamic, CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
        CHECK(blocks == expected_blocks(f, block, dynamic));
      }
    }
  }
  CUfunction tiny = nullptr, resources = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&tiny, module, "tiny"));
  REQUIRE_CU(cuModuleGetFunction(&resources, module, "resources"));
  int blocks = -1;
  // Spot values, so that the model above cannot silently agree with a broken implementation:
  // a 32-thread block of `tiny` is limited by the block count, a 1024-thread one by the warps.
  REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tiny, 32, 0));
  CHECK(blocks == 32);
  REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tiny, 1024, 0));
  CHECK(blocks == 2);
  // `resources` is __launch_bounds__(256): a larger block never runs.
  REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, resources, 512, 0));
  CHECK(blocks == 0);
  REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, resources, 256, 0));
  CHECK(blocks >= 1);
  // 200 KiB of dynamic shared memory is beyond the default limit until the function opts in.
  REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tiny, 32, 200 * 1024));
  CHECK(blocks == 0);
  REQUIRE_CU(cuFuncSetAttribute(tiny, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024));
  REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tiny, 32, 200 * 1024));
  CHECK(blocks == 1);
  CHECK(blocks == expected_blocks(tiny, 32, 200 * 1024));

  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(nullptr, tiny, 32, 0) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tiny, 0, 0) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, tiny, 32, 0, 4) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reinterpret_cast<CUfunction>(&blocks),
                                                    32, 0) == CUDA_ERROR_INVALID_HANDLE);
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("occupancy: potential block size, with and without a shared-memory callback",
          "[occupancy]") {
  primary_context();
  std::string ptx = read_file(kernel_path("surface.ptx"));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  const int sms = device(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  for (const char* name : {"tiny", "resources", "reverse_dynamic"}) {
    CUfunction f = nullptr;
    REQUIRE_CU(cuModuleGetFunction(&f, module, name));
    for (int limit : {0, 100, 256, 1024}) {
      for (int use_callback = 0; use_callback < 2; ++use_callback) {
        INFO(name << " limit " << limit << " callback " << use_callback);
        const size_t fixed = 6000;
        // The search, from the documentation: warp multiples from the largest allowed block down,
        // the first with the most resident threads wins.
        int max = function(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
        if (limit > 0) max = std::min(max, limit);
        int best = 0, best_blocks = 0;
        for (int size = static_cast<int>(round_up(max, 32)); size > 0; size -= 32) {
          const int tried = std::min(size, max);
          const int b = expected_blocks(f, tried, use_callback ? smem_per_thread(tried) : fixed);
          if (b * tried > best_blocks * best) {
            best = tried;
            best_blocks = b;
          }
        }
        int min_grid = -1, block = -1;
        REQUIRE_CU(cuOccupancyMaxPotentialBlockSize(
            &min_grid, &block, f, use_callback ? smem_per_thread : nullptr, fixed, limit));
        CHECK(block == best);
        CHECK(min_grid == best_blocks * sms);
        REQUIRE_CU(cuOccupancyMaxPotentialBlockSizeWithFlags(
            &min_grid, &block, f, use_callback ? smem_per_thread : nullptr, fixed, limit,
            CU_OCCUPANCY_DEFAULT));
        CHECK(block == best);
      }
    }
  }
  CUfunction tiny = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&tiny, module, "tiny"));
  int min_grid = -1, block = -1;
  REQUIRE_CU(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, tiny, nullptr, 0, 0));
  CHECK(block == 1024);  // 2 blocks of 1024 fill the SM's 2048 threads: the largest such block
  CHECK(min_grid == 2 * sms);
  CHECK(cuOccupancyMaxPotentialBlockSize(nullptr, &block, tiny, nullptr, 0, 0) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, tiny, nullptr, 0, -1) ==
        CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("occupancy: available dynamic shared memory and clusters", "[occupancy]") {
  primary_context();
  std::string ptx = read_file(kernel_path("surface.ptx"));
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  CUfunction reverse = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&reverse, module, "reverse_dynamic"));
  const uint64_t sm_shared = device(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  const uint64_t reserved = device(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  const int max_dynamic = function(reverse, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  for (int n : {1, 2, 4, 8, 16, 32}) {
    INFO("blocks " << n);
    size_t available = 0;
    REQUIRE_CU(cuOccupancyAvailableDynamicSMemPerBlock(&available, reverse, n, 64));
    const uint64_t per_block = sm_shared / n / 128 * 128;
    const uint64_t fixed = function(reverse, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) + reserved;
    CHECK(available == std::min<uint64_t>(per_block - fixed, max_dynamic));
    // That much still lets n blocks reside; one granule more does not (when below the cap).
    int blocks = 0;
    REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reverse, 64, available));
    CHECK(blocks >= n);
    if (available < static_cast<uint64_t>(max_dynamic)) {
      REQUIRE_CU(
          cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reverse, 64, available + 128));
      CHECK(blocks < n);
    }
  }
  size_t available = 1;
  // 33 blocks exceed the block limit of an SM.
  REQUIRE_CU(cuOccupancyAvailableDynamicSMemPerBlock(&available, reverse, 33, 32));
  CHECK(available == 0);
  CHECK(cuOccupancyAvailableDynamicSMemPerBlock(nullptr, reverse, 1, 32) ==
        CUDA_ERROR_INVALID_VALUE);

  CUlaunchConfig config{};
  config.gridDimX = 16;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 128;
  config.blockDimY = config.blockDimZ = 1;
  int cluster = 0;
  REQUIRE_CU(cuOccupancyMaxPotentialClusterSize(&cluster, reverse, &config));
  CHECK(cluster == 8);
  REQUIRE_CU(cuFuncSetAttribute(reverse, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
  REQUIRE_CU(cuOccupancyMaxPotentialClusterSize(&cluster, reverse, &config));
  CHECK(cluster == 16);
  int clusters = 0;
  CHECK(cuOccupancyMaxActiveClusters(&clusters, reverse, &config) ==
        CUDA_ERROR_INVALID_CLUSTER_SIZE);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = 4;
  attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  REQUIRE_CU(cuOccupancyMaxActiveClusters(&clusters, reverse, &config));
  CHECK(clusters ==
        expected_blocks(reverse, 128, 0) * device(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) / 4);
  REQUIRE_CU(cuModuleUnload(module));
}

#endif  // CUSNAP_TEST_HAVE_PTX_ENGINE
