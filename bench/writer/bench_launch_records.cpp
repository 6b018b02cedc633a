// cusnap_bench_launch_records: what a recorded launch costs the writer, on the caller's thread and
// in CPU time over all threads (building, compressing and writing), for the interceptor's hot
// path (issue 4). Not a test: it asserts nothing about speed.
//
//   cusnap_bench_launch_records OUT.cusnap [--launches N] [--level N] [--threads N] [--eager]
//
// Appends N launch records shaped like the interceptor's for an 8-parameter kernel (80 packed
// parameter bytes, an 8-slot layout, a 24-character kernel name, cuLaunchKernel_ptsz) through
// Writer::append_launch (deferred: the record is built on a compression worker), or with --eager
// as a Cap'n Proto message built on the calling thread and appended with append_call (the path
// before append_launch existed). Prints one key=value line: caller_ns (wall time of the append
// loop per launch), total_cpu_ns (user + system CPU time of the whole process, all threads, from
// the first measured append to the end of close(), per launch), close_ms, and file bytes per
// launch. A warm-up of N/4 launches, flushed, comes first and is not counted.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/header_info.h"
#include "cusnap/format/writer.h"

using namespace cusnap::format;
using Clock = std::chrono::steady_clock;

namespace {

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void check(const Status& st) {
  if (!st.is_ok()) {
    std::fprintf(stderr, "cusnap_bench_launch_records: %s\n", st.to_string().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: cusnap_bench_launch_records OUT.cusnap [--launches N] [--level N] "
                 "[--threads N] [--eager]\n");
    return 2;
  }
  std::string out = argv[1];
  long launches = 1000000;
  int level = 3;
  unsigned threads = 0;
  bool eager = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--eager")
      eager = true;
    else if (a == "--launches" && i + 1 < argc)
      launches = std::atol(argv[++i]);
    else if (a == "--level" && i + 1 < argc)
      level = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc)
      threads = static_cast<unsigned>(std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "cusnap_bench_launch_records: unknown argument %s\n", a.c_str());
      return 2;
    }
  }

  capnp::MallocMessageBuilder header;
  fill_process_info(header.initRoot<schema::CaptureHeader>(), default_env_prefixes());
  WriterOptions options;
  options.compression_level = level;
  options.compression_threads = threads;
  auto created = Writer::create(out, header, options);
  check(created.status());
  Writer& writer = *created.value();

  // The interceptor's record of an 8-parameter launch (pointer, int, float, 24-byte struct,
  // pointer, int, double, 12-byte struct).
  const LaunchParamSlot layout[8] = {{0, 8},  {8, 4},  {12, 4}, {16, 24},
                                     {40, 8}, {48, 4}, {56, 8}, {64, 12}};
  uint8_t params[80];
  for (size_t i = 0; i < sizeof params; ++i) params[i] = static_cast<uint8_t>(i * 7);
  LaunchFields f;
  f.api_name = "cuLaunchKernel_ptsz";
  f.kernel_name = "_Z6kernelPfifS_iPKdS0_x";
  f.function = 0x5555'0000'1000;
  f.grid[0] = 1024;
  f.grid[1] = f.grid[2] = 1;
  f.block[0] = 256;
  f.block[1] = f.block[2] = 1;
  f.stream = 0x5555'0000'2000;
  f.context = 0x5555'0000'3000;
  f.thread_id = 4242;
  f.layout_seq = 7;
  f.has_layout = true;
  f.layout = layout;
  f.has_params = true;
  f.params = params;
  std::vector<capnp::word> scratch(1024);  // the interceptor's reused first segment

  auto append = [&](long i) {
    f.start_ns = 1'000'000 + i * 900;
    f.end_ns = f.start_ns + 400;
    std::memcpy(params + 8, &i, 4);  // the parameters change from launch to launch
    if (eager) {
      capnp::MallocMessageBuilder message(kj::arrayPtr(scratch.data(), scratch.size()));
      auto record = message.initRoot<schema::CallRecord>();
      build_launch_record(f, record);
      check(writer.append_call(message, record).status());
    } else {
      check(writer.append_launch(f).status());
    }
  };
  // Warm-up (not measured): a quarter of the launches, flushed, so that the writer's buffer pool
  // holds recycled buffers as it does in a long capture, instead of first-touch page faults.
  for (long i = 0; i < launches / 4; ++i) append(i);
  check(writer.flush());
  double cpu_before = cpu_seconds();
  auto start = Clock::now();
  for (long i = 0; i < launches; ++i) append(i);
  auto appended = Clock::now();
  check(writer.close());
  auto closed = Clock::now();
  double cpu = cpu_seconds() - cpu_before;
  double caller_ns = std::chrono::duration<double, std::nano>(appended - start).count() /
                     static_cast<double>(launches);
  std::FILE* file = std::fopen(out.c_str(), "rb");
  long bytes = 0;
  if (file != nullptr) {
    std::fseek(file, 0, SEEK_END);
    bytes = std::ftell(file);
    std::fclose(file);
  }
  bytes = bytes * 4 / 5;  // the measured launches' share (the warm-up wrote a fifth of the records)
  std::printf(
      "mode=%s level=%d launches=%ld caller_ns=%.1f total_cpu_ns=%.1f close_ms=%.1f "
      "file_bytes_per_launch=%.1f\n",
      eager ? "eager" : "deferred", level, launches, caller_ns,
      cpu * 1e9 / static_cast<double>(launches),
      std::chrono::duration<double, std::milli>(closed - appended).count(),
      static_cast<double>(bytes) / static_cast<double>(launches));
  return 0;
}
