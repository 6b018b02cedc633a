// What reduce/'s transforms share about a capture's device memory: the table of every range some
// record made (any time), to recognise device pointers and to say which allocation an address
// lies in (internal to reduce/). Which records make ranges is format/snapshot_ranges.h's rule.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cusnap::reduce::detail {

struct Range {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t seq = 0;  // the record that made it
};

class RangeTable {
 public:
  void add(uint64_t address, uint64_t size, uint64_t seq) {
    if (size != 0) ranges_.push_back({address, size, seq});
  }
  void finish() {
    std::sort(ranges_.begin(), ranges_.end(),
              [](const Range& a, const Range& b) { return a.address < b.address; });
    max_size_ = 0;
    for (const Range& r : ranges_) max_size_ = std::max(max_size_, r.size);
  }
  // The range holding `a`; with `end_too`, also one `a` is the end of (a one-past-end pointer).
  const Range* find(uint64_t a, bool end_too) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), a,
                               [](uint64_t v, const Range& r) { return v < r.address; });
    while (it != ranges_.begin()) {
      --it;
      if (a - it->address < it->size || (end_too && a - it->address == it->size)) return &*it;
      if (a - it->address > max_size_) break;
    }
    return nullptr;
  }
  bool empty() const { return ranges_.empty(); }

 private:
  std::vector<Range> ranges_;
  uint64_t max_size_ = 0;
};

}  // namespace cusnap::reduce::detail
