// Device-side malloc and free (docs/emulator.md, "Device heap"), with nvcc's PTX
// (kernels/heap.cu): blocks are distinct, aligned and outlive their launch; freed blocks are
// reused; a heap of CU_LIMIT_MALLOC_HEAP_SIZE bytes hands out what fits and then NULL; the limit
// cannot change once the heap is in use; a free of what malloc did not return fails the launch.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

constexpr int kThreads = 64;
constexpr int kInts = 100;  // 400 bytes a block: a multiple of malloc's 16-byte alignment

struct HeapKernels {
  CUmodule module = nullptr;
  CUfunction fill = nullptr, sum = nullptr, release = nullptr;
  CUdeviceptr pointers = 0, sums = 0;
  HeapKernels() {
    const std::string ptx = read_file(kernel_path("heap.ptx"));
    REQUIRE(ptx.find("malloc") != std::string::npos);
    REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
    REQUIRE_CU(cuModuleGetFunction(&fill, module, "heap_fill"));
    REQUIRE_CU(cuModuleGetFunction(&sum, module, "heap_sum"));
    REQUIRE_CU(cuModuleGetFunction(&release, module, "heap_release"));
    REQUIRE_CU(cuMemAlloc(&pointers, kThreads * sizeof(uint64_t)));
    REQUIRE_CU(cuMemAlloc(&sums, kThreads * sizeof(long long)));
  }
  ~HeapKernels() {
    cuMemFree(pointers);
    cuMemFree(sums);
    cuModuleUnload(module);
  }
  CUresult run(CUfunction f, std::vector<void*> args) {
    CUresult r = cuLaunchKernel(f, 2, 1, 1, kThreads / 2, 1, 1, 0, nullptr, args.data(), nullptr);
    return r != CUDA_SUCCESS ? r : cuCtxSynchronize();
  }
  CUresult fill_blocks() {
    int n = kInts;
    return run(fill, {&pointers, &n});
  }
  CUresult free_blocks() { return run(release, {&pointers}); }
  std::vector<uint64_t> blocks() {
    std::vector<uint64_t> out(kThreads);
    REQUIRE_CU(cuMemcpyDtoH(out.data(), pointers, out.size() * sizeof(uint64_t)));
    return out;
  }
  std::vector<long long> block_sums() {
    int n = kInts;
    REQUIRE_CU(run(sum, {&pointers, &sums, &n}));
    std::vector<long long> out(kThreads);
    REQUIRE_CU(cuMemcpyDtoH(out.data(), sums, out.size() * sizeof(long long)));
    return out;
  }
};

long long expected_sum(int t) {
  return static_cast<long long>(t) * 1000 * kInts + static_cast<long long>(kInts) * (kInts - 1) / 2;
}

}  // namespace

TEST_CASE("device heap: malloc'd blocks are distinct, aligned, outlive the launch, are reused",
          "[heap]") {
  primary_context();
  HeapKernels k;
  REQUIRE_CU(k.fill_blocks());
  std::vector<uint64_t> first = k.blocks();
  std::vector<uint64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    INFO("block " << i);
    REQUIRE(sorted[i] != 0);
    CHECK(sorted[i] % 16 == 0);
    if (i > 0) CHECK(sorted[i] >= sorted[i - 1] + kInts * sizeof(int));  // no overlap
  }
  // The blocks are device memory: a later launch reads what the first wrote, and so does the host.
  std::vector<long long> sums = k.block_sums();
  for (int t = 0; t < kThreads; ++t) CHECK(sums[t] == expected_sum(t));
  std::vector<int> head(kInts);
  REQUIRE_CU(cuMemcpyDtoH(head.data(), first[5], head.size() * sizeof(int)));
  CHECK(head[7] == 5007);
  REQUIRE_CU(k.free_blocks());
  // Freed blocks are merged and handed out again: the same bytes serve a second round.
  REQUIRE_CU(k.fill_blocks());
  std::vector<uint64_t> second = k.blocks();
  std::sort(second.begin(), second.end());
  CHECK(second.front() == sorted.front());
  sums = k.block_sums();
  for (int t = 0; t < kThreads; ++t) CHECK(sums[t] == expected_sum(t));
  REQUIRE_CU(k.free_blocks());
  // The heap is the driver's own: cuMemFree refuses it.
  CHECK(cuMemFree(sorted.front()) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("device heap: the limit sizes it, malloc returns NULL when full, a bad free fails",
          "[heap]") {
  CUdevice device = 0;
  REQUIRE_CU(cuInit(0));
  REQUIRE_CU(cuDeviceGet(&device, 0));
  CUcontext ctx = nullptr;
  REQUIRE_CU(cuCtxCreate(&ctx, nullptr, 0, device));
  {
    REQUIRE_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 4096));
    HeapKernels k;
    REQUIRE_CU(k.fill_blocks());
    std::vector<uint64_t> blocks = k.blocks();
    const auto given =
        std::count_if(blocks.begin(), blocks.end(), [](uint64_t p) { return p != 0; });
    CHECK(given == 4096 / (kInts * sizeof(int)));  // 10 blocks of 400 bytes fit, then NULL
    std::vector<long long> sums = k.block_sums();
    for (int t = 0; t < kThreads; ++t) CHECK(sums[t] == (blocks[t] != 0 ? expected_sum(t) : -1));
    // In use: its size is fixed.
    CHECK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 1 << 20) == CUDA_ERROR_INVALID_VALUE);
    size_t limit = 0;
    REQUIRE_CU(cuCtxGetLimit(&limit, CU_LIMIT_MALLOC_HEAP_SIZE));
    CHECK(limit == 4096);
    REQUIRE_CU(k.free_blocks());  // free(NULL) of the threads that got none does nothing
    // The same blocks again: freed already.
    CHECK(k.free_blocks() == CUDA_ERROR_ILLEGAL_ADDRESS);
  }
  REQUIRE_CU(cuCtxDestroy(ctx));
  primary_context();
}

#endif
