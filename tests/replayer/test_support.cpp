#include "test_support.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "cusnap/format/blob_id.h"

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
  s.dtoh_c_seq = w.dtoh(s.c, kN * 4, format::checksum64(as_bytes(c)), stream, async);
  if (async) w.stream_sync(stream);
  s.dtoh_x_seq = w.dtoh(s.x, kN * 4, format::checksum64(as_bytes(x_after)));
  w.free(s.a);
  w.context_sync();
  w.close();
  return s;
}

ReplayOptions emulator_options() {
  ReplayOptions options;
  options.driver = CUSNAP_TEST_EMULATOR;
  return options;
}

}  // namespace cusnap::replayer::test
