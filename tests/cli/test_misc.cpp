// --help, --version, logging, CUresult names, --calls parsing.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "call_range.h"
#include "cli_test_util.h"
#include "cusnap/format/capture.capnp.h"
#include "result_names.h"
#include "sample_fixture.h"

using namespace cusnap;
using namespace cusnap::cli_test;

TEST_CASE("help: --help works for the tool and every subcommand", "[misc]") {
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"},
                                        {"info", "--help"},
                                        {"dump", "--help"},
                                        {"verify", "--help"},
                                        {"driver", "--help"},
                                        {"export", "--help"}}) {
    RunResult r = run_cusnap(args);
    INFO(args.front());
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("Usage:") != std::string::npos);
  }
  RunResult r = run_cusnap({"verify", "--help"});
  CHECK(r.out.find("2 truncated, 3 corrupt") != std::string::npos);
  r = run_cusnap({"dump", "--help"});
  CHECK(r.out.find("--calls") != std::string::npos);
}

TEST_CASE("version: --version names the tool, schema, container and CUDA versions", "[misc]") {
  RunResult r = run_cusnap({"--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == std::string("cusnap ") + CUSNAP_CLI_VERSION + " (capture schema " +
                     std::to_string(cusnap::format::schema::SCHEMA_VERSION) +
                     ", container 1.0, driver API of CUDA " + CUSNAP_CLI_CUDA_VERSION +
                     " from toolkit " + CUSNAP_CLI_CUDA_TOOLKIT_VERSION + ")\n");
  // The model's version is the toolkit's major.minor: the generators read that toolkit's headers.
  std::string toolkit = CUSNAP_CLI_CUDA_TOOLKIT_VERSION;
  CHECK(toolkit.rfind(std::string(CUSNAP_CLI_CUDA_VERSION) + ".", 0) == 0);
}

TEST_CASE("usage errors exit 1", "[misc]") {
  CHECK(run_cusnap({}).exit_code == 1);
  CHECK(run_cusnap({"frobnicate"}).exit_code == 1);
  CHECK(run_cusnap({"info"}).exit_code == 1);
  CHECK(run_cusnap({"dump", "--bogus", "x"}).exit_code == 1);
}

TEST_CASE("logging goes to stderr at the level of CUSNAP_LOG_LEVEL", "[misc]") {
  const Sample& s = sample();
  RunResult r = run_cusnap({"info", "/nonexistent.cusnap"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find("error: cusnap info:") != std::string::npos);

  r = run_cusnap({"info", "/nonexistent.cusnap"}, "CUSNAP_LOG_LEVEL=off");
  CHECK(r.exit_code == 1);
  CHECK(r.err.empty());

  r = run_cusnap({"verify", s.path}, "CUSNAP_LOG_LEVEL=loud");
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("CUSNAP_LOG_LEVEL='loud'") != std::string::npos);

  // The values every cusnap component accepts (cusnap/common/log_level.h): numbers are
  // verbosities (0 = off), names are case-insensitive, critical hides errors.
  r = run_cusnap({"info", "/nonexistent.cusnap"}, "CUSNAP_LOG_LEVEL=0");
  CHECK(r.exit_code == 1);
  CHECK(r.err.empty());
  r = run_cusnap({"info", "/nonexistent.cusnap"}, "CUSNAP_LOG_LEVEL=CRITICAL");
  CHECK(r.exit_code == 1);
  CHECK(r.err.empty());
  r = run_cusnap({"info", "/nonexistent.cusnap"}, "CUSNAP_LOG_LEVEL=1");
  CHECK(r.err.find("error: cusnap info:") != std::string::npos);
}

TEST_CASE("CUresult names agree with the installed cuda.h", "[misc]") {
  std::ifstream in(CUSNAP_CUDA_H);
  REQUIRE(in);
  std::regex entry(R"(^\s+(CUDA_(SUCCESS|ERROR_[A-Z0-9_]+))\s+=\s+([0-9]+))");
  std::string line;
  size_t seen = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, entry)) continue;
    int value = std::stoi(m[3].str());
    INFO(line);
    REQUIRE(cli::result_name(value) != nullptr);
    CHECK(std::string(cli::result_name(value)) == m[1].str());
    CHECK(cli::result_value(m[1].str()) == value);  // the way back (`redact --verify error:`)
    ++seen;
  }
  CHECK(seen == cli::result_name_count());
  CHECK(cli::result_text(123456) == "123456");
  CHECK_FALSE(cli::result_value("CUDA_ERROR_NO_SUCH_THING").has_value());
}

TEST_CASE("parse_call_range", "[misc]") {
  auto ok = [](const std::string& text, uint64_t count, uint64_t b, uint64_t e) {
    auto r = cli::parse_call_range(text, count);
    INFO(text << " " << r.status().to_string());
    REQUIRE(r.is_ok());
    CHECK(r.value().begin == b);
    CHECK(r.value().end == e);
  };
  ok("0:10", 10, 0, 10);
  ok("3:", 10, 3, 10);
  ok(":4", 10, 0, 4);
  ok(":", 10, 0, 10);
  ok("9", 10, 9, 10);
  ok("10:10", 10, 10, 10);
  for (const char* bad : {"", "10", "11:", "0:11", "5:4", "a", "1:b", "1:2:3", " 1:2", "+1:2",
                          "99999999999999999999:"}) {
    INFO(bad);
    auto r = cli::parse_call_range(bad, 10);
    CHECK_FALSE(r.is_ok());
    CHECK(r.status().message().rfind(std::string("--calls ") + bad + ":", 0) == 0);
  }
  CHECK(cli::parse_call_range("0", 0).status().message().find("no calls") != std::string::npos);
}

TEST_CASE("driver: prints the one lookup's answer, the same for every request form",
          "[misc][driver]") {
  RunResult emu = run_cusnap({"driver", "emulator"});
  REQUIRE(emu.exit_code == 0);
  REQUIRE(emu.out.size() > 1);
  std::string path = emu.out.substr(0, emu.out.size() - 1);
  CHECK(emu.out.back() == '\n');
  CHECK(path.front() == '/');
  CHECK(std::ifstream(path).good());
  // The override of auto is honoured, and a given path comes back as it is.
  RunResult over = run_cusnap({"driver", "auto"}, "CUSNAP_REAL_DRIVER=" + path);
  // The emulator is not NVIDIA's driver, but CUSNAP_REAL_DRIVER may name any driver but the shim.
  CHECK(over.exit_code == 0);
  CHECK(over.out == emu.out);
  RunResult given = run_cusnap({"driver", path});
  CHECK(given.exit_code == 0);
  CHECK(given.out == emu.out);
  RunResult missing = run_cusnap({"driver", "/nonexistent/libcuda.so.1"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.out.empty());
  CHECK(missing.err.find("/nonexistent/libcuda.so.1") != std::string::npos);
}
