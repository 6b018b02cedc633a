#include "cusnap/format/blob_id.h"

#include <xxhash.h>

namespace cusnap::format {

namespace {
constexpr char kHexDigits[] = "0123456789abcdef";
}  // namespace

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string bytes_to_hex(std::span<const uint8_t> bytes) {
  std::string text;
  text.reserve(bytes.size() * 2);
  for (uint8_t byte : bytes) {
    text.push_back(kHexDigits[byte >> 4]);
    text.push_back(kHexDigits[byte & 15]);
  }
  return text;
}

std::string BlobId::to_hex() const {
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = kHexDigits[(high >> (4 * i)) & 0xf];
    out[31 - i] = kHexDigits[(low >> (4 * i)) & 0xf];
  }
  return out;
}

std::optional<BlobId> BlobId::from_hex(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  BlobId id;
  for (size_t i = 0; i < 32; ++i) {
    int v = hex_digit_value(hex[i]);
    if (v < 0) return std::nullopt;
    uint64_t& half = i < 16 ? id.high : id.low;
    half = (half << 4) | static_cast<uint64_t>(v);
  }
  return id;
}

BlobId hash_blob(std::span<const uint8_t> bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return BlobId{h.high64, h.low64};
}

uint64_t checksum64(std::span<const uint8_t> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

BlobHasher::BlobHasher() : state_(XXH3_createState()) { reset(); }

BlobHasher::~BlobHasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void BlobHasher::reset() { XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_)); }

void BlobHasher::update(std::span<const uint8_t> bytes) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), bytes.data(), bytes.size());
}

BlobId BlobHasher::finish() const {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<const XXH3_state_t*>(state_));
  return BlobId{h.high64, h.low64};
}

}  // namespace cusnap::format
