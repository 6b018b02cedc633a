// Module variables: a __constant__ array written with cudaMemcpyToSymbol, a __device__ counter
// and table read back with cudaMemcpyFromSymbol and through cudaGetSymbolAddress.
#include <vector>

#include "rt_check.h"

namespace {

constexpr int kCoefficients = 16;
constexpr int kTable = 1024;

__constant__ int coefficients[kCoefficients];
__device__ unsigned int counter;
__device__ int table[kTable];

__global__ void apply(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    table[i] = coefficients[i % kCoefficients] * i;
    atomicAdd(&counter, 1u);
  }
}

}  // namespace

int main() {
  int host_coefficients[kCoefficients];
  for (int c = 0; c < kCoefficients; ++c) host_coefficients[c] = 3 * c - 7;
  RT_CHECK(cudaMemcpyToSymbol(coefficients, host_coefficients, sizeof host_coefficients));
  unsigned int zero = 0;
  RT_CHECK(cudaMemcpyToSymbol(counter, &zero, sizeof zero));
  apply<<<kTable / 128, 128>>>(kTable);
  RT_CHECK_LAUNCH();
  RT_CHECK(cudaDeviceSynchronize());

  unsigned int count = 0;
  RT_CHECK(cudaMemcpyFromSymbol(&count, counter, sizeof count));
  std::vector<int> host_table(kTable);
  RT_CHECK(cudaMemcpyFromSymbol(host_table.data(), table, kTable * sizeof(int)));
  void* table_address = nullptr;
  size_t table_size = 0;
  RT_CHECK(cudaGetSymbolAddress(&table_address, table));
  RT_CHECK(cudaGetSymbolSize(&table_size, table));
  std::vector<int> via_address(kTable);
  RT_CHECK(cudaMemcpy(via_address.data(), table_address, table_size, cudaMemcpyDeviceToHost));
  std::printf("rt_symbols: counter %u, table %zu bytes\n", count, table_size);

  long mismatches = 0;
  if (count != kTable) rt_report_mismatch(mismatches, "counter", 0, count, kTable);
  if (table_size != kTable * sizeof(int)) rt_report_mismatch(mismatches, "table size", 0, table_size, kTable * sizeof(int));
  for (int i = 0; i < kTable; ++i) {
    int expected = host_coefficients[i % kCoefficients] * i;
    if (host_table[i] != expected) rt_report_mismatch(mismatches, "table", i, host_table[i], expected);
    if (via_address[i] != expected) rt_report_mismatch(mismatches, "table via address", i, via_address[i], expected);
  }
  return rt_finish("rt_symbols", mismatches);
}
