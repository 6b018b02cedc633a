// The emulator against silicon: every lane of silicon/*.lanes (what an NVIDIA GPU computed for
// PTX instructions, brought back by scripts/gpu-check's conformance dump) run on the emulator,
// which must produce the same d and q bit for bit. The lanes were written by the hardware, not by
// this project's model of it, so they catch what the host references got wrong too.
// CUSNAP_SILICON_LANES=FILE runs another file (a full dump) instead of the committed ones.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "conformance.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::conformance;

namespace {

struct SiliconOp {
  std::string instruction;
  Shape shape;
  Inputs in;
  std::vector<std::array<uint64_t, 2>> expected;
};

std::vector<SiliconOp> read_lanes(const std::string& path) {
  std::ifstream f(path);
  INFO("silicon lanes " << path);
  REQUIRE(f.good());
  std::vector<SiliconOp> ops;
  std::string line;
  int number = 0;
  while (std::getline(f, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("op\t", 0) == 0) {
      const size_t tab = line.find('\t', 3);
      REQUIRE(tab != std::string::npos);
      SiliconOp op;
      op.instruction = line.substr(3, tab - 3);
      std::istringstream widths(line.substr(tab + 1));
      widths >> op.shape.d >> op.shape.a >> op.shape.b >> op.shape.c >> op.shape.q;
      INFO(path << ":" << number);
      REQUIRE(!widths.fail());
      ops.push_back(std::move(op));
      continue;
    }
    INFO(path << ":" << number << ": " << line);
    REQUIRE(!ops.empty());
    std::istringstream fields(line);
    uint64_t a = 0, b = 0, c = 0, d = 0, q = 0;
    fields >> std::hex >> a >> b >> c >> d >> q;
    REQUIRE(!fields.fail());
    ops.back().in.push_back({a, b, c});
    ops.back().expected.push_back({d, q});
  }
  return ops;
}

std::vector<std::string> lane_files() {
  if (const char* file = std::getenv("CUSNAP_SILICON_LANES"); file != nullptr && *file != 0)
    return {file};
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(CUSNAP_TEST_SILICON_DIR))
    if (entry.path().extension() == ".lanes") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("silicon: every recorded lane computes what the GPU computed",
          "[ptx][conformance][silicon]") {
  const std::vector<std::string> files = lane_files();
  REQUIRE(!files.empty());
  size_t lanes = 0;
  // CUSNAP_SILICON_REPORT=FILE: every differing lane, tab-separated (instruction, a b c, the
  // emulator's d q, silicon's d q), for fitting.
  std::ofstream report;
  if (const char* r = std::getenv("CUSNAP_SILICON_REPORT"); r != nullptr && *r != 0) report.open(r);
  for (const std::string& file : files) {
    for (const SiliconOp& op : read_lanes(file)) {
      const auto out = run_lanes(op.instruction, op.shape, op.in);
      std::ostringstream failures;
      int failed = 0;
      for (size_t i = 0; i < op.in.size(); ++i) {
        if (out[i] == op.expected[i]) continue;
        if (report.is_open())
          report << op.instruction << "\t" << std::hex << op.in[i][0] << " " << op.in[i][1] << " "
                 << op.in[i][2] << "\t" << out[i][0] << " " << out[i][1] << "\t"
                 << op.expected[i][0] << " " << op.expected[i][1] << std::dec << "\n";
        if (++failed <= 8)
          failures << "  a=" << hex(op.in[i][0]) << " b=" << hex(op.in[i][1])
                   << " c=" << hex(op.in[i][2]) << ": emulator d=" << hex(out[i][0])
                   << " q=" << hex(out[i][1]) << ", silicon d=" << hex(op.expected[i][0])
                   << " q=" << hex(op.expected[i][1]) << "\n";
      }
      lanes += op.in.size();
      INFO(file << ": " << op.instruction << ": " << failed << " of " << op.in.size()
                << " lanes differ from silicon\n"
                << failures.str());
      CHECK(failed == 0);
    }
  }
  CHECK(lanes > 0);
}
