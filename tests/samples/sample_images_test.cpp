// Checks the kernel images the samples embed, straight from the build tree: every fatbin must
// carry PTX (what the emulator executes) and SASS (what a real GPU runs), its compression must
// be the one its sample asked nvcc for, and the PTX inside must decompress to PTX text with
// kernel entries. Runs without a GPU or a driver.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fatbin_reader.h"

namespace {

using namespace cusnap_test;

struct SampleImage {
  const char* sample;
  const char* kind;           // "fatbin" or "ptx"
  const char* compress_mode;  // nvcc --compress-mode, or "ptx"
  const char* path;
};

const SampleImage kImages[] = {
#include "sample_images.inc"
};

bool contains(const std::vector<unsigned char>& bytes, const std::string& needle) {
  return std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()) != bytes.end();
}

}  // namespace

TEST_CASE("every sample fatbin carries PTX and SASS with the requested compression") {
  int fatbins = 0;
  for (const SampleImage& image : kImages) {
    if (std::string(image.kind) != "fatbin") continue;
    ++fatbins;
    INFO("sample " << image.sample << ", image " << image.path << ", mode " << image.compress_mode);
    std::vector<unsigned char> bytes = read_file(image.path);
    REQUIRE(!bytes.empty());
    std::vector<FatbinEntry> entries = parse_fatbin(bytes);
    int ptx = 0, sass = 0;
    const std::string mode = image.compress_mode;
    for (const FatbinEntry& entry : entries) {
      INFO("entry kind " << entry.kind << " sm " << entry.sm << " flags " << entry.flags);
      const uint64_t compression = entry.flags & (kFlagLz4 | kFlagZstd);
      if (entry.kind == 1) {
        ++ptx;
        CHECK(contains(entry.payload, ".version"));
        CHECK(contains(entry.payload, ".entry"));
        if (mode == "none") CHECK(compression == 0);
        if (mode == "speed") CHECK(compression == kFlagLz4);
        if (mode == "size" || mode == "default" || mode == "balance")
          CHECK(compression == kFlagZstd);
      } else {
        REQUIRE(entry.kind == 2);
        ++sass;
        CHECK(entry.sm >= 75);
        REQUIRE(entry.payload.size() >= 4);
        CHECK(std::memcmp(entry.payload.data(),
                          "\x7f"
                          "ELF",
                          4) == 0);
        if (mode == "none" || mode == "default" || mode == "balance") CHECK(compression == 0);
      }
    }
    CHECK(ptx >= 1);
    CHECK(sass >= 1);
  }
  CHECK(fatbins >= 12);
}

TEST_CASE("PTX-text images are plain PTX with entries or exported functions") {
  int ptx_images = 0;
  for (const SampleImage& image : kImages) {
    if (std::string(image.kind) != "ptx") continue;
    ++ptx_images;
    INFO("sample " << image.sample << ", image " << image.path);
    std::vector<unsigned char> bytes = read_file(image.path);
    CHECK(contains(bytes, ".version"));
    // A kernel module has entries; a library module for the JIT linker (link_occupancy's
    // link_lib) exports device functions instead.
    CHECK((contains(bytes, ".visible .entry") || contains(bytes, ".visible .func")));
    // The embedding adds the terminating NUL; a NUL inside would cut the text short.
    CHECK(std::find(bytes.begin(), bytes.end(), 0) == bytes.end());
  }
  CHECK(ptx_images >= 1);
}
