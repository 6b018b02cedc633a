// OpenCL C for clang's NVPTX target (see regenerate.sh), compiled with -g at -O0, -O1 and -O2
// (clang_opencl.O<n>.ptx): the PTX carries .file/.loc and the .debug_* sections, and at -O0 a
// frame in local memory that every variable goes through. rank(out, in, n), per i < n: the
// five values in[(i + 3k) % n], k < 5, each times weight = 1 + (index % 5), sorted in a private
// array; out[i] = median * 3 + (largest - smallest).
// (No __local array: LLVM 14's debug info names a demoted __local variable by a symbol that does
// not exist, which ptxas refuses.)
int weight(int i) {
  int w = 1;
  for (int k = 0; k < i % 5; ++k) w += 1;
  return w;
}

void sort5(int* v) {
  for (int a = 1; a < 5; ++a) {
    int x = v[a];
    int b = a - 1;
    while (b >= 0 && v[b] > x) {
      v[b + 1] = v[b];
      --b;
    }
    v[b + 1] = x;
  }
}

__kernel void rank(__global int* out, __global const int* in, int n) {
  int i = __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() +
          __nvvm_read_ptx_sreg_tid_x();
  if (i >= n) return;
  int v[5];
  for (int k = 0; k < 5; ++k) {
    int j = (i + 3 * k) % n;
    v[k] = in[j] * weight(j);
  }
  sort5(v);
  out[i] = v[2] * 3 + (v[4] - v[0]);
}
