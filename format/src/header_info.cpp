#include "cusnap/format/header_info.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "cusnap/format/container.h"

extern char** environ;

namespace cusnap::format {

namespace {

int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

constexpr std::array<std::string_view, 6> kDefaultEnvPrefixes = {
    "CUDA_", "CUSNAP_", "LD_", "NVIDIA_", "PTX", "OMP_NUM_THREADS"};

}  // namespace

const char* tool_version() { return CUSNAP_FORMAT_TOOL_VERSION; }

std::span<const std::string_view> default_env_prefixes() { return kDefaultEnvPrefixes; }

void fill_process_info(schema::CaptureHeader::Builder header,
                       std::span<const std::string_view> env_prefixes) {
  // Cap'n Proto builders only throw on allocation failure; keep the promise of "never throws".
  try {
    header.setToolName("cusnap");
    header.setToolVersion(tool_version());
    header.setSchemaVersion(schema::SCHEMA_VERSION);
    header.setContainerVersion((uint32_t{kContainerVersionMajor} << 16) | kContainerVersionMinor);
    header.setCreationTimeNs(clock_ns(CLOCK_REALTIME));
    header.setMonotonicAtCreationNs(clock_ns(CLOCK_MONOTONIC));
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) header.setHostName(host);
    header.setPid(static_cast<uint32_t>(getpid()));

    std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
    std::string raw((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    std::vector<std::string> args;
    for (size_t start = 0; start < raw.size();) {
      size_t end = raw.find('\0', start);
      if (end == std::string::npos) end = raw.size();
      args.emplace_back(raw.substr(start, end - start));
      start = end + 1;
    }
    auto argv = header.initCommandLine(static_cast<unsigned>(args.size()));
    for (size_t i = 0; i < args.size(); ++i) argv.set(static_cast<unsigned>(i), args[i]);

    std::vector<char> cwd(4096);
    if (getcwd(cwd.data(), cwd.size()) != nullptr) header.setWorkingDirectory(cwd.data());

    std::vector<std::pair<std::string, std::string>> selected;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view entry(*e);
      size_t eq = entry.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view name = entry.substr(0, eq);
      bool wanted = std::any_of(env_prefixes.begin(), env_prefixes.end(),
                                [&](std::string_view p) { return name.starts_with(p); });
      if (wanted) selected.emplace_back(std::string(name), std::string(entry.substr(eq + 1)));
    }
    std::sort(selected.begin(), selected.end());
    auto env = header.initEnvironment(static_cast<unsigned>(selected.size()));
    for (size_t i = 0; i < selected.size(); ++i) {
      env[static_cast<unsigned>(i)].setKey(selected[i].first);
      env[static_cast<unsigned>(i)].setValue(selected[i].second);
    }
  } catch (...) {
    // Leave whatever was filled; the header stays a valid message.
  }
}

std::string extracted_launch_text(schema::ExtractInfo::Reader extract) {
  std::string text = "call " + std::to_string(extract.getLaunchSeq());
  if (extract.getGraphNode() != 0)
    text +=
        ", kernel node " + std::to_string(extract.getGraphKernelIndex()) + " of that graph launch";
  return text;
}

}  // namespace cusnap::format
