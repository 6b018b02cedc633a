// Rewrites every checksum of a capture's bytes to match them: the file header's, each frame
// header's and payload's, the trailer's (blob ids, which records name, are left alone). A fuzz
// build's input that got past skipped checksums becomes a capture every build reads the same
// way, which is how fuzzer findings become release-build regression tests (tests/fuzz/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cusnap::test {

// Returns how many frames were resealed. Stops at the first frame without frame magic or whose
// payload runs past the end (what is left is whatever it is).
size_t reseal_checksums(std::vector<uint8_t>& bytes);

}  // namespace cusnap::test
