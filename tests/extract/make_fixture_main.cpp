// Test tool for the --emit-cpp ctest script (emit_cpp_test.cmake):
//   make_fixture capture OUT PTX [low]   writes the fixture capture (fixture.h) to OUT; with
//                                        "low", allocation a where no driver can map it
//   make_fixture strided OUT PTX         writes the --minimize fixture (write_strided_fixture)
//   make_fixture flip FILE OFFSET    inverts one byte of FILE (an expected data file)
//   make_fixture flip FILE all       inverts every byte of FILE
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>

#include "fixture.h"

int main(int argc, char** argv) {
  try {
    std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "capture" && (argc == 4 || (argc == 5 && std::string(argv[4]) == "low"))) {
      namespace t = cusnap::extract::test;
      t::write_fixture(argv[2], t::read_text(argv[3]), argc == 5 ? t::kLowA : t::kA);
      return 0;
    }
    if (cmd == "strided" && argc == 4) {
      namespace t = cusnap::extract::test;
      t::write_strided_fixture(argv[2], t::read_text(argv[3]));
      return 0;
    }
    if (cmd == "flip" && argc == 4 && std::string(argv[3]) == "all") {
      std::ifstream in(argv[2], std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!in && !in.eof()) throw std::runtime_error("cannot read the file");
      in.close();
      for (char& c : bytes) c = static_cast<char>(~c);
      std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
      if (!out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())))
        throw std::runtime_error("cannot write the file");
      return 0;
    }
    if (cmd == "flip" && argc == 4) {
      std::fstream f(argv[2], std::ios::binary | std::ios::in | std::ios::out);
      long offset = std::strtol(argv[3], nullptr, 10);
      char c = 0;
      if (!f.seekg(offset) || !f.get(c)) throw std::runtime_error("cannot read the byte");
      c = static_cast<char>(~c);
      if (!f.seekp(offset) || !f.put(c)) throw std::runtime_error("cannot write the byte");
      return 0;
    }
    std::fprintf(
        stderr,
        "usage: make_fixture capture OUT PTX [low] | strided OUT PTX | flip FILE OFFSET|all\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_fixture: %s\n", e.what());
    return 1;
  }
}
