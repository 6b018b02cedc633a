#include "driver/ptx_link.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>

namespace cusnap::emu::driver {
namespace {

enum class Tok : uint8_t { kIdent, kDirective, kString, kNumber, kPunct };

struct Token {
  Tok kind;
  size_t begin, end;
  uint32_t line;
};

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// PTX tokens, comments and whitespace skipped. Only identifiers have to be exact: they are what
// gets renamed and resolved; numbers and punctuation are merely skipped over correctly.
std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  uint32_t line = 1;
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c)) || c == '\0') {
      ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/')) line += s[i++] == '\n';
      i = std::min(n, i + 2);
    } else if (c == '"') {
      const size_t b = i++;
      while (i < n && s[i] != '"' && s[i] != '\n') i += s[i] == '\\' ? 2 : 1;
      i = std::min(n, i + 1);
      out.push_back({Tok::kString, b, i, line});
    } else if (c == '.' && i + 1 < n &&
               (std::isalpha(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '_')) {
      const size_t b = i++;
      while (i < n && ident_char(s[i])) ++i;
      out.push_back({Tok::kDirective, b, i, line});
    } else if (ident_start(c)) {
      const size_t b = i++;
      while (i < n && ident_char(s[i])) ++i;
      out.push_back({Tok::kIdent, b, i, line});
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      const size_t b = i++;
      while (i < n &&
             (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '_'))
        ++i;
      out.push_back({Tok::kNumber, b, i, line});
    } else {
      out.push_back({Tok::kPunct, i, i + 1, line});
      ++i;
    }
  }
  return out;
}

enum class Linkage : uint8_t { kInternal, kVisible, kExtern, kWeak, kCommon };
enum class Kind : uint8_t { kHeader, kOther, kFunction, kEntry, kVariable };

// One module-scope statement: tokens [first, last), with what the linker needs to know of it.
struct Stmt {
  size_t first = 0, last = 0;
  Kind kind = Kind::kOther;
  Linkage linkage = Linkage::kInternal;
  std::string space;               // ".global", ".const", ".shared", ... for variables
  std::vector<std::string> names;  // what it declares
  size_t body = 0;                 // functions: the token index of the body's `{` (0: none)
  size_t init = 0;                 // variables: the token index of `=` (0: none)
  bool definition() const {
    if (kind == Kind::kFunction || kind == Kind::kEntry) return body != 0;
    return kind == Kind::kVariable && linkage != Linkage::kExtern;
  }
  // External linkage, resolved across modules (`.extern .shared` is each module's own).
  bool external() const {
    if (kind != Kind::kFunction && kind != Kind::kVariable) return false;
    if (linkage == Linkage::kInternal) return false;
    return !(linkage == Linkage::kExtern && space == ".shared");
  }
};

struct Module {
  const LinkInput* input = nullptr;
  std::vector<Token> tokens;
  std::vector<Stmt> stmts;
  std::string version, address_size;
  std::vector<std::string> targets;
  std::string text(const Token& t) const { return input->ptx.substr(t.begin, t.end - t.begin); }
  std::string text(size_t token) const { return text(tokens[token]); }
};

// Splits a module into module-scope statements; false (with `error`) when it is not PTX that
// can be linked.
bool parse_module(Module& m, std::string* error) {
  m.tokens = tokenize(m.input->ptx);
  const auto& toks = m.tokens;
  const std::string& src = m.input->ptx;
  size_t i = 0;
  while (i < toks.size()) {
    Stmt st;
    st.first = i;
    const std::string head = m.text(i);
    if (head == ".version" || head == ".target" || head == ".address_size" || head == ".file") {
      // Line directives: their operands are on their line.
      const uint32_t line = toks[i].line;
      size_t j = i + 1;
      while (j < toks.size() && toks[j].line == line) ++j;
      st.last = j;
      st.kind = head == ".file" ? Kind::kOther : Kind::kHeader;
      if (head == ".version" && j > i + 1) m.version = m.text(i + 1);
      if (head == ".address_size" && j > i + 1) m.address_size = m.text(i + 1);
      if (head == ".target") {
        for (size_t k = i + 1; k < j; ++k) {
          if (toks[k].kind == Tok::kIdent) m.targets.push_back(m.text(k));
        }
      }
      m.stmts.push_back(st);
      i = j;
      continue;
    }
    int depth = 0;
    bool function = false, seen_assign = false, in_init = false;
    size_t j = i;
    for (; j < toks.size(); ++j) {
      const Token& t = toks[j];
      const std::string word = m.text(t);
      if (t.kind == Tok::kDirective && depth == 0) {
        if (word == ".func" || word == ".entry") {
          function = true;
          st.kind = word == ".entry" ? Kind::kEntry : Kind::kFunction;
        } else if (j == i || st.linkage == Linkage::kInternal) {
          if (word == ".visible") st.linkage = Linkage::kVisible;
          if (word == ".extern") st.linkage = Linkage::kExtern;
          if (word == ".weak") st.linkage = Linkage::kWeak;
          if (word == ".common") st.linkage = Linkage::kCommon;
        }
        if (!function && st.space.empty() &&
            (word == ".global" || word == ".const" || word == ".shared" || word == ".local" ||
             word == ".tex")) {
          st.space = word;
          st.kind = Kind::kVariable;
        }
        if (word == ".section" && j == i) st.kind = Kind::kOther;
      }
      if (t.kind == Tok::kPunct) {
        const char c = src[t.begin];
        if (c == '{' && depth == 0 && (function || m.text(i) == ".section") && !seen_assign) {
          // A body (or a .section's contents): through the matching brace.
          if (function) st.body = j;
          int body_depth = 0;
          for (; j < toks.size(); ++j) {
            if (toks[j].kind != Tok::kPunct) continue;
            const char b = src[toks[j].begin];
            if (b == '{') ++body_depth;
            if (b == '}' && --body_depth == 0) break;
          }
          if (j == toks.size()) {
            *error = "'" + m.input->name + "': unterminated body at line " + std::to_string(t.line);
            return false;
          }
          ++j;
          break;
        }
        if (c == '(' || c == '[' || c == '{') ++depth;
        if (c == ')' || c == ']' || c == '}') --depth;
        if (depth == 0 && c == '=') {
          seen_assign = in_init = true;
          if (st.init == 0) st.init = j;
        }
        if (depth == 0 && c == ',') in_init = false;
        if (depth == 0 && c == ';') {
          ++j;
          break;
        }
      }
      if (t.kind == Tok::kIdent && depth == 0 && !in_init) {
        if (function) {
          if (st.names.empty()) st.names.push_back(word);  // the first name after .func/.entry
        } else if (st.kind == Kind::kVariable) {
          st.names.push_back(word);
        }
      }
    }
    if (j > toks.size()) j = toks.size();
    st.last = j;
    if (st.last == st.first) st.last = st.first + 1;
    m.stmts.push_back(st);
    i = st.last;
  }
  if (m.version.empty()) {
    *error = "'" + m.input->name + "' is not PTX text (no .version directive)";
    return false;
  }
  if (m.address_size != "64") {
    *error = "'" + m.input->name + "': .address_size " +
             (m.address_size.empty() ? "32" : m.address_size) +
             " is not supported by the emulator (64-bit addresses only)";
    return false;
  }
  return true;
}

// The functions the engine provides itself: never undefined.
bool builtin(const std::string& name) {
  return name == "vprintf" || name == "__assertfail" || name == "malloc" || name == "free";
}

uint32_t version_number(const std::string& v) {
  const size_t dot = v.find('.');
  const uint32_t major = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
  const uint32_t minor =
      dot == std::string::npos
          ? 0
          : static_cast<uint32_t>(std::strtoul(v.c_str() + dot + 1, nullptr, 10));
  return major * 100 + minor;
}

uint32_t sm_number(const std::string& target) {
  return target.rfind("sm_", 0) == 0
             ? static_cast<uint32_t>(std::strtoul(target.c_str() + 3, nullptr, 10))
             : 0;
}

struct Ref {
  size_t module, stmt;
};

const char* kind_word(const Stmt& s) { return s.kind == Kind::kVariable ? "variable" : "function"; }

}  // namespace

LinkOutput link_ptx(const std::vector<LinkInput>& inputs) {
  LinkOutput out;
  if (inputs.empty()) {
    out.error = "nothing to link (no input was added)";
    return out;
  }
  std::vector<Module> modules(inputs.size());
  for (size_t m = 0; m < inputs.size(); ++m) {
    modules[m].input = &inputs[m];
    if (!parse_module(modules[m], &out.error)) return out;
  }

  // Every module-scope declaration, by name.
  std::map<std::string, std::vector<Ref>> by_name;
  for (size_t m = 0; m < modules.size(); ++m) {
    for (size_t s = 0; s < modules[m].stmts.size(); ++s) {
      for (const std::string& name : modules[m].stmts[s].names) by_name[name].push_back({m, s});
    }
  }
  auto stmt = [&](const Ref& r) -> const Stmt& { return modules[r.module].stmts[r.stmt]; };
  auto input_name = [&](size_t m) { return "'" + inputs[m].name + "'"; };

  // What each statement becomes: kept, dropped, or replaced by an `.extern` declaration.
  enum class Fate : uint8_t { kKeep, kDrop, kDeclare };
  std::vector<std::vector<Fate>> fate(modules.size());
  for (size_t m = 0; m < modules.size(); ++m) fate[m].assign(modules[m].stmts.size(), Fate::kKeep);
  std::vector<std::map<std::string, std::string>> renames(modules.size());
  std::vector<std::string> problems;

  for (const auto& [name, refs] : by_name) {
    std::vector<Ref> external, internal, entries;
    for (const Ref& r : refs) {
      const Stmt& s = stmt(r);
      if (s.kind == Kind::kEntry) {
        entries.push_back(r);
      } else if (s.external()) {
        external.push_back(r);
      } else {
        internal.push_back(r);
      }
    }
    std::set<size_t> entry_modules;
    for (const Ref& r : entries) {
      if (stmt(r).body != 0) entry_modules.insert(r.module);
    }
    if (entry_modules.size() > 1) {
      problems.push_back("kernel '" + name + "' is defined in " +
                         input_name(*entry_modules.begin()) + " and " +
                         input_name(*std::next(entry_modules.begin())));
    }
    // Internal names: private to their module, renamed where another module also has the name.
    for (const Ref& r : internal) {
      bool rename = !external.empty() || !entries.empty();
      for (const Ref& other : internal) rename = rename || other.module < r.module;
      if (rename) renames[r.module][name] = name + "$cusnap" + std::to_string(r.module);
    }
    if (external.empty()) continue;

    // Resolution of the external name.
    const Stmt& first = stmt(external.front());
    bool consistent = true;
    for (const Ref& r : external) {
      const Stmt& s = stmt(r);
      if ((s.kind == Kind::kVariable) != (first.kind == Kind::kVariable) ||
          s.space != first.space) {
        problems.push_back("'" + name + "' is a " + kind_word(first) +
                           (first.space.empty() ? "" : " in " + first.space) + " in " +
                           input_name(external.front().module) + " but a " + kind_word(s) +
                           (s.space.empty() ? "" : " in " + s.space) + " in " +
                           input_name(r.module));
        consistent = false;
        break;
      }
    }
    if (!consistent) continue;
    std::vector<Ref> strong, weak;
    for (const Ref& r : external) {
      const Stmt& s = stmt(r);
      if (!s.definition()) continue;
      (s.linkage == Linkage::kVisible ? strong : weak).push_back(r);
    }
    if (strong.size() > 1) {
      problems.push_back("multiple definitions of '" + name + "' in " +
                         input_name(strong[0].module) + " and " + input_name(strong[1].module));
      continue;
    }
    const Ref* chosen = !strong.empty() ? &strong[0] : !weak.empty() ? &weak[0] : nullptr;
    if (chosen == nullptr) {
      if (builtin(name)) continue;
      // Undefined: an error where the module uses the name beyond declaring it.
      for (const Ref& r : external) {
        const Module& mod = modules[r.module];
        const Stmt& decl = stmt(r);
        bool used = false;
        for (size_t t = 0; t < mod.tokens.size() && !used; ++t) {
          if (t >= decl.first && t < decl.last) continue;
          used = mod.tokens[t].kind == Tok::kIdent && mod.text(t) == name;
        }
        if (used)
          problems.push_back("undefined reference to '" + name + "' in " + input_name(r.module));
      }
      continue;
    }
    for (const Ref& r : external) {
      if (r.module == chosen->module) continue;  // a module's own order is the engine's business
      const Stmt& s = stmt(r);
      if (s.definition()) {
        // A weak definition that lost: a declaration where the winner comes later in the text.
        fate[r.module][r.stmt] = r.module < chosen->module ? Fate::kDeclare : Fate::kDrop;
      } else if (chosen->module < r.module) {
        fate[r.module][r.stmt] = Fate::kDrop;  // the definition precedes it in the linked text
      }
    }
  }
  if (!problems.empty()) {
    for (const std::string& p : problems) out.error += p + "\n";
    out.error.pop_back();
    return out;
  }

  // The header: the highest .version and sm target, the other target options once each.
  std::string version = modules[0].version;
  std::string sm;
  std::vector<std::string> options;
  for (const Module& mod : modules) {
    if (version_number(mod.version) > version_number(version)) version = mod.version;
    for (const std::string& t : mod.targets) {
      if (sm_number(t) != 0) {
        if (sm.empty() || sm_number(t) > sm_number(sm)) sm = t;
      } else if (std::find(options.begin(), options.end(), t) == options.end()) {
        options.push_back(t);
      }
    }
  }
  out.ptx = "// Linked by the cusnap emulator from " + std::to_string(inputs.size()) + " inputs\n";
  out.ptx += ".version " + version + "\n.target " + (sm.empty() ? "sm_52" : sm);
  for (const std::string& o : options) out.ptx += ", " + o;
  out.ptx += "\n.address_size 64\n";

  for (size_t m = 0; m < modules.size(); ++m) {
    const Module& mod = modules[m];
    const std::string& src = mod.input->ptx;
    const auto& rename = renames[m];
    // Emits tokens [from, to) of the module with the text between them, renaming identifiers.
    auto emit = [&](size_t from, size_t to, std::string* dst) {
      for (size_t t = from; t < to; ++t) {
        const Token& tok = mod.tokens[t];
        if (t > from) dst->append(src, mod.tokens[t - 1].end, tok.begin - mod.tokens[t - 1].end);
        auto it = tok.kind == Tok::kIdent ? rename.find(mod.text(tok)) : rename.end();
        if (it != rename.end()) {
          dst->append(it->second);
        } else {
          dst->append(src, tok.begin, tok.end - tok.begin);
        }
      }
    };
    out.ptx += "\n// ---- " + inputs[m].name + "\n";
    for (size_t s = 0; s < mod.stmts.size(); ++s) {
      const Stmt& st = mod.stmts[s];
      if (st.kind == Kind::kHeader || fate[m][s] == Fate::kDrop) continue;
      if (fate[m][s] == Fate::kDeclare) {
        // The definition's head with `.extern` for its linkage: up to the body or initializer,
        // for a function only through its parameter list.
        size_t end = st.kind == Kind::kVariable ? (st.init != 0 ? st.init : st.last - 1) : st.body;
        std::string decl;
        emit(st.first, end, &decl);
        for (const char* word : {".weak", ".common", ".visible"}) {
          const size_t at = decl.find(word);
          if (at != std::string::npos) {
            decl.replace(at, std::char_traits<char>::length(word), ".extern");
            break;
          }
        }
        if (st.kind == Kind::kFunction) {
          // Performance directives after the parameter list belong to definitions only.
          const size_t close = decl.rfind(')');
          if (close != std::string::npos) decl.resize(close + 1);
        }
        out.ptx += decl + ";\n";
        continue;
      }
      emit(st.first, st.last, &out.ptx);
      out.ptx += "\n";
    }
  }
  out.ok = true;
  return out;
}

}  // namespace cusnap::emu::driver
