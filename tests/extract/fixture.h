// The source capture most extraction tests cut launches out of (fixture.cpp describes it), and
// the host reference of what its kernels compute.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "capture_builder.h"  // tests/support

namespace cusnap::extract::test {

// The capture writer shared with the replayer tests (tests/support).
using cusnap::test::as_bytes;
using cusnap::test::CaptureBuilder;
using cusnap::test::kAfterLaunch;
using cusnap::test::kBeforeLaunch;
using cusnap::test::Params;
using cusnap::test::RawChunk;
using cusnap::test::to_bytes;

inline constexpr uint64_t kChunkBytes = 256;
inline constexpr uint64_t kModuleA = 0xA000, kModuleB = 0xB000;
inline constexpr uint64_t kSaxpy = 0xF001, kAddOffset = 0xF002;
inline constexpr uint64_t kA = 0x7e0000000000, kC = 0x7e0000200000, kD = 0x7e0000400000,
                          kE = 0x7e0000600000, kGlobal = 0x7e0010000000;
inline constexpr int kN = 1000, kScale = 3, kOffset = 7;

struct Fixture {
  uint64_t module_a = 0, module_b = 0, fn_saxpy = 0, fn_add = 0, global = 0;
  uint64_t alloc_a = 0, alloc_c = 0, alloc_d = 0, alloc_e = 0;
  uint64_t saxpy = 0, add = 0, unsnapped = 0, skipped = 0;  // launch seqs
  std::vector<int> a, c0, c1, c2;  // c before saxpy, after it, after add_offset (host reference)
};

std::string read_text(const std::string& path);
// The header of the extraction tests' snapshot captures: kChunkBytes chunks, every kernel
// selected, a source host and pid for the extracted captures to name.
cusnap::test::HeaderOptions snapshot_header();
// Writes the capture to `path` with the kernels' PTX text `ptx`, allocation a at `a_address`
// (kLowA: in the first 2 MiB of the address space, which no driver can map at that address, so
// that a reproducer must relocate).
inline constexpr uint64_t kLowA = 0x100000;
Fixture write_fixture(const std::string& path, const std::string& ptx, uint64_t a_address = kA);

}  // namespace cusnap::extract::test
