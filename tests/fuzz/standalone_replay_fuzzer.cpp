// libFuzzer target for the standalone replay of an extracted capture (`cusnap replay EXTRACT`,
// docs/replay.md): any byte string opened as a capture (checksums skipped, fuzz_support.h) that
// the replayer plans as an extracted one is replayed in this process on the cusnap emulator:
// the memory reserved at the captured addresses, the beforeLaunch chunks restored, the launch
// run, every afterLaunch chunk compared (exactly, and once more element-wise with a --tolerance
// rule, which takes the other comparison path). A forged extract must end in a refusal, an
// error or a mismatch: never a crash, a leak, undefined behaviour or an unbounded allocation.
// The emulator is held to small limits (device memory, a launch watchdog, one worker thread) so
// that an input costs little; its path is compiled in (CUSNAP_FUZZ_EMULATOR).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "cusnap/format/reader.h"
#include "fuzz_support.h"
#include "replayer/plan.h"
#include "replayer/replay.h"
#include "replayer/tolerance.h"

using namespace cusnap;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::skip_checksums();
  // Read by the emulator when the replay loads it (docs/emulator.md): 256 MiB of device memory,
  // launches stopped after 2 s, one thread.
  setenv("CUSNAP_EMU_MEMORY", "256M", 1);
  setenv("CUSNAP_EMU_TIMEOUT", "2", 1);
  setenv("CUSNAP_EMU_THREADS", "1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto opened =
      format::Reader::open_memory(std::span<const uint8_t>(data, size), fuzz::reader_options(true));
  if (!opened) return 0;
  format::Reader& reader = *opened.value();
  auto plan = replayer::build_plan(reader);
  if (!plan || !reader.header().hasExtract()) return 0;
  replayer::ReplayOptions options;
  options.driver = CUSNAP_FUZZ_EMULATOR;
  options.timing = false;
  options.nvtx = false;
  for (bool with_tolerance : {false, true}) {
    if (with_tolerance) {
      auto rule = replayer::parse_tolerance("f32:ulp=4");
      if (!rule) std::abort();  // the rule is fixed text: a failure here is a bug
      options.tolerances = {rule.value()};
    }
    (void)replayer::replay_plan(reader, plan.value(), options);
  }
  return 0;
}
