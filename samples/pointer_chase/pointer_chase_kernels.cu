// Kernels that only reach their data through pointers stored in device memory: a replay that put
// the buffers anywhere but their captured addresses would walk into garbage.

// One list node. `next` is the device address of the following node (0 ends the list); the
// host writes these addresses from the node buffer's base.
struct Node {
  unsigned long long next;
  unsigned int payload;
  unsigned int pad;
};

// Thread i starts at nodes[starts[i]] and follows `next` until the end of its list, summing the
// payloads (mod 2^32). The step count is bounded so a corrupted list ends instead of hanging;
// the count is reported so the host can check the walk length as well.
extern "C" __global__ void walk_lists(const Node* nodes, const unsigned int* starts,
                                      int num_lists, unsigned int max_steps,
                                      unsigned int* sums, unsigned int* lengths) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= num_lists) return;
  const Node* node = nodes + starts[i];
  unsigned int sum = 0;
  unsigned int steps = 0;
  while (node != nullptr && steps < max_steps) {
    sum += node->payload;
    ++steps;
    node = reinterpret_cast<const Node*>(node->next);
  }
  sums[i] = sum;
  lengths[i] = steps;
}

// `tables` is a device array of device pointers to separately allocated arrays; thread t reads
// table t % num_tables at `reads` positions spread by a stride and sums them (mod 2^32).
extern "C" __global__ void gather_tables(const unsigned int* const* tables,
                                         const unsigned int* table_lengths, int num_tables,
                                         int num_threads, int reads, unsigned int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= num_threads) return;
  int k = t % num_tables;
  const unsigned int* table = tables[k];
  unsigned int length = table_lengths[k];
  unsigned int sum = 0;
  for (int j = 0; j < reads; ++j) {
    unsigned int index = (static_cast<unsigned int>(t) * 7u + static_cast<unsigned int>(j) * 13u) % length;
    sum += table[index] * static_cast<unsigned int>(j + 1);
  }
  out[t] = sum;
}
