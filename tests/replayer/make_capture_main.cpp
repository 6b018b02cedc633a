// Writes the standard test capture (test_support.h) for the CLI test:
//   make_capture OUT [mismatch]
#include <cstdio>
#include <string>

#include "test_support.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT [mismatch]\n", argv[0]);
    return 1;
  }
  cusnap::replayer::test::StandardOptions options;
  options.corrupt_b_payload = argc > 2 && std::string(argv[2]) == "mismatch";
  auto capture = cusnap::replayer::test::write_standard_capture(argv[1], options);
  std::printf("%llu\n", static_cast<unsigned long long>(capture.dtoh_c_seq));
  return 0;
}
