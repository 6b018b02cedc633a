// texture: a 2-D float CUDA array (cuArray3DCreate, cuMemcpy2D into the array), a texture
// object with linear filtering, normalized coordinates, wrap addressing along x and clamp along
// y (cuTexObjectCreate), and a kernel sampling it at coordinates inside, on texel borders, below
// 0 and above 1. The host computes each sample the way the CUDA Programming Guide's "Texture
// Fetching" appendix defines linear filtering. Coordinates are multiples of 1/(4 * extent), so
// every filter weight is a multiple of 1/4: exact in the 9-bit fixed-point weights of the
// hardware; a small tolerance covers how a GPU rounds the weighted sum.
#include <cmath>

#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(texture_kernels)

using namespace cusnap::samples;

namespace {

constexpr size_t kWidth = 64, kHeight = 32;

// wrap: the index modulo the extent; clamp: the nearest index inside.
long wrap(long i, long n) { return ((i % n) + n) % n; }
long clamp(long i, long n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

float host_sample(const std::vector<float>& texels, float u, float v) {
  const float x = u * kWidth - 0.5f, y = v * kHeight - 0.5f;
  const float fx = std::floor(x), fy = std::floor(y);
  const double a = x - fx, b = y - fy;
  const long i = static_cast<long>(fx), j = static_cast<long>(fy);
  auto t = [&](long xi, long yj) {
    return static_cast<double>(texels[clamp(yj, kHeight) * kWidth + wrap(xi, kWidth)]);
  };
  return static_cast<float>((1 - a) * (1 - b) * t(i, j) + a * (1 - b) * t(i + 1, j) +
                            (1 - a) * b * t(i, j + 1) + a * b * t(i + 1, j + 1));
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 12, " (number of samples)");
  const size_t n = options.size;
  if (n > (1u << 24)) fail_usage("--size must be at most 16777216");

  std::vector<float> texels(kWidth * kHeight);
  Lcg rng(7);
  for (float& t : texels) t = rng.next_float(0.0f, 1.0f);
  std::vector<float> coords(2 * n), reference(n);
  for (size_t i = 0; i < n; ++i) {
    // Quarter-texel steps from 1.5 extents below 0 to 1.5 above 1.
    const long qx = static_cast<long>(i * 37 % (16 * kWidth)) - 6 * static_cast<long>(kWidth);
    const long qy = static_cast<long>(i * 53 % (16 * kHeight)) - 6 * static_cast<long>(kHeight);
    coords[2 * i] = static_cast<float>(qx) / (4 * kWidth);
    coords[2 * i + 1] = static_cast<float>(qy) / (4 * kHeight);
    reference[i] = host_sample(texels, coords[2 * i], coords[2 * i + 1]);
  }
  maybe_inject_error(options, reference);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, texture_kernels_image().data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "sample"));

  CUDA_ARRAY3D_DESCRIPTOR desc = {};
  desc.Width = kWidth;
  desc.Height = kHeight;
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.NumChannels = 1;
  CUarray array;
  CU_CHECK(cuArray3DCreate(&array, &desc));
  CUDA_MEMCPY2D up = {};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = texels.data();
  up.srcPitch = kWidth * sizeof(float);
  up.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  up.dstArray = array;
  up.WidthInBytes = kWidth * sizeof(float);
  up.Height = kHeight;
  CU_CHECK(cuMemcpy2D(&up));

  CUDA_RESOURCE_DESC resource = {};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = array;
  CUDA_TEXTURE_DESC sampler = {};
  sampler.addressMode[0] = CU_TR_ADDRESS_MODE_WRAP;
  sampler.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
  sampler.filterMode = CU_TR_FILTER_MODE_LINEAR;
  sampler.flags = CU_TRSF_NORMALIZED_COORDINATES;
  CUtexObject texture;
  CU_CHECK(cuTexObjectCreate(&texture, &resource, &sampler, nullptr));

  CUdeviceptr d_coords, d_out;
  CU_CHECK(cuMemAlloc(&d_coords, coords.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_out, n * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_coords, coords.data(), coords.size() * sizeof(float)));
  int count = static_cast<int>(n);
  void* params[] = {&texture, &d_coords, &d_out, &count};
  const unsigned block = 128;
  CU_CHECK(
      cuLaunchKernel(kernel, blocks_for(n, block), 1, 1, block, 1, 1, 0, nullptr, params, nullptr));
  std::vector<float> out(n);
  CU_CHECK(cuMemcpyDtoH(out.data(), d_out, n * sizeof(float)));

  bool ok = compare_close(reference, out, 1e-5, 1e-5);
  CU_CHECK(cuTexObjectDestroy(texture));
  CU_CHECK(cuArrayDestroy(array));
  CU_CHECK(cuMemFree(d_coords));
  CU_CHECK(cuMemFree(d_out));
  CU_CHECK(cuModuleUnload(module));
  return finish("texture", ok, "n=" + std::to_string(n) + ", 2D linear, wrap x, clamp y");
}
