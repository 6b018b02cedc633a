#include "snapshot_builder.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "cusnap/format/blob_id.h"

namespace cusnap::extract::test {

namespace schema = format::schema;

Params& Params::add(const void* value, uint32_t size) {
  uint32_t offset = static_cast<uint32_t>((bytes.size() + size - 1) / size * size);
  bytes.resize(offset + size);
  std::memcpy(bytes.data() + offset, value, size);
  layout.push_back({offset, size});
  return *this;
}

SnapshotBuilder::SnapshotBuilder(const std::string& path, uint64_t chunk_bytes)
    : chunk_bytes_(chunk_bytes) {
  capnp::MallocMessageBuilder header;
  auto h = header.initRoot<schema::CaptureHeader>();
  h.setToolVersion("test");
  h.setHostName("builder-host");
  h.setPid(4242);
  h.setCreationTimeNs(1700000000123456789LL);
  h.setDriverVersion(13000);
  auto devices = h.initDevices(1);
  devices[0].setName("cusnap emulator");
  devices[0].setComputeCapabilityMajor(9);
  devices[0].setComputeCapabilityMinor(0);
  auto o = h.initOptions();
  o.setMode(schema::CaptureOptions::CaptureMode::SNAPSHOT);
  o.setKernelRegex(".");
  o.setSnapshotChunkBytes(chunk_bytes);
  auto w = format::Writer::create(path, header);
  if (!w) throw std::runtime_error(w.status().to_string());
  writer_ = std::move(w.value());
}

SnapshotBuilder::~SnapshotBuilder() {
  if (writer_) writer_->close();
}

void SnapshotBuilder::close() {
  auto status = writer_->close();
  if (!status) throw std::runtime_error(status.to_string());
}

uint64_t SnapshotBuilder::append(capnp::MallocMessageBuilder& message) {
  auto seq = writer_->append_call(message);
  if (!seq) throw std::runtime_error(seq.status().to_string());
  return seq.value();
}

static schema::CallRecord::Builder record(capnp::MallocMessageBuilder& m, const char* api) {
  auto r = m.initRoot<schema::CallRecord>();
  r.setApiName(api);
  r.setContext(0x1000);
  return r;
}

static void set_blob(schema::BlobId::Builder b, const format::BlobId& id) {
  b.setHigh(id.high);
  b.setLow(id.low);
}

format::BlobId SnapshotBuilder::put(std::span<const uint8_t> bytes) {
  auto id = writer_->put_blob(bytes);
  if (!id) throw std::runtime_error(id.status().to_string());
  return id.value();
}

uint64_t SnapshotBuilder::module_load_ptx(uint64_t handle, const std::string& ptx) {
  std::vector<uint8_t> image(ptx.begin(), ptx.end());
  image.push_back(0);
  format::BlobId id = put(image);
  capnp::MallocMessageBuilder m;
  auto ml = record(m, "cuModuleLoadData").initModuleLoad();
  ml.setKind(schema::ModuleLoad::ImageKind::PTX);
  ml.setHandle(handle);
  set_blob(ml.initImage(), id);
  ml.setImageSize(image.size());
  return append(m);
}

uint64_t SnapshotBuilder::module_unload(uint64_t handle) {
  capnp::MallocMessageBuilder m;
  record(m, "cuModuleUnload").initModuleUnload().setHandle(handle);
  return append(m);
}

uint64_t SnapshotBuilder::function_get(uint64_t module, uint64_t handle, const std::string& name,
                                       const std::vector<Slot>& layout) {
  capnp::MallocMessageBuilder m;
  auto f = record(m, "cuModuleGetFunction").initFunctionGet();
  f.setKind(schema::FunctionGet::Kind::MODULE_FUNCTION);
  f.setModule(module);
  f.setHandle(handle);
  f.setName(name);
  auto params = f.initParams(static_cast<unsigned>(layout.size()));
  for (unsigned i = 0; i < layout.size(); ++i) {
    params[i].setOffset(layout[i].offset);
    params[i].setSize(layout[i].size);
  }
  f.setLayoutSource(schema::FunctionGet::LayoutSource::PTX_SIGNATURE);
  return append(m);
}

uint64_t SnapshotBuilder::global_get(uint64_t module, const std::string& name, uint64_t address,
                                     uint64_t size) {
  capnp::MallocMessageBuilder m;
  auto g = record(m, "cuModuleGetGlobal_v2").initGlobalGet();
  g.setModule(module);
  g.setName(name);
  g.setAddress(address);
  g.setSize(size);
  return append(m);
}

uint64_t SnapshotBuilder::alloc(uint64_t address, uint64_t size) {
  capnp::MallocMessageBuilder m;
  auto a = record(m, "cuMemAlloc_v2").initMemAlloc();
  a.setKind(schema::MemAlloc::Kind::DEVICE);
  a.setAddress(address);
  a.setSize(size);
  return append(m);
}

uint64_t SnapshotBuilder::copy_to_device(uint64_t address, std::span<const uint8_t> bytes) {
  format::BlobId id = put(bytes);
  capnp::MallocMessageBuilder m;
  auto c = record(m, "cuMemcpyHtoD_v2").initMemcpy();
  c.setKind(schema::Memcpy::Kind::HOST_TO_DEVICE);
  c.setDst(address);
  c.setSize(bytes.size());
  c.setDimensions(1);
  c.getPayload().setHigh(id.high);
  c.getPayload().setLow(id.low);
  return append(m);
}

uint64_t SnapshotBuilder::copy_to_host(uint64_t address, std::span<const uint8_t> received) {
  capnp::MallocMessageBuilder m;
  auto c = record(m, "cuMemcpyDtoH_v2").initMemcpy();
  c.setKind(schema::Memcpy::Kind::DEVICE_TO_HOST);
  c.setSrc(address);
  c.setSize(received.size());
  c.setDimensions(1);
  c.setHostChecksum(format::checksum64(received));
  c.setHasHostChecksum(true);
  return append(m);
}

uint64_t SnapshotBuilder::free(uint64_t address) {
  capnp::MallocMessageBuilder m;
  auto f = record(m, "cuMemFree_v2").initMemFree();
  f.setKind(schema::MemFree::Kind::DEVICE);
  f.setAddress(address);
  return append(m);
}

uint64_t SnapshotBuilder::launch(uint64_t function, const std::string& name, uint32_t grid,
                                 uint32_t block, const Params& params, uint64_t layout_seq) {
  capnp::MallocMessageBuilder m;
  auto l = record(m, "cuLaunchKernel").initLaunch();
  l.setKind(schema::Launch::Kind::LAUNCH_KERNEL);
  l.setFunction(function);
  l.setGridX(grid);
  l.setGridY(1);
  l.setGridZ(1);
  l.setBlockX(block);
  l.setBlockY(1);
  l.setBlockZ(1);
  l.setParams(capnp::Data::Reader(params.bytes.data(), params.bytes.size()));
  auto layout = l.initLayout(static_cast<unsigned>(params.layout.size()));
  for (unsigned i = 0; i < params.layout.size(); ++i) {
    layout[i].setOffset(params.layout[i].offset);
    layout[i].setSize(params.layout[i].size);
  }
  l.setLayoutSeq(layout_seq);
  l.setKernelName(name);
  return append(m);
}

std::vector<TestChunk> SnapshotBuilder::tile(const std::map<uint64_t, std::vector<uint8_t>>& memory,
                                             bool hash_only) {
  std::vector<TestChunk> chunks;
  for (const auto& [address, bytes] : memory) {
    for (uint64_t off = 0; off < bytes.size(); off += chunk_bytes_) {
      uint64_t n = std::min<uint64_t>(chunk_bytes_, bytes.size() - off);
      std::span<const uint8_t> piece(bytes.data() + off, n);
      TestChunk c{address + off, n, {}, hash_only};
      c.blob = hash_only ? format::hash_blob(piece) : put(piece);
      chunks.push_back(c);
    }
  }
  return chunks;
}

uint64_t SnapshotBuilder::snapshot(uint64_t launch_seq, uint64_t ordinal, bool before,
                                   const std::vector<TestChunk>& chunks,
                                   const std::string& skipped) {
  capnp::MallocMessageBuilder m;
  auto r = record(m, "cusnap");
  r.setContext(0);  // a tool record, as the interceptor writes it: made in no context
  auto s = r.initMemorySnapshot();
  s.setPhase(before ? schema::MemorySnapshot::Phase::BEFORE_LAUNCH
                    : schema::MemorySnapshot::Phase::AFTER_LAUNCH);
  s.setLaunchSeq(launch_seq);
  s.setLaunchOrdinal(ordinal);
  if (!skipped.empty()) s.setSkippedReason(skipped);
  auto list = s.initChunks(static_cast<unsigned>(chunks.size()));
  for (unsigned i = 0; i < chunks.size(); ++i) {
    list[i].setAddress(chunks[i].address);
    list[i].setSize(chunks[i].size);
    set_blob(list[i].initBlob(), chunks[i].blob);
    list[i].setHashOnly(chunks[i].hash_only);
  }
  return append(m);
}

}  // namespace cusnap::extract::test
