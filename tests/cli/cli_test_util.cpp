#include "cli_test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cusnap::cli_test {

namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t le64(const std::vector<uint8_t>& b, uint64_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[at + i];
  return v;
}

}  // namespace

// Per process: ctest runs each test case as its own process, several at once.
std::string scratch_dir(const std::string& name) {
  std::string dir =
      std::string(CUSNAP_TEST_SCRATCH) + "/" + std::to_string(::getpid()) + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

RunResult run_cusnap(const std::vector<std::string>& args, const std::string& env) {
  static int counter = 0;
  std::string base = std::string(CUSNAP_TEST_SCRATCH) + "/run." + std::to_string(::getpid()) + "." +
                     std::to_string(counter++);
  std::string cmd = env.empty() ? "" : env + " ";
  cmd += quote(CUSNAP_BIN);
  for (const auto& a : args) {  // appended piecewise: GCC 12's bogus -Wrestrict (PR105651)
    cmd += ' ';
    cmd += quote(a);
  }
  cmd += " >" + quote(base + ".out") + " 2>" + quote(base + ".err");
  int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::filesystem::remove(base + ".out");
  std::filesystem::remove(base + ".err");
  return r;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) lines.push_back(line);
  return lines;
}

std::vector<RawFrame> walk_frames(const std::vector<uint8_t>& file) {
  std::vector<RawFrame> frames;
  uint64_t offset = 32;  // file header
  while (offset + 80 <= file.size()) {
    RawFrame f;
    f.offset = offset;
    f.kind = file[offset + 4];
    f.stored_size = le64(file, offset + 8);
    if (f.kind == kKindCalls) {
      f.first_seq = le64(file, offset + 24);
      f.last_seq = le64(file, offset + 32);
    }
    if (f.end() > file.size()) break;
    frames.push_back(f);
    offset = f.end();
    if (f.kind == kKindIndex) break;  // the trailer follows
  }
  return frames;
}

}  // namespace cusnap::cli_test
