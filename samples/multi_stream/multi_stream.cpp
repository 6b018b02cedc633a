// multi_stream: a dependency graph over four streams, checked on the host. Three non-blocking
// streams and one blocking stream; stages joined by events (cuStreamWaitEvent, one event
// waited for twice and re-recorded in between, so each wait means the record before it), by the
// legacy default stream's implicit synchronisation with the blocking stream, and by host
// synchronisation (cuEventSynchronize, cuStreamSynchronize, a synchronous copy):
//
//   s1: copy a, scale(a), record ea ............ wait ec, ed: combine(a = c - d), record ea
//   s2: copy b, flip(b), record eb ............................ wait ea: copy a out, record eo
//   s3 (blocking): wait ea: offset(c = f(a)) .. [NULL stream: add_seven(c), record ec] copy c out
//   s4: wait ea, eb: multiply(d = g(a, b)), record ed
//
// combine overwrites a, which offset and multiply read (write after read across streams); the
// NULL-stream kernel is ordered after offset and before s3's copy only by legacy semantics.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(multi_stream_kernels)

using namespace cusnap::samples;

namespace {

constexpr int kRounds = 8;  // as in multi_stream_kernels.cu

uint32_t mix(uint32_t v, uint32_t i) {
  for (int r = 0; r < kRounds; ++r) v = v * 1664525u + 1013904223u + i;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 14);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, multi_stream_kernels_image().data));
  CUfunction scale, flip, offset, add_seven, multiply, combine;
  CU_CHECK(cuModuleGetFunction(&scale, module, "scale"));
  CU_CHECK(cuModuleGetFunction(&flip, module, "flip"));
  CU_CHECK(cuModuleGetFunction(&offset, module, "offset"));
  CU_CHECK(cuModuleGetFunction(&add_seven, module, "add_seven"));
  CU_CHECK(cuModuleGetFunction(&multiply, module, "multiply"));
  CU_CHECK(cuModuleGetFunction(&combine, module, "combine"));

  const size_t bytes = n * sizeof(uint32_t);
  uint32_t *host_a = nullptr, *host_b = nullptr, *out_a = nullptr, *out_c = nullptr;
  CU_CHECK(cuMemAllocHost(reinterpret_cast<void**>(&host_a), bytes));
  CU_CHECK(cuMemAllocHost(reinterpret_cast<void**>(&host_b), bytes));
  CU_CHECK(cuMemAllocHost(reinterpret_cast<void**>(&out_a), bytes));
  CU_CHECK(cuMemAllocHost(reinterpret_cast<void**>(&out_c), bytes));
  std::vector<uint32_t> ref_a(n), ref_c(n), ref_d(n);
  Lcg rng(7);
  for (size_t i = 0; i < n; ++i) {
    host_a[i] = rng.next_u32();
    host_b[i] = rng.next_u32();
    out_a[i] = out_c[i] = 0;
    const uint32_t a = mix(host_a[i], 1u);
    const uint32_t b = mix(host_b[i] ^ 0x5a5a5a5au, 2u);
    ref_c[i] = mix(a, static_cast<uint32_t>(i)) + 7u;
    ref_d[i] = mix(a * b, 3u);
    ref_a[i] = ref_c[i] - ref_d[i];
  }
  maybe_inject_error(options, ref_a);

  CUdeviceptr d_a, d_b, d_c, d_d;
  CU_CHECK(cuMemAlloc(&d_a, bytes));
  CU_CHECK(cuMemAlloc(&d_b, bytes));
  CU_CHECK(cuMemAlloc(&d_c, bytes));
  CU_CHECK(cuMemAlloc(&d_d, bytes));

  CUstream s1, s2, s3, s4;
  CU_CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuStreamCreate(&s3, CU_STREAM_DEFAULT));  // blocking: syncs with the NULL stream
  CU_CHECK(cuStreamCreate(&s4, CU_STREAM_NON_BLOCKING));
  CUevent ea, eb, ec, ed, eo;
  for (CUevent* e : {&ea, &eb, &ec, &ed, &eo}) CU_CHECK(cuEventCreate(e, CU_EVENT_DISABLE_TIMING));

  const unsigned block = 128;
  const unsigned grid = blocks_for(n, block);
  int count = static_cast<int>(n);
  auto launch = [&](CUfunction f, CUstream s, std::vector<void*> params) {
    CU_CHECK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, params.data(), nullptr));
  };

  CU_CHECK(cuMemcpyHtoDAsync(d_a, host_a, bytes, s1));
  launch(scale, s1, {&d_a, &count});
  CU_CHECK(cuEventRecord(ea, s1));
  CU_CHECK(cuMemcpyHtoDAsync(d_b, host_b, bytes, s2));
  launch(flip, s2, {&d_b, &count});
  CU_CHECK(cuEventRecord(eb, s2));

  CU_CHECK(cuStreamWaitEvent(s3, ea, 0));
  launch(offset, s3, {&d_c, &d_a, &count});
  launch(add_seven, nullptr, {&d_c, &count});  // legacy stream: after offset (s3 is blocking)
  CU_CHECK(cuEventRecord(ec, nullptr));

  CU_CHECK(cuStreamWaitEvent(s4, ea, 0));
  CU_CHECK(cuStreamWaitEvent(s4, eb, 0));
  launch(multiply, s4, {&d_d, &d_a, &d_b, &count});
  CU_CHECK(cuEventRecord(ed, s4));

  CU_CHECK(cuStreamWaitEvent(s1, ec, 0));
  CU_CHECK(cuStreamWaitEvent(s1, ed, 0));
  launch(combine, s1, {&d_a, &d_c, &d_d, &count});
  CU_CHECK(cuEventRecord(ea, s1));  // re-recorded: s2's wait below means this record

  CU_CHECK(cuStreamWaitEvent(s2, ea, 0));
  CU_CHECK(cuMemcpyDtoHAsync(out_a, d_a, bytes, s2));
  CU_CHECK(cuEventRecord(eo, s2));
  CU_CHECK(cuMemcpyDtoHAsync(out_c, d_c, bytes, s3));  // after add_seven: legacy semantics

  std::vector<uint32_t> found_d(n);
  CU_CHECK(cuEventSynchronize(ed));
  CU_CHECK(cuMemcpyDtoH(found_d.data(), d_d, bytes));  // synchronous, on the legacy stream
  CU_CHECK(cuEventSynchronize(eo));
  std::vector<uint32_t> found_a(out_a, out_a + n);
  CU_CHECK(cuStreamSynchronize(s3));
  std::vector<uint32_t> found_c(out_c, out_c + n);

  bool ok = compare_exact(ref_a, found_a) && compare_exact(ref_c, found_c) &&
            compare_exact(ref_d, found_d);

  for (CUevent e : {ea, eb, ec, ed, eo}) CU_CHECK(cuEventDestroy(e));
  for (CUstream s : {s1, s2, s3, s4}) CU_CHECK(cuStreamDestroy(s));
  for (CUdeviceptr p : {d_a, d_b, d_c, d_d}) CU_CHECK(cuMemFree(p));
  for (uint32_t* p : {host_a, host_b, out_a, out_c}) CU_CHECK(cuMemFreeHost(p));
  CU_CHECK(cuModuleUnload(module));
  char detail[96];
  std::snprintf(detail, sizeof(detail), "n=%zu, 4 streams, 6 kernels", n);
  return finish("multi_stream", ok, detail);
}
