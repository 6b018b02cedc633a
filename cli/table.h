// Plain-text output helpers: aligned tables and human-readable sizes.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace cusnap::cli {

// "512 B", "1.50 KiB", "3.25 MiB", "1.00 GiB" (binary units, two decimals above bytes).
std::string human_bytes(uint64_t bytes);

// "12.3x" style ratio of a to b; "-" when b is zero.
std::string ratio_text(double a, double b);

// A table printed with every column padded to its widest cell. Columns marked numeric are
// right-aligned. The header row is followed by a rule of dashes.
class Table {
 public:
  struct Column {
    std::string title;
    bool numeric = false;
  };
  explicit Table(std::vector<Column> columns);

  void add_row(std::vector<std::string> cells);  // missing cells print empty
  bool empty() const { return rows_.empty(); }
  void print(std::ostream& out, const std::string& indent = "  ") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace cusnap::cli
