// Elementary kernels: vector add, SAXPY, grid-stride loop, struct by value, pointer chasing.
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void grid_stride(const int* in, long long* out, double* dout, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    int v = in[i];
    out[i] = (long long)v * v - (v >> 3) + __popc(v) + __clz(v) + __brev(v);
    dout[i] = (double)v / 3.0 + sqrt((double)(v & 0xffff));
  }
}

struct Params {
  double scale;
  float offset[3];
  char tag;
  short bias;
  int idx[4];
};

extern "C" __global__ void struct_by_value(Params p, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (float)(p.scale * i) + p.offset[i % 3] + p.tag + p.bias + p.idx[i % 4];
}

struct Node {
  Node* next;
  int value;
};

extern "C" __global__ void pointer_chase(Node* const* heads, int* sums, int* lengths, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int s = 0, len = 0;
  for (Node* p = heads[i]; p != nullptr; p = p->next) {
    s += p->value;
    ++len;
  }
  sums[i] = s;
  lengths[i] = len;
}

extern "C" __global__ void vec4_copy(const float4* in, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 v = __ldg(&in[i]);
    out[i] = make_float4(v.w, v.z * 2.0f, v.y + 1.0f, v.x);
  }
}

extern "C" __global__ void int_ops(const int* a, const int* b, int* out, unsigned long long* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  out[i * 8 + 0] = x / (y == 0 ? 1 : y);
  out[i * 8 + 1] = x % (y == 0 ? 1 : y);
  out[i * 8 + 2] = min(x, y) ^ max(x, y);
  out[i * 8 + 3] = __mulhi(x, y);
  out[i * 8 + 4] = (unsigned)x >> (y & 31);
  out[i * 8 + 5] = abs(x) + (x << (y & 15));
  out[i * 8 + 6] = __byte_perm(x, y, 0x5140);
  out[i * 8 + 7] = (x & 0xff00) | (y & 0xff);
  wide[i] = (unsigned long long)(unsigned)x * (unsigned)y + __umul64hi((unsigned long long)x, (unsigned long long)y);
}
