#include "cusnap/runner/driver_list.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace cusnap::runner {
namespace {

bool valid_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

// An environment variable name as POSIX shells accept it.
bool valid_key(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

bool is_placement(const std::string& key) {
  return std::any_of(std::begin(kPlacementKeys), std::end(kPlacementKeys),
                     [&](const char* k) { return key == k; });
}

}  // namespace

std::string DriverEntry::placement_value(const std::string& key) const {
  for (const auto& [k, v] : placement) {
    if (k == key) return v;
  }
  return {};
}

std::string DriverEntry::text() const {
  std::string out = name + " " + driver;
  for (const auto& [k, v] : environment) out += " " + k + "=" + v;
  for (const auto& [k, v] : placement) out += " " + k + "=" + v;
  return out;
}

std::optional<DriverList> parse_driver_list(const std::string& text, const std::string& file,
                                            std::string* error) {
  namespace fs = std::filesystem;
  DriverList list;
  list.file = file;
  const fs::path base = fs::absolute(fs::path(file)).parent_path();
  std::set<std::string> names;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  auto fail = [&](const std::string& message) {
    *error = file + ":" + std::to_string(number) + ": " + message;
    return std::nullopt;
  };
  while (std::getline(lines, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.empty() || w[0][0] == '#') continue;
    if (w.size() < 2) return fail("'" + line + "': an entry is NAME DRIVER [KEY=VALUE ...]");
    DriverEntry e;
    e.line = number;
    e.name = w[0];
    if (!valid_name(e.name)) {
      return fail("entry name '" + e.name + "' may only contain letters, digits, '.', '_', '-'");
    }
    if (!names.insert(e.name).second) return fail("entry name '" + e.name + "' appears twice");
    e.driver = w[1];
    if (e.driver.find('=') != std::string::npos) {
      return fail("entry " + e.name + ": '" + e.driver + "' is not a DRIVER (emulator or a path)");
    }
    if (e.driver != "emulator") {
      fs::path p(e.driver);
      e.driver = (p.is_absolute() ? p : base / p).lexically_normal().string();
    }
    std::set<std::string> keys;
    for (size_t i = 2; i < w.size(); ++i) {
      size_t eq = w[i].find('=');
      if (eq == std::string::npos) {
        return fail("entry " + e.name + ": '" + w[i] + "' is not KEY=VALUE");
      }
      std::string key = w[i].substr(0, eq), value = w[i].substr(eq + 1);
      if (!valid_key(key)) return fail("entry " + e.name + ": '" + key + "' is not a valid KEY");
      if (!keys.insert(key).second) {
        return fail("entry " + e.name + ": KEY " + key + " is given twice");
      }
      if (is_placement(key)) {
        if (value.empty()) return fail("entry " + e.name + ": " + key + "= needs a value");
        e.placement.emplace_back(key, value);
      } else {
        e.environment.emplace_back(key, value);
      }
    }
    list.entries.push_back(std::move(e));
  }
  if (list.entries.empty()) {
    *error = file + ": no entries (each line: NAME DRIVER [KEY=VALUE ...])";
    return std::nullopt;
  }
  return list;
}

std::optional<DriverList> read_driver_list(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot be read";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_driver_list(text.str(), path, error);
}

}  // namespace cusnap::runner
