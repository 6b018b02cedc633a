// libFuzzer target for the replay set-up path: any byte string must either be refused by the
// reader or turned into a plan (or a plan error) without a crash, a leak or undefined behaviour.
// Built with -DCUSNAP_BUILD_FUZZERS=ON under clang (the "fuzz" preset); seeds: any capture,
// e.g. the reader fuzzer's corpus or the captures tests/replayer writes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "cusnap/format/reader.h"
#include "fuzz_support.h"
#include "replayer/memory.h"
#include "replayer/plan.h"

using namespace cusnap;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::skip_checksums();  // mutations reach the records (fuzz_support.h)
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool use_footer : {true, false}) {
    auto reader = format::Reader::open_memory(std::span<const uint8_t>(data, size),
                                              fuzz::reader_options(use_footer));
    if (!reader) continue;
    auto plan = replayer::build_plan(*reader.value());
    if (!plan) continue;
    // What the executor computes from a plan before touching a driver.
    (void)replayer::DeviceMemory::bytes_needed(plan.value().memory_ranges, 2u << 20);
    for (const replayer::Action& a : plan.value().actions) (void)replayer::operation_name(a.op);
  }
  return 0;
}
