// Legacy texture references and memory pools replayed on the emulator (docs/replay.md, "Texture
// references" and "Memory pools"): hand-built captures whose reference and pool handles are
// values the emulator never hands out, so a replay that did not look the references up again
// and map the pools would pass handles its driver does not know. The kernel's result is checked
// against a host reference's checksum.
#include <catch2/catch.hpp>

#include "cusnap/format/blob_id.h"
#include "test_support.h"

using namespace cusnap::replayer;
using namespace cusnap::replayer::test;
namespace schema = cusnap::format::schema;

namespace {

using Api = schema::CopyGeometry::ArrayApi;
using RefOp = schema::TexRefCall::Op;
using PoolOp = schema::MemPoolCall::Op;
constexpr int32_t kHost = 1, kArray = 3;  // CUmemorytype
constexpr int32_t kSignedInt32 = 0x0a;    // CU_AD_FORMAT_SIGNED_INT32
constexpr uint32_t kOverrideFormat = 1;   // CU_TRSA_OVERRIDE_FORMAT
constexpr uint32_t kReadAsInteger = 1;    // CU_TRSF_READ_AS_INTEGER
constexpr int32_t kReleaseThreshold = 4;  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
constexpr int kCount = 192;
constexpr uint64_t kSkipBytes = 64;  // the linear texture starts this far into its allocation
// Captured handles the emulator never returns (its references and pools are heap pointers).
constexpr uint64_t kArrayRef = 0x7e57000000000a01ull, kLinearRef = 0x7e57000000000a02ull;
constexpr uint64_t kPool = 0x900d000000000001ull, kIn = 0xa1;
constexpr uint64_t kModule = 0xB000, kFunction = 0xF00B;

const char* kPtx = R"(
.version 7.0
.target sm_75, texmode_unified
.address_size 64
.global .texref tin;
.global .texref tlin;
.visible .entry ref_add(.param .u64 out, .param .u32 first, .param .u32 n)
{
  .reg .pred %p1;
  .reg .b32 %r<20>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [first];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r6, %r2;
  @%p1 bra DONE;
  cvt.rn.f32.u32 %f1, %r6;
  add.f32 %f1, %f1, 0f3F000000;
  tex.1d.v4.s32.f32 {%r7, %r8, %r9, %r10}, [tin, {%f1}];
  add.s32 %r11, %r6, %r1;
  tex.1d.v4.s32.s32 {%r12, %r13, %r14, %r15}, [tlin, {%r11}];
  add.s32 %r16, %r7, %r12;
  mul.wide.u32 %rd2, %r6, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r16;
DONE:
  ret;
}
)";

schema::CallRecord::Builder record(capnp::MallocMessageBuilder& m, const char* api) {
  auto r = m.initRoot<schema::CallRecord>();
  r.setApiName(api);
  r.setContext(0x1000);
  return r;
}

std::span<const uint8_t> bytes_of(const std::vector<int>& v) { return as_bytes(v); }

struct RefCapture {
  std::string path;
  uint64_t check_seq = 0;
};

struct RefCaptureOptions {
  uint64_t recorded_offset = kSkipBytes;  // the byte offset the capture says its driver returned
  uint64_t set_array_ref = kArrayRef;     // the reference cuTexRefSetArray names
};

// out[i] = in[i] + lin[i + 16]: `in` through `tin` over a 1-D array, `lin` through `tlin` bound
// with cuTexRefSetAddress 64 bytes into its allocation (the driver returns offset 64, the
// application passes first = 64 / 4 = 16); `out` is allocated from a created pool.
RefCapture write_ref_capture(const std::string& path, const RefCaptureOptions& options = {}) {
  RefCapture c;
  c.path = path;
  CaptureBuilder w(path);
  w.module_load_ptx(kModule, kPtx);
  w.function_get(kModule, kFunction, "ref_add",
                 std::vector<cusnap::test::Slot>{{0, 8}, {8, 4}, {12, 4}});
  const uint64_t out = kBase, lin = kBase + 0x10000;
  {
    capnp::MallocMessageBuilder m;
    auto p = record(m, "cuMemPoolCreate").initMemPool();
    p.setOp(PoolOp::CREATE);
    p.setPool(kPool);
    p.setAllocationType(1);  // CU_MEM_ALLOCATION_TYPE_PINNED
    p.setLocationType(1);    // CU_MEM_LOCATION_TYPE_DEVICE
    w.append_record(m);
  }
  for (PoolOp op : {PoolOp::SET_ATTRIBUTE, PoolOp::GET_ATTRIBUTE}) {
    capnp::MallocMessageBuilder m;
    auto p =
        record(m, op == PoolOp::SET_ATTRIBUTE ? "cuMemPoolSetAttribute" : "cuMemPoolGetAttribute")
            .initMemPool();
    p.setOp(op);
    p.setPool(kPool);
    p.setAttribute(kReleaseThreshold);
    p.setValue(1 << 20);
    w.append_record(m);
  }
  {
    capnp::MallocMessageBuilder m;
    auto a = record(m, "cuMemAllocFromPoolAsync").initMemAlloc();
    a.setKind(schema::MemAlloc::Kind::FROM_POOL);
    a.setAddress(out);
    a.setSize(kCount * 4);
    a.setPool(kPool);
    w.append_record(m);
  }
  w.alloc(lin, kSkipBytes + kCount * 4);

  std::vector<int> in(kCount), linear(kSkipBytes / 4 + kCount), expected(kCount);
  for (int i = 0; i < kCount; ++i) in[i] = 7 * i - 300;
  for (size_t i = 0; i < linear.size(); ++i) linear[i] = static_cast<int>(i * i) - 1000;
  for (int i = 0; i < kCount; ++i) expected[i] = in[i] + linear[i + kSkipBytes / 4];
  w.array_create(kIn, kSignedInt32, 1, kCount);
  cusnap::test::CaptureBuilder::ArrayCopy up;  // cuMemcpyHtoA
  up.api = Api::HOST_TO_ARRAY;
  up.src_type = kHost;
  up.dst_type = kArray;
  up.dst_array = kIn;
  up.width = kCount * 4;
  auto in_bytes = bytes_of(in);
  up.payload.assign(in_bytes.begin(), in_bytes.end());
  w.array_copy(up);
  w.htod(lin, bytes_of(linear));

  auto ref = [&](const char* api, RefOp op, uint64_t handle) {
    auto m = std::make_unique<capnp::MallocMessageBuilder>();
    auto t = record(*m, api).initTexRef();
    t.setOp(op);
    t.setRef(handle);
    return std::make_pair(std::move(m), t);
  };
  for (auto [handle, name] : {std::pair{kArrayRef, "tin"}, std::pair{kLinearRef, "tlin"}}) {
    auto [m, t] = ref("cuModuleGetTexRef", RefOp::GET_TEX_REF, handle);
    t.setModule(kModule);
    t.setName(name);
    w.append_record(*m);
  }
  {
    auto [m, t] = ref("cuTexRefSetArray", RefOp::SET_ARRAY, options.set_array_ref);
    t.setArray(kIn);
    t.setFlags(kOverrideFormat);
    w.append_record(*m);
  }
  for (uint64_t handle : {kArrayRef, kLinearRef}) {
    auto [m, t] = ref("cuTexRefSetFormat", RefOp::SET_FORMAT, handle);
    t.setFormat(kSignedInt32);
    t.setChannels(1);
    w.append_record(*m);
    auto [m2, t2] = ref("cuTexRefSetFlags", RefOp::SET_FLAGS, handle);
    t2.setFlags(kReadAsInteger);
    w.append_record(*m2);
  }
  {
    auto [m, t] = ref("cuTexRefSetAddress_v2", RefOp::SET_ADDRESS, kLinearRef);
    t.setAddress(lin + kSkipBytes);
    t.setBytes(kCount * 4);
    t.setByteOffset(options.recorded_offset);
    w.append_record(*m);
  }
  cusnap::test::Params params;
  params.ptr(out).i32(static_cast<int32_t>(kSkipBytes / 4)).i32(kCount);
  w.launch(kFunction, "ref_add", kCount / 64, 64, params);
  c.check_seq = w.dtoh(out, kCount * 4, cusnap::format::checksum64(bytes_of(expected)));
  {
    capnp::MallocMessageBuilder m;
    auto p = record(m, "cuMemPoolTrimTo").initMemPool();
    p.setOp(PoolOp::TRIM_TO);
    p.setPool(kPool);
    w.append_record(m);
  }
  w.free(out);
  {
    capnp::MallocMessageBuilder m;
    auto p = record(m, "cuMemPoolDestroy").initMemPool();
    p.setOp(PoolOp::DESTROY);
    p.setPool(kPool);
    w.append_record(m);
  }
  w.close();
  return c;
}

}  // namespace

TEST_CASE("texture references are looked up again and their state applied, and pools are mapped",
          "[replay][texrefs]") {
  auto capture = write_ref_capture(temp_path("texrefs.cusnap"));
  for (int run = 0; run < 2; ++run) {
    auto result = replay_capture(capture.path, emulator_options());
    if (!result) FAIL(result.error().to_string());
    const ReplayResult& r = result.value();
    REQUIRE(r.copies.size() == 1);
    CHECK(r.copies[0].seq == capture.check_seq);
    CHECK(r.copies[0].state == VerifyState::kMatched);
    CHECK(r.plan.skipped.count("texRef") == 0);
    CHECK(r.plan.skipped.count("memPool") == 0);
    CHECK(r.matched());
  }
}

TEST_CASE("a texture bound at another byte offset than captured is refused", "[replay][texrefs]") {
  // The capture says its driver returned offset 0 (the kernel indexes from the allocation's
  // 64th byte without adding anything): the emulator returns 64, so the same kernel would read
  // other texels. The replay must stop at that call, not compare garbage.
  RefCaptureOptions options;
  options.recorded_offset = 0;
  auto capture = write_ref_capture(temp_path("texrefs_offset.cusnap"), options);
  auto result = replay_capture(capture.path, emulator_options());
  REQUIRE(!result);
  CHECK_THAT(result.error().to_string(), Catch::Contains("byte offset 64, the capture at 0"));
}

TEST_CASE("a setter naming a reference no record looked up is a capture error",
          "[replay][texrefs]") {
  RefCaptureOptions options;
  options.set_array_ref = 0x7e57000000000bad;
  auto capture = write_ref_capture(temp_path("texrefs_unknown.cusnap"), options);
  auto result = replay_capture(capture.path, emulator_options());
  REQUIRE(!result);
  CHECK_THAT(result.error().to_string(),
             Catch::Contains("texture reference 0x7e57000000000bad was not created"));
}
