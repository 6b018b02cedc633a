// Kernels of the redaction tests (tests/reduce/test_redact.cpp), compiled to PTX and run on the
// emulator. Each test computes what they produce on the host.

// out[i] = in[i] + 1: reads an array whose bytes the tests make distinctive.
extern "C" __global__ void add_one(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + 1;
}

// A linked structure in device memory: the walk faults if a `next` pointer is not one.
struct Node {
  Node* next;
  int value;
  int pad;
};
extern "C" __global__ void walk_list(const Node* head, int* out) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int sum = 0, count = 0;
  for (const Node* p = head; p != nullptr; p = p->next) {
    sum += p->value;
    ++count;
  }
  out[0] = sum;
  out[1] = count;
}

// A data-dependent fault: an element equal to `magic` makes its thread write far out of bounds.
extern "C" __global__ void fault_on(const int* in, int* out, int n, int magic) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  if (v == magic) {
    out[i + (1 << 26)] = v;
  } else {
    out[i] = v * 2;
  }
}
