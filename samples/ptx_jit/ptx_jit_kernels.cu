// Compiled to PTX text (not a fatbin) and JIT-compiled by the driver at load time.
#include "ptx_jit_params.h"

__constant__ float c_coefficients[kMaxCoefficients];

// y[i] = scale * sum_j c_j * x[i]^j + bias (Horner form).
extern "C" __global__ void poly_eval(PolyParams p, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p.n) return;
  float v = x[i];
  float acc = c_coefficients[p.degree];
  for (int j = p.degree - 1; j >= 0; --j) acc = acc * v + c_coefficients[j];
  y[i] = p.scale * acc + static_cast<float>(p.bias);
}
