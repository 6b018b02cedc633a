// Module variables read from images (fatbin/include/cusnap/fatbin/variables.h): nvcc's PTX, its
// cubin and every entry of its fatbins name the three variables of kernels/fatbin_kernels.cu
// with their sizes; hand-written PTX covers what nvcc writes around them; damaged ELF gives
// nothing rather than a read outside the bytes.
#include <algorithm>
#include <string>
#include <vector>

#include "cusnap/fatbin/fatbin.h"
#include "cusnap/fatbin/variables.h"
#include "test_images.h"

using cusnap::fatbin::Variable;
using namespace cusnap_fatbin_test;

namespace {

std::vector<Variable> sorted(std::vector<Variable> v) {
  std::sort(v.begin(), v.end(),
            [](const Variable& a, const Variable& b) { return a.name < b.name; });
  return v;
}

// kernels/fatbin_kernels.cu: float g_bias; __constant__ int g_table[5]; double g_grid[3][4].
const std::vector<Variable> kExpected = {
    {"g_bias", 4, false}, {"g_grid", 96, false}, {"g_table", 20, true}};

std::string text_of(const std::vector<uint8_t>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

TEST_CASE("fatbin: module variables of nvcc's PTX and cubin", "[fatbin]") {
  CHECK(sorted(cusnap::fatbin::ptx_variables(text_of(read_bytes(image_path("k.ptx"))))) ==
        kExpected);
  auto elf = cusnap::fatbin::elf_variables(read_bytes(image_path("k_sm90.cubin")));
  REQUIRE(elf);
  CHECK(sorted(*elf) == kExpected);
}

TEST_CASE("fatbin: module variables of whole stored images, by their kind", "[fatbin]") {
  CHECK(sorted(cusnap::fatbin::image_variables(read_bytes(image_path("k.ptx")))) == kExpected);
  CHECK(sorted(cusnap::fatbin::image_variables(read_bytes(image_path("k_sm90.cubin")))) ==
        kExpected);
  for (const char* mode : {"default", "size", "speed", "none"}) {
    INFO(mode);
    std::vector<uint8_t> bytes = read_bytes(image_path(std::string("k_") + mode + ".fatbin"));
    CHECK(sorted(cusnap::fatbin::image_variables(bytes)) == kExpected);
    // A container cut short names nothing rather than reading past the bytes.
    bytes.resize(bytes.size() / 2);
    CHECK(cusnap::fatbin::image_variables(bytes).empty());
  }
  CHECK(cusnap::fatbin::image_variables(std::vector<uint8_t>{1, 2, 3}).empty());
}

TEST_CASE("fatbin: module variables of every fatbin entry, every --compress-mode", "[fatbin]") {
  for (const char* mode : {"default", "size", "speed", "none"}) {
    INFO(mode);
    std::vector<uint8_t> bytes = read_bytes(image_path(std::string("k_") + mode + ".fatbin"));
    auto container = cusnap::fatbin::parse_container(bytes.data(), bytes.size());
    REQUIRE(container.error.empty());
    int seen = 0;
    for (const auto& entry : container.entries) {
      std::string payload, error;
      REQUIRE(cusnap::fatbin::entry_payload(bytes.data(), entry, &payload, &error));
      if (entry.kind == cusnap::fatbin::kEntryPtx) {
        CHECK(sorted(cusnap::fatbin::ptx_variables(payload)) == kExpected);
        ++seen;
      } else if (entry.kind == cusnap::fatbin::kEntryElf) {
        auto elf = cusnap::fatbin::elf_variables(std::span<const uint8_t>(
            reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
        REQUIRE(elf);
        CHECK(sorted(*elf) == kExpected);
        ++seen;
      }
    }
    CHECK(seen == 2);  // compute_75 PTX and the sm_90 cubin
  }
}

TEST_CASE("fatbin: PTX module variables, what surrounds them", "[fatbin]") {
  const std::string ptx = R"(//
// .global .u32 in_a_comment;
.version 8.0
.target sm_75
.address_size 64
.file 1 "/a//b.cu" /* .const .b8 in_a_block_comment[4]; */
.extern .global .align 4 .u32 elsewhere;
.visible .global .align 16 .v4 .f32 lanes[3];
.weak .const .align 8 .u64 weak_one = 7;
.global .attribute(.managed) .align 4 .b32 managed;
.const .align 4 .b8 nested[8] = {1, 2, 3, 4, 5, 6, 7, 8};
.global .align 1 .b8 grid [2][3];
.shared .align 4 .b8 not_memory_of_the_module[64];
.global .texref tex;
.global .align 1 .b8 implied[] = {1, 2};
.visible .entry k(.param .u64 k_param_0)
{
  .reg .b32 %r<2>;
  .global .u32 inside_body;
  ld.global.u32 %r1, [managed];
  ret;
}
.global .s16 after_the_body;
)";
  std::vector<Variable> expected = {{"lanes", 48, false},  {"weak_one", 8, true},
                                    {"managed", 4, false}, {"nested", 8, true},
                                    {"grid", 6, false},    {"after_the_body", 2, false}};
  CHECK(cusnap::fatbin::ptx_variables(ptx) == expected);
  CHECK(cusnap::fatbin::ptx_variables("").empty());
  CHECK(cusnap::fatbin::ptx_variables(".global .u32 unterminated").empty());
}

TEST_CASE("fatbin: ELF module variables of damaged bytes", "[fatbin]") {
  std::vector<uint8_t> cubin = read_bytes(image_path("k_sm90.cubin"));
  CHECK_FALSE(cusnap::fatbin::elf_variables(std::span<const uint8_t>(cubin.data(), 16)));
  std::vector<uint8_t> not_elf(cubin);
  not_elf[1] = 'X';
  CHECK_FALSE(cusnap::fatbin::elf_variables(not_elf));
  // Every truncation: nothing read past the end (ASan builds check it), never more variables.
  for (size_t size = 64; size < cubin.size(); size += 97) {
    auto v = cusnap::fatbin::elf_variables(std::span<const uint8_t>(cubin.data(), size));
    if (v) CHECK(v->size() <= kExpected.size());
  }
}
