// Emulator throughput benchmark: launches one of the kernels of bench_kernels.cu a few times,
// timing each launch + synchronize with the host's steady clock, and checks the device results
// bit for bit against a host computation of the same arithmetic (so a broken interpreter cannot
// post a fast number). It prints one line of shell assignments for run.sh:
//
//   kernel=alu_chain launches=3 seconds=1.234 cpu_seconds=2.401 threads=65536 checked=1
//
// `seconds` is the wall time summed over the timed launches, `cpu_seconds` the CPU time all the
// process's threads used meanwhile (on a shared machine the better measure of per-core speed). The
// number of thread-instructions they executed is not computed here: run.sh reads it from the
// emulator's own counters (CUSNAP_EMU_STATS, "execution" section), which count what the interpreter
// really ran.
//
//   cusnap_bench_emulator alu   [--blocks B] [--threads T] [--iterations I] [--reps R]
//   cusnap_bench_emulator triad [--blocks B] [--threads T] [--elements N] [--reps R]
//   cusnap_bench_emulator gemm  [--elements M] [--reps R]
//
// gemm is the tensor_gemm sample's kernel (ldmatrix + mma.sync m16n8k16 f16 -> f32, 32x32 tiles
// of 4 warps) on an M x M x M problem (default 512), checked exactly against a host GEMM (inputs
// are multiples of 1/64, so all sums are exact); it also prints flops=2*M^3*launches.
//
// Exit status: 0 results match; 1 mismatch; 2 a driver call or the command line failed.
#include <cuda.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" const unsigned char cusnap_bench_emulator_image[];
extern "C" const unsigned char cusnap_bench_gemm_image[];

namespace {

[[noreturn]] void fail_call(const char* call, CUresult result, int line) {
  const char* name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown error";
  std::fprintf(stderr, "error: %s failed at bench_emulator.cpp:%d: %s (%d)\n", call, line, name,
               static_cast<int>(result));
  std::exit(2);
}

#define CHECK(call)                                                               \
  do {                                                                            \
    CUresult check_result_ = (call);                                              \
    if (check_result_ != CUDA_SUCCESS) fail_call(#call, check_result_, __LINE__); \
  } while (0)

[[noreturn]] void usage(const char* why) {
  std::fprintf(
      stderr,
      "error: %s\nusage: cusnap_bench_emulator alu [--blocks B] [--threads T] [--iterations I] "
      "[--reps R]\n"
      "       cusnap_bench_emulator triad [--blocks B] [--threads T] [--elements N] [--reps R]\n"
      "       cusnap_bench_emulator gemm [--elements M] [--reps R]\n",
      why);
  std::exit(2);
}

struct Options {
  std::string kernel;
  uint64_t blocks = 0, threads = 256, iterations = 64, elements = 1u << 22, reps = 3;
};

Options parse(int argc, char** argv) {
  if (argc < 2) usage("which kernel?");
  Options o;
  o.kernel = argv[1];
  if (o.kernel != "alu" && o.kernel != "triad" && o.kernel != "gemm")
    usage("the kernel is alu, triad or gemm");
  o.blocks = o.kernel == "alu" ? 512 : 1024;
  if (o.kernel == "gemm") o.elements = 512;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) usage("option without a value");
    char* end = nullptr;
    unsigned long long v = std::strtoull(argv[i + 1], &end, 10);
    if (*end != '\0' || v == 0) usage("option values are positive integers");
    std::string name = argv[i];
    if (name == "--blocks")
      o.blocks = v;
    else if (name == "--threads")
      o.threads = v;
    else if (name == "--iterations")
      o.iterations = v;
    else if (name == "--elements")
      o.elements = v;
    else if (name == "--reps")
      o.reps = v;
    else
      usage(("unknown option " + name).c_str());
  }
  if (o.threads > 1024 || o.blocks > 0x7fffffff || o.iterations > 0x7fffffff)
    usage("value out of range");
  return o;
}

// CPU seconds (user + system) of every thread of the process so far.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

struct Timing {
  double seconds = 0;      // wall, summed over the launches
  double cpu_seconds = 0;  // CPU time of the whole process during them (less sensitive to load)
};

// Timed launches: launch + synchronize, `reps` times.
Timing timed(CUfunction f, unsigned blocks, unsigned threads, void** params, uint64_t reps) {
  Timing t;
  for (uint64_t r = 0; r < reps; ++r) {
    const double cpu = cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    CHECK(cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, nullptr, params, nullptr));
    CHECK(cuCtxSynchronize());
    t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    t.cpu_seconds += cpu_seconds() - cpu;
  }
  return t;
}

uint32_t lcg(uint32_t& state) {
  state = state * 1103515245u + 12345u;
  return state;
}

// The host reference of alu_chain (same operations, same order, std::fma for __fmaf_rn).
void alu_reference(uint32_t seed, int iterations, uint32_t* hash, float* value) {
  uint32_t h = seed;
  float x = static_cast<float>(h & 1023u) * (1.0f / 1024.0f);
  float y = 0.5f;
  for (int i = 0; i < iterations; ++i) {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    h = h * 1664525u + 1013904223u;
    x = std::fma(x, 0.75f, 0.25f);
    y = std::fma(y, -0.5f, x);
    x = std::fma(static_cast<float>(h >> 24), 1.0f / 4096.0f, x);
  }
  *hash = h;
  *value = x + y;
}

int run_alu(const Options& o, CUmodule module) {
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, module, "alu_chain"));
  const size_t n = o.blocks * o.threads;
  std::vector<uint32_t> seeds(n), hash(n);
  std::vector<float> value(n);
  uint32_t state = 12345;
  for (uint32_t& s : seeds) s = lcg(state);
  CUdeviceptr d_seeds, d_hash, d_value;
  CHECK(cuMemAlloc(&d_seeds, n * 4));
  CHECK(cuMemAlloc(&d_hash, n * 4));
  CHECK(cuMemAlloc(&d_value, n * 4));
  CHECK(cuMemcpyHtoD(d_seeds, seeds.data(), n * 4));
  CHECK(cuMemsetD32(d_hash, 0, n));
  CHECK(cuMemsetD32(d_value, 0x7fc00000u, n));
  int iterations = static_cast<int>(o.iterations);
  void* params[] = {&d_seeds, &d_hash, &d_value, &iterations};
  const Timing t =
      timed(f, static_cast<unsigned>(o.blocks), static_cast<unsigned>(o.threads), params, o.reps);
  CHECK(cuMemcpyDtoH(hash.data(), d_hash, n * 4));
  CHECK(cuMemcpyDtoH(value.data(), d_value, n * 4));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t h;
    float v;
    alu_reference(seeds[i], iterations, &h, &v);
    if (h != hash[i] || std::memcmp(&v, &value[i], 4) != 0) {
      if (bad++ == 0)
        std::fprintf(stderr, "MISMATCH at thread %zu: expected %08x %a, found %08x %a\n", i, h, v,
                     hash[i], value[i]);
    }
  }
  CHECK(cuMemFree(d_seeds));
  CHECK(cuMemFree(d_hash));
  CHECK(cuMemFree(d_value));
  std::printf(
      "kernel=alu_chain launches=%llu seconds=%.6f cpu_seconds=%.6f threads=%zu checked=%d\n",
      static_cast<unsigned long long>(o.reps), t.seconds, t.cpu_seconds, n, bad == 0 ? 1 : 0);
  return bad == 0 ? 0 : 1;
}

int run_triad(const Options& o, CUmodule module) {
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, module, "triad"));
  const size_t n = o.elements;
  std::vector<float> a(n), b(n), c(n);
  uint32_t state = 777;
  for (size_t i = 0; i < n; ++i) {
    b[i] = static_cast<float>(lcg(state) >> 8) * (1.0f / 16777216.0f);
    c[i] = static_cast<float>(lcg(state) >> 8) * (1.0f / 16777216.0f) - 0.5f;
  }
  CUdeviceptr d_a, d_b, d_c;
  CHECK(cuMemAlloc(&d_a, n * 4));
  CHECK(cuMemAlloc(&d_b, n * 4));
  CHECK(cuMemAlloc(&d_c, n * 4));
  CHECK(cuMemcpyHtoD(d_b, b.data(), n * 4));
  CHECK(cuMemcpyHtoD(d_c, c.data(), n * 4));
  CHECK(cuMemsetD32(d_a, 0x7fc00000u, n));
  float s = 3.0f;
  unsigned long long elements = n;
  void* params[] = {&d_a, &d_b, &d_c, &s, &elements};
  const Timing t =
      timed(f, static_cast<unsigned>(o.blocks), static_cast<unsigned>(o.threads), params, o.reps);
  CHECK(cuMemcpyDtoH(a.data(), d_a, n * 4));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    float expected = std::fma(s, c[i], b[i]);
    if (std::memcmp(&expected, &a[i], 4) != 0 && bad++ == 0)
      std::fprintf(stderr, "MISMATCH at index %zu: expected %a, found %a\n", i, expected, a[i]);
  }
  CHECK(cuMemFree(d_a));
  CHECK(cuMemFree(d_b));
  CHECK(cuMemFree(d_c));
  std::printf(
      "kernel=triad launches=%llu seconds=%.6f cpu_seconds=%.6f threads=%llu checked=%d "
      "bytes=%zu\n",
      static_cast<unsigned long long>(o.reps), t.seconds, t.cpu_seconds,
      static_cast<unsigned long long>(o.blocks * o.threads), bad == 0 ? 1 : 0, 12 * n * o.reps);
  return bad == 0 ? 0 : 1;
}

// Timed launches of a 2-D grid: launch + synchronize, `reps` times.
Timing timed_2d(CUfunction f, unsigned gx, unsigned gy, unsigned threads, void** params,
                uint64_t reps) {
  Timing t;
  for (uint64_t r = 0; r < reps; ++r) {
    const double cpu = cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    CHECK(cuLaunchKernel(f, gx, gy, 1, threads, 1, 1, 0, nullptr, params, nullptr));
    CHECK(cuCtxSynchronize());
    t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    t.cpu_seconds += cpu_seconds() - cpu;
  }
  return t;
}

int run_gemm(const Options& o) {
  if (o.elements > 4096) usage("gemm: --elements at most 4096 (exact f32 sums need k <= 4096)");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, cusnap_bench_gemm_image));
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, module, "hgemm_mma"));
  const size_t n = o.elements;
  std::vector<float> a(n * n), b(n * n), c(n * n);
  uint32_t state = 99;
  for (float& v : a) v = static_cast<float>(static_cast<int>(lcg(state) >> 25) - 64) / 64.0f;
  for (float& v : b) v = static_cast<float>(static_cast<int>(lcg(state) >> 25) - 64) / 64.0f;
  CUdeviceptr d_a, d_b, d_c;
  CHECK(cuMemAlloc(&d_a, n * n * 4));
  CHECK(cuMemAlloc(&d_b, n * n * 4));
  CHECK(cuMemAlloc(&d_c, n * n * 4));
  CHECK(cuMemcpyHtoD(d_a, a.data(), n * n * 4));
  CHECK(cuMemcpyHtoD(d_b, b.data(), n * n * 4));
  CHECK(cuMemsetD32(d_c, 0x7fc00000u, n * n));
  int dim = static_cast<int>(n);
  void* params[] = {&d_a, &d_b, &d_c, &dim, &dim, &dim};
  const unsigned tiles = static_cast<unsigned>((n + 31) / 32);
  const Timing t = timed_2d(f, tiles, tiles, 128, params, o.reps);
  CHECK(cuMemcpyDtoH(c.data(), d_c, n * n * 4));
  size_t bad = 0;
  std::vector<double> row(n);
  for (size_t i = 0; i < n; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (size_t p = 0; p < n; ++p)
      for (size_t j = 0; j < n; ++j) row[j] += double(a[i * n + p]) * double(b[p * n + j]);
    for (size_t j = 0; j < n; ++j) {
      const float expected = static_cast<float>(row[j]);
      if (std::memcmp(&expected, &c[i * n + j], 4) != 0 && bad++ == 0)
        std::fprintf(stderr, "MISMATCH at (%zu, %zu): expected %a, found %a\n", i, j, expected,
                     c[i * n + j]);
    }
  }
  CHECK(cuMemFree(d_a));
  CHECK(cuMemFree(d_b));
  CHECK(cuMemFree(d_c));
  CHECK(cuModuleUnload(module));
  std::printf(
      "kernel=hgemm_mma launches=%llu seconds=%.6f cpu_seconds=%.6f threads=%llu checked=%d "
      "flops=%.0f\n",
      static_cast<unsigned long long>(o.reps), t.seconds, t.cpu_seconds,
      static_cast<unsigned long long>(tiles) * tiles * 128, bad == 0 ? 1 : 0,
      2.0 * double(n) * double(n) * double(n) * double(o.reps));
  return bad == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  CUmodule module;
  CHECK(cuModuleLoadData(&module, cusnap_bench_emulator_image));
  int rc = o.kernel == "alu"     ? run_alu(o, module)
           : o.kernel == "triad" ? run_triad(o, module)
                                 : run_gemm(o);
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease(device));
  return rc;
}
