// pitched_2d: cuMemAllocPitch, cuMemsetD2D32, cuMemcpy2D host-to-device of an odd-width
// sub-rectangle between different pitches and offsets, a 2-D kernel, cuMemcpy2D back into a
// padded host buffer; then cuMemcpy3D of a small volume into padded device memory, a 3-D
// kernel, and cuMemcpy3D back. Integer data, exact comparison, host padding must stay untouched.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(pitched_kernels)

using namespace cusnap::samples;

namespace {

constexpr int kFill = 0x01020304;
constexpr int kSentinel = -7;

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 37, " (image width; height = width / 2 + 3)");
  const size_t width = options.size, height = width / 2 + 3;
  if (width < 8 || width > 16384) fail_usage("--size must be between 8 and 16384");

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, pitched_kernels_image().data));
  CUfunction kernel_2d, kernel_3d;
  CU_CHECK(cuModuleGetFunction(&kernel_2d, module, "transform_2d"));
  CU_CHECK(cuModuleGetFunction(&kernel_3d, module, "transform_3d"));

  // ---- 2-D ----
  CUdeviceptr d_image;
  size_t pitch = 0;
  CU_CHECK(cuMemAllocPitch(&d_image, &pitch, width * sizeof(int), height, sizeof(int)));
  CU_CHECK(cuMemsetD2D32(d_image, pitch, kFill, width, height));

  // Host source: wider rows than the image; a sub-rectangle lands at an offset on the device.
  const size_t src_cols = width + 5;
  std::vector<int> source(src_cols * height);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<int>(i * 13 % 1000) - 500;
  const size_t src_x = 2, src_y = 1, dst_x = 3, dst_y = 2;
  const size_t copy_cols = width - 6, copy_rows = height - 4;  // odd width when width is odd
  CUDA_MEMCPY2D up = {};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = source.data();
  up.srcPitch = src_cols * sizeof(int);
  up.srcXInBytes = src_x * sizeof(int);
  up.srcY = src_y;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = d_image;
  up.dstPitch = pitch;
  up.dstXInBytes = dst_x * sizeof(int);
  up.dstY = dst_y;
  up.WidthInBytes = copy_cols * sizeof(int);
  up.Height = copy_rows;
  CU_CHECK(cuMemcpy2D(&up));

  int w = static_cast<int>(width), h = static_cast<int>(height);
  void* params_2d[] = {&d_image, &pitch, &w, &h};
  CU_CHECK(cuLaunchKernel(kernel_2d, blocks_for(width, 8), blocks_for(height, 8), 1, 8, 8, 1, 0,
                          nullptr, params_2d, nullptr));

  const size_t out_cols = width + 3;
  std::vector<int> image_out(out_cols * height, kSentinel);
  CUDA_MEMCPY2D down = {};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = d_image;
  down.srcPitch = pitch;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = image_out.data();
  down.dstPitch = out_cols * sizeof(int);
  down.WidthInBytes = width * sizeof(int);
  down.Height = height;
  CU_CHECK(cuMemcpy2D(&down));

  std::vector<int> reference(out_cols * height, kSentinel);
  for (size_t y = 0; y < height; ++y) {
    for (size_t x = 0; x < width; ++x) {
      int value = kFill;
      if (x >= dst_x && x < dst_x + copy_cols && y >= dst_y && y < dst_y + copy_rows) {
        value = source[(y - dst_y + src_y) * src_cols + (x - dst_x + src_x)];
      }
      reference[y * out_cols + x] = value * 2 + int(x) - 3 * int(y);
    }
  }

  // ---- 3-D ----
  const size_t nx = 5, ny = 7, nz = 3;
  const size_t d_pitch = 8 * sizeof(int), d_rows = 9;  // padded rows and slices on the device
  CUdeviceptr d_volume;
  CU_CHECK(cuMemAlloc(&d_volume, d_pitch * d_rows * nz));
  CU_CHECK(cuMemsetD32(d_volume, 0, d_pitch * d_rows * nz / sizeof(int)));
  std::vector<int> volume(nx * ny * nz);
  for (size_t i = 0; i < volume.size(); ++i) volume[i] = static_cast<int>(i * 7) - 40;

  CUDA_MEMCPY3D up3 = {};
  up3.srcMemoryType = CU_MEMORYTYPE_HOST;
  up3.srcHost = volume.data();
  up3.srcPitch = nx * sizeof(int);
  up3.srcHeight = ny;
  up3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up3.dstDevice = d_volume;
  up3.dstPitch = d_pitch;
  up3.dstHeight = d_rows;
  up3.WidthInBytes = nx * sizeof(int);
  up3.Height = ny;
  up3.Depth = nz;
  CU_CHECK(cuMemcpy3D(&up3));

  size_t kpitch = d_pitch;
  int rows_per_slice = int(d_rows), inx = int(nx), iny = int(ny), inz = int(nz);
  void* params_3d[] = {&d_volume, &kpitch, &rows_per_slice, &inx, &iny, &inz};
  CU_CHECK(cuLaunchKernel(kernel_3d, 2, 2, 2, 4, 4, 2, 0, nullptr, params_3d, nullptr));

  const size_t h_cols = nx + 1, h_rows = ny + 1;  // differently padded host volume
  std::vector<int> volume_out(h_cols * h_rows * nz, kSentinel);
  CUDA_MEMCPY3D down3 = {};
  down3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down3.srcDevice = d_volume;
  down3.srcPitch = d_pitch;
  down3.srcHeight = d_rows;
  down3.dstMemoryType = CU_MEMORYTYPE_HOST;
  down3.dstHost = volume_out.data();
  down3.dstPitch = h_cols * sizeof(int);
  down3.dstHeight = h_rows;
  down3.WidthInBytes = nx * sizeof(int);
  down3.Height = ny;
  down3.Depth = nz;
  CU_CHECK(cuMemcpy3D(&down3));

  std::vector<int> reference_3d(volume_out.size(), kSentinel);
  for (size_t z = 0; z < nz; ++z)
    for (size_t y = 0; y < ny; ++y)
      for (size_t x = 0; x < nx; ++x)
        reference_3d[(z * h_rows + y) * h_cols + x] =
            volume[(z * ny + y) * nx + x] * 3 + 100 * int(z);

  // Both results in one comparison; indices past the 2-D image belong to the volume.
  reference.insert(reference.end(), reference_3d.begin(), reference_3d.end());
  image_out.insert(image_out.end(), volume_out.begin(), volume_out.end());
  maybe_inject_error(options, reference);
  bool ok = compare_exact(reference, image_out);

  CU_CHECK(cuMemFree(d_image));
  CU_CHECK(cuMemFree(d_volume));
  CU_CHECK(cuModuleUnload(module));
  char detail[160];
  std::snprintf(detail, sizeof(detail), "%zux%zu image (pitch %zu), %zux%zux%zu volume, exact",
                width, height, pitch, nx, ny, nz);
  return finish("pitched_2d", ok, detail);
}
