// surface: a 2-D int2 CUDA array created with CUDA_ARRAY3D_SURFACE_LDST, a surface object
// (cuSurfObjectCreate), one kernel that writes every texel with surf2Dwrite and a second that
// reads each texel and its right neighbour back with surf2Dread (zero boundary mode past the
// last column); then the array itself is copied back to the host (cuMemcpy2D from the array).
// Both the kernel's results and the array contents are checked exactly.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(surface_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 48, " (surface width; height = width / 2 + 1)");
  const size_t width = options.size, height = width / 2 + 1;
  if (width < 2 || width > 4096) fail_usage("--size must be between 2 and 4096");

  std::vector<int> texels(2 * width * height), reference(width * height);
  for (size_t y = 0; y < height; ++y)
    for (size_t x = 0; x < width; ++x) {
      const int xi = static_cast<int>(x), yi = static_cast<int>(y);
      texels[2 * (y * width + x)] = xi * 1000 + yi;
      texels[2 * (y * width + x) + 1] = xi - 7 * yi;
    }
  for (size_t y = 0; y < height; ++y)
    for (size_t x = 0; x < width; ++x) {
      const size_t i = y * width + x;
      const int right = x + 1 < width ? texels[2 * (i + 1)] : 0;
      reference[i] = texels[2 * i] + 3 * texels[2 * i + 1] - right;
    }
  std::vector<int> reference_texels = texels;
  maybe_inject_error(options, reference);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, surface_kernels_image().data));
  CUfunction write_kernel, read_kernel;
  CU_CHECK(cuModuleGetFunction(&write_kernel, module, "write_texels"));
  CU_CHECK(cuModuleGetFunction(&read_kernel, module, "read_back"));

  CUDA_ARRAY3D_DESCRIPTOR desc = {};
  desc.Width = width;
  desc.Height = height;
  desc.Format = CU_AD_FORMAT_SIGNED_INT32;
  desc.NumChannels = 2;
  desc.Flags = CUDA_ARRAY3D_SURFACE_LDST;
  CUarray array;
  CU_CHECK(cuArray3DCreate(&array, &desc));
  CUDA_RESOURCE_DESC resource = {};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = array;
  CUsurfObject surface;
  CU_CHECK(cuSurfObjectCreate(&surface, &resource));

  CUdeviceptr d_out;
  CU_CHECK(cuMemAlloc(&d_out, width * height * sizeof(int)));
  int w = static_cast<int>(width), h = static_cast<int>(height);
  void* write_params[] = {&surface, &w, &h};
  CU_CHECK(cuLaunchKernel(write_kernel, blocks_for(width, 16), blocks_for(height, 8), 1, 16, 8, 1,
                          0, nullptr, write_params, nullptr));
  void* read_params[] = {&surface, &w, &h, &d_out};
  CU_CHECK(cuLaunchKernel(read_kernel, blocks_for(width, 16), blocks_for(height, 8), 1, 16, 8, 1, 0,
                          nullptr, read_params, nullptr));
  std::vector<int> out(width * height), back(2 * width * height, -1);
  CU_CHECK(cuMemcpyDtoH(out.data(), d_out, out.size() * sizeof(int)));
  CUDA_MEMCPY2D down = {};
  down.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  down.srcArray = array;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = back.data();
  down.dstPitch = width * 2 * sizeof(int);
  down.WidthInBytes = width * 2 * sizeof(int);
  down.Height = height;
  CU_CHECK(cuMemcpy2D(&down));

  bool ok = compare_exact(reference, out) && compare_exact(reference_texels, back);
  CU_CHECK(cuSurfObjectDestroy(surface));
  CU_CHECK(cuArrayDestroy(array));
  CU_CHECK(cuMemFree(d_out));
  CU_CHECK(cuModuleUnload(module));
  return finish("surface", ok,
                std::to_string(width) + "x" + std::to_string(height) + " int2, exact");
}
