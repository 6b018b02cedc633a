// Fatbin wrappers and the flattening of version-2 (relocatable device code) wrappers, on the
// fatbins nvcc 13 writes for -rdc=true objects, their device links and libcudadevrt.
#include <elf.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "cusnap/fatbin/fatbin.h"
#include "cusnap/fatbin/flatten.h"
#include "test_images.h"

namespace fb = cusnap::fatbin;
using namespace cusnap_fatbin_test;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// One entry's bytes (header + payload) as they sit in their container.
std::vector<uint8_t> entry_bytes(const std::vector<uint8_t>& container, const fb::Entry& entry) {
  return {container.begin() + static_cast<std::ptrdiff_t>(entry.header_offset),
          container.begin() + static_cast<std::ptrdiff_t>(entry.end_offset())};
}

fb::Container parsed(const std::vector<uint8_t>& bytes) {
  fb::Container container = fb::parse_container(bytes.data(), bytes.size());
  INFO(container.error);
  REQUIRE(container.error.empty());
  return container;
}

uint16_t elf_type(const std::vector<uint8_t>& container, const fb::Entry& entry) {
  std::string payload, error;
  REQUIRE(fb::entry_payload(container.data(), entry, &payload, &error));
  REQUIRE(payload.size() >= sizeof(Elf64_Ehdr));
  uint16_t type = 0;
  std::memcpy(&type, payload.data() + offsetof(Elf64_Ehdr, e_type), sizeof type);
  return type;
}

// Checks that `flat` is `linked`'s header, then `expected` entries (bytes and sources) in order.
struct Expected {
  std::vector<uint8_t> bytes;
  size_t source;
};
void check_flattened(const fb::Flattened& flat, const std::vector<uint8_t>& linked,
                     const std::vector<Expected>& expected) {
  INFO(flat.error);
  REQUIRE(flat.error.empty());
  fb::Container result = parsed(flat.bytes);
  REQUIRE(result.entries.size() == expected.size());
  REQUIRE(flat.sources.size() == expected.size());
  size_t header_size = fetch<uint16_t>(linked, 6);
  CHECK(result.header_size == header_size);
  // The header is the linked fatbin's, but for its entries size.
  CHECK(std::equal(flat.bytes.begin(), flat.bytes.begin() + 8, linked.begin()));
  CHECK(fetch<uint64_t>(flat.bytes, 8) == flat.bytes.size() - header_size);
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("entry " << i);
    CHECK(entry_bytes(flat.bytes, result.entries[i]) == expected[i].bytes);
    CHECK(flat.sources[i] == expected[i].source);
  }
  CHECK(fb::image_size(flat.bytes.data()) == flat.bytes.size());
}

}  // namespace

TEST_CASE("fatbin: wrapper fields and their errors", "[fatbin]") {
  std::vector<uint8_t> unit = read_bytes(image_path("k_rdc_ptx.relfatbin"));
  TestWrapper v1{fb::kWrapperMagic, 1, unit.data(), nullptr};
  fb::Wrapper read = fb::read_wrapper(&v1);
  CHECK(read.error.empty());
  CHECK(read.version == 1);
  CHECK(read.data == unit.data());
  CHECK(read.prelinked.empty());

  TestWrapper bad_magic{fb::kWrapperMagic ^ 1u, 1, unit.data(), nullptr};
  CHECK(contains(fb::read_wrapper(&bad_magic).error, "bad magic 0x466243B0 at offset 0"));
  TestWrapper version3{fb::kWrapperMagic, 3, unit.data(), nullptr};
  CHECK(contains(fb::read_wrapper(&version3).error, "unknown version 3 at offset 4"));
  CHECK(fb::image_size(&version3) == 0);
  TestWrapper no_data{fb::kWrapperMagic, 1, nullptr, nullptr};
  CHECK(contains(fb::read_wrapper(&no_data).error, "NULL data pointer at offset 8"));
  TestWrapper no_list{fb::kWrapperMagic, 2, unit.data(), nullptr};
  CHECK(contains(fb::read_wrapper(&no_list).error, "no prelinked fatbin list (NULL at offset 16)"));

  // A list that never ends is taken as a corrupt pointer, not walked forever.
  std::vector<const void*> endless(fb::kMaxPrelinkedFatbins + 1, unit.data());
  TestWrapper unterminated{fb::kWrapperMagic, 2, unit.data(), endless.data()};
  fb::Wrapper long_list = fb::read_wrapper(&unterminated);
  CHECK(contains(long_list.error, "no NULL terminator within 65536 entries"));
  CHECK(long_list.prelinked.empty());
  endless[fb::kMaxPrelinkedFatbins - 1] = nullptr;
  CHECK(fb::read_wrapper(&unterminated).prelinked.size() == fb::kMaxPrelinkedFatbins - 1);
}

TEST_CASE("fatbin: what nvcc 13 writes for -rdc=true, as the flattening relies on", "[fatbin]") {
  // PTX-only: the device link keeps libcudadevrt and its linked fatbin has no entries at all.
  CHECK(parsed(read_bytes(image_path("k_rdc_ptx_dlink.fatbin"))).entries.empty());
  // With SASS: the linked fatbin holds executable cubins only; the object's fatbin holds its PTX
  // and relocatable cubins.
  std::vector<uint8_t> linked = read_bytes(image_path("k_rdc_sass_dlink.fatbin"));
  for (const fb::Entry& entry : parsed(linked).entries) {
    CHECK(entry.kind == fb::kEntryElf);
    CHECK(elf_type(linked, entry) == ET_EXEC);
  }
  std::vector<uint8_t> unit = read_bytes(image_path("k_rdc_sass.relfatbin"));
  size_t ptx = 0;
  for (const fb::Entry& entry : parsed(unit).entries) {
    if (entry.kind == fb::kEntryPtx) {
      ++ptx;
    } else {
      CHECK(elf_type(unit, entry) == ET_REL);
    }
  }
  CHECK(ptx == 1);
  // The device runtime: PTX for a newer architecture than any the samples' PTX targets.
  std::vector<uint8_t> devrt = read_bytes(image_path("devrt.relfatbin"));
  size_t devrt_ptx = 0;
  for (const fb::Entry& entry : parsed(devrt).entries) {
    if (entry.kind != fb::kEntryPtx) continue;
    ++devrt_ptx;
    CHECK(entry.sm > 90);
  }
  CHECK(devrt_ptx >= 1);
}

TEST_CASE("fatbin: a PTX-only rdc wrapper flattens to every prelinked PTX entry, devrt's too",
          "[fatbin]") {
  std::vector<uint8_t> linked = read_bytes(image_path("k_rdc_ptx_dlink.fatbin"));
  std::vector<uint8_t> unit = read_bytes(image_path("k_rdc_ptx.relfatbin"));
  std::vector<uint8_t> devrt = read_bytes(image_path("devrt.relfatbin"));
  // As the program's static constructors fill the list: the program's object, then the runtime's.
  const void* list[] = {unit.data(), devrt.data(), nullptr};
  TestWrapper wrapper{fb::kWrapperMagic, 2, linked.data(), list};
  fb::Wrapper read = fb::read_wrapper(&wrapper);
  REQUIRE(read.error.empty());
  REQUIRE(read.prelinked.size() == 2);

  std::vector<Expected> expected;
  for (const fb::Entry& entry : parsed(unit).entries) {
    if (entry.kind == fb::kEntryPtx) expected.push_back({entry_bytes(unit, entry), 0});
  }
  for (const fb::Entry& entry : parsed(devrt).entries) {
    if (entry.kind == fb::kEntryPtx) expected.push_back({entry_bytes(devrt, entry), 1});
  }
  REQUIRE(expected.size() >= 2);
  fb::Flattened flat = fb::flatten_rdc(read);
  CHECK(flat.prelinked_count == 2);
  check_flattened(flat, linked, expected);

  // Its PTX entries decode to the program's own PTX and the runtime's.
  fb::Container result = parsed(flat.bytes);
  std::string ptx, error;
  REQUIRE(fb::entry_payload(flat.bytes.data(), result.entries[0], &ptx, &error));
  CHECK(contains(ptx, ".entry _Z4axpyfPKfPfi"));
  CHECK(contains(ptx, ".entry _Z12scale_windowPf6Window"));
  // Flattening is a function of the wrapper: the same bytes every time.
  CHECK(fb::flatten_rdc(read).bytes == flat.bytes);
}

TEST_CASE("fatbin: an rdc wrapper with SASS flattens to the linked cubins and the unit's PTX",
          "[fatbin]") {
  std::vector<uint8_t> linked = read_bytes(image_path("k_rdc_sass_dlink.fatbin"));
  std::vector<uint8_t> unit = read_bytes(image_path("k_rdc_sass.relfatbin"));
  const void* list[] = {unit.data(), nullptr};
  TestWrapper wrapper{fb::kWrapperMagic, 2, linked.data(), list};
  std::vector<Expected> expected;
  for (const fb::Entry& entry : parsed(linked).entries)
    expected.push_back({entry_bytes(linked, entry), fb::kFromLinked});
  for (const fb::Entry& entry : parsed(unit).entries) {
    if (entry.kind == fb::kEntryPtx) expected.push_back({entry_bytes(unit, entry), 0});
  }
  fb::Flattened flat = fb::flatten_rdc(fb::read_wrapper(&wrapper));
  check_flattened(flat, linked, expected);
  // No relocatable cubin made it in: a driver must never pick one as loadable code.
  fb::Container result = parsed(flat.bytes);
  for (const fb::Entry& entry : result.entries) {
    if (entry.kind == fb::kEntryElf) CHECK(elf_type(flat.bytes, entry) == ET_EXEC);
  }
}

TEST_CASE("fatbin: a linked fatbin with PTX of its own is kept as it is", "[fatbin]") {
  std::vector<uint8_t> linked = read_bytes(image_path("k_default.fatbin"));
  std::vector<uint8_t> unit = read_bytes(image_path("k_rdc_ptx.relfatbin"));
  const void* list[] = {unit.data(), nullptr};
  TestWrapper wrapper{fb::kWrapperMagic, 2, linked.data(), list};
  fb::Flattened flat = fb::flatten_rdc(fb::read_wrapper(&wrapper));
  REQUIRE(flat.error.empty());
  CHECK(flat.bytes == linked);
  CHECK(flat.sources == std::vector<size_t>(parsed(linked).entries.size(), fb::kFromLinked));
}

TEST_CASE("fatbin: flattening errors say which fatbin and which offset", "[fatbin]") {
  std::vector<uint8_t> linked = read_bytes(image_path("k_rdc_ptx_dlink.fatbin"));
  std::vector<uint8_t> unit = read_bytes(image_path("k_rdc_ptx.relfatbin"));
  const uint8_t junk[16] = {0x01, 0x02, 0x03, 0x04};

  const void* junk_list[] = {unit.data(), junk, nullptr};
  TestWrapper wrapper{fb::kWrapperMagic, 2, linked.data(), junk_list};
  fb::Flattened flat = fb::flatten_rdc(fb::read_wrapper(&wrapper));
  CHECK(contains(flat.error, "prelinked fatbin 1 is not a fatbin container (magic 0x04030201)"));
  CHECK(flat.bytes.empty());

  std::vector<uint8_t> corrupt = unit;
  store<uint32_t>(corrupt, 16 + 4, 8);  // the first entry's header size
  const void* corrupt_list[] = {unit.data(), corrupt.data(), nullptr};
  wrapper.filename_or_fatbins = corrupt_list;
  flat = fb::flatten_rdc(fb::read_wrapper(&wrapper));
  CHECK(contains(flat.error,
                 "prelinked fatbin 1: fatbin entry at offset 16: header size 8 (offset 20)"));

  wrapper.data = junk;
  wrapper.filename_or_fatbins = junk_list;
  CHECK(contains(fb::flatten_rdc(fb::read_wrapper(&wrapper)).error,
                 "the linked fatbin is not a fatbin container"));

  TestWrapper v1{fb::kWrapperMagic, 1, unit.data(), nullptr};
  CHECK(contains(fb::flatten_rdc(fb::read_wrapper(&v1)).error, "only a version-2 wrapper"));
  TestWrapper version3{fb::kWrapperMagic, 3, unit.data(), nullptr};
  CHECK(contains(fb::flatten_rdc(fb::read_wrapper(&version3)).error, "unknown version 3"));
}
