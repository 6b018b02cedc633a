// libFuzzer target for `cusnap extract`: any byte string opened as a capture (checksums skipped,
// fuzz_support.h) goes through launch selection, writing each extracted capture (at most two per
// input) and emitting its C++ reproducer, all in a private temporary directory.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>

#include "cusnap/extract/extract.h"
#include "fuzz_support.h"

using namespace cusnap;

namespace {

std::filesystem::path& work_dir() {
  static std::filesystem::path dir;
  return dir;
}

void remove_work_dir() {
  std::error_code ec;
  std::filesystem::remove_all(work_dir(), ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::skip_checksums();
  std::string tmpl = (std::filesystem::temp_directory_path() / "cusnap-extract-fuzz-XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  work_dir() = tmpl;
  std::atexit(remove_work_dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto opened =
      format::Reader::open_memory(std::span<const uint8_t>(data, size), fuzz::reader_options(true));
  if (!opened) return 0;
  format::Reader& source = *opened.value();
  auto plans = extract::plan_extraction(source, extract::Selection{});
  if (!plans) return 0;
  const std::string out = (work_dir() / "call-%n.cusnap").string();
  size_t done = 0;
  for (const extract::LaunchPlan& plan : plans.value()) {
    if (done++ == 2) break;
    auto path = extract::output_path(out, plan, plans.value().size());
    if (!path) continue;
    auto written = extract::write_extracted(source, "fuzz.cusnap", plan, path.value());
    if (written) {
      auto extracted = format::Reader::open(path.value(), fuzz::reader_options(true));
      if (extracted) {
        (void)extract::emit_cpp(*extracted.value(), (work_dir() / "emit").string());
      }
    }
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(work_dir(), ec)) {
    std::filesystem::remove_all(entry.path(), ec);
  }
  return 0;
}
