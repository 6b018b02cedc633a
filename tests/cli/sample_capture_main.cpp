// cusnap_cli_sample_capture OUT.cusnap OUT.tsv: writes the sample capture and, one line per call,
// what the writer put in it ("seq kind api result threadId keyValue"), for the Python JSON test.
#include <cstdio>
#include <exception>
#include <fstream>

#include "sample_capture.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s OUT.cusnap OUT.tsv\n", argv[0]);
    return 1;
  }
  try {
    auto expected = cusnap::cli_test::write_sample_capture(argv[1]);
    std::ofstream tsv(argv[2]);
    for (const auto& c : expected.calls) {
      tsv << c.seq << '\t' << c.kind << '\t' << c.api << '\t' << c.result << '\t' << c.thread_id
          << '\t' << c.key_value << '\n';
    }
    tsv << "#launches\t" << expected.launches << '\n';
    tsv << "#blob_referenced_bytes\t" << expected.blob_referenced_bytes << '\n';
    tsv << "#blob_unique_bytes\t" << expected.blob_unique_bytes << '\n';
    return tsv ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
