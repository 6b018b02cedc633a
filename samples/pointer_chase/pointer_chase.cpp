// pointer_chase: kernels that find their data through pointers stored in device memory. The
// host builds linked lists inside one cuMemAlloc buffer whose `next` fields are device
// addresses computed from the buffer's base, plus a device array of device pointers to
// separately allocated tables. Capture and replay only reproduce this run if every buffer comes
// back at its captured address: nothing rewrites the pointers hidden in the copied bytes.
// Both walks are checked exactly against the same walks done on the host.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(pointer_chase_kernels)

using namespace cusnap::samples;

namespace {

// Same layout as Node in pointer_chase_kernels.cu (16 bytes).
struct Node {
  uint64_t next;  // device address of the next node, 0 at the end
  uint32_t payload;
  uint32_t pad;
};
static_assert(sizeof(Node) == 16);

constexpr int kNumTables = 8;
constexpr int kReads = 16;

// Splits n nodes into num_lists non-empty lists in a shuffled order, so consecutive nodes of a
// list are scattered through the buffer. Returns each list's node indices in walk order.
std::vector<std::vector<uint32_t>> make_lists(size_t n, size_t num_lists, Lcg& rng) {
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.next_u32() % i]);
  std::vector<std::vector<uint32_t>> lists(num_lists);
  for (size_t i = 0; i < n; ++i) {
    // The first num_lists nodes seed one list each, so no list is empty.
    size_t list = i < num_lists ? i : rng.next_u32() % num_lists;
    lists[list].push_back(order[i]);
  }
  return lists;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 14);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");
  const size_t num_lists = std::max<size_t>(1, n / 64);
  const size_t gather_threads = std::max<size_t>(256, n / 16);

  Lcg rng(7);
  std::vector<std::vector<uint32_t>> lists = make_lists(n, num_lists, rng);
  std::vector<uint32_t> payloads(n);
  for (auto& p : payloads) p = rng.next_u32();
  std::vector<uint32_t> starts(num_lists);
  for (size_t l = 0; l < num_lists; ++l) starts[l] = lists[l].front();

  std::vector<std::vector<uint32_t>> tables(kNumTables);
  std::vector<uint32_t> table_lengths(kNumTables);
  for (int k = 0; k < kNumTables; ++k) {
    table_lengths[k] = static_cast<uint32_t>(1000 + 37 * k);
    tables[k].resize(table_lengths[k]);
    for (auto& v : tables[k]) v = rng.next_u32();
  }

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, pointer_chase_kernels_image().data));
  CUfunction walk_lists, gather_tables;
  CU_CHECK(cuModuleGetFunction(&walk_lists, module, "walk_lists"));
  CU_CHECK(cuModuleGetFunction(&gather_tables, module, "gather_tables"));

  // The node buffer must exist before its contents can be written: the links are addresses.
  CUdeviceptr d_nodes;
  CU_CHECK(cuMemAlloc(&d_nodes, n * sizeof(Node)));
  std::vector<Node> nodes(n);
  for (size_t i = 0; i < n; ++i) nodes[i] = Node{0, payloads[i], 0};
  for (const auto& list : lists) {
    for (size_t j = 0; j + 1 < list.size(); ++j) {
      nodes[list[j]].next = d_nodes + static_cast<uint64_t>(list[j + 1]) * sizeof(Node);
    }
  }
  CU_CHECK(cuMemcpyHtoD(d_nodes, nodes.data(), n * sizeof(Node)));

  // Host walk of the very bytes sent to the device: translate each link back to an index.
  std::vector<uint32_t> ref_sums(num_lists), ref_lengths(num_lists);
  for (size_t l = 0; l < num_lists; ++l) {
    uint32_t sum = 0, steps = 0;
    uint64_t at = d_nodes + static_cast<uint64_t>(starts[l]) * sizeof(Node);
    while (at != 0 && steps <= n) {
      const Node& node = nodes[(at - d_nodes) / sizeof(Node)];
      sum += node.payload;
      ++steps;
      at = node.next;
    }
    ref_sums[l] = sum;
    ref_lengths[l] = steps;
  }
  maybe_inject_error(options, ref_sums);

  CUdeviceptr d_starts, d_sums, d_lengths;
  CU_CHECK(cuMemAlloc(&d_starts, num_lists * sizeof(uint32_t)));
  CU_CHECK(cuMemAlloc(&d_sums, num_lists * sizeof(uint32_t)));
  CU_CHECK(cuMemAlloc(&d_lengths, num_lists * sizeof(uint32_t)));
  CU_CHECK(cuMemcpyHtoD(d_starts, starts.data(), num_lists * sizeof(uint32_t)));

  // Separately allocated tables, reached through a device array of their addresses.
  std::vector<CUdeviceptr> d_tables(kNumTables);
  for (int k = 0; k < kNumTables; ++k) {
    CU_CHECK(cuMemAlloc(&d_tables[k], tables[k].size() * sizeof(uint32_t)));
    CU_CHECK(cuMemcpyHtoD(d_tables[k], tables[k].data(), tables[k].size() * sizeof(uint32_t)));
  }
  static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t));
  CUdeviceptr d_table_ptrs, d_table_lengths, d_gather;
  CU_CHECK(cuMemAlloc(&d_table_ptrs, kNumTables * sizeof(CUdeviceptr)));
  CU_CHECK(cuMemcpyHtoD(d_table_ptrs, d_tables.data(), kNumTables * sizeof(CUdeviceptr)));
  CU_CHECK(cuMemAlloc(&d_table_lengths, kNumTables * sizeof(uint32_t)));
  CU_CHECK(cuMemcpyHtoD(d_table_lengths, table_lengths.data(), kNumTables * sizeof(uint32_t)));
  CU_CHECK(cuMemAlloc(&d_gather, gather_threads * sizeof(uint32_t)));

  std::vector<uint32_t> ref_gather(gather_threads);
  for (size_t t = 0; t < gather_threads; ++t) {
    const std::vector<uint32_t>& table = tables[t % kNumTables];
    uint32_t sum = 0;
    for (uint32_t j = 0; j < static_cast<uint32_t>(kReads); ++j) {
      uint32_t index =
          (static_cast<uint32_t>(t) * 7u + j * 13u) % static_cast<uint32_t>(table.size());
      sum += table[index] * (j + 1);
    }
    ref_gather[t] = sum;
  }

  const unsigned block = 128;
  int list_count = static_cast<int>(num_lists);
  unsigned int max_steps = static_cast<unsigned int>(n + 1);
  void* walk_params[] = {&d_nodes, &d_starts, &list_count, &max_steps, &d_sums, &d_lengths};
  CU_CHECK(cuLaunchKernel(walk_lists, blocks_for(num_lists, block), 1, 1, block, 1, 1, 0, nullptr,
                          walk_params, nullptr));
  int table_count = kNumTables;
  int thread_count = static_cast<int>(gather_threads);
  int reads = kReads;
  void* gather_params[] = {&d_table_ptrs, &d_table_lengths, &table_count,
                           &thread_count, &reads,           &d_gather};
  CU_CHECK(cuLaunchKernel(gather_tables, blocks_for(gather_threads, block), 1, 1, block, 1, 1, 0,
                          nullptr, gather_params, nullptr));

  std::vector<uint32_t> sums(num_lists), lengths(num_lists), gather(gather_threads);
  CU_CHECK(cuMemcpyDtoH(sums.data(), d_sums, num_lists * sizeof(uint32_t)));
  CU_CHECK(cuMemcpyDtoH(lengths.data(), d_lengths, num_lists * sizeof(uint32_t)));
  CU_CHECK(cuMemcpyDtoH(gather.data(), d_gather, gather_threads * sizeof(uint32_t)));

  bool ok = compare_exact(ref_sums, sums) && compare_exact(ref_lengths, lengths) &&
            compare_exact(ref_gather, gather);

  for (CUdeviceptr p :
       {d_nodes, d_starts, d_sums, d_lengths, d_table_ptrs, d_table_lengths, d_gather}) {
    CU_CHECK(cuMemFree(p));
  }
  for (CUdeviceptr p : d_tables) CU_CHECK(cuMemFree(p));
  CU_CHECK(cuModuleUnload(module));
  return finish("pointer_chase", ok,
                "nodes=" + std::to_string(n) + ", lists=" + std::to_string(num_lists) +
                    ", tables=" + std::to_string(kNumTables) + ", exact");
}
