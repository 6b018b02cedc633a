// Helpers for tests that run the built `cusnap` binary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cusnap::cli_test {

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `cusnap <args>` (args are shell-quoted here); `env` is prepended as VAR=value words.
RunResult run_cusnap(const std::vector<std::string>& args, const std::string& env = "");

// A fresh directory under the test build directory, named after the test.
std::string scratch_dir(const std::string& name);

std::vector<uint8_t> read_file(const std::string& path);
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);
std::vector<std::string> split_lines(const std::string& text);

// A frame as found by walking the container byte layout of docs/format.md directly (not with
// the format library): 80-byte headers, u8 kind at +4, u64 stored_size at +8, u64 first/last
// seq at +24/+32 for call frames.
struct RawFrame {
  uint64_t offset = 0;
  uint8_t kind = 0;
  uint64_t stored_size = 0;
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  uint64_t end() const { return offset + 80 + stored_size; }
};
std::vector<RawFrame> walk_frames(const std::vector<uint8_t>& file);

inline constexpr uint8_t kKindHeader = 1;
inline constexpr uint8_t kKindCalls = 2;
inline constexpr uint8_t kKindBlob = 3;
inline constexpr uint8_t kKindIndex = 4;

}  // namespace cusnap::cli_test
