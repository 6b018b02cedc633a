// inspect_capture: prints what a capture holds, through the format Reader only (no CUDA), in a
// line-oriented form the interceptor tests parse:
//   calls N / launches N / integrity <summary> / frames N (every frame of the file)
//   kind <name> <count>                 per CallRecord kind
//   api <apiName> <count>               per exported symbol called
//   launch <ordinal> <kernelName> params=<bytes> slots=<n> grid=x,y,z block=x,y,z
//   module <handle> kind=<k> image=<bytes> blob=<present|missing|none>
//   memcpy <kind> size=<n> payload=<present|missing|none> checksum=<hex|none> async=<0|1> id=<blob>
//   seq=<n> event <kind> <message> related=<seq or -1> deferred call=<seq> checksum=<hex|none>
//   executed=<blob|none> missing="<why>" generic <apiName> affects=<0|1> result=<n> access
//   <locationType>:<locationId>:<flags> ...   per vmmSetAccess, every descriptor hostToDevice
//   payload bytes <n>      sum of Memcpy.size over copies that stored a payload
// Exit status 0 when the file opened and every referenced blob is present.
#include <cstdio>
#include <map>
#include <string>

#include "cusnap/format/reader.h"

using namespace cusnap::format;

namespace {

std::string blob_state(Reader& reader, schema::BlobId::Reader id) {
  BlobId blob{id.getHigh(), id.getLow()};
  if (blob.is_null()) return "none";
  return reader.find_blob(blob) != nullptr ? "present" : "missing";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: inspect_capture FILE\n");
    return 2;
  }
  auto opened = Reader::open(argv[1]);
  if (!opened) {
    std::fprintf(stderr, "inspect_capture: %s\n", opened.status().to_string().c_str());
    return 2;
  }
  Reader& reader = *opened.value();
  std::printf("calls %llu\n", static_cast<unsigned long long>(reader.call_count()));
  std::printf("launches %zu\n", reader.launches().size());
  std::printf("integrity %s\n", reader.recovery().summary().c_str());
  std::printf("frames %zu\n", reader.frames().size());
  auto header = reader.header();
  std::printf("driver %s version %d devices %u\n", header.getDriverPath().cStr(),
              header.getDriverVersion(), header.getDevices().size());
  std::map<std::string, uint64_t> kinds, apis;
  bool missing = false;
  uint64_t payload_bytes = 0;
  uint64_t captured_kernels = 0;
  Status status = reader.for_each_call([&](const CallRef& ref) {
    auto call = ref.get();
    kinds[call_kind_name(static_cast<uint16_t>(call.which()))]++;
    apis[call.getApiName().cStr()]++;
    switch (call.which()) {
      case schema::CallRecord::LAUNCH: {
        auto l = call.getLaunch();
        std::printf("launch %llu %s params=%zu slots=%u grid=%u,%u,%u block=%u,%u,%u result=%d\n",
                    static_cast<unsigned long long>(l.getOrdinal()), l.getKernelName().cStr(),
                    l.getParams().size(), l.getLayout().size(), l.getGridX(), l.getGridY(),
                    l.getGridZ(), l.getBlockX(), l.getBlockY(), l.getBlockZ(), call.getResult());
        break;
      }
      case schema::CallRecord::MODULE_LOAD: {
        auto m = call.getModuleLoad();
        std::string state = blob_state(reader, m.getImage());
        missing |= state == "missing";
        std::printf("module %llx kind=%u image=%llu blob=%s\n",
                    static_cast<unsigned long long>(m.getHandle()),
                    static_cast<unsigned>(m.getKind()),
                    static_cast<unsigned long long>(m.getImageSize()), state.c_str());
        break;
      }
      case schema::CallRecord::MEMCPY: {
        auto m = call.getMemcpy();
        std::string state = blob_state(reader, m.getPayload());
        missing |= state == "missing";
        char checksum[32] = "none";
        if (m.getHasHostChecksum()) {
          std::snprintf(checksum, sizeof checksum, "%016llx",
                        static_cast<unsigned long long>(m.getHostChecksum()));
        }
        BlobId id{m.getPayload().getHigh(), m.getPayload().getLow()};
        if (!id.is_null()) payload_bytes += m.getSize();
        std::printf("memcpy %u size=%llu payload=%s checksum=%s async=%d id=%s seq=%llu\n",
                    static_cast<unsigned>(m.getKind()),
                    static_cast<unsigned long long>(m.getSize()), state.c_str(), checksum,
                    m.getAsync() ? 1 : 0, id.to_hex().c_str(),
                    static_cast<unsigned long long>(ref.seq()));
        break;
      }
      case schema::CallRecord::TOOL_EVENT: {
        auto e = call.getToolEvent();
        std::printf("event %u %s related=%lld\n", static_cast<unsigned>(e.getKind()),
                    e.getMessage().cStr(),
                    e.getHasRelatedSeq() ? static_cast<long long>(e.getRelatedSeq()) : -1LL);
        break;
      }
      case schema::CallRecord::DEFERRED_RESULT: {
        auto d = call.getDeferredResult();
        std::string state = blob_state(reader, d.getPayload());
        missing |= state == "missing";
        char checksum[32] = "none";
        if (d.getHasHostChecksum()) {
          std::snprintf(checksum, sizeof checksum, "%016llx",
                        static_cast<unsigned long long>(d.getHostChecksum()));
        }
        BlobId id{d.getPayload().getHigh(), d.getPayload().getLow()};
        std::printf("deferred call=%llu checksum=%s executed=%s missing=\"%s\"\n",
                    static_cast<unsigned long long>(d.getCallSeq()), checksum,
                    id.is_null() ? "none" : id.to_hex().c_str(), d.getMissing().cStr());
        break;
      }
      case schema::CallRecord::MEM_ALLOC: {
        auto m = call.getMemAlloc();
        if (m.getKind() != schema::MemAlloc::Kind::VMM_SET_ACCESS) break;
        std::printf("access");
        for (auto d : m.getAccessDescriptors()) {
          std::printf(" %d:%d:%llu", d.getLocationType(), d.getLocationId(),
                      static_cast<unsigned long long>(d.getFlags()));
        }
        std::printf("\n");
        break;
      }
      case schema::CallRecord::GRAPH_NODE: {
        // A launch on a capturing stream: the driver counts it as a launch call, the capture
        // holds it as the kernel node it became.
        auto n = call.getGraphNode();
        if (n.getCaptured() && n.getKind() == schema::GraphNode::Kind::KERNEL) {
          ++captured_kernels;
          std::printf("captured-kernel %s params=%zu slots=%u\n",
                      n.getKernel().getKernelName().cStr(), n.getKernel().getParams().size(),
                      n.getKernel().getLayout().size());
        }
        break;
      }
      case schema::CallRecord::GENERIC:
        std::printf("generic %s affects=%d result=%d\n", call.getApiName().cStr(),
                    call.getGeneric().getAffectsDeviceState() ? 1 : 0, call.getResult());
        break;
      default:
        break;
    }
    return true;
  });
  std::printf("hostToDevice payload bytes %llu\n", static_cast<unsigned long long>(payload_bytes));
  std::printf("captured kernel nodes %llu\n", static_cast<unsigned long long>(captured_kernels));
  for (const auto& [name, count] : kinds)
    std::printf("kind %s %llu\n", name.c_str(), static_cast<unsigned long long>(count));
  for (const auto& [name, count] : apis)
    std::printf("api %s %llu\n", name.c_str(), static_cast<unsigned long long>(count));
  if (!status) {
    std::fprintf(stderr, "inspect_capture: %s\n", status.to_string().c_str());
    return 1;
  }
  return missing ? 1 : 0;
}
