// link_occupancy: the two patterns NVIDIA's driver-API samples teach that no other sample here
// uses. JIT linking: two relocatable PTX modules (a kernel calling a device function, and reading
// a variable, that only the other module defines) linked with cuLinkCreate / cuLinkAddData /
// cuLinkComplete, the linked image loaded with cuModuleLoadData and the variable set through
// cuModuleGetGlobal. Occupancy: the block size from cuOccupancyMaxPotentialBlockSize, checked
// with cuOccupancyMaxActiveBlocksPerMultiprocessor, and the launch made with it. The result is
// compared exactly with a host computation (every value is exact in float).
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(link_main)
CUSNAP_EMBEDDED_IMAGE(link_lib)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 10000, " (elements)");
  const size_t n = options.size;
  if (n > (size_t{1} << 24)) fail_usage("--size must be at most 16777216");
  constexpr int kOffset = 3;
  const float coefficients[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  std::vector<float> in(n), out(n), reference(n);
  for (size_t i = 0; i < n; ++i) {
    in[i] = static_cast<float>(static_cast<int>(i % 1024) - 512);
    reference[i] = in[i] * coefficients[i & 3] + 1.0f + static_cast<float>(kOffset);
  }
  maybe_inject_error(options, reference);

  PrimaryContext context;
  char info_log[8192] = {}, error_log[8192] = {};
  CUjit_option keys[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {info_log, reinterpret_cast<void*>(uintptr_t{sizeof info_log}), error_log,
                    reinterpret_cast<void*>(uintptr_t{sizeof error_log})};
  CUlinkState link;
  CU_CHECK(cuLinkCreate(4, keys, values, &link));
  EmbeddedImage main_ptx = link_main_image(), lib_ptx = link_lib_image();
  CUresult added = cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<unsigned char*>(main_ptx.data),
                                 main_ptx.size + 1, "link_main.ptx", 0, nullptr, nullptr);
  if (added == CUDA_SUCCESS)
    added = cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<unsigned char*>(lib_ptx.data),
                          lib_ptx.size + 1, "link_lib.ptx", 0, nullptr, nullptr);
  void* linked = nullptr;
  size_t linked_size = 0;
  if (added == CUDA_SUCCESS) added = cuLinkComplete(link, &linked, &linked_size);
  if (added != CUDA_SUCCESS) {
    std::fprintf(stderr, "linking failed: %s\n", error_log);
    CU_CHECK(added);
  }
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, linked));  // the image lives as long as the link state
  CU_CHECK(cuLinkDestroy(link));
  CUfunction apply;
  CU_CHECK(cuModuleGetFunction(&apply, module, "apply"));
  CUdeviceptr d_offset;
  size_t offset_bytes = 0;
  CU_CHECK(cuModuleGetGlobal(&d_offset, &offset_bytes, module, "offset_value"));
  if (offset_bytes != sizeof(int)) fail_usage("offset_value is not an int");
  const int offset = kOffset;
  CU_CHECK(cuMemcpyHtoD(d_offset, &offset, sizeof offset));

  int min_grid = 0, block = 0, resident = 0;
  CU_CHECK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, apply, nullptr, 0, 0));
  CU_CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&resident, apply, block, 0));
  if (block <= 0 || block > 1024 || block % 32 != 0 || resident <= 0 || min_grid <= 0) {
    std::fprintf(stderr, "implausible occupancy: block %d, %d resident blocks, min grid %d\n",
                 block, resident, min_grid);
    return 2;
  }

  CUdeviceptr d_in, d_out;
  CU_CHECK(cuMemAlloc(&d_in, n * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_out, n * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_in, in.data(), n * sizeof(float)));
  CU_CHECK(cuMemsetD32(d_out, 0x7fc00000u, n));  // NaN: unwritten outputs cannot pass
  int count = static_cast<int>(n);
  void* params[] = {&d_in, &d_out, &count};
  CU_CHECK(cuLaunchKernel(apply, blocks_for(n, unsigned(block)), 1, 1, unsigned(block), 1, 1, 0,
                          nullptr, params, nullptr));
  CU_CHECK(cuMemcpyDtoH(out.data(), d_out, n * sizeof(float)));
  bool ok = compare_exact(reference, out);

  CU_CHECK(cuMemFree(d_in));
  CU_CHECK(cuMemFree(d_out));
  CU_CHECK(cuModuleUnload(module));
  char detail[160];
  std::snprintf(detail, sizeof(detail),
                "%zu elements, 2 PTX modules linked (%zu-byte image), block %d from occupancy "
                "(%d resident per SM), exact",
                n, linked_size, block, resident);
  return finish("link_occupancy", ok, detail);
}
