// Checks what nvcc 13 writes for a relocatable-device-code sample (runtime_rdc), straight from the
// build tree, so that the layout the emulator and the interceptor rely on for version-2 fatbin
// wrappers (emulator/fatbin/fatbin.h) is noticed when a toolkit changes it:
//   * each rdc object's fatbin (section __nv_relfatbin) holds PTX compiled with the option
//     "--compile-only" and relocatable (ET_REL) cubins;
//   * the device-linked fatbin (section .nv_fatbin of the nvcc -dlink object) holds executable
//     (ET_EXEC) cubins and no PTX at all.
// Arguments: the relocatable fatbins, then the linked fatbin (CUSNAP_SAMPLE_RDC_IMAGES).
#define CATCH_CONFIG_RUNNER
#include <elf.h>
#include <zstd.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::vector<std::string> g_relocatable;
std::string g_linked;

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <typename T>
T load(const std::vector<unsigned char>& bytes, size_t offset) {
  T value;
  REQUIRE(offset + sizeof(T) <= bytes.size());
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

struct Entry {
  uint16_t kind;  // 1 PTX, 2 ELF
  uint32_t sm;
  std::string options;                 // the entry's option string, if any
  std::vector<unsigned char> payload;  // decompressed
};

std::vector<Entry> parse(const std::vector<unsigned char>& bytes) {
  REQUIRE(load<uint32_t>(bytes, 0) == 0xBA55ED50u);
  const uint16_t header_size = load<uint16_t>(bytes, 6);
  const uint64_t end = header_size + load<uint64_t>(bytes, 8);
  REQUIRE(end <= bytes.size());
  std::vector<Entry> entries;
  size_t offset = header_size;
  while (offset < end) {
    Entry entry;
    entry.kind = load<uint16_t>(bytes, offset);
    const uint32_t entry_header = load<uint32_t>(bytes, offset + 4);
    const uint64_t payload_size = load<uint64_t>(bytes, offset + 8);
    const uint32_t compressed = load<uint32_t>(bytes, offset + 16);
    entry.sm = load<uint32_t>(bytes, offset + 28);
    const uint64_t flags = load<uint64_t>(bytes, offset + 40);
    const uint64_t uncompressed = load<uint64_t>(bytes, offset + 56);
    REQUIRE(entry_header >= 64);
    REQUIRE(offset + entry_header + payload_size <= end);
    if (entry_header >= 72) {
      // Options string: offset and size (relative to the entry) at +64 and +68.
      const uint32_t options_offset = load<uint32_t>(bytes, offset + 64);
      const uint32_t options_size = load<uint32_t>(bytes, offset + 68);
      if (options_size > 0) {
        REQUIRE(options_offset + options_size <= entry_header);
        const char* text = reinterpret_cast<const char*>(bytes.data() + offset + options_offset);
        entry.options.assign(text, strnlen(text, options_size));
      }
    }
    const unsigned char* payload = bytes.data() + offset + entry_header;
    if ((flags & 0x8000) != 0 && compressed != 0) {
      entry.payload.resize(uncompressed);
      size_t n = ZSTD_decompress(entry.payload.data(), entry.payload.size(), payload, compressed);
      REQUIRE_FALSE(ZSTD_isError(n));
      entry.payload.resize(n);
    } else {
      REQUIRE((flags & 0x2000) == 0);  // default compression never uses LZ4
      entry.payload.assign(payload, payload + payload_size);
    }
    entries.push_back(std::move(entry));
    offset += entry_header + payload_size;
  }
  return entries;
}

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
    std::vector<Entry> entries = parse(read_file(path));
    int ptx = 0, cubins = 0;
    for (const Entry& entry : entries) {
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
  std::vector<Entry> entries = parse(read_file(g_linked));
  REQUIRE_FALSE(entries.empty());
  for (const Entry& entry : entries) {
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
