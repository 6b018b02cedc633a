// cusnap_bench_writer: writer throughput and output size for one payload, for bench/writer/run.sh.
//
//   cusnap_bench_writer generate floats|random SIZE_MB OUT   make a payload file
//   cusnap_bench_writer put INPUT OUT.cusnap [--level N]       time put_blob + close (and the map)
//   cusnap_bench_writer dedup INPUT OUT.cusnap [--level N]     bytes added by a second upload
//
// Output is one line of key=value pairs (parsed by run.sh). This is a benchmark, not a test: it
// asserts nothing about speed.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/header_info.h"
#include "cusnap/format/writer.h"

using namespace cusnap::format;
using Clock = std::chrono::steady_clock;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: cusnap_bench_writer generate floats|random SIZE_MB OUT\n"
               "       cusnap_bench_writer put|dedup INPUT OUT.cusnap [--level N]\n");
  return 2;
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

int generate(const std::string& kind, size_t mib, const std::string& out_path) {
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  std::mt19937_64 rng(42);
  std::vector<float> block(1 << 18);  // 1 MiB
  double t = 0;
  for (size_t m = 0; m < mib; ++m) {
    if (kind == "random") {
      auto* words = reinterpret_cast<uint64_t*>(block.data());
      for (size_t i = 0; i < block.size() / 2; ++i) words[i] = rng();
    } else {
      // Activations/weights-like data: smooth signal, fp16-ish mantissa precision, sparse noise
      // and runs of exact zeros (ReLU).
      for (auto& v : block) {
        t += 0.0007;
        double x = std::sin(t) * std::cos(t * 0.013) * 4.0;
        if (x < -1.0) x = 0.0;
        if (rng() % 32 == 0) x += static_cast<double>(rng() % 1000) / 1000.0;
        v = static_cast<float>(std::ldexp(std::round(std::ldexp(x, 10)), -10));
      }
    }
    out.write(reinterpret_cast<const char*>(block.data()),
              static_cast<std::streamsize>(block.size() * sizeof(float)));
  }
  return out.good() ? 0 : 1;
}

// The payload, mapped from the page cache (run.sh reads the file once first). Mapping rather than
// reading into a vector keeps the benchmark about the writer: an application hands put_blob()
// bytes that are already in its memory, whereas a read() into fresh memory would add a copy and
// a page fault per 4 KiB that neither the writer nor `zstd` (which reads into small reused
// buffers) pays. The time to map is measured and reported separately (load_seconds).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      std::fprintf(stderr, "cannot open %s\n", path.c_str());
      std::exit(1);
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (data_ == MAP_FAILED) {
        std::fprintf(stderr, "cannot map %s\n", path.c_str());
        std::exit(1);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (size_ > 0) ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

std::unique_ptr<Writer> open_writer(const std::string& out, int level) {
  capnp::MallocMessageBuilder header;
  fill_process_info(header.initRoot<schema::CaptureHeader>(), default_env_prefixes());
  WriterOptions options;
  options.compression_level = level;
  auto w = Writer::create(out, header, options);
  if (!w) {
    std::fprintf(stderr, "%s\n", w.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(w.value());
}

void check(const Status& st) {
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return usage();
  std::string mode = argv[1];
  if (mode == "generate") {
    if (argc != 5) return usage();
    return generate(argv[2], std::stoul(argv[3]), argv[4]);
  }
  std::string input = argv[2];
  std::string out = argv[3];
  int level = 3;
  for (int i = 4; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--level") == 0) level = std::atoi(argv[i + 1]);
  }
  if (mode == "put") {
    auto start = Clock::now();
    MappedFile input_file(input);
    std::span<const uint8_t> bytes = input_file.bytes();
    auto loaded = Clock::now();
    auto w = open_writer(out, level);
    check(w->put_blob(bytes).status());
    check(w->close());
    auto end = Clock::now();
    std::printf("bytes=%zu seconds=%.4f load_seconds=%.4f out_bytes=%llu\n", bytes.size(),
                std::chrono::duration<double>(end - loaded).count(),
                std::chrono::duration<double>(loaded - start).count(),
                static_cast<unsigned long long>(file_size(out)));
    return 0;
  }
  if (mode == "dedup") {
    MappedFile input_file(input);
    std::span<const uint8_t> bytes = input_file.bytes();
    auto w = open_writer(out, level);
    check(w->put_blob(bytes).status());
    check(w->flush());
    uint64_t before = w->counters().file_bytes;
    auto start = Clock::now();
    check(w->put_blob(bytes).status());
    check(w->flush());
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    uint64_t after = w->counters().file_bytes;
    check(w->close());
    std::printf("bytes=%zu second_upload_added=%llu second_upload_seconds=%.4f\n", bytes.size(),
                static_cast<unsigned long long>(after - before), seconds);
    return 0;
  }
  return usage();
}
