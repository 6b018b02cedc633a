#include "cusnap/fatbin/variables.h"

#include <cstring>

#include "cusnap/fatbin/fatbin.h"

namespace cusnap::fatbin {
namespace {

// ---- PTX

// `text` with its comments replaced by a space each (string literals, which may hold "//", kept).
std::string without_comments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = text.find('"', i + 1);
      if (end == std::string_view::npos) end = text.size() - 1;
      out.append(text.substr(i, end - i + 1));
      i = end;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      size_t end = text.find('\n', i);
      if (end == std::string_view::npos) break;
      out += ' ';
      i = end - 1;  // the newline itself ends a directive below
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      size_t end = text.find("*/", i + 2);
      if (end == std::string_view::npos) break;
      out += ' ';
      i = end + 1;
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<std::string_view> tokens(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::strchr(" \t\r\n", text[i]) != nullptr) ++i;
    size_t start = i;
    while (i < text.size() && std::strchr(" \t\r\n", text[i]) == nullptr) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

uint64_t type_size(std::string_view type) {
  static constexpr struct {
    std::string_view name;
    uint64_t size;
  } kTypes[] = {{".b8", 1},  {".u8", 1},  {".s8", 1},    {".b16", 2},    {".u16", 2},
                {".s16", 2}, {".f16", 2}, {".bf16", 2},  {".b32", 4},    {".u32", 4},
                {".s32", 4}, {".f32", 4}, {".f16x2", 4}, {".bf16x2", 4}, {".b64", 8},
                {".u64", 8}, {".s64", 8}, {".f64", 8},   {".b128", 16}};
  for (const auto& t : kTypes)
    if (t.name == type) return t.size;
  return 0;
}

// One module-scope statement (up to its `;`, initializer cut off); a variable when it defines one.
std::optional<Variable> parse_declaration(std::string_view statement) {
  statement = statement.substr(0, statement.find('='));
  std::vector<std::string_view> words = tokens(statement);
  bool constant = false, space = false;
  uint64_t element = 0, lanes = 1;
  size_t i = 0;
  for (; i < words.size() && element == 0; ++i) {
    std::string_view w = words[i];
    if (w == ".extern") return std::nullopt;  // declared here, defined elsewhere
    if (w == ".global" || w == ".const") {
      space = true;
      constant = w == ".const";
    } else if (w == ".align") {
      ++i;  // its value
    } else if (w == ".v2" || w == ".v4" || w == ".v8") {
      lanes = static_cast<uint64_t>(w[2] - '0');
    } else if (w.substr(0, 1) == ".") {
      element = type_size(w);  // .visible, .weak, .attribute(...) give 0 and are passed over
      if (element == 0 && (w == ".texref" || w == ".samplerref" || w == ".surfref"))
        return std::nullopt;  // opaque handles, not memory
    } else {
      return std::nullopt;  // a declarator before any type: not a variable definition
    }
  }
  if (!space || element == 0) return std::nullopt;
  std::string declarator;
  for (; i < words.size(); ++i) declarator.append(words[i]);
  size_t bracket = declarator.find('[');
  Variable v;
  v.name = declarator.substr(0, bracket);
  v.constant = constant;
  if (v.name.empty()) return std::nullopt;
  for (char c : v.name)
    if (std::strchr(",()[]{};:", c) != nullptr) return std::nullopt;  // a list or garbage
  uint64_t size = element * lanes;
  while (bracket != std::string::npos && bracket < declarator.size()) {
    size_t close = declarator.find(']', bracket);
    if (close == std::string::npos || close == bracket + 1) return std::nullopt;  // `[]`
    uint64_t n = 0;
    for (size_t k = bracket + 1; k < close; ++k) {
      char c = declarator[k];
      if (c < '0' || c > '9' || n > (uint64_t{1} << 40)) return std::nullopt;
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    if (n == 0 || size > (uint64_t{1} << 40) / n) return std::nullopt;
    size *= n;
    bracket = close + 1;
    if (bracket < declarator.size() && declarator[bracket] != '[') return std::nullopt;
  }
  v.size = size;
  return v;
}

// Directives that end at the end of their line (no `;`).
bool line_directive(std::string_view statement) {
  std::vector<std::string_view> words = tokens(statement);
  if (words.empty()) return false;
  return words[0] == ".version" || words[0] == ".target" || words[0] == ".address_size" ||
         words[0] == ".file";
}

// ---- ELF

template <class T>
bool load(std::span<const uint8_t> bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

struct Section {
  uint32_t name = 0;
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint64_t entry_size = 0;
};

constexpr uint32_t kSymtab = 2;         // SHT_SYMTAB
constexpr uint8_t kObject = 1;          // STT_OBJECT
constexpr uint16_t kReserved = 0xff00;  // SHN_LORESERVE: no section of this file
constexpr uint64_t kSymbolBytes = 24;   // Elf64_Sym

std::string_view c_string(std::span<const uint8_t> bytes, const Section& table, uint32_t offset) {
  if (table.offset > bytes.size() || bytes.size() - table.offset < table.size ||
      offset >= table.size)
    return {};
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + table.offset + offset),
                        table.size - offset);
  return text.substr(0, text.find('\0'));
}

}  // namespace

std::string ptx_without_comments(std::string_view ptx) { return without_comments(ptx); }

std::vector<Variable> ptx_variables(std::string_view ptx) {
  std::string text = without_comments(ptx);
  std::vector<Variable> out;
  std::string statement;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = text.find('"', i + 1);
      if (end == std::string::npos) break;
      statement.append(text, i, end - i + 1);
      i = end;
    } else if (c == '{') {
      // An initializer's braces belong to the statement; any other block (a function body, a
      // debug section) ends what came before it.
      bool initializer = statement.find('=') != std::string::npos;
      int depth = 0;
      for (; i < text.size(); ++i) {
        if (text[i] == '{') ++depth;
        if (text[i] == '}' && --depth == 0) break;
      }
      if (!initializer) statement.clear();
    } else if (c == ';') {
      if (auto v = parse_declaration(statement)) out.push_back(std::move(*v));
      statement.clear();
    } else if (c == '\n' && line_directive(statement)) {
      statement.clear();
    } else {
      statement += c;
    }
  }
  return out;
}

std::optional<std::vector<Variable>> elf_variables(std::span<const uint8_t> elf) {
  static constexpr uint8_t kIdent[] = {0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little-endian */};
  if (elf.size() < 64 || std::memcmp(elf.data(), kIdent, sizeof kIdent) != 0) return std::nullopt;
  uint64_t section_table = 0;
  uint16_t header_size = 0, count = 0, names_index = 0;
  if (!load(elf, 0x28, &section_table) || !load(elf, 0x3A, &header_size) ||
      !load(elf, 0x3C, &count) || !load(elf, 0x3E, &names_index)) {
    return std::nullopt;
  }
  if (header_size < 64 || names_index >= count) return std::nullopt;
  std::vector<Section> sections(count);
  for (uint16_t i = 0; i < count; ++i) {
    uint64_t at = section_table + uint64_t{i} * header_size;
    Section& s = sections[i];
    if (!load(elf, at, &s.name) || !load(elf, at + 4, &s.type) || !load(elf, at + 24, &s.offset) ||
        !load(elf, at + 32, &s.size) || !load(elf, at + 40, &s.link) ||
        !load(elf, at + 56, &s.entry_size)) {
      return std::nullopt;
    }
  }
  const Section* symtab = nullptr;
  for (const Section& s : sections)
    if (s.type == kSymtab) symtab = &s;
  if (symtab == nullptr || symtab->link >= count || symtab->offset > elf.size() ||
      elf.size() - symtab->offset < symtab->size) {
    return std::nullopt;
  }
  const uint64_t stride = symtab->entry_size >= kSymbolBytes ? symtab->entry_size : kSymbolBytes;
  const Section& names = sections[symtab->link];
  std::vector<Variable> out;
  for (uint64_t at = symtab->offset; at + kSymbolBytes <= symtab->offset + symtab->size;
       at += stride) {
    uint32_t name = 0;
    uint8_t info = 0;
    uint16_t index = 0;
    uint64_t size = 0;
    if (!load(elf, at, &name) || !load(elf, at + 4, &info) || !load(elf, at + 6, &index) ||
        !load(elf, at + 16, &size)) {
      break;
    }
    if ((info & 0xf) != kObject || size == 0 || index == 0 || index >= kReserved || index >= count)
      continue;
    std::string_view section = c_string(elf, sections[names_index], sections[index].name);
    bool global = section.substr(0, 10) == ".nv.global";
    bool constant = section.substr(0, 12) == ".nv.constant";
    if (!global && !constant) continue;
    std::string_view symbol = c_string(elf, names, name);
    if (symbol.empty()) continue;
    out.push_back(Variable{std::string(symbol), size, constant});
  }
  return out;
}

std::vector<Variable> image_variables(std::span<const uint8_t> image) {
  // classify() reads up to 8 bytes: shorter bytes are no image nvcc writes.
  if (image.size() < 8) return {};
  switch (classify(image.data())) {
    case ImageKind::kPtxText: {
      const void* nul = std::memchr(image.data(), 0, image.size());
      size_t length = nul != nullptr
                          ? static_cast<size_t>(static_cast<const uint8_t*>(nul) - image.data())
                          : image.size();
      return ptx_variables(std::string_view(reinterpret_cast<const char*>(image.data()), length));
    }
    case ImageKind::kElf:
      if (auto v = elf_variables(image)) return std::move(*v);
      return {};
    case ImageKind::kContainer: {
      if (container_size(image.data()) > image.size()) return {};
      // On an entry error, `entries` still holds the entries before it.
      Container container = parse_container(image.data(), image.size());
      std::string payload, error;
      for (uint16_t kind : {kEntryElf, kEntryPtx}) {
        for (const Entry& e : container.entries) {
          if (e.kind != kind) continue;
          if (!entry_payload(image.data(), e, &payload, &error)) break;
          if (kind == kEntryPtx) return ptx_variables(payload);
          if (auto v = elf_variables(std::span<const uint8_t>(
                  reinterpret_cast<const uint8_t*>(payload.data()), payload.size())))
            return std::move(*v);
        }
      }
      return {};
    }
    case ImageKind::kWrapper:  // pointers into a process: a capture stores the container
    case ImageKind::kUnknown:
      break;
  }
  return {};
}

}  // namespace cusnap::fatbin
