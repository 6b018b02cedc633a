// Content identifiers for bulk bytes (code images, copy payloads, memory chunks).
//
// A BlobId is the XXH3-128 hash (libxxhash, seed 0) of the blob's complete, uncompressed bytes.
// Identical bytes get identical ids, which is what lets the writer store them once per file.
// The all-zero id means "no blob" in records (a real XXH3-128 is zero with probability 2^-128).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cusnap::format {

struct BlobId {
  uint64_t high = 0;  // XXH128_hash_t::high64
  uint64_t low = 0;   // XXH128_hash_t::low64

  bool is_null() const { return high == 0 && low == 0; }
  friend bool operator==(const BlobId&, const BlobId&) = default;
  friend auto operator<=>(const BlobId&, const BlobId&) = default;

  // 32 lowercase hex digits: high then low, each big-endian (same as XXH128's canonical form).
  std::string to_hex() const;
  static std::optional<BlobId> from_hex(std::string_view hex);
};

// Lowercase hex of arbitrary bytes, and the value of one hex digit (-1 if it is not one): the
// spelling of ids above and of Data fields in `cusnap dump`'s JSON.
std::string bytes_to_hex(std::span<const uint8_t> bytes);
int hex_digit_value(char c);

// XXH3-128 of a whole buffer.
BlobId hash_blob(std::span<const uint8_t> bytes);

// Incremental XXH3-128, for blobs hashed piece by piece (streaming reads, verification).
class BlobHasher {
 public:
  BlobHasher();
  ~BlobHasher();
  BlobHasher(const BlobHasher&) = delete;
  BlobHasher& operator=(const BlobHasher&) = delete;

  void update(std::span<const uint8_t> bytes);
  BlobId finish() const;  // may be called repeatedly; does not reset
  void reset();

 private:
  void* state_;  // XXH3_state_t*, kept opaque so xxhash.h stays out of our headers
};

// XXH3-64 (seed 0): the checksum used for frame headers/payloads and DtoH result checksums.
uint64_t checksum64(std::span<const uint8_t> bytes);

struct BlobIdHash {
  size_t operator()(const BlobId& id) const noexcept {
    return static_cast<size_t>(id.low ^ (id.high * 0x9E3779B97F4A7C15ull));
  }
};

}  // namespace cusnap::format
