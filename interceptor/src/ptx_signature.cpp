#include "ptx_signature.h"

#include <cctype>
#include <cstdlib>
#include <string>

namespace cusnap::icpt {
namespace {

bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
}

// Byte size of a PTX fundamental type token (".u32" ...), 0 when it is not one.
unsigned type_size(std::string_view token) {
  if (token.size() < 3 || token[0] != '.') return 0;
  char kind = token[1];
  if (kind != 'u' && kind != 's' && kind != 'b' && kind != 'f') return 0;
  int bits = std::atoi(std::string(token.substr(2)).c_str());
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return 0;
  return static_cast<unsigned>(bits / 8);
}

std::optional<ParamSlot> parse_param(std::string_view text, uint32_t& offset) {
  // Tokens separated by whitespace; the last one is the name, possibly with [N].
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) tokens.push_back(text.substr(start, i - start));
  }
  if (tokens.size() < 3 || tokens[0] != ".param") return std::nullopt;
  unsigned element = 0, align = 0;
  bool after_ptr = false;
  for (size_t t = 1; t + 1 < tokens.size(); ++t) {
    if (tokens[t] == ".ptr") after_ptr = true;
    if (tokens[t] == ".align" && t + 1 < tokens.size() - 1) {
      unsigned value = static_cast<unsigned>(std::atoi(std::string(tokens[t + 1]).c_str()));
      if (!after_ptr && element == 0) align = value;
      ++t;
      continue;
    }
    if (element == 0) element = type_size(tokens[t]);
  }
  if (element == 0) return std::nullopt;
  std::string_view name = tokens.back();
  uint64_t count = 1;
  if (size_t bracket = name.find('['); bracket != std::string_view::npos) {
    count = std::strtoull(std::string(name.substr(bracket + 1)).c_str(), nullptr, 10);
    if (count == 0) return std::nullopt;
  }
  if (align == 0) align = element;
  offset = (offset + align - 1) / align * align;
  ParamSlot slot{offset, static_cast<uint32_t>(element * count)};
  offset += slot.size;
  return slot;
}

// Parses the `.entry` directive whose keyword starts at `at`: its name, and its layout
// (std::nullopt when the parameter list cannot be parsed). Returns where scanning may go on.
size_t parse_entry(std::string_view ptx, size_t at, std::string_view* name,
                   std::optional<std::vector<ParamSlot>>* layout) {
  size_t i = at + 6;
  while (i < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[i]))) ++i;
  size_t name_start = i;
  while (i < ptx.size() && is_ident(ptx[i])) ++i;
  *name = ptx.substr(name_start, i - name_start);
  while (i < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[i]))) ++i;
  layout->emplace();
  if (i >= ptx.size() || ptx[i] != '(') return i;  // no parameter list
  size_t close = ptx.find(')', i);
  if (close == std::string_view::npos) {
    layout->reset();
    return ptx.size();
  }
  std::string_view list = ptx.substr(i + 1, close - i - 1);
  uint32_t offset = 0;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string_view item = list.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    bool blank = item.find_first_not_of(" \t\r\n") == std::string_view::npos;
    if (!blank) {
      auto slot = parse_param(item, offset);
      if (!slot) {
        layout->reset();
        return close + 1;
      }
      (*layout)->push_back(*slot);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return close + 1;
}

// A `.entry` keyword (not part of a longer identifier) at or after `from`.
size_t find_entry(std::string_view ptx, size_t from) {
  while ((from = ptx.find(".entry", from)) != std::string_view::npos) {
    bool bounded_before = from == 0 || !is_ident(ptx[from - 1]);
    bool bounded_after =
        from + 6 < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[from + 6]));
    if (bounded_before && bounded_after) return from;
    from += 6;
  }
  return std::string_view::npos;
}

}  // namespace

std::optional<std::vector<ParamSlot>> ptx_entry_layout(std::string_view ptx,
                                                       std::string_view entry) {
  for (size_t at = find_entry(ptx, 0); at != std::string_view::npos;) {
    std::string_view name;
    std::optional<std::vector<ParamSlot>> layout;
    size_t next = parse_entry(ptx, at, &name, &layout);
    if (name == entry) return layout;
    at = find_entry(ptx, next > at ? next : at + 6);
  }
  return std::nullopt;
}

std::map<std::string, std::vector<ParamSlot>, std::less<>> ptx_entry_layouts(std::string_view ptx) {
  std::map<std::string, std::vector<ParamSlot>, std::less<>> out;
  for (size_t at = find_entry(ptx, 0); at != std::string_view::npos;) {
    std::string_view name;
    std::optional<std::vector<ParamSlot>> layout;
    size_t next = parse_entry(ptx, at, &name, &layout);
    if (layout && !name.empty()) out.emplace(std::string(name), std::move(*layout));
    at = find_entry(ptx, next > at ? next : at + 6);
  }
  return out;
}

}  // namespace cusnap::icpt
