// Hexadecimal text of 64-bit values (addresses, handles, hashes) for messages and reports: the
// one formatter every module uses, so an address reads the same in every error and report.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace cusnap::common {

// "0x1f00" (lower case, no leading zeros).
inline std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// "1f00": the digits alone.
inline std::string hex_digits(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace cusnap::common
