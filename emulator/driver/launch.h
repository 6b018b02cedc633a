// A validated kernel launch, separated from queueing it, so that stream launches, graph kernel
// nodes and stream capture share one set of checks and one way to run a kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "driver/module.h"
#include "driver/stream.h"
#include "generated_driver_api.h"

namespace cusnap::emu::driver {

class Context;

struct LaunchRequest {
  ptx::Dim3 grid, block;
  unsigned shared = 0;
  CUstream stream = nullptr;
  bool cooperative = false;
  ptx::Dim3 cluster{1, 1, 1};
  bool cluster_given = false;  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION was passed
};

// The cluster shape a function requires: `.reqnctapercluster` (compile time, `__cluster_dims__`)
// or else the CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_* attributes; zeros when it requires none.
ptx::Dim3 required_cluster(const Function& f);
// The cluster shape a launch of `f` runs with (the requested one, or the required one when none
// was requested), checked with the driver's rules: it equals the required shape, divides the
// grid, has at most 8 CTAs (16 with CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) and no
// more than `.maxclusterrank`, and is given when the kernel has `.explicitcluster` without a
// shape. CUDA_ERROR_INVALID_CLUSTER_SIZE otherwise.
CUresult launch_cluster(const Function& f, const LaunchRequest& request, ptx::Dim3* out);

// Everything a launch needs once its arguments have been checked: the kernel, its
// configuration and a copy of its parameter buffer (taken at call time, as the driver does).
struct PreparedLaunch {
  Function* function = nullptr;
  LaunchRequest request;
  std::shared_ptr<const std::vector<uint8_t>> params;
};

// Checks the configuration against the function and the device (CUDA_ERROR_INVALID_VALUE,
// CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, CUDA_ERROR_INVALID_CLUSTER_SIZE; the cluster shape
// in `out` is the one launch_cluster chose) and copies the parameters from `kernelParams` or
// `extra` (exactly one of them, or neither for a kernel without parameters).
CUresult prepare_launch(Function* f, const LaunchRequest& request, void** kernelParams,
                        void** extra, PreparedLaunch* out);
// The stream operation that runs a prepared launch in `ctx` (a failure poisons the context).
Stream::Work launch_work(Context* ctx, const PreparedLaunch& launch);

}  // namespace cusnap::emu::driver
