// cusnap redact (docs/redact.md): captures written by tests/support's independent writer, their
// expected results computed on the host; redacted with cusnap::reduce and replayed on the
// emulator.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "capture_builder.h"
#include "cusnap/extract/extract.h"
#include "cusnap/format/reader.h"
#include "cusnap/reduce/redact.h"
#include "replayer/replay.h"

using namespace cusnap;
using cusnap::test::as_bytes;
using cusnap::test::CaptureBuilder;
using cusnap::test::Params;
namespace schema = format::schema;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kModule = 0xA000;
constexpr uint64_t kFunction = 0xF001;
constexpr uint64_t kIn = 0x7e0000000000, kOut = 0x7e0000200000, kNodes = 0x7e0000400000;
constexpr int kN = 1024;
constexpr int kMagic = 0x5EC12E7;
constexpr int kMagicIndex = 700;
const std::string kPattern = "CUSNAP-SECRET-42";  // 16 bytes, repeated through the input
const std::string kSecretHost = "host-secret-7";

std::string tmp(const std::string& name) {
  fs::path dir = fs::path(CUSNAP_TEST_TMP_DIR) / "redact";
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string ptx() {
  std::ifstream f(CUSNAP_TEST_PTX_PATH);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::unique_ptr<format::Reader> open(const std::string& path) {
  auto r = format::Reader::open(path);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return std::move(r.value());
}

// Every frame's decoded payload (header, calls, blobs, index) joined: what a reader of the file
// can see once it is decompressed.
std::string decoded(const std::string& path) {
  auto r = open(path);
  std::string all;
  for (uint32_t i = 0; i < r->frames().size(); ++i) {
    auto p = r->frame_payload(i);
    REQUIRE(p.is_ok());
    all.append(reinterpret_cast<const char*>(p->data()), p->size());
  }
  return all;
}

replayer::ReplayResult replay(const std::string& path) {
  replayer::ReplayOptions options;
  options.driver = "emulator";
  options.timing = false;
  options.nvtx = false;
  auto r = replayer::replay_capture(path, options);
  INFO((r ? std::string() : r.error().to_string()));
  REQUIRE(r);
  return std::move(r.value());
}

reduce::RedactReport redact(const std::string& in, const std::string& out,
                            const reduce::RedactOptions& options = {}) {
  auto r = reduce::redact_capture(in, out, options);
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return *r;
}

reduce::Condition condition(const std::string& text) {
  auto c = reduce::parse_condition(text, {});
  INFO(c.status().to_string());
  REQUIRE(c.is_ok());
  return *c;
}

// add_one over an input made of kPattern repeated; the result leaves by a checksummed copy.
std::vector<int> write_pattern_capture(const std::string& path) {
  cusnap::test::HeaderOptions header;
  header.host_name = kSecretHost;
  header.command_line = {"./app", "--token=" + kPattern};
  header.environment = {{"CUDA_VISIBLE_DEVICES", "0"}, {"LD_LIBRARY_PATH", "/home/secret/lib"}};
  header.working_directory = "/home/secret";
  std::vector<int> in(kN);
  for (int i = 0; i < kN; ++i) std::memcpy(&in[i], kPattern.data() + (4 * i) % 16, 4);
  std::vector<int> out(kN);
  for (int i = 0; i < kN; ++i) out[i] = in[i] + 1;
  CaptureBuilder b(path, header);
  b.module_load_ptx(kModule, ptx());
  Params p;
  p.ptr(kIn).ptr(kOut).i32(kN);
  uint64_t fn = b.function_get(kModule, kFunction, "add_one", p.layout());
  b.alloc(kIn, kN * 4);
  b.alloc(kOut, kN * 4);
  b.htod(kIn, as_bytes(in));
  b.launch(kFunction, "add_one", kN / 128, 128, p, 0, 0, fn);
  b.dtoh(kOut, kN * 4, format::checksum64(as_bytes(out)));
  b.close();
  return in;
}

// fault_on over an input holding kMagic at kMagicIndex. `recorded_error`: the capture saw the
// fault (a sticky 700 at the synchronisation after the launch); otherwise it was captured where
// the write went unnoticed and holds the checksum of the other results.
void write_fault_capture(const std::string& path, bool recorded_error) {
  std::vector<int> in(kN), out(kN, 0);
  for (int i = 0; i < kN; ++i) in[i] = i * 7 + 3;
  in[kMagicIndex] = kMagic;
  for (int i = 0; i < kN; ++i)
    if (i != kMagicIndex) out[i] = in[i] * 2;
  CaptureBuilder b(path);
  b.module_load_ptx(kModule, ptx());
  Params p;
  p.ptr(kIn).ptr(kOut).i32(kN).i32(kMagic);
  uint64_t fn = b.function_get(kModule, kFunction, "fault_on", p.layout());
  b.alloc(kIn, kN * 4);
  b.alloc(kOut, kN * 4);
  b.htod(kIn, as_bytes(in));
  b.memset32(kOut, 0, kN);
  b.launch(kFunction, "fault_on", kN / 128, 128, p, 0, 0, fn);
  if (recorded_error) {
    b.context_sync(700);
  } else {
    b.dtoh(kOut, kN * 4, format::checksum64(as_bytes(out)));
  }
  b.close();
}

// The one payload of the copy into `address`.
std::vector<uint8_t> copy_payload(const std::string& path, uint64_t address) {
  auto r = open(path);
  std::vector<uint8_t> bytes;
  REQUIRE(r->for_each_call([&](const format::CallRef& ref) {
    auto c = ref.get();
    if (c.isMemcpy() && c.getMemcpy().getDst() == address && c.getMemcpy().hasPayload()) {
      auto p = c.getMemcpy().getPayload();
      auto blob = r->read_blob({p.getHigh(), p.getLow()});
      REQUIRE(blob.is_ok());
      bytes = *blob;
    }
    return true;
  }));
  return bytes;
}

}  // namespace

TEST_CASE("a distinctive input pattern occurs nowhere in the redacted file, which replays") {
  const std::string in = tmp("pattern.cusnap"), out = tmp("pattern-redacted.cusnap");
  write_pattern_capture(in);
  REQUIRE(decoded(in).find(kPattern) != std::string::npos);  // the test can fail
  REQUIRE(decoded(in).find(kSecretHost) != std::string::npos);
  auto report = redact(in, out);
  CHECK(report.replaced_bytes == kN * 4);
  CHECK(report.pointer_bytes == 0);
  CHECK(report.expectations == reduce::Expectations::kResealed);
  const std::string text = decoded(out);
  CHECK(text.find(kPattern) == std::string::npos);
  CHECK(text.find(kPattern.substr(0, 8)) == std::string::npos);
  CHECK(text.find(kSecretHost) == std::string::npos);
  CHECK(text.find("/home/secret") == std::string::npos);
  auto r = open(out);
  auto h = r->header();
  CHECK(std::string(h.getHostName().cStr()).empty());
  CHECK(h.getCommandLine().size() == 0);
  REQUIRE(h.getEnvironment().size() == 2);
  CHECK(std::string(h.getEnvironment()[0].getKey().cStr()) == "CUDA_VISIBLE_DEVICES");
  REQUIRE(h.hasRedact());
  CHECK(h.getRedact().getReplacedBytes() == kN * 4);
  CHECK(h.getRedact().getExpectations() == schema::RedactInfo::Expectations::RESEALED);
  CHECK(h.getSchemaVersion() == schema::SCHEMA_VERSION);
  // Resealed: the checksum is the redacted data's, and the replay on the emulator matches.
  auto replayed = replay(out);
  CHECK(replayed.verdict() == replayer::Verdict::kMatched);
  CHECK(replayed.verification.matched == 1);
  // The checksum was recomputed: the original one describes the original data.
  auto checksum = [](const std::string& path) {
    uint64_t sum = 0;
    REQUIRE(open(path)->for_each_call([&](const format::CallRef& ref) {
      if (ref.get().isMemcpy() && ref.get().getMemcpy().getHasHostChecksum())
        sum = ref.get().getMemcpy().getHostChecksum();
      return true;
    }));
    return sum;
  };
  CHECK(checksum(out) != checksum(in));
  CHECK(checksum(out) != 0);
}

TEST_CASE("the same seed gives the same bytes, another seed other bytes") {
  const std::string in = tmp("seed.cusnap");
  write_pattern_capture(in);
  redact(in, tmp("seed-a.cusnap"));
  redact(in, tmp("seed-b.cusnap"));
  reduce::RedactOptions other;
  other.seed = 12345;
  redact(in, tmp("seed-c.cusnap"), other);
  CHECK(file_bytes(tmp("seed-a.cusnap")) == file_bytes(tmp("seed-b.cusnap")));
  CHECK(copy_payload(tmp("seed-a.cusnap"), kIn) != copy_payload(tmp("seed-c.cusnap"), kIn));
  CHECK(copy_payload(tmp("seed-a.cusnap"), kIn) != copy_payload(in, kIn));
}

TEST_CASE("a salt keeps header fields as salted hashes that correlate") {
  const std::string in = tmp("salt.cusnap");
  write_pattern_capture(in);
  reduce::RedactOptions a, b;
  a.salt = "pepper";
  b.salt = "other";
  redact(in, tmp("salt-a.cusnap"), a);
  redact(in, tmp("salt-a2.cusnap"), a);
  redact(in, tmp("salt-b.cusnap"), b);
  auto host = [](const std::string& path) {
    return std::string(open(path)->header().getHostName().cStr());
  };
  CHECK(host(tmp("salt-a.cusnap")).rfind("salted:", 0) == 0);
  CHECK(host(tmp("salt-a.cusnap")) == host(tmp("salt-a2.cusnap")));
  CHECK(host(tmp("salt-a.cusnap")) != host(tmp("salt-b.cusnap")));
  CHECK(decoded(tmp("salt-a.cusnap")).find(kSecretHost) == std::string::npos);
  CHECK(open(tmp("salt-a.cusnap"))->header().getCommandLine().size() == 2);
}

TEST_CASE("keep-alloc keeps an allocation's bytes original") {
  const std::string in = tmp("keep.cusnap"), out = tmp("keep-redacted.cusnap");
  write_pattern_capture(in);
  reduce::RedactOptions options;
  options.keep_alloc = {kIn + 100};
  auto report = redact(in, out, options);
  CHECK(report.replaced_bytes == 0);
  CHECK(report.kept_allocation_bytes == kN * 4);
  REQUIRE(report.kept_allocations.size() == 1);
  CHECK(report.kept_allocations[0].address == kIn);
  CHECK(report.expectations == reduce::Expectations::kOriginal);
  CHECK(copy_payload(out, kIn) == copy_payload(in, kIn));
  options.keep_alloc = {0x1234};
  CHECK_FALSE(reduce::redact_capture(in, out, options).is_ok());
  // Never over the input itself.
  CHECK_FALSE(reduce::redact_capture(in, in, {}).is_ok());
  CHECK(copy_payload(in, kIn).size() == kN * 4);
}

TEST_CASE("keep-kernel-inputs keeps what a matching launch's parameters point at") {
  const std::string in = tmp("kernel-inputs.cusnap"), out = tmp("kernel-inputs-redacted.cusnap");
  write_pattern_capture(in);
  reduce::RedactOptions options;
  options.keep_kernel_inputs = "regex:^add_";
  auto report = redact(in, out, options);
  CHECK(report.kept_allocations.size() == 2);  // in and out
  CHECK(copy_payload(out, kIn) == copy_payload(in, kIn));
  options.keep_kernel_inputs = "other_kernel";
  report = redact(in, out, options);
  CHECK(report.kept_allocations.empty());
  CHECK(copy_payload(out, kIn) != copy_payload(in, kIn));
}

TEST_CASE("pointers of a linked structure survive redaction and the capture replays") {
  const std::string in = tmp("list.cusnap"), out = tmp("list-redacted.cusnap");
  struct Node {
    uint64_t next;
    int32_t value;
    int32_t pad;
  };
  constexpr int kNodesCount = 64;
  std::vector<Node> nodes(kNodesCount);
  int sum = 0;
  for (int i = 0; i < kNodesCount; ++i) {
    nodes[i].next = i + 1 < kNodesCount ? kNodes + 16 * (i + 1) : 0;
    nodes[i].value = 1000 + i * 3;
    nodes[i].pad = 0;
    sum += nodes[i].value;
  }
  std::vector<int> result{sum, kNodesCount};
  {
    CaptureBuilder b(in);
    b.module_load_ptx(kModule, ptx());
    Params p;
    p.ptr(kNodes).ptr(kOut);
    uint64_t fn = b.function_get(kModule, kFunction, "walk_list", p.layout());
    b.alloc(kNodes, sizeof(Node) * kNodesCount);
    b.alloc(kOut, 8);
    b.htod(kNodes, as_bytes(nodes));
    b.launch(kFunction, "walk_list", 1, 32, p, 0, 0, fn);
    b.dtoh(kOut, 8, format::checksum64(as_bytes(result)));
    b.close();
  }
  REQUIRE(replay(in).verdict() == replayer::Verdict::kMatched);
  auto report = redact(in, out);
  // Every next pointer, the last (null) one too; the values and pads are replaced.
  CHECK(report.pointer_bytes == 8 * kNodesCount);
  CHECK(report.replaced_bytes == 8 * kNodesCount);
  std::vector<uint8_t> redacted = copy_payload(out, kNodes);
  REQUIRE(redacted.size() == sizeof(Node) * kNodesCount);
  std::vector<Node> after(kNodesCount);
  std::memcpy(after.data(), redacted.data(), redacted.size());
  int same_values = 0;
  for (int i = 0; i < kNodesCount; ++i) {
    CHECK(after[i].next == nodes[i].next);
    same_values += after[i].value == nodes[i].value;
  }
  CHECK(same_values < 4);  // the values were replaced
  auto replayed = replay(out);
  CHECK(replayed.verdict() == replayer::Verdict::kMatched);
}

TEST_CASE("verify error: a data-dependent fault brings back exactly the bytes that trigger it") {
  const std::string in = tmp("fault.cusnap"), out = tmp("fault-redacted.cusnap");
  write_fault_capture(in, /*recorded_error=*/true);
  reduce::RedactOptions options;
  options.verify = condition("error:700");
  auto report = redact(in, out, options);
  REQUIRE(report.restored.size() == 1);
  const reduce::RedactedRange& r = report.restored[0];
  CHECK(r.address == kIn + 4 * kMagicIndex);
  CHECK(r.size == 8);
  CHECK(r.allocation_address == kIn);
  CHECK(report.restored_bytes == 8);
  CHECK(!report.budget_exhausted);
  // The magic value is back, the rest of the input is not.
  std::vector<uint8_t> original = copy_payload(in, kIn), redacted = copy_payload(out, kIn);
  REQUIRE(redacted.size() == original.size());
  CHECK(std::memcmp(redacted.data() + 4 * kMagicIndex, original.data() + 4 * kMagicIndex, 8) == 0);
  CHECK(std::memcmp(redacted.data(), original.data(), 64) != 0);
  auto h = open(out)->header();
  REQUIRE(h.getRedact().getRestored().size() == 1);
  CHECK(h.getRedact().getRestored()[0].getAddress() == kIn + 4 * kMagicIndex);
  CHECK(std::string(h.getRedact().getCondition().cStr()) == "error:700");
  // The written capture keeps the property.
  auto holds = reduce::evaluate(options.verify.value(), out, {});
  REQUIRE(holds.is_ok());
  CHECK(holds->holds);
  // Without --verify the fault is gone.
  redact(in, tmp("fault-plain.cusnap"));
  auto plain = reduce::evaluate(options.verify.value(), tmp("fault-plain.cusnap"), {});
  REQUIRE(plain.is_ok());
  CHECK_FALSE(plain->holds);
}

TEST_CASE("verify memcheck keeps the out-of-bounds trigger too") {
  const std::string in = tmp("memcheck.cusnap"), out = tmp("memcheck-redacted.cusnap");
  write_fault_capture(in, /*recorded_error=*/true);
  reduce::RedactOptions options;
  options.verify = condition("memcheck");
  auto report = redact(in, out, options);
  REQUIRE(report.restored.size() == 1);
  CHECK(report.restored[0].address == kIn + 4 * kMagicIndex);
}

TEST_CASE("verify mismatch: the fault that makes the replay fail comes back and is listed") {
  const std::string in = tmp("mismatch.cusnap"), out = tmp("mismatch-redacted.cusnap");
  write_fault_capture(in, /*recorded_error=*/false);
  reduce::RedactOptions options;
  options.verify = condition("mismatch");
  auto report = redact(in, out, options);
  REQUIRE(report.restored.size() == 1);
  CHECK(report.restored[0].address == kIn + 4 * kMagicIndex);
  CHECK(report.restored[0].size == 8);
  // The reference replay of the result faults: its expectations are dropped, not invented.
  CHECK(report.expectations == reduce::Expectations::kDropped);
}

TEST_CASE("verify refuses a condition the original does not meet") {
  const std::string in = tmp("nofault.cusnap");
  write_pattern_capture(in);
  reduce::RedactOptions options;
  options.verify = condition("memcheck");
  auto r = reduce::redact_capture(in, tmp("nofault-redacted.cusnap"), options);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == format::ErrorCode::kInvalidArgument);
}

TEST_CASE("command: conditions run the script on the candidate") {
  const std::string in = tmp("command.cusnap");
  write_pattern_capture(in);
  auto yes = reduce::evaluate(condition("command:'test -s \"$1\"'"), in, {});
  REQUIRE(yes.is_ok());
  CHECK(yes->holds);
  auto no = reduce::evaluate(condition("command:'exit 3'"), in, {});
  REQUIRE(no.is_ok());
  CHECK_FALSE(no->holds);
  CHECK(no->why == "exit status 3");
}

TEST_CASE("conditions: names through the lookup, two-driver forms parsed, malformed refused") {
  auto lookup = [](const std::string& name) -> std::optional<int32_t> {
    if (name == "CUDA_ERROR_ILLEGAL_ADDRESS") return 700;
    return std::nullopt;
  };
  auto named = reduce::parse_condition("error:CUDA_ERROR_ILLEGAL_ADDRESS", lookup);
  REQUIRE(named.is_ok());
  CHECK(named->result == 700);
  CHECK_FALSE(reduce::parse_condition("error:CUDA_ERROR_NOPE", lookup).is_ok());
  auto between = reduce::parse_condition("mismatch:good,bad", lookup);
  REQUIRE(between.is_ok());
  CHECK(between->kind == reduce::ConditionKind::kMismatchBetween);
  CHECK(between->a == "good");
  CHECK(between->b == "bad");
  auto slower = reduce::parse_condition("slower:1.5:good,bad", lookup);
  REQUIRE(slower.is_ok());
  CHECK(slower->kind == reduce::ConditionKind::kSlower);
  CHECK(slower->factor == 1.5);
  CHECK(slower->b == "bad");
  auto plain = reduce::parse_condition("slower:2", lookup);
  REQUIRE(plain.is_ok());
  CHECK(plain->a.empty());
  for (const char* wrong : {"mismatch:", "mismatch:a", "mismatch:a,a", "mismatch:a,b,c", "slower:",
                            "slower:1", "slower:0.5", "slower:x", "slower:2:a", "slower:2:a,"})
    CHECK_FALSE(reduce::parse_condition(wrong, lookup).is_ok());
  CHECK_FALSE(reduce::parse_condition("error:0", lookup).is_ok());
  CHECK_FALSE(reduce::parse_condition("sometimes", lookup).is_ok());
}

TEST_CASE("an extracted single-kernel capture is redacted and replays") {
  // A snapshot capture of add_one; its launch extracted (snapshot route), then redacted.
  const std::string source = tmp("snap.cusnap"), extracted = tmp("snap-extract.cusnap"),
                    out = tmp("snap-extract-redacted.cusnap");
  constexpr uint64_t kChunk = 1024;
  std::vector<int> in(kN), before(kN, 0), after(kN);
  for (int i = 0; i < kN; ++i) std::memcpy(&in[i], kPattern.data() + (4 * i) % 16, 4);
  for (int i = 0; i < kN; ++i) after[i] = in[i] + 1;
  {
    cusnap::test::HeaderOptions header;
    header.snapshot = cusnap::test::SnapshotHeader{};
    header.snapshot->chunk_bytes = kChunk;
    CaptureBuilder b(source, header);
    b.module_load_ptx(kModule, ptx());
    Params p;
    p.ptr(kIn).ptr(kOut).i32(kN);
    uint64_t fn = b.function_get(kModule, kFunction, "add_one", p.layout());
    b.alloc(kIn, kN * 4);
    b.alloc(kOut, kN * 4);
    b.htod(kIn, as_bytes(in));
    b.memset32(kOut, 0, kN);
    uint64_t launch = b.launch(kFunction, "add_one", kN / 128, 128, p, 0, 0, fn);
    using Memory = std::map<uint64_t, std::vector<uint8_t>>;
    b.snapshot(
        launch, 0, cusnap::test::kBeforeLaunch,
        b.tile(Memory{{kIn, cusnap::test::to_bytes(in)}, {kOut, cusnap::test::to_bytes(before)}}));
    b.snapshot(
        launch, 0, cusnap::test::kAfterLaunch,
        b.tile(Memory{{kIn, cusnap::test::to_bytes(in)}, {kOut, cusnap::test::to_bytes(after)}}));
    b.close();
  }
  {
    auto src = open(source);
    auto plans = extract::plan_extraction(*src, extract::Selection{});
    REQUIRE(plans.is_ok());
    REQUIRE(plans->size() == 1);
    auto written = extract::write_extracted(*src, source, plans->front(), extracted);
    INFO(written.status().to_string());
    REQUIRE(written.is_ok());
  }
  REQUIRE(replay(extracted).verdict() == replayer::Verdict::kMatched);
  REQUIRE(decoded(extracted).find(kPattern) != std::string::npos);
  auto report = redact(extracted, out);
  CHECK(report.expectations == reduce::Expectations::kResealed);
  CHECK(decoded(out).find(kPattern) == std::string::npos);
  auto h = open(out)->header();
  CHECK(h.hasExtract());
  CHECK(std::string(h.getExtract().getSourcePath().cStr()).empty());
  auto replayed = replay(out);
  CHECK(replayed.verdict() == replayer::Verdict::kMatched);
  CHECK(replayed.snapshots.compared_chunks > 0);
  CHECK(replayed.snapshots.restored_chunks > 0);
}

TEST_CASE("a corrupt capture is refused, as cusnap verify judges it") {
  const std::string in = tmp("corrupt-source.cusnap"), bad = tmp("corrupt.cusnap");
  write_pattern_capture(in);
  std::vector<uint8_t> bytes = file_bytes(in);
  // Flip a byte inside the input's blob payload (its frame checksum then fails).
  auto r = open(in);
  uint64_t offset = 0;
  for (const auto& f : r->frames())
    if (f.kind == format::FrameKind::kBlob && f.raw_size == kN * 4)
      offset = f.offset + format::kFrameHeaderSize + f.stored_size / 2;
  REQUIRE(offset != 0);
  r.reset();
  bytes[offset] ^= 0x40;
  {
    std::ofstream f(bad, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  }
  auto done = reduce::redact_capture(bad, tmp("corrupt-redacted.cusnap"), {});
  REQUIRE_FALSE(done.is_ok());
  CHECK(done.status().code() == format::ErrorCode::kCorrupt);
  CHECK_FALSE(fs::exists(tmp("corrupt-redacted.cusnap")));
}

TEST_CASE("hash-names and strip-ptx-comments: no kernel name or comment is left, it replays") {
  const std::string in = tmp("names.cusnap");
  write_pattern_capture(in);
  const std::string original = decoded(in);
  // The test can fail: the names and nvcc's comments are there before.
  for (const char* s : {"add_one", "walk_list", "fault_on", "Generated by NVIDIA NVVM Compiler"})
    REQUIRE(original.find(s) != std::string::npos);
  reduce::RedactOptions options;
  options.salt = "s3cret";
  options.hash_names = true;
  options.strip_ptx_comments = true;
  auto report = redact(in, tmp("names-a.cusnap"), options);
  CHECK(report.rewritten_images == 1);
  CHECK(report.hashed_names >= 3);
  CHECK(report.cubin_entries_dropped == 0);
  const std::string text = decoded(tmp("names-a.cusnap"));
  for (const char* s : {"add_one", "walk_list", "fault_on", "NVVM", "Compiler Build ID", "//"})
    CHECK(text.find(s) == std::string::npos);
  // The renamed kernel still loads, launches and verifies on the emulator.
  auto replayed = replay(tmp("names-a.cusnap"));
  CHECK(replayed.verdict() == replayer::Verdict::kMatched);
  auto r = open(tmp("names-a.cusnap"));
  REQUIRE(r->header().hasRedact());
  CHECK(r->header().getRedact().getNamesHashed());
  CHECK(r->header().getRedact().getPtxCommentsStripped());
  // Same seed and salt: the same bytes; another salt: other names.
  redact(in, tmp("names-b.cusnap"), options);
  CHECK(file_bytes(tmp("names-a.cusnap")) == file_bytes(tmp("names-b.cusnap")));
  options.salt = "other";
  redact(in, tmp("names-c.cusnap"), options);
  CHECK(file_bytes(tmp("names-a.cusnap")) != file_bytes(tmp("names-c.cusnap")));
}

TEST_CASE("strip-ptx-comments alone keeps the names, and a cubin image is refused by name") {
  const std::string in = tmp("strip.cusnap");
  write_pattern_capture(in);
  reduce::RedactOptions options;
  options.strip_ptx_comments = true;
  redact(in, tmp("strip-out.cusnap"), options);
  const std::string text = decoded(tmp("strip-out.cusnap"));
  CHECK(text.find("add_one") != std::string::npos);
  CHECK(text.find("NVVM") == std::string::npos);
  CHECK(replay(tmp("strip-out.cusnap")).verdict() == replayer::Verdict::kMatched);

  // An ELF image (a cubin): its names cannot be rewritten here, so nothing is written.
  const std::string cubin = tmp("cubin.cusnap");
  {
    std::string elf(64, '\0');
    std::memcpy(elf.data(),
                "\x7f"
                "ELF\x02\x01\x01",
                7);
    CaptureBuilder b(cubin);
    b.module_load_ptx(kModule, elf);
    b.close();
  }
  for (bool hash : {false, true}) {
    reduce::RedactOptions o;
    o.hash_names = hash;
    o.strip_ptx_comments = !hash;
    auto refused = reduce::redact_capture(cubin, tmp("cubin-out.cusnap"), o);
    REQUIRE(!refused.is_ok());
    CHECK(refused.status().to_string().find("the code image of call 0") != std::string::npos);
    CHECK(refused.status().to_string().find("a cubin") != std::string::npos);
    CHECK(!fs::exists(tmp("cubin-out.cusnap")));
  }
}
