// A stand-in libcuda.so.1 for the driver search tests: cuInit succeeds, cuDeviceGetCount reports
// CUSNAP_FAKE_DEVICES devices; built once per role (CUSNAP_FAKE_ROLE: marked as the cusnap
// interceptor or emulator, or unmarked like NVIDIA's driver).
#include "cusnap/common/library_mark.h"

#ifdef CUSNAP_FAKE_ROLE
CUSNAP_MARK_LIBRARY(CUSNAP_FAKE_ROLE);
#endif

extern "C" __attribute__((visibility("default"))) int cuInit(unsigned) { return 0; }

extern "C" __attribute__((visibility("default"))) int cuDeviceGetCount(int* count) {
  *count = CUSNAP_FAKE_DEVICES;
  return 0;
}
