#include "replayer/target.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace cusnap::replayer {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint16_t kEntryPtx = 1;
constexpr uint16_t kEntryElf = 2;

template <typename T>
bool read_at(std::span<const uint8_t> bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

void add_unique(std::vector<int>& v, int x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

bool parse_fatbin(std::span<const uint8_t> bytes, ImageArchitectures& out) {
  uint64_t container = 0;
  bool any = false;
  // Containers may follow each other; each: u32 magic, u16 version, u16 header size, u64 size.
  while (container < bytes.size()) {
    uint32_t magic = 0;
    uint16_t header_size = 0;
    uint64_t entries_size = 0;
    if (!read_at(bytes, container, &magic) || magic != kFatbinMagic) break;
    if (!read_at(bytes, container + 6, &header_size) || !read_at(bytes, container + 8, &entries_size)) break;
    uint64_t begin = container + header_size;
    if (entries_size > bytes.size() || begin > bytes.size() - entries_size) break;
    uint64_t end = begin + entries_size;
    for (uint64_t entry = begin; entry < end;) {
      uint16_t kind = 0;
      uint32_t entry_header = 0;
      uint64_t payload = 0;
      uint32_t sm = 0;
      if (!read_at(bytes, entry, &kind) || !read_at(bytes, entry + 4, &entry_header) ||
          !read_at(bytes, entry + 8, &payload) || !read_at(bytes, entry + 28, &sm)) {
        break;
      }
      if (entry_header < 32 || payload > end || entry_header > end - payload) break;
      if (kind == kEntryPtx) add_unique(out.ptx, static_cast<int>(sm));
      if (kind == kEntryElf) add_unique(out.sass, static_cast<int>(sm));
      any = true;
      uint64_t next = entry + entry_header + payload;
      if (next <= entry || next > end) break;
      entry = next;
    }
    container = end;
  }
  return any;
}

bool parse_ptx(std::span<const uint8_t> bytes, ImageArchitectures& out) {
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), std::min<size_t>(bytes.size(), 1 << 20));
  size_t at = text.find(".target");
  if (at == std::string_view::npos) return false;
  size_t sm = text.find("sm_", at);
  if (sm == std::string_view::npos || sm > at + 64) return false;
  int value = 0;
  size_t i = sm + 3;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9' && value < 10000) value = value * 10 + (text[i++] - '0');
  if (value == 0) return false;
  out.ptx.push_back(value);
  return true;
}

}  // namespace

ImageArchitectures image_architectures(std::span<const uint8_t> image) {
  ImageArchitectures out;
  uint32_t magic = 0;
  if (read_at(image, 0, &magic) && magic == kFatbinMagic) {
    out.known = parse_fatbin(image, out);
  } else if (image.size() >= 4 && std::memcmp(image.data(), "\x7f" "ELF", 4) == 0) {
    // A bare cubin: where its ELF header keeps the sm version changed across toolkits, so the
    // driver alone decides (known stays false).
  } else {
    out.known = parse_ptx(image, out);
  }
  return out;
}

bool image_runs_on(const ImageArchitectures& archs, int cc) {
  if (!archs.known) return true;
  for (int sm : archs.sass) {
    if (sm / 10 == cc / 10 && sm % 10 <= cc % 10) return true;
  }
  for (int ptx : archs.ptx) {
    if (ptx <= cc) return true;
  }
  return false;
}

std::string describe_architectures(const ImageArchitectures& archs) {
  if (!archs.known) return "unknown";
  std::string out;
  for (int sm : archs.sass) out += (out.empty() ? "" : ", ") + std::string("sm_") + std::to_string(sm);
  for (int ptx : archs.ptx) out += (out.empty() ? "" : ", ") + std::string("compute_") + std::to_string(ptx);
  return out.empty() ? "no code" : out;
}

}  // namespace cusnap::replayer
