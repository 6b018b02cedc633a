// Stream memory operations (cuStreamWaitValue*, cuStreamWriteValue*, cuStreamBatchMemOp) and
// stream attributes (cuStreamGet/SetAttribute, cuStreamCopyAttributes).
//
// Whether a wait really blocks its stream is checked by order, never by time: the waiting
// stream's next operation must run after what the writer did before writing, and a stream whose
// condition cannot hold yet stays busy (cuStreamQuery answers NOT_READY) until it is written.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

namespace {

struct Order {
  std::mutex mutex;
  std::vector<char> seen;
};
struct Mark {
  Order* order;
  char name;
};
void CUDA_CB mark(void* p) {
  auto* m = static_cast<Mark*>(p);
  std::lock_guard lock(m->order->mutex);
  m->order->seen.push_back(m->name);
}

int attribute(CUdevice_attribute a) {
  int v = -1;
  REQUIRE_CU(cuDeviceGetAttribute(&v, a, 0));
  return v;
}

}  // namespace

TEST_CASE("stream memory operations are reported as supported", "[memops]") {
  primary_context();
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1) == 1);
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) == 1);
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR) == 1);
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES) == 1);
}

TEST_CASE("a wait blocks its stream until another stream writes the value", "[memops]") {
  primary_context();
  CUstream waiter = nullptr, writer = nullptr;
  REQUIRE_CU(cuStreamCreate(&waiter, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));
  CUdeviceptr flag = 0, out = 0;
  REQUIRE_CU(cuMemAlloc(&flag, 8));
  REQUIRE_CU(cuMemAlloc(&out, 8));
  REQUIRE_CU(cuMemsetD32(flag, 0, 2));
  REQUIRE_CU(cuMemsetD32(out, 0, 2));
  Order order;
  Mark after_wait{&order, 'W'}, before_write{&order, 'B'};
  // The waiter's write of `out` may only happen once the flag is >= 3.
  REQUIRE_CU(cuStreamWaitValue32(waiter, flag, 3, CU_STREAM_WAIT_VALUE_GEQ));
  REQUIRE_CU(cuLaunchHostFunc(waiter, mark, &after_wait));
  REQUIRE_CU(cuStreamWriteValue32(waiter, out, 0xabcd, 0));
  CHECK(cuStreamQuery(waiter) == CUDA_ERROR_NOT_READY);  // nobody has written the flag yet
  REQUIRE_CU(cuLaunchHostFunc(writer, mark, &before_write));
  REQUIRE_CU(cuStreamWriteValue32(writer, flag, 2, 0));  // not enough: 2 < 3
  REQUIRE_CU(cuStreamSynchronize(writer));
  CHECK(cuStreamQuery(waiter) == CUDA_ERROR_NOT_READY);
  REQUIRE_CU(cuStreamWriteValue32(writer, flag, 3, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
  REQUIRE_CU(cuStreamSynchronize(waiter));
  REQUIRE(order.seen == std::vector<char>{'B', 'W'});
  uint32_t result[2] = {};
  REQUIRE_CU(cuMemcpyDtoH(result, out, sizeof result));
  CHECK(result[0] == 0xabcd);
  CHECK(result[1] == 0);  // a 32-bit write touches 4 bytes
  CHECK_CU(cuStreamDestroy(waiter));
  CHECK_CU(cuStreamDestroy(writer));
  CHECK_CU(cuMemFree(flag));
  CHECK_CU(cuMemFree(out));
}

TEST_CASE("a wait is released by a host thread writing pinned memory", "[memops]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  void* host = nullptr;
  REQUIRE_CU(cuMemAllocHost(&host, 16));
  auto* word = static_cast<uint64_t*>(host);
  word[0] = 10;
  CUdeviceptr dptr = 0;
  REQUIRE_CU(cuMemHostGetDevicePointer(&dptr, host, 0));
  REQUIRE_CU(cuStreamWaitValue64(s, dptr, 0x42, CU_STREAM_WAIT_VALUE_EQ));
  REQUIRE_CU(cuStreamWriteValue64(s, dptr + 8, 0x1122334455667788ull, 0));
  CHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
  std::thread host_writer([&] { std::atomic_ref(word[0]).store(0x42); });
  REQUIRE_CU(cuStreamSynchronize(s));
  host_writer.join();
  CHECK(std::atomic_ref(word[1]).load() == 0x1122334455667788ull);
  CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuMemFreeHost(host));
}

TEST_CASE("wait conditions: cyclic GEQ, EQ, AND and NOR", "[memops]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  void* host = nullptr;
  REQUIRE_CU(cuMemAllocHost(&host, 16));
  auto* w32 = static_cast<uint32_t*>(host);
  auto* w64 = static_cast<uint64_t*>(host) + 1;
  CUdeviceptr d32 = reinterpret_cast<CUdeviceptr>(w32);
  CUdeviceptr d64 = reinterpret_cast<CUdeviceptr>(w64);
  struct Case {
    uint32_t memory;
    uint32_t value;
    unsigned flags;
    bool holds;
    uint32_t release;  // a value that satisfies the condition (when it does not hold at first)
  };
  const Case cases[] = {
      {5, 5, CU_STREAM_WAIT_VALUE_GEQ, true, 0},
      {4, 5, CU_STREAM_WAIT_VALUE_GEQ, false, 6},
      {0, 0xffffffffu, CU_STREAM_WAIT_VALUE_GEQ, true, 0},   // (int32_t)(0 - 0xffffffff) = 1
      {0xffffffffu, 0, CU_STREAM_WAIT_VALUE_GEQ, false, 0},  // (int32_t)0xffffffff = -1 < 0
      {7, 7, CU_STREAM_WAIT_VALUE_EQ, true, 0},
      {7, 8, CU_STREAM_WAIT_VALUE_EQ, false, 8},
      {0b0110, 0b0100, CU_STREAM_WAIT_VALUE_AND, true, 0},
      {0b0110, 0b1001, CU_STREAM_WAIT_VALUE_AND, false, 0b1000},
      {0xfffffff0u, 0x0000000eu, CU_STREAM_WAIT_VALUE_NOR, true, 0},  // ~(m | v) has bit 0
      {0xfffffff0u, 0x0000000fu, CU_STREAM_WAIT_VALUE_NOR, false, 0x7ffffff0u},
  };
  for (const Case& c : cases) {
    INFO("memory " << c.memory << " value " << c.value << " flags " << c.flags);
    std::atomic_ref(*w32).store(c.memory);
    REQUIRE_CU(cuStreamWaitValue32_v2(s, d32, c.value, c.flags | CU_STREAM_WAIT_VALUE_FLUSH));
    if (!c.holds) {
      CHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
      std::atomic_ref(*w32).store(c.release);
    }
    REQUIRE_CU(cuStreamSynchronize(s));
  }
  // 64-bit GEQ is cyclic over 64 bits: 2^32 is greater than 1 (not so for a 32-bit compare).
  std::atomic_ref(*w64).store(uint64_t{1} << 32);
  REQUIRE_CU(cuStreamWaitValue64_v2(s, d64, 1, CU_STREAM_WAIT_VALUE_GEQ));
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuMemFreeHost(host));
}

TEST_CASE("cuStreamBatchMemOp runs its operations in order", "[memops]") {
  primary_context();
  CUstream waiter = nullptr, writer = nullptr;
  REQUIRE_CU(cuStreamCreate(&waiter, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));
  CUdeviceptr mem = 0;
  REQUIRE_CU(cuMemAlloc(&mem, 32));
  REQUIRE_CU(cuMemsetD8(mem, 0, 32));
  CUstreamBatchMemOpParams ops[5] = {};
  ops[0].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  ops[0].waitValue.address = mem;
  ops[0].waitValue.value = 1;
  ops[0].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  ops[1].writeValue.address = mem + 8;
  ops[1].writeValue.value64 = 0x0102030405060708ull;
  ops[2].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
  ops[2].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
  ops[3].flushRemoteWrites.operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES;
  ops[4].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[4].writeValue.address = mem + 16;
  ops[4].writeValue.value = 0xdeadbeef;
  REQUIRE_CU(cuStreamBatchMemOp_v2(waiter, 5, ops, 0));
  CHECK(cuStreamQuery(waiter) == CUDA_ERROR_NOT_READY);
  uint8_t before[32];
  REQUIRE_CU(cuMemcpyDtoH(before, mem, 32));
  for (uint8_t b : before) CHECK(b == 0);  // nothing after the wait has run
  REQUIRE_CU(cuStreamWriteValue32(writer, mem, 1, 0));
  REQUIRE_CU(cuStreamSynchronize(waiter));
  uint64_t after[4];
  REQUIRE_CU(cuMemcpyDtoH(after, mem, 32));
  CHECK(after[0] == 1);
  CHECK(after[1] == 0x0102030405060708ull);
  CHECK(after[2] == 0xdeadbeefull);
  CHECK(after[3] == 0);
  CHECK_CU(cuStreamDestroy(waiter));
  CHECK_CU(cuStreamDestroy(writer));
  CHECK_CU(cuMemFree(mem));
}

TEST_CASE("batch memory operation nodes wait and write when the graph runs", "[memops][graph]") {
  primary_context();
  CUstream launcher = nullptr, writer = nullptr;
  REQUIRE_CU(cuStreamCreate(&launcher, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));
  CUdeviceptr mem = 0;
  REQUIRE_CU(cuMemAlloc(&mem, 16));
  REQUIRE_CU(cuMemsetD8(mem, 0, 16));
  CUstreamBatchMemOpParams ops[2] = {};
  ops[0].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  ops[0].waitValue.address = mem;
  ops[0].waitValue.value = 5;
  ops[0].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
  ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[1].writeValue.address = mem + 4;
  ops[1].writeValue.value = 111;
  CUgraph g = nullptr;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  CUDA_BATCH_MEM_OP_NODE_PARAMS params = {};
  params.count = 2;
  params.paramArray = ops;
  CUgraphNode node = nullptr;
  REQUIRE_CU(cuGraphAddBatchMemOpNode(&node, g, nullptr, 0, &params));
  ops[1].writeValue.value = 999;  // the node has its own copy
  CUDA_BATCH_MEM_OP_NODE_PARAMS got = {};
  REQUIRE_CU(cuGraphBatchMemOpNodeGetParams(node, &got));
  REQUIRE(got.count == 2);
  CHECK(got.paramArray != ops);
  CHECK(got.paramArray[1].writeValue.value == 111);
  CUgraphNodeType type;
  REQUIRE_CU(cuGraphNodeGetType(node, &type));
  CHECK(type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
  CUgraphExec exec = nullptr;
  REQUIRE_CU(cuGraphInstantiate(&exec, g, 0));
  REQUIRE_CU(cuGraphLaunch(exec, launcher));
  CHECK(cuStreamQuery(launcher) == CUDA_ERROR_NOT_READY);  // the node waits for mem >= 5
  REQUIRE_CU(cuStreamWriteValue32(writer, mem, 5, 0));
  REQUIRE_CU(cuStreamSynchronize(launcher));
  uint32_t out[4] = {};
  REQUIRE_CU(cuMemcpyDtoH(out, mem, sizeof out));
  CHECK(out[1] == 111);

  // The exec's copy takes new values (not new operation types).
  CUstreamBatchMemOpParams changed[2] = {ops[0], ops[1]};
  changed[1].writeValue.address = mem + 8;
  changed[1].writeValue.value = 222;
  params.paramArray = changed;
  REQUIRE_CU(cuGraphExecBatchMemOpNodeSetParams(exec, node, &params));
  CUstreamBatchMemOpParams retyped[2] = {ops[0], ops[1]};
  retyped[1].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
  retyped[1].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_SYS;
  params.paramArray = retyped;
  CHECK(cuGraphExecBatchMemOpNodeSetParams(exec, node, &params) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuGraphLaunch(exec, launcher));  // mem is 5 already: no wait
  REQUIRE_CU(cuStreamSynchronize(launcher));
  REQUIRE_CU(cuMemcpyDtoH(out, mem, sizeof out));
  CHECK(out[1] == 111);
  CHECK(out[2] == 222);

  // A bad operation is refused when the node is added or set.
  CUstreamBatchMemOpParams bad = ops[1];
  bad.writeValue.address = mem + 2;  // misaligned
  params.count = 1;
  params.paramArray = &bad;
  CUgraphNode bad_node = nullptr;
  CHECK(cuGraphAddBatchMemOpNode(&bad_node, g, nullptr, 0, &params) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphBatchMemOpNodeSetParams(node, &params) == CUDA_ERROR_INVALID_VALUE);
  params.count = 0;
  CHECK(cuGraphAddBatchMemOpNode(&bad_node, g, nullptr, 0, &params) == CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphExecDestroy(exec));
  CHECK_CU(cuGraphDestroy(g));
  CHECK_CU(cuStreamDestroy(launcher));
  CHECK_CU(cuStreamDestroy(writer));
  CHECK_CU(cuMemFree(mem));
}

TEST_CASE("stream memory operations are captured as batch memory operation nodes",
          "[memops][graph][capture]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr mem = 0;
  REQUIRE_CU(cuMemAlloc(&mem, 8));
  REQUIRE_CU(cuMemsetD8(mem, 0, 8));
  REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  REQUIRE_CU(cuStreamWriteValue32(s, mem, 7, 0));
  REQUIRE_CU(cuStreamWaitValue32(s, mem, 7, CU_STREAM_WAIT_VALUE_EQ));
  REQUIRE_CU(cuStreamWriteValue64(s, mem, 0x0000000900000008ull, 0));
  CUgraph g = nullptr;
  REQUIRE_CU(cuStreamEndCapture(s, &g));
  uint64_t before = 1;
  REQUIRE_CU(cuMemcpyDtoH(&before, mem, 8));
  CHECK(before == 0);  // captured, not run
  size_t count = 0;
  REQUIRE_CU(cuGraphGetNodes(g, nullptr, &count));
  REQUIRE(count == 3);
  std::vector<CUgraphNode> nodes(count);
  REQUIRE_CU(cuGraphGetNodes(g, nodes.data(), &count));
  for (CUgraphNode n : nodes) {
    CUgraphNodeType type;
    REQUIRE_CU(cuGraphNodeGetType(n, &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
  }
  CUgraphExec exec = nullptr;
  REQUIRE_CU(cuGraphInstantiate(&exec, g, 0));
  REQUIRE_CU(cuGraphLaunch(exec, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  uint64_t after = 0;
  REQUIRE_CU(cuMemcpyDtoH(&after, mem, 8));
  CHECK(after == 0x0000000900000008ull);
  CHECK_CU(cuGraphExecDestroy(exec));
  CHECK_CU(cuGraphDestroy(g));
  CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuMemFree(mem));
}

TEST_CASE("stream memory operations check their arguments", "[memops]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  CUdeviceptr mem = 0, managed = 0;
  REQUIRE_CU(cuMemAlloc(&mem, 16));
  REQUIRE_CU(cuMemAllocManaged(&managed, 16, CU_MEM_ATTACH_GLOBAL));
  CHECK(cuStreamWaitValue32(s, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamWaitValue32(s, mem + 2, 0, 0) == CUDA_ERROR_INVALID_VALUE);  // misaligned
  CHECK(cuStreamWaitValue64(s, mem + 4, 0, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamWriteValue32(s, mem + 16, 0, 0) == CUDA_ERROR_INVALID_VALUE);  // past the end
  CHECK(cuStreamWriteValue32(s, managed, 0, 0) == CUDA_ERROR_INVALID_VALUE);   // documented
  CHECK(cuStreamWaitValue32(s, mem, 0, 4) == CUDA_ERROR_INVALID_VALUE);        // no such condition
  CHECK(cuStreamWriteValue32(s, mem, 0, 2) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamWriteValue32(reinterpret_cast<CUstream>(0x1234), mem, 0, 0) ==
        CUDA_ERROR_INVALID_HANDLE);
  CUstreamBatchMemOpParams op = {};
  op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op.writeValue.address = mem;
  CHECK(cuStreamBatchMemOp(s, 1, &op, 1) == CUDA_ERROR_INVALID_VALUE);  // flags must be 0
  CHECK(cuStreamBatchMemOp(s, 1, nullptr, 0) == CUDA_ERROR_INVALID_VALUE);
  std::vector<CUstreamBatchMemOpParams> many(256, op);
  CHECK(cuStreamBatchMemOp(s, 256, many.data(), 0) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuStreamBatchMemOp(s, 255, many.data(), 0));
  op.operation = static_cast<CUstreamBatchMemOpType>(7);
  CHECK(cuStreamBatchMemOp(s, 1, &op, 0) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuMemFree(mem));
  CHECK_CU(cuMemFree(managed));
}

TEST_CASE("stream attributes are stored, answered and copied", "[stream][attributes]") {
  primary_context();
  CUstream a = nullptr, b = nullptr;
  REQUIRE_CU(cuStreamCreateWithPriority(&a, 0, -1));
  REQUIRE_CU(cuStreamCreate(&b, 0));
  CUstreamAttrValue v;
  REQUIRE_CU(cuStreamGetAttribute(a, CU_STREAM_ATTRIBUTE_PRIORITY, &v));
  CHECK(v.priority == -1);
  REQUIRE_CU(cuStreamGetAttribute(a, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
  CHECK(v.accessPolicyWindow.num_bytes == 0);
  REQUIRE_CU(cuStreamGetAttribute(a, CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, &v));
  CHECK(v.memSyncDomainMap.default_ == 0);
  CHECK(v.memSyncDomainMap.remote == 1);

  CUstreamAttrValue set = {};
  set.accessPolicyWindow.base_ptr = reinterpret_cast<void*>(0x10000);
  set.accessPolicyWindow.num_bytes = 4096;
  set.accessPolicyWindow.hitRatio = 0.5f;
  set.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
  set.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
  REQUIRE_CU(cuStreamSetAttribute(a, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &set));
  set = {};
  set.syncPolicy = CU_SYNC_POLICY_BLOCKING_SYNC;
  REQUIRE_CU(cuStreamSetAttribute(a, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &set));
  set = {};
  set.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
  REQUIRE_CU(cuStreamSetAttribute(a, CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN, &set));
  set = {};
  set.priority = -100;  // clamped to the greatest priority, as cuStreamCreateWithPriority does
  REQUIRE_CU(cuStreamSetAttribute(a, CU_STREAM_ATTRIBUTE_PRIORITY, &set));
  REQUIRE_CU(cuStreamGetAttribute(a, CU_STREAM_ATTRIBUTE_PRIORITY, &v));
  int least = 0, greatest = 0;
  REQUIRE_CU(cuCtxGetStreamPriorityRange(&least, &greatest));
  CHECK(v.priority == greatest);
  int priority = 0;
  REQUIRE_CU(cuStreamGetPriority(a, &priority));
  CHECK(priority == greatest);

  REQUIRE_CU(cuStreamCopyAttributes(b, a));
  REQUIRE_CU(cuStreamGetAttribute(b, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
  CHECK(v.accessPolicyWindow.base_ptr == reinterpret_cast<void*>(0x10000));
  CHECK(v.accessPolicyWindow.num_bytes == 4096);
  CHECK(v.accessPolicyWindow.hitRatio == 0.5f);
  CHECK(v.accessPolicyWindow.hitProp == CU_ACCESS_PROPERTY_PERSISTING);
  CHECK(v.accessPolicyWindow.missProp == CU_ACCESS_PROPERTY_STREAMING);
  REQUIRE_CU(cuStreamGetAttribute(b, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  CHECK(v.syncPolicy == CU_SYNC_POLICY_BLOCKING_SYNC);
  REQUIRE_CU(cuStreamGetAttribute(b, CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN, &v));
  CHECK(v.memSyncDomain == CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE);
  REQUIRE_CU(cuStreamGetAttribute(b, CU_STREAM_ATTRIBUTE_PRIORITY, &v));
  CHECK(v.priority == greatest);

  // The legacy stream has attributes of its own.
  REQUIRE_CU(cuStreamGetAttribute(nullptr, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  CHECK(v.syncPolicy == CU_SYNC_POLICY_AUTO);
  CHECK_CU(cuStreamDestroy(a));
  CHECK_CU(cuStreamDestroy(b));
}

TEST_CASE("stream attributes check their arguments", "[stream][attributes]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  CUstreamAttrValue v = {};
  CHECK(cuStreamGetAttribute(s, CU_STREAM_ATTRIBUTE_PRIORITY, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_PRIORITY, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamGetAttribute(reinterpret_cast<CUstream>(0x1234), CU_STREAM_ATTRIBUTE_PRIORITY,
                             &v) == CUDA_ERROR_INVALID_HANDLE);
  // A launch attribute that streams do not have.
  CHECK(cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v) == CUDA_ERROR_INVALID_VALUE);
  v.accessPolicyWindow.hitRatio = 1.5f;
  CHECK(cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v) ==
        CUDA_ERROR_INVALID_VALUE);
  v = {};
  v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_PERSISTING;  // a miss cannot persist
  CHECK(cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v) ==
        CUDA_ERROR_INVALID_VALUE);
  v = {};
  int max_window = 0;
  REQUIRE_CU(
      cuDeviceGetAttribute(&max_window, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 0));
  v.accessPolicyWindow.num_bytes = static_cast<size_t>(max_window) + 1;
  CHECK(cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v) ==
        CUDA_ERROR_INVALID_VALUE);
  v = {};
  v.syncPolicy = static_cast<CUsynchronizationPolicy>(0);
  CHECK(cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v) ==
        CUDA_ERROR_INVALID_VALUE);
  v = {};
  v.memSyncDomainMap.remote = 4;  // MEM_SYNC_DOMAIN_COUNT is 4
  CHECK(cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, &v) ==
        CUDA_ERROR_INVALID_VALUE);
  // A rejected value leaves the attribute as it was.
  REQUIRE_CU(cuStreamGetAttribute(s, CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, &v));
  CHECK(v.memSyncDomainMap.remote == 1);
  CHECK_CU(cuStreamDestroy(s));
}
