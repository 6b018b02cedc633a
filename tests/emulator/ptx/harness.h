// Test harness for the PTX engine: a MemoryHost over host allocations, PTX loading from the
// build tree, variable binding and parameter packing by the kernel's own parameter layout.
//
// Built with CUSNAP_TEST_THROUGH_DRIVER (test_emu_conformance_driver), the same tests run their
// kernels through the CUDA driver API instead: memory is managed memory, modules are loaded with
// cuModuleLoadData and launched with cuLaunchKernel[Ex] on whatever libcuda.so.1 the loader finds
// - the emulator in the suite, NVIDIA's driver under scripts/gpu-check - so the host references
// the emulator is held to are checked against silicon too. The engine still parses each module
// (for its parameter layout), so what it refuses is not sent to a GPU either.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "engine.h"

#ifdef CUSNAP_TEST_THROUGH_DRIVER
#include <cuda.h>
#endif

namespace cusnap::emu::ptx::test {

#ifdef CUSNAP_TEST_THROUGH_DRIVER
// Device 0's primary context, current on the calling thread; the process's first call sets it up.
inline void driver_context() {
  static const CUcontext context = [] {
    CUcontext c = nullptr;
    CUdevice d = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&d, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&c, d) != CUDA_SUCCESS) {
      std::fprintf(stderr, "no CUDA driver or device: cuInit/cuDevicePrimaryCtxRetain failed\n");
      std::exit(2);
    }
    return c;
  }();
  cuCtxSetCurrent(context);
}
#endif

class HostMemory final : public MemoryHost {
 public:
  ~HostMemory() override {
#ifdef CUSNAP_TEST_THROUGH_DRIVER
    for (auto& [addr, size] : blocks_) cuMemFree(addr);
#else
    for (auto& [addr, size] : blocks_) std::free(reinterpret_cast<void*>(addr));
#endif
  }
  void* alloc(size_t size) {
    size_t rounded = (size + 255) / 256 * 256;
#ifdef CUSNAP_TEST_THROUGH_DRIVER
    driver_context();
    CUdeviceptr d = 0;
    REQUIRE(cuMemAllocManaged(&d, rounded == 0 ? 256 : rounded, CU_MEM_ATTACH_GLOBAL) ==
            CUDA_SUCCESS);
    void* p = reinterpret_cast<void*>(d);
#else
    void* p = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
#endif
    std::memset(p, 0, rounded == 0 ? 256 : rounded);
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_[reinterpret_cast<uint64_t>(p)] = size;
    return p;
  }
  template <typename T>
  T* upload(const std::vector<T>& v) {
    T* p = static_cast<T*>(alloc(v.size() * sizeof(T)));
    std::memcpy(p, v.data(), v.size() * sizeof(T));
    return p;
  }
  template <typename T>
  T* zeros(size_t n) {
    return static_cast<T*>(alloc(n * sizeof(T)));
  }
  bool accessible(uint64_t address, uint64_t size, bool) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.upper_bound(address);
    if (it == blocks_.begin()) return false;
    --it;
    return address >= it->first && address + size <= it->first + it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<uint64_t, uint64_t> blocks_;
};

// 1-based line of the first line of `text` containing `needle`.
inline int line_of(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

// $CUSNAP_CONFORMANCE_DUMP=DIR: DIR/<kind>-PID.txt opened for appending (nullptr when unset or
// unwritable) - where a failing conformance case writes what it got, for scripts/gpu-check to
// bring back from a GPU so references can be fitted to silicon.
inline std::FILE* open_conformance_dump(const char* kind) {
  const char* dir = std::getenv("CUSNAP_CONFORMANCE_DUMP");
  if (dir == nullptr || *dir == 0) return nullptr;
  const std::string path = std::string(dir) + "/" + kind + "-" + std::to_string(getpid()) + ".txt";
  return std::fopen(path.c_str(), "a");
}

// The nvcc-built test kernels: from $CUSNAP_TEST_PTX_DIR when set (scripts/gpu-check points it at
// the bundle's copy), else from the build tree.
inline std::string read_ptx(const std::string& name) {
  const char* dir = std::getenv("CUSNAP_TEST_PTX_DIR");
  std::ifstream f(std::string(dir && *dir ? dir : CUSNAP_TEST_PTX_DIR) + "/" + name,
                  std::ios::binary);
  INFO("PTX file " << name);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

#ifdef CUSNAP_TEST_THROUGH_DRIVER
// The PTX text each compiled program came from, for the driver to load.
inline std::map<const Program*, std::string>& driver_sources() {
  static std::map<const Program*, std::string> sources;
  return sources;
}
#endif

inline std::unique_ptr<Program> compile_or_fail(const std::string& text) {
  CompileResult r = compile(text);
  INFO(r.error);
  REQUIRE(r.program != nullptr);
#ifdef CUSNAP_TEST_THROUGH_DRIVER
  driver_sources()[r.program.get()] = text;
#endif
  return std::move(r.program);
}

// Allocates and binds every module variable (as the driver layer does); returns name -> address.
inline std::map<std::string, void*> bind_variables(Program& p, HostMemory& mem) {
  std::map<std::string, void*> bound;
  for (size_t i = 0; i < p.variables().size(); ++i) {
    const VariableDesc& v = p.variables()[i];
    if (v.is_extern) continue;
    void* addr = mem.alloc(v.size ? v.size : 1);
    if (!v.initializer.empty())
      std::memcpy(addr, v.initializer.data(), std::min<size_t>(v.initializer.size(), v.size));
    p.bind_variable(static_cast<int>(i), reinterpret_cast<uint64_t>(addr));
    bound[v.name] = addr;
  }
  return bound;
}

// Packs arguments according to the kernel's ParamDesc offsets.
class Args {
 public:
  template <typename T>
  Args& add(const T& v) {
    std::vector<uint8_t> bytes(sizeof(T));
    std::memcpy(bytes.data(), &v, sizeof(T));
    values_.push_back(std::move(bytes));
    return *this;
  }
  std::vector<uint8_t> pack(const KernelDesc& kd) const {
    REQUIRE(values_.size() == kd.params.size());
    std::vector<uint8_t> buf(kd.param_bytes);
    for (size_t i = 0; i < values_.size(); ++i) {
      REQUIRE(values_[i].size() == kd.params[i].size);
      std::memcpy(buf.data() + kd.params[i].offset, values_[i].data(), values_[i].size());
    }
    return buf;
  }

 private:
  std::vector<std::vector<uint8_t>> values_;
};

inline LaunchResult run(Program& p, const std::string& kernel, Dim3 grid, Dim3 block,
                        const Args& args, MemoryHost& mem, uint32_t dyn_shared = 0,
                        bool cooperative = false, Dim3 cluster = {1, 1, 1}) {
  int k = p.find_kernel(kernel);
  REQUIRE(k >= 0);
  std::vector<uint8_t> buf = args.pack(p.kernels()[k]);
#ifdef CUSNAP_TEST_THROUGH_DRIVER
  (void)mem;
  driver_context();
  auto source = driver_sources().find(&p);
  REQUIRE(source != driver_sources().end());
  CUmodule module = nullptr;
  char log[4096] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(sizeof log)};
  CUresult loaded = cuModuleLoadDataEx(&module, source->second.c_str(), 2, options, values);
  INFO("cuModuleLoadDataEx: " << loaded << " " << log);
  REQUIRE(loaded == CUDA_SUCCESS);
  CUfunction f = nullptr;
  REQUIRE(cuModuleGetFunction(&f, module, kernel.c_str()) == CUDA_SUCCESS);
  size_t size = buf.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  CUlaunchConfig config{};
  config.gridDimX = grid.x, config.gridDimY = grid.y, config.gridDimZ = grid.z;
  config.blockDimX = block.x, config.blockDimY = block.y, config.blockDimZ = block.z;
  config.sharedMemBytes = dyn_shared;
  CUlaunchAttribute attrs[2]{};
  unsigned count = 0;
  if (cooperative) {
    attrs[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[count++].value.cooperative = 1;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attrs[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[count].value.clusterDim.x = cluster.x;
    attrs[count].value.clusterDim.y = cluster.y;
    attrs[count++].value.clusterDim.z = cluster.z;
  }
  config.attrs = attrs;
  config.numAttrs = count;
  CUresult launched = cuLaunchKernelEx(&config, f, nullptr, extra);
  if (launched == CUDA_SUCCESS) launched = cuCtxSynchronize();
  cuModuleUnload(module);
  LaunchResult result;
  if (launched != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(launched, &name);
    result.message = std::string("through the driver: ") + (name ? name : "?");
    result.status = launched == CUDA_ERROR_ILLEGAL_ADDRESS      ? LaunchStatus::kIllegalAddress
                    : launched == CUDA_ERROR_MISALIGNED_ADDRESS ? LaunchStatus::kMisalignedAddress
                    : launched == CUDA_ERROR_ASSERT             ? LaunchStatus::kAssert
                    : launched == CUDA_ERROR_LAUNCH_TIMEOUT     ? LaunchStatus::kTimeout
                    : launched == CUDA_ERROR_INVALID_VALUE      ? LaunchStatus::kInvalidValue
                    : launched == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
                        ? LaunchStatus::kOutOfResources
                        : LaunchStatus::kIllegalInstruction;
  }
  return result;
#else
  LaunchConfig cfg;
  cfg.grid = grid;
  cfg.block = block;
  cfg.dynamic_shared_bytes = dyn_shared;
  cfg.params = buf.data();
  cfg.params_size = buf.size();
  cfg.cooperative = cooperative;
  cfg.cluster = cluster;
  return p.launch(k, cfg, mem, Limits{});
#endif
}

inline void require_success(const LaunchResult& r) {
  INFO(r.message);
  REQUIRE(r.status == LaunchStatus::kSuccess);
}

// Deterministic pseudo-random values (xorshift), so references are computed, not canned.
class Rng {
 public:
  explicit Rng(uint32_t seed) : s_(seed ? seed : 1) {}
  uint32_t next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 17;
    s_ ^= s_ << 5;
    return s_;
  }
  float uniform() { return static_cast<float>(next() & 0xffffff) / 16777216.0f; }

 private:
  uint32_t s_;
};

}  // namespace cusnap::emu::ptx::test
