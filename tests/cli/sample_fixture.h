// The sample capture shared by the test cases of one test executable, written once.
#pragma once

#include <string>

#include "cli_test_util.h"
#include "sample_capture.h"

namespace cusnap::cli_test {

struct Sample {
  std::string path;
  ExpectedCapture expected;
};

inline const Sample& sample() {
  static const Sample s = [] {
    Sample out;
    out.path = scratch_dir("sample") + "/sample.cusnap";
    out.expected = write_sample_capture(out.path);
    return out;
  }();
  return s;
}

}  // namespace cusnap::cli_test
