#include "table.h"

#include <algorithm>
#include <cstdio>

namespace cusnap::cli {

std::string human_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", value, kUnits[unit]);
  return buf;
}

std::string ratio_text(double a, double b) {
  if (b <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", a / b);
  return buf;
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void Table::print(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    width[c] = columns_[c].title.size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line = indent;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = cells[c];
      std::string pad(width[c] - cell.size(), ' ');
      bool last = c + 1 == columns_.size();
      if (columns_[c].numeric) {
        line += pad + cell;
      } else {
        line += cell;
        if (!last) line += pad;
      }
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  std::vector<std::string> titles;
  std::vector<std::string> rules;
  for (size_t c = 0; c < columns_.size(); ++c) {
    titles.push_back(columns_[c].title);
    rules.emplace_back(width[c], '-');
  }
  emit(titles);
  emit(rules);
  for (const auto& row : rows_) emit(row);
}

}  // namespace cusnap::cli
