#include "test_support.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/kernel_filter_summary.h"

namespace cusnap::replayer::test {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string test_ptx() { return read_text(CUSNAP_TEST_PTX_PATH); }

std::string temp_path(const std::string& name) {
  return std::string(CUSNAP_TEST_TMP_DIR) + "/" + std::to_string(::getpid()) + "_" + name;
}

StandardCapture write_standard_capture(const std::string& path, const StandardOptions& options) {
  StandardCapture s;
  s.path = path;
  std::vector<int> a(kN), b(kN), x(kN);
  for (int i = 0; i < kN; ++i) {
    a[i] = i * 7 - 300;
    b[i] = 1000 - i * i % 977;
    x[i] = i ^ 0x55;
  }
  // Host reference of what the application received.
  std::vector<int> c(kN), x_after(kN);
  for (int i = 0; i < kN; ++i) {
    c[i] = kScale * a[i] + b[i];
    x_after[i] = x[i] + 1;
  }
  if (options.corrupt_b_payload) b[123] += 1;

  std::string ptx = test_ptx();
  if (!options.ptx_target.empty()) {
    size_t at = ptx.find(".target sm_");
    if (at == std::string::npos) throw std::runtime_error("no .target in the test PTX");
    size_t end = ptx.find('\n', at);
    ptx.replace(at, end - at, ".target " + options.ptx_target);
  }

  CaptureBuilder w(path);
  const uint64_t stream = options.async_on_stream ? 0x5eed00 : 0;
  const bool async = options.async_on_stream;
  w.module_load_ptx(0xA000, ptx);
  w.function_get(0xA000, 0xF001, "axpy_int");
  w.function_get(0xA000, 0xF002, "increment");
  if (async) {
    w.stream_create(stream);
    w.event_create(0xE001);
  }
  w.alloc(s.a, kN * 4);
  w.alloc(s.b, kN * 4);
  s.alloc_c_seq = w.alloc(s.c, kN * 4);
  w.alloc(s.x, kN * 4);
  w.memset32(s.c, 0xdeadbeef, kN);
  w.htod(s.a, as_bytes(a), stream, async);
  w.htod(s.b, as_bytes(b), stream, async);
  w.htod(s.x, as_bytes(x));
  s.axpy_seq = w.launch(0xF001, "axpy_int", (kN + 255) / 256, 256,
                        Params().ptr(s.a).ptr(s.b).ptr(s.c).i32(kScale).i32(kN), stream);
  if (async) {
    w.event_record(0xE001, stream);
    w.stream_wait(0, 0xE001);
  }
  s.increment_seq = w.launch(0xF002, "increment", (kN + 127) / 128, 128, Params().ptr(s.x).i32(kN));
  w.failed_launch(0xF002);
  const bool sums = !options.no_checksums;
  s.dtoh_c_seq = w.dtoh(s.c, kN * 4, format::checksum64(as_bytes(c)), stream, async, sums);
  if (async) w.stream_sync(stream);
  s.dtoh_x_seq = w.dtoh(s.x, kN * 4, format::checksum64(as_bytes(x_after)), 0, false, sums);
  w.free(s.a);
  w.context_sync();
  w.close();
  return s;
}

AssertCapture write_assert_capture(const std::string& path, bool trips_assert) {
  AssertCapture s;
  s.path = path;
  std::vector<int> x(kN), x_after(kN);
  for (int i = 0; i < kN; ++i) {
    x[i] = 1 + i % 17;
    x_after[i] = x[i] + 1;
  }
  // -1 + 1 is 0: not positive after the increment.
  if (trips_assert) x[kN / 2] = -1;
  x_after[kN / 2] = x[kN / 2] + 1;
  CaptureBuilder w(path);
  w.module_load_ptx(0xA000, test_ptx());
  w.function_get(0xA000, 0xF002, "increment");
  w.function_get(0xA000, 0xF004, "check_positive");
  w.alloc(s.x, kN * 4);
  w.htod(s.x, as_bytes(x));
  w.launch(0xF002, "increment", (kN + 127) / 128, 128, Params().ptr(s.x).i32(kN), 0, 0);
  s.dtoh_seq = w.dtoh(s.x, kN * 4, format::checksum64(as_bytes(x_after)));
  s.check_seq =
      w.launch(0xF004, "check_positive", (kN + 127) / 128, 128, Params().ptr(s.x).i32(kN), 0, 1);
  s.sync_seq = w.context_sync(710);  // CUDA_ERROR_ASSERT
  w.context_sync(710);               // sticky: every later call fails the same way
  w.close();
  return s;
}

SnapshotCapture write_snapshot_capture(const std::string& path, const SnapshotCaptureOptions& o) {
  SnapshotCapture s;
  s.path = path;
  const uint64_t cb = o.chunk_bytes;
  // Memory before and after the launch, per covered range (captured address -> bytes).
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> before, after;
  auto bytes_of = [](const auto& v) {
    auto b = as_bytes(v);
    return std::vector<uint8_t>(b.begin(), b.end());
  };
  Params params;

  if (o.kernel == "increment" || o.kernel == "add_bias") {
    std::vector<int> x(kN), x_after(kN);
    const int bias = 5;
    for (int i = 0; i < kN; ++i) {
      x[i] = i * 7 - 300;
      x_after[i] = x[i] + (o.kernel == "increment" ? 1 : bias);
    }
    before.emplace_back(s.x, bytes_of(x));
    after.emplace_back(s.x, bytes_of(x_after));
    if (o.kernel == "add_bias") {
      before.emplace_back(s.bias, bytes_of(std::vector<int>{bias}));
      after.emplace_back(s.bias, bytes_of(std::vector<int>{bias}));
      before.emplace_back(s.calls, bytes_of(std::vector<int>{41}));
      after.emplace_back(s.calls, bytes_of(std::vector<int>{42}));
    }
    params.ptr(s.x).i32(kN);
  } else if (o.kernel == "fast_exp") {
    std::vector<float> x(kN), y(kN, 0.0f), y_after(kN);
    for (int i = 0; i < kN; ++i) {
      x[i] = -4.0f + 8.0f * static_cast<float>(i) / kN;
      y_after[i] = static_cast<float>(std::exp(static_cast<double>(x[i])));
      if (i % 16 == 0) y_after[i] = std::nextafter(y_after[i], 1e30f);
    }
    before.emplace_back(s.x, bytes_of(x));
    before.emplace_back(s.y, bytes_of(y));
    after.emplace_back(s.x, bytes_of(x));
    after.emplace_back(s.y, bytes_of(y_after));
    params.ptr(s.x).ptr(s.y).i32(kN);
  } else {
    throw std::runtime_error("unknown snapshot test kernel " + o.kernel);
  }
  if (o.wrong_before) before.front().second[8] ^= 0x40;
  if (o.alter_expected) {
    after.front().second[4 * 77 + 1] ^= 0x01;
    s.altered_address = after.front().first + 4 * 77 + 1;
  }
  for (auto& [address, bytes] : before) s.input_bytes += bytes.size();
  for (auto& [address, bytes] : after) s.expected_bytes += bytes.size();

  SnapshotHeader header;
  header.chunk_bytes = cb;
  header.extracted = o.extracted;
  header.kernel_filtered = o.kernel_filtered;
  if (o.kernel_filtered) header.kernel_regex = o.kernel;
  header.kernel = o.kernel;
  header.source_launch_seq = 1234;
  header.input_bytes = s.input_bytes;
  header.expected_bytes = s.expected_bytes;
  CaptureBuilder w(path, header);
  w.module_load_ptx(0xA000, test_ptx());
  w.function_get(0xA000, 0xF001, o.kernel);
  if (o.kernel == "add_bias") {
    w.global_get(0xA000, "bias", s.bias, 4);
    w.global_get(0xA000, "calls", s.calls, 4);
  }
  w.alloc(s.x, kN * 4);
  if (o.kernel == "fast_exp") w.alloc(s.y, kN * 4);
  if (!o.extracted && !o.kernel_filtered) {
    // A whole run: the application's own copies put the inputs there (the true ones, whatever
    // the beforeLaunch snapshot says).
    std::vector<uint8_t> x = before.front().second;
    if (o.wrong_before) x[8] ^= 0x40;
    w.htod(s.x, x);
  }
  auto snapshot_of = [&](const std::vector<std::pair<uint64_t, std::vector<uint8_t>>>& ranges,
                         bool hash_only) {
    std::vector<RawChunk> chunks;
    for (auto& [address, bytes] : ranges) {
      auto c = w.chunks(address, bytes, cb, hash_only);
      chunks.insert(chunks.end(), c.begin(), c.end());
    }
    return chunks;
  };
  s.launch_seq = w.launch(0xF001, o.kernel, (kN + 127) / 128, 128, params);
  s.before_seq = w.snapshot(s.launch_seq, 0, 0, snapshot_of(before, false));
  s.after_seq = w.snapshot(s.launch_seq, 0, 1, snapshot_of(after, o.hash_only_after));
  std::vector<uint8_t> final_x = after.front().second;
  if (o.alter_expected) final_x[4 * 77 + 1] ^= 0x01;
  if (!o.extracted && o.with_skipped && o.kernel == "increment") {
    uint64_t second = w.launch(0xF001, o.kernel, (kN + 127) / 128, 128, params, 0, 1);
    s.skipped_seq = w.snapshot(second, 1, 0, {}, "the stream was being captured into a graph");
    for (size_t i = 0; i < final_x.size(); i += 4) {
      int v;
      std::memcpy(&v, final_x.data() + i, 4);
      ++v;
      std::memcpy(final_x.data() + i, &v, 4);
    }
  }
  if (!o.extracted && !o.kernel_filtered)
    s.dtoh_seq = w.dtoh(s.x, final_x.size(), copy_checksum(final_x));
  if (o.kernel_filtered) {
    w.tool_info(cusnap::format::kernel_filter_summary(cusnap::format::KernelFilterCounts{3, 1, 1}));
  }
  w.close();
  return s;
}

TicketCapture write_ticket_capture(const std::string& path, bool reverse) {
  TicketCapture s;
  s.path = path;
  std::vector<unsigned> tickets(kTicketBlocks);
  for (unsigned b = 0; b < kTicketBlocks; ++b) tickets[b] = reverse ? kTicketBlocks - 1 - b : b;
  const std::vector<unsigned> counter_after{kTicketBlocks};
  SnapshotHeader header;
  header.chunk_bytes = 1024;
  CaptureBuilder w(path, header);
  w.module_load_ptx(0xA000, test_ptx());
  w.function_get(0xA000, 0xF004, "take_ticket");
  w.alloc(s.counter, 4);
  w.alloc(s.tickets, kTicketBlocks * 4);
  w.memset32(s.counter, 0, 1);
  w.memset32(s.tickets, 0xffffffff, kTicketBlocks);
  s.launch_seq =
      w.launch(0xF004, "take_ticket", kTicketBlocks, 32, Params().ptr(s.counter).ptr(s.tickets));
  std::vector<RawChunk> after = w.chunks(s.tickets, as_bytes(tickets), header.chunk_bytes);
  auto counter_chunks = w.chunks(s.counter, as_bytes(counter_after), header.chunk_bytes);
  after.insert(after.begin(), counter_chunks.begin(), counter_chunks.end());
  w.snapshot(s.launch_seq, 0, cusnap::test::kAfterLaunch, after);
  s.dtoh_seq = w.dtoh(s.tickets, kTicketBlocks * 4, copy_checksum(as_bytes(tickets)));
  w.close();
  return s;
}

ReplayOptions emulator_options() {
  ReplayOptions options;
  options.driver = CUSNAP_TEST_EMULATOR;
  return options;
}

}  // namespace cusnap::replayer::test
