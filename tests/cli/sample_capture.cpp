#include "sample_capture.h"

#include <capnp/message.h>

#include <random>
#include <set>
#include <stdexcept>

#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/writer.h"

namespace cusnap::cli_test {

namespace fs = format::schema;

namespace {

void check(const format::Status& st) {
  if (!st.is_ok()) throw std::runtime_error(st.to_string());
}

class SampleWriter {
 public:
  SampleWriter(const std::string& path, const SampleOptions& options) {
    capnp::MallocMessageBuilder header;
    auto h = header.initRoot<fs::CaptureHeader>();
    h.setToolName("cusnap");
    h.setToolVersion("test");
    h.setCreationTimeNs(1700000000123456789LL);
    h.setHostName("testhost");
    h.setPid(4242);
    auto argv = h.initCommandLine(2);
    argv.set(0, "./vector_add");
    argv.set(1, "--n=1024");
    h.setDriverVersion(12040);
    auto devices = h.initDevices(1);
    devices[0].setOrdinal(0);
    devices[0].setName("cusnap emulator");
    devices[0].setComputeCapabilityMajor(8);
    devices[0].setComputeCapabilityMinor(0);
    devices[0].setMultiprocessorCount(4);
    devices[0].setTotalMemoryBytes(8ull << 30);
    devices[0].setUuid(capnp::Data::Reader(kUuid, sizeof kUuid));
    auto env = h.initEnvironment(1);
    env[0].setKey("CUDA_VISIBLE_DEVICES");
    env[0].setValue("0");
    format::WriterOptions wo;
    wo.call_frame_bytes = options.call_frame_bytes;
    wo.compression_level = options.compression_level;
    wo.compression_threads = 1;
    wo.flush_interval = std::chrono::milliseconds(60000);
    auto w = format::Writer::create(path, header, wo);
    check(w.status());
    writer_ = std::move(w.value());
  }

  // Starts a record; `finish` appends it and records the expectation.
  fs::CallRecord::Builder begin(const std::string& api, uint64_t thread, int32_t result = 0) {
    message_ = std::make_unique<capnp::MallocMessageBuilder>();
    auto r = message_->initRoot<fs::CallRecord>();
    r.setApiName(api);
    r.setThreadId(thread);
    r.setResult(result);
    r.setStartNs(static_cast<int64_t>(1000 + 100 * expected_.calls.size()));
    r.setEndNs(static_cast<int64_t>(1050 + 100 * expected_.calls.size()));
    r.setContext(kContext);
    current_ = ExpectedCall{expected_.calls.size(), "", api, result, thread, 0};
    threads_.insert(thread);
    return r;
  }

  void finish(const std::string& kind, uint64_t key_value) {
    auto seq = writer_->append_call(*message_);
    check(seq.status());
    if (seq.value() != current_.seq) throw std::runtime_error("unexpected seq from the writer");
    current_.kind = kind;
    current_.key_value = key_value;
    expected_.calls.push_back(current_);
    ++expected_.kind_counts[kind];
  }

  // put_blob plus the bookkeeping of what a record referencing it adds.
  format::BlobId blob(const std::vector<uint8_t>& bytes, int content_id) {
    auto id = writer_->put_blob(bytes);
    check(id.status());
    ++expected_.blob_references;
    expected_.blob_referenced_bytes += bytes.size();
    if (contents_.insert(content_id).second) expected_.blob_unique_bytes += bytes.size();
    return id.value();
  }

  void launch(const std::string& name, bool name_in_record, uint64_t function, ShapeKey shape,
              uint64_t thread, uint64_t arg, int32_t result = 0) {
    auto r = begin("cuLaunchKernel", thread, result);
    auto l = r.initLaunch();
    l.setFunction(function);
    l.setGridX(shape.grid[0]);
    l.setGridY(shape.grid[1]);
    l.setGridZ(shape.grid[2]);
    l.setBlockX(shape.block[0]);
    l.setBlockY(shape.block[1]);
    l.setBlockZ(shape.block[2]);
    l.setSharedBytes(shape.shared_bytes);
    l.setStream(kStream);
    uint8_t params[16];
    for (int i = 0; i < 8; ++i) params[i] = static_cast<uint8_t>(arg >> (8 * i));
    for (int i = 8; i < 16; ++i) params[i] = static_cast<uint8_t>(i * 17);
    l.setParams(capnp::Data::Reader(params, sizeof params));
    auto layout = l.initLayout(2);
    layout[0].setOffset(0);
    layout[0].setSize(8);
    layout[1].setOffset(8);
    layout[1].setSize(8);
    if (name_in_record) l.setKernelName(name);
    finish("launch", function);
    ExpectedKernel& k = expected_.kernels[name];
    ++k.launches;
    ++k.shapes[shape];
    ++expected_.launches;
  }

  void note_unmodelled(const std::string& api) { ++expected_.unmodelled[api]; }
  // The seq of the record begun last (not yet finished).
  uint64_t next_seq() const { return current_.seq; }

  ExpectedCapture close() {
    check(writer_->close());
    expected_.threads = threads_.size();
    expected_.distinct_blobs = contents_.size();
    return std::move(expected_);
  }

  static constexpr uint64_t kContext = 0x55550000c0de;
  static constexpr uint64_t kStream = 0x7f00a000;
  static constexpr uint8_t kUuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

 private:
  std::unique_ptr<format::Writer> writer_;
  std::unique_ptr<capnp::MallocMessageBuilder> message_;
  ExpectedCall current_;
  ExpectedCapture expected_;
  std::set<uint64_t> threads_;
  std::set<int> contents_;
};

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

}  // namespace

ExpectedCapture write_sample_capture(const std::string& path, const SampleOptions& options) {
  SampleWriter w(path, options);
  constexpr uint64_t kMain = 1001;
  constexpr uint64_t kWorker = 1002;

  auto r = w.begin("cuCtxCreate_v2", kMain);
  auto cc = r.initContextCreate();
  cc.setContext(SampleWriter::kContext);
  w.finish("contextCreate", SampleWriter::kContext);

  // The same code image loaded twice: stored once.
  std::vector<uint8_t> image = random_bytes(3000, 7);
  for (uint64_t module : {0x6d0001ull, 0x6d0002ull}) {
    r = w.begin("cuModuleLoadData", kMain);
    auto ml = r.initModuleLoad();
    ml.setKind(fs::ModuleLoad::ImageKind::FATBIN);
    ml.setHandle(module);
    auto id = w.blob(image, 1);
    ml.initImage().setHigh(id.high);
    ml.getImage().setLow(id.low);
    ml.setImageSize(image.size());
    w.finish("moduleLoad", module);
  }

  struct Kernel {
    const char* name;
    uint64_t handle;
    bool name_in_record;
  };
  const Kernel kernels[] = {{"_Z6vecAddPKfS0_Pfi", 0xf00001, true},
                            {"saxpy", 0xf00002, true},
                            {"reduce_sum", 0xf00003, false}};  // name only via functionGet
  for (const Kernel& k : kernels) {
    r = w.begin("cuModuleGetFunction", kMain);
    auto fg = r.initFunctionGet();
    fg.setModule(0x6d0001);
    fg.setHandle(k.handle);
    fg.setName(k.name);
    fg.setLayoutSource(fs::FunctionGet::LayoutSource::DRIVER_QUERY);
    w.finish("functionGet", k.handle);
  }

  uint64_t address = 0x7f0000200000;
  for (int i = 0; i < 3; ++i) {
    r = w.begin("cuMemAlloc_v2", kMain);
    auto ma = r.initMemAlloc();
    ma.setKind(fs::MemAlloc::Kind::DEVICE);
    ma.setAddress(address + i * 0x100000ull);
    ma.setSize(1 << 20);
    w.finish("memAlloc", address + i * 0x100000ull);
  }

  r = w.begin("cuStreamCreate", kMain);
  r.initStreamCreate().setStream(SampleWriter::kStream);
  w.finish("streamCreate", SampleWriter::kStream);

  for (unsigned round = 0; round < options.rounds; ++round) {
    uint64_t thread = round % 3 == 2 ? kWorker : kMain;
    // Upload: every fourth round repeats the payload of round 0 (dedup).
    int content = round % 4 == 3 ? 1000 : 1000 + static_cast<int>(round);
    std::vector<uint8_t> payload = random_bytes(2048 + 16 * (content % 50), content);
    r = w.begin("cuMemcpyHtoD_v2", thread);
    auto mc = r.initMemcpy();
    mc.setKind(fs::Memcpy::Kind::HOST_TO_DEVICE);
    mc.setDst(address);
    mc.setSize(payload.size());
    auto id = w.blob(payload, content);
    mc.initPayload().setHigh(id.high);
    mc.getPayload().setLow(id.low);
    mc.setDimensions(1);
    w.finish("memcpy", address);

    ShapeKey small{{8, 1, 1}, {128, 1, 1}, 0};
    ShapeKey big{{64, 2, 1}, {256, 1, 1}, 1024};
    w.launch(kernels[0].name, true, kernels[0].handle, round % 5 == 0 ? big : small, thread, round);
    w.launch(kernels[0].name, true, kernels[0].handle, small, thread, round + 1);
    if (round % 2 == 0) w.launch(kernels[1].name, true, kernels[1].handle, small, thread, round);
    if (round % 4 == 1) w.launch(kernels[2].name, false, kernels[2].handle, big, thread, round);

    r = w.begin("cuMemsetD32_v2", thread);
    auto ms = r.initMemset();
    ms.setAddress(address + 0x100000);
    ms.setValue(round);
    ms.setElementSize(4);
    ms.setWidth(256);
    ms.setHeight(1);
    w.finish("memset", address + 0x100000);

    r = w.begin("cuMemcpyDtoH_v2", thread);
    mc = r.initMemcpy();
    mc.setKind(fs::Memcpy::Kind::DEVICE_TO_HOST);
    mc.setSrc(address + 0x200000);
    mc.setSize(4096);
    mc.setHostChecksum(0x1234567800000000ull + round);
    mc.setHasHostChecksum(true);
    w.finish("memcpy", address + 0x200000);

    r = w.begin("cuStreamSynchronize", thread);
    r.initStreamSynchronize().setStream(SampleWriter::kStream);
    w.finish("streamSynchronize", SampleWriter::kStream);

    r = w.begin("cuDeviceGetAttribute", thread, round % 10 == 9 ? 1 : 0);
    r.initGeneric().setArgs("attrib=16 dev=0");
    w.finish("generic", 0);
  }

  if (options.unmodelled_calls) {
    // Calls the interceptor passes through without modelling. Failed ones change nothing and
    // queries never do: neither may make a replay diverge.
    struct Generic {
      const char* api;
      bool affects;
      int32_t result;
      const char* args;
    };
    const Generic generics[] = {
        {"cuGraphLaunch", true, 0, nullptr},
        {"cuGraphLaunch", true, 0, nullptr},
        {"cuGraphLaunch", true, 0, nullptr},
        {"cuGraphLaunch", true, 1, nullptr},  // failed
        {"cuTexObjectCreate", true, 0, nullptr},
        {"cuCtxGetLimit", false, 0, nullptr},  // a query
        // What schema-1 interceptors wrote before GenericCall.affectsDeviceState existed.
        {"cuArrayCreate_v2", false, 0, "unmodelled: may affect device state"},
    };
    for (const Generic& g : generics) {
      r = w.begin(g.api, kMain, g.result);
      auto generic = r.initGeneric();
      generic.setAffectsDeviceState(g.affects);
      if (g.args != nullptr) generic.setArgs(g.args);
      w.finish("generic", 0);
      if (g.result == 0 && (g.affects || g.args != nullptr)) w.note_unmodelled(g.api);
    }
  }

  // The checksum of an asynchronous device-to-host copy, learnt in stream order.
  r = w.begin("cuMemcpyDtoHAsync_v2", kMain);
  auto async_copy = r.initMemcpy();
  async_copy.setKind(fs::Memcpy::Kind::DEVICE_TO_HOST);
  async_copy.setSrc(address);
  async_copy.setSize(64);
  async_copy.setAsync(true);
  async_copy.setStream(SampleWriter::kStream);
  async_copy.setDimensions(1);
  uint64_t copy_seq = w.next_seq();
  w.finish("memcpy", address);
  r = w.begin("cusnap", kMain);
  auto deferred = r.initDeferredResult();
  deferred.setCallSeq(copy_seq);
  deferred.setHostChecksum(0xfeedface12345678ull);
  deferred.setHasHostChecksum(true);
  w.finish("deferredResult", copy_seq);

  // A launch of a function nobody asked the name of: a bogus handle the driver refused
  // (CUDA_ERROR_INVALID_VALUE, the sample's one failure code). Had it succeeded, nothing could
  // replay it, and verify would call the capture corrupt (format/record_handles.h).
  w.launch("<function 0xdead>", false, 0xdead, ShapeKey{{1, 1, 1}, {32, 1, 1}, 0}, kMain, 0, 1);

  r = w.begin("cuCtxDestroy_v2", kMain);
  r.initContextDestroy().setContext(SampleWriter::kContext);
  w.finish("contextDestroy", SampleWriter::kContext);
  return w.close();
}

}  // namespace cusnap::cli_test
