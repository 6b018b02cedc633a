// Test harness for the PTX engine: a MemoryHost over host allocations, PTX loading from the
// build tree, variable binding and parameter packing by the kernel's own parameter layout.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
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

namespace cusnap::emu::ptx::test {

class HostMemory final : public MemoryHost {
 public:
  ~HostMemory() override {
    for (auto& [addr, size] : blocks_) std::free(reinterpret_cast<void*>(addr));
  }
  void* alloc(size_t size) {
    size_t rounded = (size + 255) / 256 * 256;
    void* p = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
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

inline std::string read_ptx(const std::string& name) {
  std::ifstream f(std::string(CUSNAP_TEST_PTX_DIR) + "/" + name, std::ios::binary);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::unique_ptr<Program> compile_or_fail(const std::string& text) {
  CompileResult r = compile(text);
  INFO(r.error);
  REQUIRE(r.program != nullptr);
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
  LaunchConfig cfg;
  cfg.grid = grid;
  cfg.block = block;
  cfg.dynamic_shared_bytes = dyn_shared;
  cfg.params = buf.data();
  cfg.params_size = buf.size();
  cfg.cooperative = cooperative;
  cfg.cluster = cluster;
  return p.launch(k, cfg, mem, Limits{});
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
