// The LIST file of bisect and matrix (runner/include/cusnap/runner/driver_list.h): entries,
// environment and placement keys, relative driver paths, and errors that name file:line.
#include <catch2/catch.hpp>
#include <string>

#include "cusnap/runner/driver_list.h"

using cusnap::runner::parse_driver_list;

TEST_CASE("list: entries, environment, placement, comments") {
  std::string error;
  auto list = parse_driver_list(
      "# drivers to bisect\n"
      "\n"
      "r535 /opt/nvidia/535/libcuda.so.1 partition=gpu CUDA_MODULE_LOADING=EAGER\n"
      "   r550 lib/550/libcuda.so.1 host=node7 gres=gpu:1 constraint=h100\r\n"
      "emu emulator CUSNAP_EMU_INJECT=slow:gemm:1.3\n",
      "/work/lists/drivers.txt", &error);
  REQUIRE(list);
  REQUIRE(list->entries.size() == 3);
  const auto& a = list->entries[0];
  CHECK(a.name == "r535");
  CHECK(a.driver == "/opt/nvidia/535/libcuda.so.1");
  CHECK(a.line == 3);
  REQUIRE(a.environment.size() == 1);
  CHECK(a.environment[0].first == "CUDA_MODULE_LOADING");
  CHECK(a.environment[0].second == "EAGER");
  CHECK(a.placement_value("partition") == "gpu");
  CHECK(a.placement_value("host").empty());
  const auto& b = list->entries[1];
  CHECK(b.driver == "/work/lists/lib/550/libcuda.so.1");  // relative to the LIST's directory
  CHECK(b.placement_value("host") == "node7");
  CHECK(b.placement_value("gres") == "gpu:1");
  CHECK(b.placement_value("constraint") == "h100");
  CHECK(b.environment.empty());
  CHECK(b.line == 4);
  const auto& c = list->entries[2];
  CHECK(c.driver == "emulator");
  CHECK(c.text() == "emu emulator CUSNAP_EMU_INJECT=slow:gemm:1.3");
}

TEST_CASE("list: errors name file and line") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"good emulator\nlonely\n", "l.txt:2: 'lonely': an entry is NAME DRIVER [KEY=VALUE ...]"},
      {"good emulator\ngood emulator\n", "l.txt:2: entry name 'good' appears twice"},
      {"a/b emulator\n", "l.txt:1: entry name 'a/b' may only contain"},
      {"x KEY=1\n", "l.txt:1: entry x: 'KEY=1' is not a DRIVER"},
      {"x emulator nonsense\n", "l.txt:1: entry x: 'nonsense' is not KEY=VALUE"},
      {"x emulator 1A=2\n", "l.txt:1: entry x: '1A' is not a valid KEY"},
      {"x emulator A=1 A=2\n", "l.txt:1: entry x: KEY A is given twice"},
      {"x emulator host=\n", "l.txt:1: entry x: host= needs a value"},
      {"# only a comment\n", "l.txt: no entries"},
  };
  for (const Case& c : cases) {
    std::string error;
    INFO(c.text);
    CHECK_FALSE(parse_driver_list(c.text, "l.txt", &error));
    CHECK(error.rfind(c.error, 0) == 0);
  }
}

TEST_CASE("list: a file that cannot be read is named") {
  std::string error;
  CHECK_FALSE(cusnap::runner::read_driver_list("/nonexistent/drivers.txt", &error));
  CHECK(error == "/nonexistent/drivers.txt: cannot be read");
}
