#include "code_layouts.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "cusnap/fatbin/fatbin.h"
#include "ptx_signature.h"

namespace cusnap::icpt {
namespace {

template <class T>
bool load(std::span<const uint8_t> bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

// ---- ELF (cubin)

constexpr uint32_t kElfSectionNames = 0;  // sh_name offset field
constexpr std::string_view kNvInfoPrefix = ".nv.info.";
constexpr uint8_t kFormatSval = 4;           // record carries `value` bytes of data
constexpr uint8_t kAttrKparamInfo = 0x17;    // EIATTR_KPARAM_INFO
constexpr uint8_t kAttrKparamInfoV2 = 0x45;  // EIATTR_KPARAM_INFO_V2 (layout not known: give up)
constexpr size_t kKparamInfoBytes = 12;

struct Section {
  uint32_t name = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// The records of one `.nv.info.<kernel>` section as a layout; std::nullopt when they cannot be
// trusted (malformed, duplicate ordinals, V2 records).
std::optional<std::vector<ParamSlot>> parse_nv_info(std::span<const uint8_t> records) {
  struct Param {
    uint16_t ordinal;
    ParamSlot slot;
  };
  std::vector<Param> params;
  size_t at = 0;
  while (at + 4 <= records.size()) {
    uint8_t format = records[at];
    uint8_t attribute = records[at + 1];
    uint16_t value = 0;
    std::memcpy(&value, records.data() + at + 2, 2);
    at += 4;
    if (format != kFormatSval) continue;  // NVAL/BVAL/HVAL: the value is in the header
    if (records.size() - at < value) return std::nullopt;
    std::span<const uint8_t> data = records.subspan(at, value);
    at += value;
    if (attribute == kAttrKparamInfoV2) return std::nullopt;
    if (attribute != kAttrKparamInfo) continue;
    if (data.size() != kKparamInfoBytes) return std::nullopt;
    uint16_t ordinal = 0, offset = 0;
    uint32_t packed = 0;
    std::memcpy(&ordinal, data.data() + 4, 2);
    std::memcpy(&offset, data.data() + 6, 2);
    std::memcpy(&packed, data.data() + 8, 4);
    params.push_back({ordinal, ParamSlot{offset, packed >> 18}});
  }
  if (at != records.size()) return std::nullopt;
  // Records come in descending ordinal; ordinals must be exactly 0..n-1.
  std::sort(params.begin(), params.end(),
            [](const Param& a, const Param& b) { return a.ordinal < b.ordinal; });
  std::vector<ParamSlot> layout;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].ordinal != i) return std::nullopt;
    layout.push_back(params[i].slot);
  }
  return layout;
}

}  // namespace

std::optional<std::map<std::string, std::vector<ParamSlot>>> cubin_param_layouts(
    std::span<const uint8_t> elf) {
  static constexpr uint8_t kIdent[] = {0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little-endian */};
  if (elf.size() < 64 || std::memcmp(elf.data(), kIdent, sizeof kIdent) != 0) return std::nullopt;
  uint64_t section_table = 0;
  uint16_t entry_size = 0, count = 0, names_index = 0;
  if (!load(elf, 0x28, &section_table) || !load(elf, 0x3A, &entry_size) ||
      !load(elf, 0x3C, &count) || !load(elf, 0x3E, &names_index)) {
    return std::nullopt;
  }
  if (entry_size < 64 || names_index >= count) return std::nullopt;
  std::vector<Section> sections(count);
  for (uint16_t i = 0; i < count; ++i) {
    uint64_t at = section_table + uint64_t{i} * entry_size;
    Section& s = sections[i];
    if (!load(elf, at + kElfSectionNames, &s.name) || !load(elf, at + 24, &s.offset) ||
        !load(elf, at + 32, &s.size)) {
      return std::nullopt;
    }
  }
  // Only the sections read are checked against the file: others may legitimately not be in it
  // (SHT_NOBITS: `.nv.shared.<kernel>` has a size but no bytes).
  auto inside = [&elf](const Section& s) {
    return s.offset <= elf.size() && elf.size() - s.offset >= s.size;
  };
  const Section& names = sections[names_index];
  if (!inside(names)) return std::nullopt;
  std::string_view name_table(reinterpret_cast<const char*>(elf.data() + names.offset), names.size);
  std::map<std::string, std::vector<ParamSlot>> out;
  for (const Section& s : sections) {
    if (s.name >= name_table.size()) continue;
    std::string_view name = name_table.substr(s.name);
    name = name.substr(0, name.find('\0'));
    if (name.substr(0, kNvInfoPrefix.size()) != kNvInfoPrefix || !inside(s)) continue;
    auto layout = parse_nv_info(elf.subspan(s.offset, s.size));
    if (layout) out.emplace(std::string(name.substr(kNvInfoPrefix.size())), std::move(*layout));
  }
  return out;
}

bool for_each_fatbin_entry(std::span<const uint8_t> container, uint16_t kind,
                           const std::function<bool(const FatbinEntry&)>& visit) {
  namespace fb = cusnap::fatbin;
  if (container.size() < fb::kContainerHeaderSize) return false;
  uint64_t declared = fb::container_size(container.data());
  if (declared == 0 || declared > container.size()) return false;
  // On an entry error, `entries` still holds the entries before it: they are visited.
  fb::Container parsed = fb::parse_container(container.data(), container.size());
  FatbinEntry entry;
  std::string error;
  for (const fb::Entry& e : parsed.entries) {
    if (e.kind != kind) continue;
    entry.kind = e.kind;
    entry.sm = e.sm;
    if (!fb::entry_payload(container.data(), e, &entry.payload, &error)) break;
    if (!visit(entry)) break;
  }
  return true;
}

std::vector<cusnap::fatbin::Variable> image_variables(const ImageView& image) {
  // For kFatbinWrapper, `image.data` is the container it points to: fatbin's one dispatch
  // classifies the bytes themselves.
  if (image.data == nullptr || image.size == 0 || image.kind == ImageKind::kUnknown) return {};
  return cusnap::fatbin::image_variables(std::span<const uint8_t>(image.data, image.size));
}

ImageLayouts image_layouts(const ImageView& image) {
  ImageLayouts out;
  if (image.data == nullptr || image.size == 0) return out;
  std::span<const uint8_t> bytes(image.data, image.size);
  auto add = [&out](auto&& layouts, LayoutSource source) {
    for (auto& [name, layout] : layouts)
      out.try_emplace(name, ImageLayout{std::move(layout), source});
  };
  switch (image.kind) {
    case ImageKind::kPtx: {
      const void* nul = std::memchr(image.data, 0, image.size);
      size_t length = nul != nullptr
                          ? static_cast<size_t>(static_cast<const uint8_t*>(nul) - image.data)
                          : image.size;
      add(ptx_entry_layouts(std::string_view(reinterpret_cast<const char*>(image.data), length)),
          LayoutSource::kPtxSignature);
      break;
    }
    case ImageKind::kCubin:
      if (auto layouts = cubin_param_layouts(bytes)) add(*layouts, LayoutSource::kNvInfo);
      break;
    case ImageKind::kFatbin:
    case ImageKind::kFatbinWrapper:
      for_each_fatbin_entry(bytes, kFatbinEntryElf, [&](const FatbinEntry& entry) {
        auto layouts = cubin_param_layouts(std::span<const uint8_t>(
            reinterpret_cast<const uint8_t*>(entry.payload.data()), entry.payload.size()));
        if (layouts) add(*layouts, LayoutSource::kNvInfo);
        return true;
      });
      if (out.empty()) {
        for_each_fatbin_entry(bytes, kFatbinEntryPtx, [&](const FatbinEntry& entry) {
          add(ptx_entry_layouts(entry.payload), LayoutSource::kPtxSignature);
          return true;
        });
      }
      break;
    case ImageKind::kUnknown:
      break;
  }
  return out;
}

}  // namespace cusnap::icpt
