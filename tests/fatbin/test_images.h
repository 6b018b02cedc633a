// Helpers for the fatbin library tests: the images tests/fatbin/CMakeLists.txt builds.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace cusnap_fatbin_test {

inline std::string image_path(const std::string& name) {
  return std::string(CUSNAP_FATBIN_TEST_IMAGES) + "/" + name;
}

// A file's bytes followed by `padding` zero bytes: functions that take a bare pointer may read a
// header's worth of bytes, and PTX text needs its NUL.
inline std::vector<uint8_t> read_bytes(const std::string& path, size_t padding = 0) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  INFO(path);
  REQUIRE(!bytes.empty());
  bytes.resize(bytes.size() + padding, 0);
  return bytes;
}

template <class T>
void store(std::vector<uint8_t>& bytes, size_t offset, T value) {
  REQUIRE(offset + sizeof(T) <= bytes.size());
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

template <class T>
T fetch(const std::vector<uint8_t>& bytes, size_t offset) {
  REQUIRE(offset + sizeof(T) <= bytes.size());
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// The shape of a `.nvFatBinSegment` entry.
struct TestWrapper {
  uint32_t magic;
  uint32_t version;
  const void* data;
  const void* filename_or_fatbins;
};
static_assert(sizeof(TestWrapper) == 24);

// PTX without comments, blank lines and whitespace differences: `nvcc -ptx` output and a
// fatbin's PTX entry agree on that much.
inline std::string significant_lines(const std::string& text) {
  std::string out, line;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      size_t comment = line.find("//");
      if (comment != std::string::npos) line.resize(comment);
      std::string squeezed;
      for (char c : line) {
        bool space = c == ' ' || c == '\t' || c == '\r';
        if (space && (squeezed.empty() || squeezed.back() == ' ')) continue;
        squeezed += space ? ' ' : c;
      }
      while (!squeezed.empty() && squeezed.back() == ' ') squeezed.pop_back();
      if (!squeezed.empty()) out += squeezed + "\n";
      line.clear();
    } else {
      line += text[i];
    }
  }
  return out;
}

}  // namespace cusnap_fatbin_test
