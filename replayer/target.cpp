#include "replayer/target.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "cusnap/fatbin/fatbin.h"

namespace cusnap::replayer {
namespace {

namespace fb = cusnap::fatbin;

template <typename T>
bool read_at(std::span<const uint8_t> bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

void add_unique(std::vector<int>& v, int x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// The entries of every container in `bytes` (a section may hold several back to back), read by
// the fatbin library within the bytes the capture holds. A damaged container makes the image
// unknown rather than judged by the entries before the damage: never a false refusal.
bool parse_fatbin(std::span<const uint8_t> bytes, ImageArchitectures& out) {
  size_t offset = 0;
  bool any = false;
  uint32_t magic = 0;
  while (read_at(bytes, offset, &magic) && magic == fb::kContainerMagic) {
    fb::Container container = fb::parse_container(bytes.data() + offset, bytes.size() - offset);
    if (!container.error.empty()) return false;
    for (const fb::Entry& entry : container.entries) {
      if (entry.kind == fb::kEntryPtx) add_unique(out.ptx, static_cast<int>(entry.sm));
      if (entry.kind == fb::kEntryElf) add_unique(out.sass, static_cast<int>(entry.sm));
      any = true;
    }
    offset += container.total_size;
  }
  return any;
}

bool parse_ptx(std::span<const uint8_t> bytes, ImageArchitectures& out) {
  std::string_view text(reinterpret_cast<const char*>(bytes.data()),
                        std::min<size_t>(bytes.size(), 1 << 20));
  size_t at = text.find(".target");
  if (at == std::string_view::npos) return false;
  size_t sm = text.find("sm_", at);
  if (sm == std::string_view::npos || sm > at + 64) return false;
  int value = 0;
  size_t i = sm + 3;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9' && value < 10000)
    value = value * 10 + (text[i++] - '0');
  if (value == 0) return false;
  out.ptx.push_back(value);
  return true;
}

}  // namespace

ImageArchitectures image_architectures(std::span<const uint8_t> image) {
  ImageArchitectures out;
  uint32_t magic = 0;
  if (read_at(image, 0, &magic) && magic == fb::kContainerMagic) {
    out.known = parse_fatbin(image, out);
  } else if (image.size() >= 4 && std::memcmp(image.data(),
                                              "\x7f"
                                              "ELF",
                                              4) == 0) {
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
  for (int sm : archs.sass)
    out += (out.empty() ? "" : ", ") + std::string("sm_") + std::to_string(sm);
  for (int ptx : archs.ptx)
    out += (out.empty() ? "" : ", ") + std::string("compute_") + std::to_string(ptx);
  return out.empty() ? "no code" : out;
}

}  // namespace cusnap::replayer
