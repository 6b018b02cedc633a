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
cusnap::test::HeaderOptions snapshot_header(uint64_t chunk_bytes = kChunkBytes);
// Writes the capture to `path` with the kernels' PTX text `ptx`, allocation a at `a_address`
// (kLowA: in the first 2 MiB of the address space, which no driver can map at that address, so
// that a reproducer must relocate).
inline constexpr uint64_t kLowA = 0x100000;
Fixture write_fixture(const std::string& path, const std::string& ptx, uint64_t a_address = kA);

// The --minimize source (chunk size kChunkBytes): one launch strided_store(x, kStride, kCount),
// which writes x[kStride * i] = i for i < kCount (one int in every other chunk of the first 80 of
// x's 100 chunks) and reads nothing; its snapshots also cover allocation y, which it never
// touches. Returns the launch's seq.
inline constexpr uint64_t kStridedX = 0x7e2000000000, kStridedY = 0x7e2000100000;
inline constexpr int kStridedWords = 6400, kStride = 128, kStridedCount = 40;
inline constexpr uint64_t kStridedYBytes = 4096;
uint64_t write_strided_fixture(const std::string& path, const std::string& ptx);

// A capture a replay can rebuild (fixture.cpp, write_replayable_fixture): the inputs enter by
// host-to-device copies, results leave by checksummed device-to-host copies, and, with
// `snapshots`, both launches have the snapshots the interceptor would take (every live range:
// a, c, d and g_offset). `wrong_checksum`: the copy of c after saxpy_int records a checksum the
// replay cannot match (the replay diverges there, before add_offset).
struct Replayable {
  uint64_t saxpy = 0, add = 0;  // launch seqs
  uint64_t copy_after_saxpy = 0;
  std::vector<int> a, c0, c1, c2, d;
};
// `a_address`: kLowA puts a where no driver can map it (the replay relocates it).
Replayable write_replayable_fixture(const std::string& path, const std::string& ptx, bool snapshots,
                                    bool wrong_checksum = false, uint64_t a_address = kA);

}  // namespace cusnap::extract::test
