// Writes the test captures (test_support.h) for the CLI test:
//   make_capture OUT [mismatch|unverified] the standard capture; prints the mismatching copy's seq
//                                         (unverified: its copies have no checksums)
//   make_capture OUT snapshot MODE        a snapshot capture; prints the address of interest
//   make_capture OUT spin                 a launch of `spin` that never ends; prints its seq
//   make_capture OUT tickets              take_ticket, expected in reverse block order (a mismatch
//                                         after an order-dependent kernel); prints the copy's seq
//   make_capture OUT assert|noassert      ends with CUDA_ERROR_ASSERT recorded (noassert: the
//                                         data does not trip it); prints the failing call's seq
// MODE: extract (matches), altered (one expected byte flipped: prints its address), hashonly
// (altered, expected chunks hash-only), float (fast_exp: prints the output allocation),
// wholerun (a wrong beforeLaunch snapshot and a skipped one: prints the wrong byte's address),
// filtered (a kernel-filtered capture of the one launch, with the interceptor's summary).
#include <cstdio>
#include <string>

#include "cusnap/format/blob_id.h"
#include "test_support.h"

using namespace cusnap::replayer::test;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: %s OUT [mismatch | unverified | tickets | spin | assert | noassert | snapshot "
        "MODE]\n",
        argv[0]);
    return 1;
  }
  std::string mode = argc > 2 ? argv[2] : "";
  if (mode == "assert" || mode == "noassert") {
    auto capture = write_assert_capture(argv[1], mode == "assert");
    std::printf("%llu\n", static_cast<unsigned long long>(capture.sync_seq));
    return 0;
  }
  if (mode == "tickets") {
    auto capture = write_ticket_capture(argv[1], true);
    std::printf("%llu\n", static_cast<unsigned long long>(capture.dtoh_seq));
    return 0;
  }
  if (mode == "spin") {
    CaptureBuilder w(argv[1]);
    w.module_load_ptx(0xA000, test_ptx());
    w.function_get(0xA000, 0xF003, "spin");
    w.alloc(kBase, 4);
    w.memset32(kBase, 0, 1);
    uint64_t seq = w.launch(0xF003, "spin", 1, 1, Params().ptr(kBase), 0, 0);
    const int zero = 0;
    w.dtoh(kBase, 4, cusnap::format::checksum64({reinterpret_cast<const uint8_t*>(&zero), 4}));
    w.close();
    std::printf("%llu\n", static_cast<unsigned long long>(seq));
    return 0;
  }
  if (mode == "snapshot" && argc > 3) {
    std::string kind = argv[3];
    SnapshotCaptureOptions o;
    if (kind == "altered" || kind == "hashonly") o.alter_expected = true;
    if (kind == "hashonly") o.hash_only_after = true;
    if (kind == "float") o.kernel = "fast_exp";
    if (kind == "wholerun") {
      o.extracted = false;
      o.wrong_before = true;
      o.with_skipped = true;
    }
    if (kind == "filtered") {
      o.extracted = false;
      o.kernel_filtered = true;
    }
    if (kind != "extract" && kind != "altered" && kind != "hashonly" && kind != "float" &&
        kind != "wholerun" && kind != "filtered") {
      std::fprintf(stderr, "unknown snapshot mode %s\n", kind.c_str());
      return 1;
    }
    auto capture = write_snapshot_capture(argv[1], o);
    uint64_t address = kind == "float"      ? capture.y
                       : kind == "wholerun" ? capture.x + 8
                                            : capture.altered_address;
    std::printf("0x%llx\n", static_cast<unsigned long long>(address));
    return 0;
  }
  StandardOptions options;
  options.corrupt_b_payload = mode == "mismatch";
  options.no_checksums = mode == "unverified";
  auto capture = write_standard_capture(argv[1], options);
  std::printf("%llu\n", static_cast<unsigned long long>(capture.dtoh_c_seq));
  return 0;
}
