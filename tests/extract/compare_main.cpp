// Test tool for sample_isolation.cmake:
//   compare_extracts [--map] [--host-memory-only-in-first] A B
// exits 0 when the extracted captures A and B hold the same content (compare.h), 1 with the first
// difference, 2 on usage or unreadable files. --map: A and B come from two runs (addresses and
// handles may differ). --host-memory-only-in-first: A is a snapshot-route extract, B a
// replay-route one, which cannot hold host memory (compare.h).
#include <cstdio>
#include <string>

#include "compare.h"

int main(int argc, char** argv) {
  int first = 1;
  bool map = false, host_only_in_a = false;
  for (; first < argc && argv[first][0] == '-'; ++first) {
    if (std::string(argv[first]) == "--map")
      map = true;
    else if (std::string(argv[first]) == "--host-memory-only-in-first")
      host_only_in_a = true;
    else
      break;
  }
  if (argc - first != 2) {
    std::fprintf(stderr, "usage: compare_extracts [--map] [--host-memory-only-in-first] A B\n");
    return 2;
  }
  auto a = cusnap::format::Reader::open(argv[first]);
  auto b = cusnap::format::Reader::open(argv[first + 1]);
  if (!a || !b) {
    std::fprintf(stderr, "%s\n", (!a ? a.status() : b.status()).to_string().c_str());
    return 2;
  }
  std::string d =
      cusnap::extract::test::compare_extracts(*a.value(), *b.value(), map, host_only_in_a);
  if (!d.empty()) {
    std::printf("%s and %s differ: %s\n", argv[first], argv[first + 1], d.c_str());
    return 1;
  }
  std::printf("same content\n");
  return 0;
}
