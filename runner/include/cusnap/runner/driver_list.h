// The LIST file of `cusnap bisect --drivers` and `cusnap matrix --drivers` (docs/bisect.md,
// "The LIST file"): the one parser. One entry per line, in order:
//
//   NAME DRIVER [KEY=VALUE ...]
//
// NAME: letters, digits, '.', '_', '-' (unique in the file); DRIVER: the word `emulator` or a
// path of a libcuda.so.1 (relative paths are relative to the LIST file's directory). KEY=VALUE
// pairs are environment variables of that entry's replays, except the reserved placement keys
// (kPlacementKeys: where a runner runs the replay). Blank lines and lines whose first non-blank
// character is '#' are skipped. Errors name the file and line: "drivers.txt:3: ...".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cusnap::runner {

// Reserved keys: where to run, never environment. `host` is the {host} of a template runner and
// the Slurm runner's --nodelist; the others are the Slurm options of the same name.
inline constexpr const char* kPlacementKeys[] = {"host", "partition", "constraint", "gres"};

struct DriverEntry {
  std::string name;
  std::string driver;                                            // "emulator" or an absolute path
  std::vector<std::pair<std::string, std::string>> environment;  // in the order written
  std::vector<std::pair<std::string, std::string>> placement;    // reserved keys, as written
  int line = 0;                                                  // 1-based, in the LIST file

  // The placement value of `key` ("" when absent).
  std::string placement_value(const std::string& key) const;
  // "NAME DRIVER K=V ..." as it would be written in a LIST file.
  std::string text() const;
};

struct DriverList {
  std::string file;  // as given
  std::vector<DriverEntry> entries;
};

// Parses LIST text; `file` names it in errors and is the base of relative DRIVER paths.
std::optional<DriverList> parse_driver_list(const std::string& text, const std::string& file,
                                            std::string* error);
// Reads and parses `path`; a file that cannot be read is an error naming it.
std::optional<DriverList> read_driver_list(const std::string& path, std::string* error);

}  // namespace cusnap::runner
