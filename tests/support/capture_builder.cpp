#include "capture_builder.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace cusnap::test {

namespace schema = format::schema;

namespace {

schema::CallRecord::Builder record(capnp::MallocMessageBuilder& m, const char* api) {
  auto r = m.initRoot<schema::CallRecord>();
  r.setApiName(api);
  r.setContext(0x1000);
  return r;
}

void set_blob(schema::BlobId::Builder b, const format::BlobId& id) {
  b.setHigh(id.high);
  b.setLow(id.low);
}

}  // namespace

Params& Params::add(const void* value, uint32_t size) {
  uint32_t offset = static_cast<uint32_t>((bytes_.size() + size - 1) / size * size);
  bytes_.resize(offset + size);
  std::memcpy(bytes_.data() + offset, value, size);
  layout_.push_back({offset, size});
  return *this;
}

namespace {
HeaderOptions with_snapshot(const SnapshotHeader& snapshot) {
  HeaderOptions options;
  options.snapshot = snapshot;
  return options;
}
}  // namespace

CaptureBuilder::CaptureBuilder(const std::string& path) : CaptureBuilder(path, HeaderOptions{}) {}

CaptureBuilder::CaptureBuilder(const std::string& path, const SnapshotHeader& snapshot)
    : CaptureBuilder(path, with_snapshot(snapshot)) {}

CaptureBuilder::CaptureBuilder(const std::string& path, const HeaderOptions& options) {
  capnp::MallocMessageBuilder header;
  auto h = header.initRoot<schema::CaptureHeader>();
  h.setToolVersion("test");
  if (!options.host_name.empty()) h.setHostName(options.host_name);
  if (options.pid != 0) h.setPid(options.pid);
  if (options.creation_time_ns != 0) h.setCreationTimeNs(options.creation_time_ns);
  if (!options.command_line.empty()) {
    auto argv = h.initCommandLine(static_cast<unsigned>(options.command_line.size()));
    for (unsigned i = 0; i < argv.size(); ++i) argv.set(i, options.command_line[i]);
  }
  if (!options.environment.empty()) {
    auto env = h.initEnvironment(static_cast<unsigned>(options.environment.size()));
    for (unsigned i = 0; i < env.size(); ++i) {
      env[i].setKey(options.environment[i].first);
      env[i].setValue(options.environment[i].second);
    }
  }
  if (!options.working_directory.empty()) h.setWorkingDirectory(options.working_directory);
  h.setDriverVersion(13000);
  auto devices = h.initDevices(1);
  devices[0].setName("cusnap emulator");
  devices[0].setComputeCapabilityMajor(9);
  devices[0].setComputeCapabilityMinor(0);
  if (options.snapshot) {
    const SnapshotHeader& snapshot = *options.snapshot;
    chunk_bytes_ = snapshot.chunk_bytes;
    auto o = h.initOptions();
    o.setMode(schema::CaptureOptions::CaptureMode::SNAPSHOT);
    if (!snapshot.kernel_regex.empty()) o.setKernelRegex(snapshot.kernel_regex);
    o.setSnapshotChunkBytes(snapshot.chunk_bytes);
    o.setKernelFiltered(snapshot.kernel_filtered);
    if (snapshot.extracted) {
      auto x = h.initExtract();
      x.setSourcePath("source.cusnap");
      x.setSourceHostName("testhost");
      x.setSourcePid(4242);
      x.setLaunchSeq(snapshot.source_launch_seq);
      x.setLaunchOrdinal(0);
      x.setKernelName(snapshot.kernel);
      x.setRoute(schema::ExtractInfo::Route::SNAPSHOT);
      x.setInputBytes(snapshot.input_bytes);
      x.setExpectedBytes(snapshot.expected_bytes);
    }
  }
  auto w = format::Writer::create(path, header);
  if (!w) throw std::runtime_error(w.status().to_string());
  writer_ = std::move(w.value());
}

CaptureBuilder::~CaptureBuilder() {
  if (writer_) writer_->close();
}

void CaptureBuilder::close() {
  auto status = writer_->close();
  if (!status) throw std::runtime_error(status.to_string());
}

uint64_t CaptureBuilder::append(capnp::MallocMessageBuilder& message) {
  auto seq = writer_->append_call(message);
  if (!seq) throw std::runtime_error(seq.status().to_string());
  return seq.value();
}

format::BlobId CaptureBuilder::put(std::span<const uint8_t> bytes) {
  auto id = writer_->put_blob(bytes);
  if (!id) throw std::runtime_error(id.status().to_string());
  return id.value();
}

uint64_t CaptureBuilder::module_load_ptx(uint64_t handle, const std::string& ptx,
                                         std::optional<uint64_t> image_size) {
  std::vector<uint8_t> image(ptx.begin(), ptx.end());
  image.push_back(0);
  format::BlobId id = put(image);
  capnp::MallocMessageBuilder m;
  auto load = record(m, "cuModuleLoadData").initModuleLoad();
  load.setKind(schema::ModuleLoad::ImageKind::PTX);
  load.setHandle(handle);
  set_blob(load.initImage(), id);
  load.setImageSize(image_size.value_or(image.size()));
  return append(m);
}

uint64_t CaptureBuilder::module_unload(uint64_t handle) {
  capnp::MallocMessageBuilder m;
  record(m, "cuModuleUnload").initModuleUnload().setHandle(handle);
  return append(m);
}

uint64_t CaptureBuilder::function_get(uint64_t module, uint64_t handle, const std::string& name,
                                      const std::optional<std::vector<Slot>>& layout) {
  capnp::MallocMessageBuilder m;
  auto get = record(m, "cuModuleGetFunction").initFunctionGet();
  get.setKind(schema::FunctionGet::Kind::MODULE_FUNCTION);
  get.setModule(module);
  get.setHandle(handle);
  get.setName(name);
  if (layout) {
    auto params = get.initParams(static_cast<unsigned>(layout->size()));
    for (unsigned i = 0; i < layout->size(); ++i) {
      params[i].setOffset((*layout)[i].offset);
      params[i].setSize((*layout)[i].size);
    }
    get.setLayoutSource(schema::FunctionGet::LayoutSource::PTX_SIGNATURE);
  }
  return append(m);
}

uint64_t CaptureBuilder::global_get(uint64_t module, const std::string& name, uint64_t address,
                                    uint64_t size) {
  capnp::MallocMessageBuilder m;
  auto g = record(m, "cuModuleGetGlobal_v2").initGlobalGet();
  g.setModule(module);
  g.setName(name);
  g.setAddress(address);
  g.setSize(size);
  return append(m);
}

uint64_t CaptureBuilder::alloc(uint64_t address, uint64_t size) {
  capnp::MallocMessageBuilder m;
  auto a = record(m, "cuMemAlloc_v2").initMemAlloc();
  a.setKind(schema::MemAlloc::Kind::DEVICE);
  a.setAddress(address);
  a.setSize(size);
  return append(m);
}

uint64_t CaptureBuilder::free(uint64_t address) {
  capnp::MallocMessageBuilder m;
  auto f = record(m, "cuMemFree_v2").initMemFree();
  f.setKind(schema::MemFree::Kind::DEVICE);
  f.setAddress(address);
  return append(m);
}

uint64_t CaptureBuilder::free_host(uint64_t address) {
  capnp::MallocMessageBuilder m;
  auto f = record(m, "cuMemFreeHost").initMemFree();
  f.setKind(schema::MemFree::Kind::HOST);
  f.setAddress(address);
  return append(m);
}

uint64_t CaptureBuilder::host_alloc(uint64_t address, uint64_t size) {
  capnp::MallocMessageBuilder m;
  auto a = record(m, "cuMemHostAlloc").initMemAlloc();
  a.setKind(schema::MemAlloc::Kind::HOST_ALLOC);
  a.setFlags(0x02);
  a.setAddress(address);
  a.setSize(size);
  return append(m);
}

uint64_t CaptureBuilder::htod(uint64_t dst, std::span<const uint8_t> bytes, uint64_t stream,
                              bool async) {
  format::BlobId id = put(bytes);
  capnp::MallocMessageBuilder m;
  auto c = record(m, async ? "cuMemcpyHtoDAsync_v2" : "cuMemcpyHtoD_v2").initMemcpy();
  c.setKind(schema::Memcpy::Kind::HOST_TO_DEVICE);
  c.setDst(dst);
  c.setSrc(0x5000);
  c.setSize(bytes.size());
  c.setAsync(async);
  c.setStream(stream);
  c.setDimensions(1);
  set_blob(c.initPayload(), id);
  return append(m);
}

uint64_t CaptureBuilder::htod_payload(uint64_t dst, const format::BlobId& payload, uint64_t width,
                                      uint64_t height) {
  capnp::MallocMessageBuilder m;
  auto c = record(m, height == 0 ? "cuMemcpyHtoD_v2" : "cuMemcpy2D_v2").initMemcpy();
  c.setKind(schema::Memcpy::Kind::HOST_TO_DEVICE);
  c.setDst(dst);
  c.setSrc(0x5000);
  c.setSize(height == 0 ? width : width * height);
  c.setDimensions(height == 0 ? 1 : 2);
  if (height != 0) {
    auto g = c.initGeometry();
    g.setWidthInBytes(width);
    g.setHeight(height);
    g.setSrcPitch(width);
    g.setDstPitch(width);
    g.setSrcMemoryType(1);  // CU_MEMORYTYPE_HOST
    g.setDstMemoryType(2);  // CU_MEMORYTYPE_DEVICE
  }
  set_blob(c.initPayload(), payload);
  return append(m);
}

uint64_t CaptureBuilder::deferred_payload(uint64_t copy_seq, const format::BlobId& payload) {
  capnp::MallocMessageBuilder m;
  auto d = record(m, "cusnap").initDeferredResult();
  d.setCallSeq(copy_seq);
  set_blob(d.initPayload(), payload);
  return append(m);
}

uint64_t CaptureBuilder::dtoh(uint64_t src, uint64_t size, uint64_t checksum, uint64_t stream,
                              bool async, bool has_checksum) {
  capnp::MallocMessageBuilder m;
  auto c = record(m, async ? "cuMemcpyDtoHAsync_v2" : "cuMemcpyDtoH_v2").initMemcpy();
  c.setKind(schema::Memcpy::Kind::DEVICE_TO_HOST);
  c.setDst(0x6000);
  c.setSrc(src);
  c.setSize(size);
  c.setAsync(async);
  c.setStream(stream);
  c.setDimensions(1);
  c.setHostChecksum(has_checksum ? checksum : 0);
  c.setHasHostChecksum(has_checksum);
  return append(m);
}

uint64_t CaptureBuilder::array_create(uint64_t array, int32_t format, uint32_t channels,
                                      uint64_t width, uint64_t height, uint32_t flags) {
  capnp::MallocMessageBuilder m;
  auto a = record(m, "cuArray3DCreate_v2").initArray();
  a.setOp(schema::ArrayCall::Op::CREATE3D);
  a.setArray(array);
  a.setFormat(format);
  a.setChannels(channels);
  a.setWidth(width);
  a.setHeight(height);
  a.setFlags(flags);
  return append(m);
}

uint64_t CaptureBuilder::tex_object_create(uint64_t object, uint64_t array) {
  capnp::MallocMessageBuilder m;
  auto o = record(m, "cuTexObjectCreate").initTexObject();
  o.setOp(schema::TexObjectCall::Op::TEXTURE_CREATE);
  o.setObject(object);
  auto r = o.initResource();
  r.setType(0);  // CU_RESOURCE_TYPE_ARRAY
  r.setArray(array);
  auto t = o.initTexture();
  auto modes = t.initAddressMode(3);
  for (unsigned i = 0; i < 3; ++i) modes.set(i, 1);  // CU_TR_ADDRESS_MODE_CLAMP
  t.setFilterMode(0);                                // point
  t.initBorderColor(4);
  return append(m);
}

uint64_t CaptureBuilder::surf_object_create(uint64_t object, uint64_t array) {
  capnp::MallocMessageBuilder m;
  auto o = record(m, "cuSurfObjectCreate").initTexObject();
  o.setOp(schema::TexObjectCall::Op::SURFACE_CREATE);
  o.setObject(object);
  auto r = o.initResource();
  r.setType(0);
  r.setArray(array);
  return append(m);
}

uint64_t CaptureBuilder::array_copy(const ArrayCopy& copy) {
  using Api = schema::CopyGeometry::ArrayApi;
  const bool one_d = copy.api != Api::NONE;
  format::BlobId payload;
  if (!copy.payload.empty()) payload = put(copy.payload);
  capnp::MallocMessageBuilder m;
  auto c = record(m, one_d ? "cuMemcpyHtoA_v2" : "cuMemcpy2D_v2").initMemcpy();
  c.setKind(schema::Memcpy::Kind::ARRAY_INVOLVED);
  c.setDst(copy.dst);
  c.setSrc(copy.src);
  c.setSize(copy.width * copy.height);
  c.setDimensions(one_d ? 1 : 2);
  auto g = c.initGeometry();
  g.setArrayApi(copy.api);
  g.setSrcMemoryType(copy.src_type);
  g.setDstMemoryType(copy.dst_type);
  g.setSrcArray(copy.src_array);
  g.setDstArray(copy.dst_array);
  g.setSrcXInBytes(copy.src_x);
  g.setDstXInBytes(copy.dst_x);
  g.setSrcY(copy.src_y);
  g.setDstY(copy.dst_y);
  g.setWidthInBytes(copy.width);
  g.setHeight(copy.height);
  g.setDepth(1);
  if (copy.src_type == 2) g.setSrcPitch(copy.pitch);
  if (copy.dst_type == 2) g.setDstPitch(copy.pitch);
  if (copy.src_type == 1) g.setSrcPitch(copy.width);
  if (copy.dst_type == 1) g.setDstPitch(copy.width);
  if (!payload.is_null()) set_blob(c.initPayload(), payload);
  if (copy.checksum) {
    c.setHostChecksum(*copy.checksum);
    c.setHasHostChecksum(true);
  }
  return append(m);
}

uint64_t CaptureBuilder::tool_info(const std::string& message) {
  capnp::MallocMessageBuilder m;
  auto e = record(m, "").initToolEvent();
  e.setKind(schema::ToolEvent::Kind::INFO);
  e.setMessage(message);
  return append(m);
}

uint64_t CaptureBuilder::memset32(uint64_t address, uint32_t value, uint64_t count) {
  capnp::MallocMessageBuilder m;
  auto s = record(m, "cuMemsetD32_v2").initMemset();
  s.setAddress(address);
  s.setValue(value);
  s.setElementSize(4);
  s.setWidth(count);
  s.setHeight(1);
  return append(m);
}

namespace {
void fill_launch(schema::Launch::Builder l, uint64_t function, const std::string& name,
                 uint32_t grid, uint32_t block, const Params& params) {
  l.setKind(schema::Launch::Kind::LAUNCH_KERNEL);
  l.setFunction(function);
  l.setGridX(grid);
  l.setGridY(1);
  l.setGridZ(1);
  l.setBlockX(block);
  l.setBlockY(1);
  l.setBlockZ(1);
  l.setKernelName(name);
  l.setParams(capnp::Data::Reader(params.bytes().data(), params.bytes().size()));
  auto layout = l.initLayout(static_cast<unsigned>(params.layout().size()));
  for (size_t i = 0; i < params.layout().size(); ++i) {
    layout[i].setOffset(params.layout()[i].offset);
    layout[i].setSize(params.layout()[i].size);
  }
}
}  // namespace

uint64_t CaptureBuilder::launch(uint64_t function, const std::string& name, uint32_t grid,
                                uint32_t block, const Params& params, uint64_t stream,
                                uint64_t ordinal, uint64_t layout_seq) {
  capnp::MallocMessageBuilder m;
  auto l = record(m, "cuLaunchKernel").initLaunch();
  fill_launch(l, function, name, grid, block, params);
  l.setOrdinal(ordinal);
  l.setStream(stream);
  l.setLayoutSeq(layout_seq);
  return append(m);
}

uint64_t CaptureBuilder::failed_launch(uint64_t function) {
  capnp::MallocMessageBuilder m;
  auto r = record(m, "cuLaunchKernel");
  r.setResult(1);  // CUDA_ERROR_INVALID_VALUE
  auto l = r.initLaunch();
  l.setFunction(function);
  return append(m);
}

uint64_t CaptureBuilder::generic(const char* api, bool affects_device_state) {
  capnp::MallocMessageBuilder m;
  record(m, api).initGeneric().setAffectsDeviceState(affects_device_state);
  return append(m);
}

uint64_t CaptureBuilder::graph_create(uint64_t graph) {
  capnp::MallocMessageBuilder m;
  auto g = record(m, "cuGraphCreate").initGraph();
  g.setOp(schema::GraphCall::Op::CREATE);
  g.setGraph(graph);
  return append(m);
}

namespace {
schema::GraphNode::Builder graph_node(schema::CallRecord::Builder r, schema::GraphNode::Kind kind,
                                      uint64_t graph, uint64_t node,
                                      const std::vector<uint64_t>& deps) {
  auto n = r.initGraphNode();
  n.setOp(schema::GraphNode::Op::ADD);
  n.setKind(kind);
  n.setGraph(graph);
  n.setNode(node);
  auto edges = n.initDependencies(static_cast<unsigned>(deps.size()));
  for (size_t i = 0; i < deps.size(); ++i) {
    edges[i].setFrom(deps[i]);
    edges[i].setTo(node);
  }
  return n;
}
}  // namespace

uint64_t CaptureBuilder::graph_memset_node(uint64_t graph, uint64_t node,
                                           const std::vector<uint64_t>& deps, uint64_t address,
                                           uint32_t value, uint64_t count) {
  capnp::MallocMessageBuilder m;
  auto s = graph_node(record(m, "cuGraphAddMemsetNode"), schema::GraphNode::Kind::MEMSET, graph,
                      node, deps)
               .initMemset();
  s.setAddress(address);
  s.setValue(value);
  s.setElementSize(4);
  s.setWidth(count);
  s.setHeight(1);
  s.setAsync(true);
  return append(m);
}

uint64_t CaptureBuilder::graph_kernel_node(uint64_t graph, uint64_t node,
                                           const std::vector<uint64_t>& deps, uint64_t function,
                                           const std::string& name, uint32_t grid, uint32_t block,
                                           const Params& params) {
  capnp::MallocMessageBuilder m;
  fill_launch(graph_node(record(m, "cuGraphAddKernelNode"), schema::GraphNode::Kind::KERNEL, graph,
                         node, deps)
                  .initKernel(),
              function, name, grid, block, params);
  return append(m);
}

uint64_t CaptureBuilder::graph_dtoh_node(uint64_t graph, uint64_t node,
                                         const std::vector<uint64_t>& deps, uint64_t src,
                                         uint64_t size) {
  capnp::MallocMessageBuilder m;
  auto c = graph_node(record(m, "cuGraphAddMemcpyNode"), schema::GraphNode::Kind::MEMCPY, graph,
                      node, deps)
               .initMemcpy();
  c.setKind(schema::Memcpy::Kind::DEVICE_TO_HOST);
  c.setDst(0x6000);
  c.setSrc(src);
  c.setSize(size);
  c.setDimensions(1);
  return append(m);
}

uint64_t CaptureBuilder::graph_bare_node(uint64_t graph, uint64_t node,
                                         schema::GraphNode::Kind kind) {
  capnp::MallocMessageBuilder m;
  graph_node(record(m, "cuGraphAddNode"), kind, graph, node, {});
  return append(m);
}

uint64_t CaptureBuilder::graph_clone(uint64_t clone, uint64_t original) {
  capnp::MallocMessageBuilder m;
  auto g = record(m, "cuGraphClone").initGraph();
  g.setOp(schema::GraphCall::Op::CLONE);
  g.setGraph(clone);
  g.setOriginal(original);
  return append(m);
}

uint64_t CaptureBuilder::graph_add_edges(uint64_t graph,
                                         const std::vector<std::pair<uint64_t, uint64_t>>& edges) {
  capnp::MallocMessageBuilder m;
  auto g = record(m, "cuGraphAddDependencies").initGraph();
  g.setOp(schema::GraphCall::Op::ADD_DEPENDENCIES);
  g.setGraph(graph);
  auto list = g.initEdges(static_cast<unsigned>(edges.size()));
  for (size_t i = 0; i < edges.size(); ++i) {
    list[i].setFrom(edges[i].first);
    list[i].setTo(edges[i].second);
  }
  return append(m);
}

uint64_t CaptureBuilder::graph_instantiate(uint64_t exec, uint64_t graph) {
  capnp::MallocMessageBuilder m;
  auto e = record(m, "cuGraphInstantiateWithFlags").initGraphExec();
  e.setOp(schema::GraphExecCall::Op::INSTANTIATE);
  e.setExec(exec);
  e.setGraph(graph);
  return append(m);
}

uint64_t CaptureBuilder::graph_launch(uint64_t exec, uint64_t stream, uint64_t launch_index) {
  capnp::MallocMessageBuilder m;
  auto e = record(m, "cuGraphLaunch").initGraphExec();
  e.setOp(schema::GraphExecCall::Op::LAUNCH);
  e.setExec(exec);
  e.setStream(stream);
  e.setLaunchIndex(launch_index);
  return append(m);
}

uint64_t CaptureBuilder::deferred_node_checksum(uint64_t launch_seq, uint64_t node,
                                                uint64_t checksum) {
  capnp::MallocMessageBuilder m;
  auto d = record(m, "cusnap").initDeferredResult();
  d.setCallSeq(launch_seq);
  d.setGraphNode(node);
  d.setHostChecksum(checksum);
  d.setHasHostChecksum(true);
  return append(m);
}

uint64_t CaptureBuilder::nvtx(uint16_t kind, const std::string& domain, uint64_t domain_handle,
                              const std::string& message, uint32_t color, uint64_t range_id) {
  capnp::MallocMessageBuilder m;
  auto r = record(m, "nvtxDomainRangePushEx");
  r.setContext(0);
  auto e = r.initNvtx();
  e.setKind(static_cast<schema::NvtxEvent::Kind>(kind));
  e.setDomain(domain);
  e.setDomainHandle(domain_handle);
  e.setMessage(message);
  e.setColor(color);
  e.setHasColor(color != 0);
  e.setRangeId(range_id);
  return append(m);
}

uint64_t CaptureBuilder::stream_create(uint64_t stream) {
  capnp::MallocMessageBuilder m;
  record(m, "cuStreamCreate").initStreamCreate().setStream(stream);
  return append(m);
}

uint64_t CaptureBuilder::stream_sync(uint64_t stream) {
  capnp::MallocMessageBuilder m;
  record(m, "cuStreamSynchronize").initStreamSynchronize().setStream(stream);
  return append(m);
}

uint64_t CaptureBuilder::event_create(uint64_t event) {
  capnp::MallocMessageBuilder m;
  record(m, "cuEventCreate").initEventCreate().setEvent(event);
  return append(m);
}

uint64_t CaptureBuilder::event_record(uint64_t event, uint64_t stream) {
  capnp::MallocMessageBuilder m;
  auto e = record(m, "cuEventRecord").initEventRecord();
  e.setEvent(event);
  e.setStream(stream);
  return append(m);
}

uint64_t CaptureBuilder::stream_wait(uint64_t stream, uint64_t event) {
  capnp::MallocMessageBuilder m;
  auto w = record(m, "cuStreamWaitEvent").initStreamWaitEvent();
  w.setStream(stream);
  w.setEvent(event);
  return append(m);
}

uint64_t CaptureBuilder::context_sync(int32_t result) {
  capnp::MallocMessageBuilder m;
  auto r = record(m, "cuCtxSynchronize");
  r.setResult(result);
  r.initContextSynchronize();
  return append(m);
}

std::vector<RawChunk> CaptureBuilder::chunks(uint64_t address, std::span<const uint8_t> bytes,
                                             uint64_t chunk_bytes, bool hash_only) {
  std::vector<RawChunk> out;
  for (uint64_t offset = 0; offset < bytes.size(); offset += chunk_bytes) {
    auto piece = bytes.subspan(offset, std::min<uint64_t>(chunk_bytes, bytes.size() - offset));
    RawChunk c{address + offset, piece.size(), format::hash_blob(piece), hash_only};
    if (!hash_only && !(put(piece) == c.blob)) {
      throw std::runtime_error("put_blob id is not the chunk's XXH3-128");
    }
    out.push_back(c);
  }
  return out;
}

std::vector<RawChunk> CaptureBuilder::tile(const std::map<uint64_t, std::vector<uint8_t>>& memory,
                                           bool hash_only) {
  std::vector<RawChunk> out;
  for (const auto& [address, bytes] : memory) {
    for (const RawChunk& c : chunks(address, bytes, chunk_bytes_, hash_only)) out.push_back(c);
  }
  return out;
}

uint64_t CaptureBuilder::snapshot(uint64_t launch_seq, uint64_t ordinal, int phase,
                                  const std::vector<RawChunk>& chunks,
                                  const std::string& skipped_reason) {
  capnp::MallocMessageBuilder m;
  auto r = record(m, "cusnap");
  r.setContext(0);  // a tool record, as the interceptor writes it: made in no context
  auto s = r.initMemorySnapshot();
  s.setPhase(phase == kBeforeLaunch  ? schema::MemorySnapshot::Phase::BEFORE_LAUNCH
             : phase == kAfterLaunch ? schema::MemorySnapshot::Phase::AFTER_LAUNCH
                                     : schema::MemorySnapshot::Phase::ON_DEMAND);
  s.setLaunchSeq(launch_seq);
  s.setLaunchOrdinal(ordinal);
  if (!skipped_reason.empty()) s.setSkippedReason(skipped_reason);
  auto list = s.initChunks(static_cast<unsigned>(chunks.size()));
  for (size_t i = 0; i < chunks.size(); ++i) {
    list[i].setAddress(chunks[i].address);
    list[i].setSize(chunks[i].size);
    set_blob(list[i].initBlob(), chunks[i].blob);
    list[i].setHashOnly(chunks[i].hash_only);
  }
  return append(m);
}

}  // namespace cusnap::test
