// Scratch paths and capture opening shared by the extraction test files (Catch2 test sources
// only: they need CUSNAP_TEST_TMP_DIR, which their targets define).
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "cusnap/format/reader.h"

namespace cusnap::extract::test {

// CUSNAP_TEST_TMP_DIR/<area>/<name>, its directory created.
inline std::string scratch_path(const std::string& area, const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(CUSNAP_TEST_TMP_DIR) / area;
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// Opens a capture a test wrote; the test fails, with the reader's message, when it cannot.
inline std::unique_ptr<format::Reader> open_capture(const std::string& path) {
  auto r = format::Reader::open(path);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return std::move(r.value());
}

}  // namespace cusnap::extract::test
