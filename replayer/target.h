// Checks made before the first call is replayed, so that an unusable target gives a clear error
// rather than a crash halfway: device present, compute capability versus the code in each
// module image, device memory needed versus free, cooperative and cluster launch support.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "replayer/driver.h"
#include "replayer/plan.h"
#include "replayer/status.h"

namespace cusnap::replayer {

// The code a module image carries: SASS for these sm versions (major*10+minor), PTX for these.
struct ImageArchitectures {
  std::vector<int> sass;
  std::vector<int> ptx;
  bool known = false;  // false: the image could not be inspected (the driver will decide)
};

// Reads fatbin entry headers or a PTX `.target` (a bare cubin is left to the driver). Never reads
// out of bounds.
ImageArchitectures image_architectures(std::span<const uint8_t> image);

// True when a device of compute capability `cc` (major*10+minor) can run the image: SASS of the
// same major version and no newer minor, or PTX no newer than the device (JIT compiled).
bool image_runs_on(const ImageArchitectures& archs, int cc);

// "sm_90, compute_75"
std::string describe_architectures(const ImageArchitectures& archs);

}  // namespace cusnap::replayer
