// The snapshot hashing kernel (interceptor/src/chunk_hash.ptx, the text the shim embeds) run on
// the emulator against its one C++ reference (chunk_hash_reference), and the change-detection
// property: one flipped bit anywhere in a chunk changes its hash.
#include <cuda.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "chunk_hash.h"

using cusnap::icpt::chunk_hash_ptx;
using cusnap::icpt::chunk_hash_reference;
using cusnap::icpt::ChunkHash;

#define REQUIRE_CU(call) REQUIRE((call) == CUDA_SUCCESS)

namespace {

// The kernel, loaded once per process on the primary context.
CUfunction hash_kernel() {
  static CUfunction function = [] {
    REQUIRE_CU(cuInit(0));
    CUcontext context = nullptr;
    REQUIRE_CU(cuDevicePrimaryCtxRetain(&context, 0));
    REQUIRE_CU(cuCtxSetCurrent(context));
    std::string ptx(chunk_hash_ptx());  // NUL-terminated copy
    CUmodule module = nullptr;
    REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
    CUfunction f = nullptr;
    REQUIRE_CU(cuModuleGetFunction(&f, module, cusnap::icpt::kChunkHashKernel));
    return f;
  }();
  return function;
}

// Hashes (address, length) chunks of device memory with the kernel on `blocks` blocks.
std::vector<ChunkHash> device_hashes(const std::vector<std::pair<CUdeviceptr, uint64_t>>& chunks,
                                     unsigned blocks) {
  CUfunction kernel = hash_kernel();
  std::vector<uint64_t> table;
  for (const auto& [address, length] : chunks) {
    table.push_back(address);
    table.push_back(length);
  }
  size_t bytes = table.size() * sizeof(uint64_t);
  CUdeviceptr d_table = 0;
  CUdeviceptr d_hashes = 0;
  REQUIRE_CU(cuMemAlloc(&d_table, bytes));
  REQUIRE_CU(cuMemAlloc(&d_hashes, bytes));
  REQUIRE_CU(cuMemcpyHtoD(d_table, table.data(), bytes));
  REQUIRE_CU(cuMemsetD8(d_hashes, 0, bytes));
  auto count = static_cast<unsigned>(chunks.size());
  void* params[] = {&d_table, &d_hashes, &count};
  REQUIRE_CU(cuLaunchKernel(kernel, blocks, 1, 1, cusnap::icpt::kChunkHashThreads, 1, 1, 0, nullptr,
                            params, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  std::vector<ChunkHash> out(chunks.size());
  REQUIRE_CU(cuMemcpyDtoH(out.data(), d_hashes, bytes));
  REQUIRE_CU(cuMemFree(d_table));
  REQUIRE_CU(cuMemFree(d_hashes));
  return out;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

}  // namespace

TEST_CASE("kernel equals the reference on random data") {
  // One allocation holding chunks of many lengths at aligned and unaligned starts, plus chunks
  // that are whole allocations of odd sizes (a read past their end would be caught by the
  // emulator's redzones).
  const std::vector<uint64_t> lengths = {0,    1,    7,    8,     9,     63,     255,   2048,
                                         2049, 2055, 4096, 65536, 65549, 300000, 131072};
  const std::vector<uint64_t> misalign = {0, 1, 3, 4, 7};
  uint64_t total = 0;
  for (uint64_t length : lengths) total += (length + 16) * misalign.size();
  std::vector<uint8_t> host = random_bytes(total, 1);
  hash_kernel();
  CUdeviceptr base = 0;
  REQUIRE_CU(cuMemAlloc(&base, total));
  REQUIRE_CU(cuMemcpyHtoD(base, host.data(), total));
  std::vector<std::pair<CUdeviceptr, uint64_t>> chunks;
  std::vector<uint64_t> host_offset;  // where chunk i's bytes are in `host`
  uint64_t at = 0;
  for (uint64_t length : lengths) {
    for (uint64_t shift : misalign) {
      uint64_t start = (at + 7) / 8 * 8 + shift;
      chunks.emplace_back(base + start, length);
      host_offset.push_back(start);
      at = start + length;
    }
  }
  REQUIRE(at <= total);
  std::vector<CUdeviceptr> exact;
  for (uint64_t size : {13ull, 4099ull, 65541ull}) {
    std::vector<uint8_t> bytes = random_bytes(size, static_cast<uint32_t>(size));
    CUdeviceptr p = 0;
    REQUIRE_CU(cuMemAlloc(&p, size));
    REQUIRE_CU(cuMemcpyHtoD(p, bytes.data(), size));
    exact.push_back(p);
    chunks.emplace_back(p, size);
    host_offset.push_back(host.size());
    host.insert(host.end(), bytes.begin(), bytes.end());
  }
  // Blocks fewer than chunks (each block loops over several) and one block per chunk.
  for (unsigned blocks : {1u, 7u, static_cast<unsigned>(chunks.size())}) {
    INFO("blocks " << blocks);
    std::vector<ChunkHash> got = device_hashes(chunks, blocks);
    for (size_t i = 0; i < chunks.size(); ++i) {
      INFO("chunk " << i << ": " << chunks[i].second << " bytes at +" << (chunks[i].first % 8));
      ChunkHash want = chunk_hash_reference({host.data() + host_offset[i], chunks[i].second});
      CHECK(got[i].low == want.low);
      CHECK(got[i].high == want.high);
    }
    // Different bytes, different hashes (the chunks' contents all differ but the empty ones').
    for (size_t i = 0; i < got.size(); ++i)
      for (size_t j = i + 1; j < got.size(); ++j)
        if (chunks[i].second != 0) CHECK_FALSE(got[i] == got[j]);
  }
  for (CUdeviceptr p : exact) REQUIRE_CU(cuMemFree(p));
  REQUIRE_CU(cuMemFree(base));
}

TEST_CASE("one flipped bit in any position changes the hash") {
  // A chunk of 269 bytes (33 whole words and a 5-byte tail), at an aligned and an unaligned
  // start: the original and every one-bit variant, all hashed in one launch.
  const uint64_t length = 269;
  const uint64_t stride = 280;
  std::vector<uint8_t> original = random_bytes(length, 7);
  for (uint64_t shift : {0ull, 3ull}) {
    INFO("start at +" << shift);
    const uint64_t variants = length * 8;
    std::vector<uint8_t> host((variants + 1) * stride, 0);
    for (uint64_t v = 0; v <= variants; ++v) {
      uint8_t* chunk = host.data() + v * stride + shift;
      std::memcpy(chunk, original.data(), length);
      if (v < variants) chunk[v / 8] ^= static_cast<uint8_t>(1u << (v % 8));
    }
    hash_kernel();
    CUdeviceptr base = 0;
    REQUIRE_CU(cuMemAlloc(&base, host.size()));
    REQUIRE_CU(cuMemcpyHtoD(base, host.data(), host.size()));
    std::vector<std::pair<CUdeviceptr, uint64_t>> chunks;
    for (uint64_t v = 0; v <= variants; ++v) chunks.emplace_back(base + v * stride + shift, length);
    std::vector<ChunkHash> got = device_hashes(chunks, 64);
    const ChunkHash unflipped = got[variants];
    CHECK(unflipped == chunk_hash_reference(original));
    for (uint64_t v = 0; v < variants; ++v) {
      INFO("bit " << v % 8 << " of byte " << v / 8);
      CHECK_FALSE(got[v] == unflipped);
      CHECK(got[v] == chunk_hash_reference({host.data() + v * stride + shift, length}));
    }
    REQUIRE_CU(cuMemFree(base));
  }
  // The reference alone over a larger chunk (4101 bytes: every bit, 32808 variants).
  std::vector<uint8_t> big = random_bytes(4101, 9);
  const ChunkHash big_hash = chunk_hash_reference(big);
  for (size_t bit = 0; bit < big.size() * 8; ++bit) {
    big[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    if (chunk_hash_reference(big) == big_hash) FAIL("bit " << bit << " did not change the hash");
    big[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
}
