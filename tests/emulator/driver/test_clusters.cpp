// Cluster launches through the driver API (kernels/cluster.cu, nvcc-built): cuLaunchKernelEx
// with CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, the driver's rules for cluster shapes (grid
// multiples, 8 CTAs or 16 when non-portable sizes are allowed, compile-time shapes, kernels that
// must be launched as clusters), the function attributes that describe them, and a distributed
// shared memory reduction against a host reference.
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

namespace {

struct Module {
  CUmodule module = nullptr;
  Module() {
    primary_context();
    const std::string ptx = read_file(kernel_path("cluster.ptx"));
    REQUIRE(cuModuleLoadData(&module, ptx.c_str()) == CUDA_SUCCESS);
  }
  ~Module() { cuModuleUnload(module); }
  CUfunction get(const char* name) const {
    CUfunction f = nullptr;
    REQUIRE(cuModuleGetFunction(&f, module, name) == CUDA_SUCCESS);
    return f;
  }
};

int attribute(CUfunction f, CUfunction_attribute a) {
  int v = -1;
  REQUIRE(cuFuncGetAttribute(&v, a, f) == CUDA_SUCCESS);
  return v;
}

// Launches `f` on `blocks` CTAs of 128 threads (cluster x-size `cluster`, 0: no attribute) and
// returns the launch's result; on success `out` holds what the kernel recorded.
CUresult launch(CUfunction f, unsigned blocks, unsigned cluster, std::vector<unsigned>* out,
                CUlaunchAttribute* extra_attr = nullptr) {
  CUdeviceptr d = 0;
  REQUIRE(cuMemAlloc(&d, blocks * 4) == CUDA_SUCCESS);
  REQUIRE(cuMemsetD32(d, 0xffffffffu, blocks) == CUDA_SUCCESS);
  CUlaunchAttribute attrs[2]{};
  unsigned n = 0;
  if (cluster != 0) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = cluster;
    attrs[n].value.clusterDim.y = attrs[n].value.clusterDim.z = 1;
    ++n;
  }
  if (extra_attr) attrs[n++] = *extra_attr;
  CUlaunchConfig config{};
  config.gridDimX = blocks;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 128;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = attrs;
  config.numAttrs = n;
  void* args[] = {&d};
  CUresult r = cuLaunchKernelEx(&config, f, args, nullptr);
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  if (r == CUDA_SUCCESS && out) {
    out->assign(blocks, 0);
    REQUIRE(cuMemcpyDtoH(out->data(), d, blocks * 4) == CUDA_SUCCESS);
  }
  cuMemFree(d);
  return r;
}

// What record() writes for `blocks` CTAs in clusters of `size` along x.
std::vector<unsigned> expected(unsigned blocks, unsigned size) {
  std::vector<unsigned> v(blocks);
  for (unsigned b = 0; b < blocks; ++b) v[b] = b % size | size << 8 | (b / size) << 16;
  return v;
}

}  // namespace

TEST_CASE("clusters: launch shapes follow the driver's rules", "[clusters]") {
  Module m;
  CUfunction any = m.get("any_rank");
  std::vector<unsigned> out;
  for (unsigned size : {1u, 2u, 4u, 8u}) {
    INFO("cluster " << size);
    REQUIRE(launch(any, 16, size, &out) == CUDA_SUCCESS);
    CHECK(out == expected(16, size));
  }
  REQUIRE(launch(any, 16, 0, &out) == CUDA_SUCCESS);  // no attribute: clusters of one
  CHECK(out == expected(16, 1));
  CHECK(launch(any, 16, 3, nullptr) == CUDA_ERROR_INVALID_CLUSTER_SIZE);   // not a grid divisor
  CHECK(launch(any, 16, 16, nullptr) == CUDA_ERROR_INVALID_CLUSTER_SIZE);  // > 8, portable
  CHECK(cuFuncSetAttribute(any, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 2) ==
        CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cuFuncSetAttribute(any, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1) ==
          CUDA_SUCCESS);
  REQUIRE(launch(any, 32, 16, &out) == CUDA_SUCCESS);
  CHECK(out == expected(32, 16));
  CHECK(launch(any, 32, 32, nullptr) == CUDA_ERROR_INVALID_CLUSTER_SIZE);  // > 16
  // A scheduling preference is a hint; an unknown one is refused.
  CUlaunchAttribute policy{};
  policy.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
  policy.value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
  REQUIRE(launch(any, 8, 4, &out, &policy) == CUDA_SUCCESS);
  CHECK(out == expected(8, 4));
  policy.value.clusterSchedulingPolicyPreference = static_cast<CUclusterSchedulingPolicy>(7);
  CHECK(launch(any, 8, 4, nullptr, &policy) == CUDA_ERROR_INVALID_VALUE);
  int v = 0;
  REQUIRE(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 0) == CUDA_SUCCESS);
  CHECK(v == 1);
}

TEST_CASE("clusters: compile-time shapes, required shapes and kernels that need a cluster",
          "[clusters]") {
  Module m;
  CUfunction fixed = m.get("fixed_rank");
  CUfunction must = m.get("explicit_rank");
  CUfunction any = m.get("any_rank");
  CHECK(attribute(fixed, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH) == 2);
  CHECK(attribute(fixed, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT) == 1);
  CHECK(attribute(fixed, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH) == 1);
  CHECK(attribute(fixed, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET) == 1);
  CHECK(attribute(must, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH) == 0);
  CHECK(attribute(must, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET) == 1);
  CHECK(attribute(any, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET) == 0);
  // A compile-time shape cannot be replaced.
  CHECK(cuFuncSetAttribute(fixed, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 4) ==
        CUDA_ERROR_NOT_PERMITTED);
  std::vector<unsigned> out;
  REQUIRE(launch(fixed, 8, 0, &out) == CUDA_SUCCESS);  // runs with its own shape
  CHECK(out == expected(8, 2));
  REQUIRE(launch(fixed, 8, 2, &out) == CUDA_SUCCESS);
  CHECK(out == expected(8, 2));
  CHECK(launch(fixed, 8, 4, nullptr) == CUDA_ERROR_INVALID_CLUSTER_SIZE);  // conflicts
  CHECK(launch(fixed, 7, 0, nullptr) == CUDA_ERROR_INVALID_CLUSTER_SIZE);  // 2 does not divide 7
  // .explicitcluster without a shape: only cluster launches.
  CHECK(launch(must, 8, 0, nullptr) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  CUdeviceptr d = 0;
  REQUIRE(cuMemAlloc(&d, 64) == CUDA_SUCCESS);
  void* args[] = {&d};
  CHECK(cuLaunchKernel(must, 8, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr) ==
        CUDA_ERROR_INVALID_CLUSTER_SIZE);
  cuMemFree(d);
  REQUIRE(launch(must, 8, 4, &out) == CUDA_SUCCESS);
  CHECK(out == expected(8, 4));
  // A shape required at run time is the launch's default and must match a given one.
  CHECK(cuFuncSetAttribute(any, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, -1) ==
        CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cuFuncSetAttribute(any, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 4) == CUDA_SUCCESS);
  REQUIRE(cuFuncSetAttribute(any, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, 1) == CUDA_SUCCESS);
  REQUIRE(cuFuncSetAttribute(any, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, 1) == CUDA_SUCCESS);
  CHECK(attribute(any, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH) == 4);
  REQUIRE(launch(any, 8, 0, &out) == CUDA_SUCCESS);
  CHECK(out == expected(8, 4));
  CHECK(launch(any, 8, 2, nullptr) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  int size = 0;
  CUlaunchConfig config{};
  config.gridDimX = 8;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 128;
  config.blockDimY = config.blockDimZ = 1;
  REQUIRE(cuOccupancyMaxPotentialClusterSize(&size, fixed, &config) == CUDA_SUCCESS);
  CHECK(size == 2);
  REQUIRE(cuOccupancyMaxPotentialClusterSize(&size, any, &config) == CUDA_SUCCESS);
  CHECK(size == 4);
  // Scheduling policy preference: get/set, the three policies only.
  CHECK(cuFuncSetAttribute(any, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 3) ==
        CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cuFuncSetAttribute(any, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
                             CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING) == CUDA_SUCCESS);
  CHECK(attribute(any, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE) ==
        CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING);
}

TEST_CASE("clusters: a distributed shared memory reduction equals the host's sums", "[clusters]") {
  Module m;
  CUfunction sum = m.get("dsmem_sum");
  const unsigned blocks = 16;
  std::vector<int> in(blocks * 128);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>((i * 2654435761u) % 1999) - 999;
  CUdeviceptr din = 0, dout = 0;
  REQUIRE(cuMemAlloc(&din, in.size() * 4) == CUDA_SUCCESS);
  REQUIRE(cuMemAlloc(&dout, blocks * 4) == CUDA_SUCCESS);
  REQUIRE(cuMemcpyHtoD(din, in.data(), in.size() * 4) == CUDA_SUCCESS);
  for (unsigned size : {1u, 2u, 4u, 8u}) {
    INFO("cluster " << size);
    std::vector<int> ref(blocks / size, 0);
    for (size_t i = 0; i < in.size(); ++i) ref[i / 128 / size] += in[i];
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = size;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    CUlaunchConfig config{};
    config.gridDimX = blocks;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 128;
    config.blockDimY = config.blockDimZ = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
    void* args[] = {&din, &dout};
    REQUIRE(cuLaunchKernelEx(&config, sum, args, nullptr) == CUDA_SUCCESS);
    std::vector<int> out(ref.size());
    REQUIRE(cuMemcpyDtoH(out.data(), dout, out.size() * 4) == CUDA_SUCCESS);
    CHECK(out == ref);
  }
  cuMemFree(din);
  cuMemFree(dout);
}
