// Checks what nvcc 13 writes for a relocatable-device-code sample (runtime_rdc), straight from the
// build tree, so that the layout the emulator and the interceptor rely on for version-2 fatbin
// wrappers (fatbin/include/cusnap/fatbin/fatbin.h) is noticed when a toolkit changes it:
//   * each rdc object's fatbin (section __nv_relfatbin) holds PTX compiled with the option
//     "--compile-only" and relocatable (ET_REL) cubins;
//   * the device-linked fatbin (section .nv_fatbin of the nvcc -dlink object) holds executable
//     (ET_EXEC) cubins and no PTX at all.
// Arguments: the relocatable fatbins, then the linked fatbin (CUSNAP_SAMPLE_RDC_IMAGES).
#define CATCH_CONFIG_RUNNER
#include <elf.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fatbin_reader.h"

namespace {

using namespace cusnap_test;

std::vector<std::string> g_relocatable;
std::string g_linked;

uint16_t elf_type(const std::vector<unsigned char>& elf) {
  REQUIRE(elf.size() >= sizeof(Elf64_Ehdr));
  REQUIRE(std::memcmp(elf.data(), ELFMAG, SELFMAG) == 0);
  return load<uint16_t>(elf, offsetof(Elf64_Ehdr, e_type));
}

}  // namespace

TEST_CASE("an rdc object's fatbin: --compile-only PTX and relocatable cubins") {
  REQUIRE_FALSE(g_relocatable.empty());
  for (const std::string& path : g_relocatable) {
    INFO(path);
    std::vector<FatbinEntry> entries = parse_fatbin(read_file(path));
    int ptx = 0, cubins = 0;
    for (const FatbinEntry& entry : entries) {
      CHECK((entry.flags & kFlagLz4) == 0);  // default compression never uses LZ4
      if (entry.kind == 1) {
        ++ptx;
        CHECK(entry.options.find("--compile-only") != std::string::npos);
        std::string text(entry.payload.begin(), entry.payload.end());
        CHECK(text.find(".visible .entry") != std::string::npos);
      } else {
        REQUIRE(entry.kind == 2);
        ++cubins;
        CHECK(elf_type(entry.payload) == ET_REL);
      }
    }
    CHECK(ptx == 1);
    CHECK(cubins >= 1);
  }
}

TEST_CASE("the device-linked fatbin: executable cubins, no PTX") {
  REQUIRE_FALSE(g_linked.empty());
  std::vector<FatbinEntry> entries = parse_fatbin(read_file(g_linked));
  REQUIRE_FALSE(entries.empty());
  for (const FatbinEntry& entry : entries) {
    INFO("entry kind " << entry.kind << " sm " << entry.sm);
    CHECK(entry.kind == 2);
    if (entry.kind == 2) CHECK(elf_type(entry.payload) == ET_EXEC);
  }
}

int main(int argc, char** argv) {
  // Leading non-option arguments are the images; the rest goes to Catch.
  int first = 1;
  std::vector<std::string> images;
  while (first < argc && argv[first][0] != '-') images.emplace_back(argv[first++]);
  if (images.size() >= 2) {
    g_linked = images.back();
    images.pop_back();
    g_relocatable = images;
  }
  argv[first - 1] = argv[0];
  return Catch::Session().run(argc - first + 1, argv + first - 1);
}
