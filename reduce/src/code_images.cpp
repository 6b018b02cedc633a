#include "code_images.h"

#include <cctype>
#include <cstring>

#include "cusnap/fatbin/fatbin.h"
#include "cusnap/fatbin/variables.h"
#include "cusnap/format/blob_id.h"

namespace cusnap::reduce::detail {

using format::ErrorCode;
using format::Result;
using format::Status;

namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '%';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$';
}

// The replacement of one identifier: a name, or a name's parameter (`<name>_param_<N>`, as
// nvcc names them); empty when it is neither.
std::string replacement(std::string_view token, const CodeRewrite& rewrite) {
  if (rewrite.names.count(std::string(token)) != 0) return hashed_name(rewrite.salt, token);
  size_t param = token.rfind("_param_");
  if (param != std::string_view::npos && param != 0) {
    std::string_view base = token.substr(0, param);
    if (rewrite.names.count(std::string(base)) != 0)
      return hashed_name(rewrite.salt, base) + std::string(token.substr(param));
  }
  return {};
}

// Appends `token`, replaced when it is a name.
void put_token(std::string& out, std::string_view token, const CodeRewrite& rewrite) {
  std::string r = replacement(token, rewrite);
  if (r.empty())
    out.append(token);
  else
    out += r;
}

// Every identifier of `text` that is a name replaced (comments, strings, free text).
std::string replace_all(std::string_view text, const CodeRewrite& rewrite) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      size_t j = i;
      while (j < text.size() && ident_char(text[j])) ++j;
      out.append(text.substr(i, j - i));
      i = j;
    } else if (ident_start(c)) {
      size_t j = i + 1;
      while (j < text.size() && ident_char(text[j])) ++j;
      put_token(out, text.substr(i, j - i), rewrite);
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// Directives that end at the end of their line (no `;`).
bool line_directive(std::string_view word) {
  return word == "loc" || word == "file" || word == "version" || word == "target" ||
         word == "address_size";
}

// PTX code with its names replaced. An instruction's opcode (the first word of a statement, after
// a label and a guard) is never replaced, so that a kernel called `add` does not rename the
// instruction; every other identifier that is a name is (operands, declarations, call targets).
std::string replace_in_code(std::string_view text, const CodeRewrite& rewrite) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  bool at_start = true;   // the next word may be an opcode or a label
  bool assigned = false;  // the statement has an `=`: its braces are an initializer's
  bool line_end = false;  // the statement is a line directive: a newline ends it
  int initializer = 0;    // depth of initializer braces
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    char c = text[i];
    char next = i + 1 < n ? text[i + 1] : '\0';
    if (c == '"') {
      size_t end = text.find('"', i + 1);
      end = end == std::string_view::npos ? n : end + 1;
      out += replace_all(text.substr(i, end - i), rewrite);
      i = end;
      continue;
    }
    if (c == '/' && (next == '/' || next == '*')) {
      size_t end = next == '/' ? text.find('\n', i) : text.find("*/", i + 2);
      end = end == std::string_view::npos ? n : (next == '/' ? end : end + 2);
      out += replace_all(text.substr(i, end - i), rewrite);
      i = end;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      size_t j = i;
      while (j < n && ident_char(text[j])) ++j;
      out.append(text.substr(i, j - i));
      at_start = false;
      i = j;
      continue;
    }
    if (ident_start(c)) {
      size_t j = i + 1;
      while (j < n && ident_char(text[j])) ++j;
      std::string_view token = text.substr(i, j - i);
      const bool after_dot = i > 0 && text[i - 1] == '.';
      if (after_dot || (at_start && initializer == 0))
        out.append(token);  // a directive or type word, an opcode or a label
      else
        put_token(out, token, rewrite);
      at_start = false;
      i = j;
      continue;
    }
    if (c == '@' && at_start) {
      // A guard (`@%p1`, `@!%p1`): its predicate, then the opcode still to come.
      size_t j = i + 1;
      if (j < n && text[j] == '!') ++j;
      while (j < n && (ident_char(text[j]) || text[j] == '%')) ++j;
      out.append(text.substr(i, j - i));
      i = j;
      continue;
    }
    if (c == '.' && at_start) {
      size_t j = i + 1;
      while (j < n && ident_char(text[j])) ++j;
      line_end = line_directive(text.substr(i + 1, j - i - 1));
    }
    switch (c) {
      case ';':
        at_start = true;
        assigned = false;
        line_end = false;
        break;
      case '{':
        if (assigned || initializer > 0)
          ++initializer;
        else
          at_start = true;
        break;
      case '}':
        if (initializer > 0) {
          --initializer;
        } else {
          at_start = true;
          assigned = false;
        }
        break;
      case '=':
        assigned = true;
        break;
      case ':':
        at_start = true;  // after a label
        break;
      case '\n':
        if (line_end) {
          at_start = true;
          line_end = false;
        }
        break;
      default:
        if (std::isspace(static_cast<unsigned char>(c)) == 0) at_start = false;
        break;
    }
    out += c;
    ++i;
  }
  return out;
}

// `text` without its `.file` and `.loc` lines (debug line information: file paths).
std::string without_line_info(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find('\n', i);
    end = end == std::string_view::npos ? text.size() : end + 1;
    std::string_view line = text.substr(i, end - i);
    size_t first = line.find_first_not_of(" \t");
    std::string_view word =
        first == std::string_view::npos ? std::string_view() : line.substr(first);
    auto directive = [&word](std::string_view d) {
      return word.size() > d.size() && word.substr(0, d.size()) == d &&
             std::isspace(static_cast<unsigned char>(word[d.size()])) != 0;
    };
    if (!directive(".file") && !directive(".loc")) out.append(line);
    i = end;
  }
  return out;
}

template <typename T>
void store(std::vector<uint8_t>& bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

}  // namespace

std::string hashed_name(const std::string& salt, std::string_view name) {
  std::string material = salt;
  material.push_back('\0');
  material.append(name);
  std::string hex =
      format::hash_blob({reinterpret_cast<const uint8_t*>(material.data()), material.size()})
          .to_hex();
  return "h_" + hex.substr(0, 24);
}

std::vector<std::string> ptx_defined_names(std::string_view ptx) {
  std::string text = fatbin::ptx_without_comments(ptx);
  std::vector<std::string> out;
  size_t statement = 0;  // where the current statement began
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = text.find('"', i + 1);
      if (end == std::string::npos) break;
      i = end;
      continue;
    }
    if (c == ';' || c == '{' || c == '}') {
      statement = i + 1;
      continue;
    }
    if (c != '.' || (i > 0 && ident_char(text[i - 1]))) continue;
    std::string_view rest = std::string_view(text).substr(i);
    size_t word = rest.substr(0, 6) == ".entry" ? 6 : rest.substr(0, 5) == ".func" ? 5 : 0;
    if (word == 0 || (word < rest.size() && ident_char(rest[word]))) continue;
    std::string_view head = std::string_view(text).substr(statement, i - statement);
    if (head.find(".extern") != std::string_view::npos) continue;
    size_t j = i + word;
    auto skip_space = [&] {
      while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j])) != 0) ++j;
    };
    skip_space();
    if (word == 5 && j < text.size() && text[j] == '(') {  // a .func's return parameters
      int depth = 0;
      for (; j < text.size(); ++j) {
        if (text[j] == '(') ++depth;
        if (text[j] == ')' && --depth == 0) break;
      }
      ++j;
      skip_space();
    }
    size_t start = j;
    if (j < text.size() && ident_start(text[j])) ++j;
    while (j < text.size() && ident_char(text[j])) ++j;
    if (j > start) out.emplace_back(text, start, j - start);
  }
  for (const fatbin::Variable& v : fatbin::ptx_variables(ptx)) out.push_back(v.name);
  return out;
}

Result<std::vector<std::string>> image_ptx(std::span<const uint8_t> image,
                                           const std::string& what) {
  auto refuse = [&](const std::string& why) {
    return Status::error(ErrorCode::kInvalidArgument,
                         what + ": " + why +
                             "; --strip-ptx-comments and --hash-names rewrite PTX only "
                             "(docs/redact.md, \"Code images\")");
  };
  if (image.size() < 8) return refuse("not a code image this module can read");
  switch (fatbin::classify(image.data())) {
    case fatbin::ImageKind::kPtxText: {
      const void* nul = std::memchr(image.data(), 0, image.size());
      size_t length = nul != nullptr
                          ? static_cast<size_t>(static_cast<const uint8_t*>(nul) - image.data())
                          : image.size();
      return std::vector<std::string>{
          std::string(reinterpret_cast<const char*>(image.data()), length)};
    }
    case fatbin::ImageKind::kElf:
      return refuse(
          "a cubin (SASS): its ELF symbol and string tables are not rewritten, and it has no "
          "PTX to keep");
    case fatbin::ImageKind::kContainer: {
      fatbin::Container container = fatbin::parse_container(image.data(), image.size());
      if (!container.error.empty()) return refuse(container.error);
      std::vector<std::string> texts;
      for (const fatbin::Entry& e : container.entries) {
        if (e.kind != fatbin::kEntryPtx) continue;
        std::string payload, error;
        if (!fatbin::entry_payload(image.data(), e, &payload, &error)) return refuse(error);
        texts.push_back(std::move(payload));
      }
      if (texts.empty()) return refuse("a fatbin with no PTX entry (cubins only)");
      return texts;
    }
    case fatbin::ImageKind::kWrapper:
    case fatbin::ImageKind::kUnknown:
      break;
  }
  return refuse("not a code image this module can read");
}

Result<std::string> rewrite_ptx(std::string_view ptx, const CodeRewrite& rewrite,
                                const std::string& what) {
  std::string text(ptx);
  if (rewrite.strip_comments) text = without_line_info(fatbin::ptx_without_comments(text));
  if (!rewrite.hash_names) return text;
  if (text.find("@@DWARF") != std::string::npos ||
      text.find(".section .debug") != std::string::npos)
    return Status::error(
        ErrorCode::kInvalidArgument,
        what +
            ": its PTX holds DWARF debug sections (nvcc -G, or -lineinfo with inlined "
            "functions), whose names are bytes --hash-names cannot rewrite");
  return replace_in_code(text, rewrite);
}

std::string rewrite_text(std::string_view text, const CodeRewrite& rewrite) {
  if (!rewrite.hash_names) return std::string(text);
  return replace_all(text, rewrite);
}

Result<std::vector<uint8_t>> rewrite_image(std::span<const uint8_t> image,
                                           const CodeRewrite& rewrite, const std::string& what,
                                           unsigned* dropped) {
  auto texts = image_ptx(image, what);
  if (!texts) return texts.status();
  if (fatbin::classify(image.data()) == fatbin::ImageKind::kPtxText) {
    auto text = rewrite_ptx((*texts)[0], rewrite, what);
    if (!text) return text.status();
    std::vector<uint8_t> out(text->begin(), text->end());
    out.push_back(0);
    return out;
  }
  // A container: its header, then each PTX entry's header with its payload replaced by the
  // rewritten text, uncompressed (NUL-terminated, padded to 8 bytes); cubin entries left out.
  fatbin::Container container = fatbin::parse_container(image.data(), image.size());
  std::vector<uint8_t> out(image.begin(), image.begin() + container.header_size);
  size_t ptx = 0;
  for (const fatbin::Entry& e : container.entries) {
    if (e.kind != fatbin::kEntryPtx) {
      ++*dropped;
      continue;
    }
    auto text = rewrite_ptx((*texts)[ptx++], rewrite, what);
    if (!text) return text.status();
    const size_t at = out.size();
    out.insert(out.end(), image.begin() + e.header_offset,
               image.begin() + e.header_offset + e.header_size);
    const uint64_t padded = (text->size() + 1 + 7) / 8 * 8;
    store<uint64_t>(out, at + 8, padded);
    store<uint32_t>(out, at + 16, 0);  // compressed size
    store<uint64_t>(out, at + 40, e.flags & ~(fatbin::kFlagLz4 | fatbin::kFlagZstd));
    store<uint64_t>(out, at + 56, 0);  // uncompressed size (as nvcc writes an uncompressed one)
    out.insert(out.end(), text->begin(), text->end());
    out.resize(out.size() + (padded - text->size()), 0);
  }
  store<uint64_t>(out, 8, out.size() - container.header_size);
  return out;
}

}  // namespace cusnap::reduce::detail
