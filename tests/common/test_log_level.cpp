// CUSNAP_LOG_LEVEL: the whole table of accepted values, and what is refused.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "cusnap/common/log_level.h"

using cusnap::common::LogLevel;
using cusnap::common::parse_log_level;

namespace {

void check_valid(const char* text, LogLevel expected) {
  INFO("CUSNAP_LOG_LEVEL='" << text << "'");
  auto parsed = parse_log_level(text);
  CHECK(parsed.valid);
  CHECK(parsed.level == expected);
}

void check_invalid(const char* text) {
  INFO("CUSNAP_LOG_LEVEL='" << text << "'");
  auto parsed = parse_log_level(text);
  CHECK_FALSE(parsed.valid);
  CHECK(parsed.level == LogLevel::kWarn);
}

}  // namespace

TEST_CASE("log level names, any case", "[log_level]") {
  check_valid("trace", LogLevel::kTrace);
  check_valid("debug", LogLevel::kDebug);
  check_valid("info", LogLevel::kInfo);
  check_valid("warn", LogLevel::kWarn);
  check_valid("warning", LogLevel::kWarn);
  check_valid("error", LogLevel::kError);
  check_valid("critical", LogLevel::kCritical);
  check_valid("off", LogLevel::kOff);
  check_valid("none", LogLevel::kOff);
  check_valid("TRACE", LogLevel::kTrace);
  check_valid("Critical", LogLevel::kCritical);
  check_valid("oFf", LogLevel::kOff);
}

TEST_CASE("log level numbers are verbosities, 0 = off", "[log_level]") {
  check_valid("0", LogLevel::kOff);
  check_valid("1", LogLevel::kError);
  check_valid("2", LogLevel::kWarn);
  check_valid("3", LogLevel::kInfo);
  check_valid("4", LogLevel::kDebug);
  check_valid("5", LogLevel::kTrace);
}

TEST_CASE("unset and empty mean warn, anything else is invalid and means warn", "[log_level]") {
  auto unset = parse_log_level(nullptr);
  CHECK(unset.valid);
  CHECK(unset.level == LogLevel::kWarn);
  check_valid("", LogLevel::kWarn);
  for (const char* text :
       {"loud", "err", "6", "9", "-1", "+1", "05", "10", " 2", "3x", "warn ", "in fo"}) {
    check_invalid(text);
  }
}

TEST_CASE("levels are ordered from most output to none, and named", "[log_level]") {
  CHECK(LogLevel::kTrace < LogLevel::kDebug);
  CHECK(LogLevel::kDebug < LogLevel::kInfo);
  CHECK(LogLevel::kInfo < LogLevel::kWarn);
  CHECK(LogLevel::kWarn < LogLevel::kError);
  CHECK(LogLevel::kError < LogLevel::kCritical);
  CHECK(LogLevel::kCritical < LogLevel::kOff);
  for (const char* name : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    auto parsed = parse_log_level(name);
    REQUIRE(parsed.valid);
    CHECK(std::string(cusnap::common::log_level_name(parsed.level)) == name);
  }
}

TEST_CASE("log_level_from_env reads CUSNAP_LOG_LEVEL", "[log_level]") {
  ::setenv("CUSNAP_LOG_LEVEL", "Debug", 1);
  CHECK(cusnap::common::log_level_from_env().level == LogLevel::kDebug);
  ::setenv("CUSNAP_LOG_LEVEL", "loud", 1);
  CHECK_FALSE(cusnap::common::log_level_from_env().valid);
  ::unsetenv("CUSNAP_LOG_LEVEL");
  CHECK(cusnap::common::log_level_from_env().valid);
}
