// End-to-end replays of hand-built captures on the emulator.
#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "cusnap/format/blob_id.h"
#include "replayer/graph_model.h"
#include "replayer/report.h"
#include "test_support.h"

using namespace cusnap::replayer;
using namespace cusnap::replayer::test;

namespace {

ReplayResult replay_ok(const std::string& path, const ReplayOptions& options) {
  auto result = replay_capture(path, options);
  if (!result) FAIL(result.error().to_string());
  return std::move(result.value());
}

}  // namespace

TEST_CASE("a capture replays on the emulator with every checksum matching", "[replay]") {
  auto capture = write_standard_capture(temp_path("slice.cusnap"));
  ReplayResult r = replay_ok(capture.path, emulator_options());
  CHECK(r.verification.matched == 2);
  CHECK(r.verification.mismatched == 0);
  CHECK(r.verification.unverified == 0);
  CHECK(r.matched());
  REQUIRE(r.launches.size() == 2);
  CHECK(r.launches[0].kernel == "axpy_int");
  CHECK(r.launches[0].seq == capture.axpy_seq);
  CHECK(r.launches[0].verification == VerifyState::kMatched);
  CHECK(r.launches[0].time.samples == 1);
  CHECK(r.relocated_ranges == 0);
  CHECK(r.memory_ranges == 2);  // a, b, c share one 2 MiB granule; x lies 4 MiB further
  CHECK(r.plan.skipped.at("failed calls") == 1);
}

TEST_CASE("replaying the same capture twice gives identical verification results", "[replay]") {
  auto capture = write_standard_capture(temp_path("twice.cusnap"));
  ReplayResult first = replay_ok(capture.path, emulator_options());
  ReplayResult second = replay_ok(capture.path, emulator_options());
  REQUIRE(first.copies.size() == second.copies.size());
  for (size_t i = 0; i < first.copies.size(); ++i) {
    CHECK(first.copies[i].seq == second.copies[i].seq);
    CHECK(first.copies[i].state == second.copies[i].state);
    CHECK(first.copies[i].actual == second.copies[i].actual);
  }
}

TEST_CASE("streams, events and asynchronous copies replay in order", "[replay]") {
  StandardOptions o;
  o.async_on_stream = true;
  auto capture = write_standard_capture(temp_path("async.cusnap"), o);
  ReplayResult r = replay_ok(capture.path, emulator_options());
  CHECK(r.verification.matched == 2);
  CHECK(r.matched());
}

TEST_CASE("a different result is reported as a mismatch at the right call", "[replay][mismatch]") {
  StandardOptions o;
  o.corrupt_b_payload = true;
  auto capture = write_standard_capture(temp_path("mismatch.cusnap"), o);
  ReplayResult r = replay_ok(capture.path, emulator_options());
  CHECK_FALSE(r.matched());
  CHECK(r.verification.mismatched == 1);
  CHECK(r.verification.matched == 1);  // x does not depend on b
  REQUIRE(r.verification.first_mismatch);
  const CopyCheck& m = *r.verification.first_mismatch;
  CHECK(m.seq == capture.dtoh_c_seq);
  CHECK(m.address == capture.c);
  CHECK(m.launches_before == 2);
  REQUIRE(m.recent_launches.size() == 2);
  CHECK(m.recent_launches[0].seq == capture.axpy_seq);
  CHECK(m.recent_launches[0].kernel == "axpy_int");
  REQUIRE(m.allocation);
  CHECK(m.allocation->seq == capture.alloc_c_seq);
  CHECK(m.allocation->address == capture.c);
  CHECK(r.launches[0].verification == VerifyState::kMismatched);
  std::string text = describe_mismatch(m);
  CHECK(text.find("call " + std::to_string(capture.dtoh_c_seq)) != std::string::npos);
  CHECK(text.find("axpy_int") != std::string::npos);
}

TEST_CASE("a mismatch after an order-dependent kernel is labelled order-dependent",
          "[replay][mismatch][order]") {
  // What a GPU may give: blocks took their tickets in reverse order. The emulator runs such a
  // kernel's blocks in index order, so the replay differs, and it can say why.
  auto capture = write_ticket_capture(temp_path("tickets_reverse.cusnap"), true);
  ReplayResult r = replay_ok(capture.path, emulator_options());
  CHECK_FALSE(r.matched());
  REQUIRE(r.order_dependent_kernels.size() == 1);
  const OrderDependentKernel& k = r.order_dependent_kernels[0];
  CHECK(k.kernel == "take_ticket");
  CHECK(k.first_seq == capture.launch_seq);
  CHECK(k.reason.find("atom.global.inc.u32") != std::string::npos);
  CHECK(k.reason.find("PTX line") != std::string::npos);
  CHECK(r.verification.mismatched == 1);
  CHECK(r.verification.order_dependent == 1);
  REQUIRE(r.verification.first_mismatch);
  const CopyCheck& m = *r.verification.first_mismatch;
  CHECK(m.seq == capture.dtoh_seq);
  REQUIRE(m.order_dependent.size() == 1);
  CHECK(m.order_dependent[0].kernel == "take_ticket");
  const std::string text = describe_mismatch(m);
  CHECK(text.find("order-dependent: kernel take_ticket") != std::string::npos);
  // The afterLaunch snapshot: the tickets differ, the counter (8 either way) does not.
  CHECK(r.snapshots.mismatched_chunks == 1);
  CHECK(r.snapshots.order_dependent_checks == 1);
  REQUIRE(r.snapshots.checks.size() == 1);
  CHECK(r.snapshots.checks[0].order_dependent.size() == 1);

  // Blocks in index order: the same kernel matches, still listed as order-dependent, and no
  // check carries the label.
  auto in_order = write_ticket_capture(temp_path("tickets_forward.cusnap"), false);
  ReplayResult ok = replay_ok(in_order.path, emulator_options());
  CHECK(ok.matched());
  CHECK(ok.order_dependent_kernels.size() == 1);
  CHECK(ok.verification.order_dependent == 0);
  CHECK(ok.snapshots.order_dependent_checks == 0);
  CHECK(ok.snapshots.checks.at(0).order_dependent.empty());
}

TEST_CASE("a plain mismatch carries no order-dependence label", "[replay][mismatch][order]") {
  StandardOptions o;
  o.corrupt_b_payload = true;
  auto capture = write_standard_capture(temp_path("plain_mismatch.cusnap"), o);
  ReplayResult r = replay_ok(capture.path, emulator_options());
  REQUIRE(r.verification.first_mismatch);
  CHECK(r.order_dependent_kernels.empty());
  CHECK(r.verification.order_dependent == 0);
  CHECK(r.verification.first_mismatch->order_dependent.empty());
  CHECK(describe_mismatch(*r.verification.first_mismatch).find("order-dependent") ==
        std::string::npos);
}

TEST_CASE("verification can be turned off", "[replay]") {
  StandardOptions o;
  o.corrupt_b_payload = true;
  auto capture = write_standard_capture(temp_path("noverify.cusnap"), o);
  ReplayOptions options = emulator_options();
  options.verify = VerifyMode::kNone;
  ReplayResult r = replay_ok(capture.path, options);
  CHECK(r.matched());
  CHECK(r.verification.unverified == 2);
}

TEST_CASE("a replay that compared nothing says nothing verified, never matched", "[replay]") {
  StandardOptions o;
  o.no_checksums = true;
  auto capture = write_standard_capture(temp_path("unverified.cusnap"), o);
  ReplayResult r = replay_ok(capture.path, emulator_options());
  CHECK(r.verification.unverified == 2);
  CHECK(r.nothing_verified());
  CHECK(r.verdict() == Verdict::kNothingVerified);
  std::string report = report_json(r, emulator_options());
  CHECK(report.find("\"result\":\"nothing verified\"") != std::string::npos);

  // The same calls with checksums prove something; a changed input proves a difference.
  auto checked = write_standard_capture(temp_path("verified.cusnap"));
  CHECK(replay_ok(checked.path, emulator_options()).verdict() == Verdict::kMatched);
  StandardOptions changed;
  changed.corrupt_b_payload = true;
  auto bad = write_standard_capture(temp_path("unverified_bad.cusnap"), changed);
  CHECK(replay_ok(bad.path, emulator_options()).verdict() == Verdict::kMismatched);
}

TEST_CASE("a launch selection that selects nothing is warned about", "[replay][timing]") {
  auto capture = write_standard_capture(temp_path("select_none.cusnap"));
  auto warnings_for = [&](ReplayOptions options) {
    std::vector<std::string> warnings;
    options.on_message = [&](MessageLevel level, const std::string& m) {
      if (level == MessageLevel::kWarning && m.find("selected") != std::string::npos)
        warnings.push_back(m);
    };
    ReplayResult r = replay_ok(capture.path, options);
    CHECK(r.selection_requested);
    return std::make_pair(r.selected_launches(), warnings);
  };
  ReplayOptions no_such = emulator_options();
  no_such.kernel_regex = "no_such_kernel";
  auto [none, warnings] = warnings_for(no_such);
  CHECK(none == 0);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("--kernel-name no_such_kernel selected none of the capture's 2 "
                         "launch(es); its kernels: axpy_int increment") != std::string::npos);

  ReplayOptions past_end = emulator_options();
  past_end.launch_skip = 2;  // the capture has two launches
  auto [beyond, skip_warnings] = warnings_for(past_end);
  CHECK(beyond == 0);
  REQUIRE(skip_warnings.size() == 1);
  CHECK(skip_warnings[0].find("--launch-skip 2 selected none") != std::string::npos);

  ReplayOptions last = emulator_options();
  last.launch_skip = 1;
  auto [one, no_warnings] = warnings_for(last);
  CHECK(one == 1);
  CHECK(no_warnings.empty());
}

TEST_CASE("a capture that ended with a device assert replays it as the expected outcome",
          "[replay][sticky]") {
  auto capture = write_assert_capture(temp_path("assert.cusnap"));
  ReplayResult r = replay_ok(capture.path, emulator_options());
  REQUIRE(r.expected_error);
  const ExpectedErrorCheck& e = *r.expected_error;
  CHECK(e.recorded.seq == capture.sync_seq);
  CHECK(e.recorded.result == 710);
  CHECK(e.recorded.last_launch_seq == capture.check_seq);
  CHECK(e.name == "CUDA_ERROR_ASSERT");
  CHECK(e.reproduced);
  CHECK(e.observed_result == 710);
  // Everything before the error was verified.
  CHECK(r.verification.matched == 1);
  CHECK(r.verdict() == Verdict::kMatched);
  std::string report = report_json(r, emulator_options());
  CHECK(report.find("\"expected_error\":{\"call\":" + std::to_string(capture.sync_seq)) !=
        std::string::npos);

  // Data that does not trip the assert: the recorded outcome is not reproduced, a difference.
  auto clean = write_assert_capture(temp_path("noassert.cusnap"), false);
  ReplayResult n = replay_ok(clean.path, emulator_options());
  REQUIRE(n.expected_error);
  CHECK_FALSE(n.expected_error->reproduced);
  CHECK(n.expected_error->observed_result == 0);
  CHECK(n.verdict() == Verdict::kMismatched);
}

TEST_CASE("sticky errors are the ones after which the context is unusable", "[replay][sticky]") {
  CHECK(is_sticky_error(710));        // CUDA_ERROR_ASSERT
  CHECK(is_sticky_error(700));        // CUDA_ERROR_ILLEGAL_ADDRESS
  CHECK(is_sticky_error(719));        // CUDA_ERROR_LAUNCH_FAILED
  CHECK_FALSE(is_sticky_error(1));    // CUDA_ERROR_INVALID_VALUE
  CHECK_FALSE(is_sticky_error(701));  // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: nothing broken
  // The standard capture's failed launch (INVALID_VALUE) is no recorded error.
  auto capture = write_standard_capture(temp_path("not_sticky.cusnap"));
  CHECK_FALSE(replay_ok(capture.path, emulator_options()).expected_error);
}

TEST_CASE("a replay inside its time limits runs as it does without them", "[replay][timeout]") {
  auto capture = write_standard_capture(temp_path("limits.cusnap"));
  ReplayOptions options = emulator_options();
  options.timeout_launch_seconds = 120;  // each launch waited for, the watchdog never fires
  options.timeout_seconds = 600;
  options.repeat = 3;
  bool fired = false;
  options.on_timeout = [&](const TimeoutEvent&) { fired = true; };
  ReplayResult r = replay_ok(capture.path, options);
  CHECK_FALSE(fired);
  CHECK(r.verdict() == Verdict::kMatched);
  REQUIRE(r.launches.size() == 2);
  CHECK(r.launches[1].time.samples == 3);

  options.timeout_seconds = -1;
  auto negative = replay_capture(capture.path, options);
  REQUIRE_FALSE(negative);
  CHECK(negative.error().kind() == ErrorKind::kInvalidArgument);
}

namespace {

// Host memory a kernel writes and no copy touches (the kernel increments it from zero, a second
// kernel reads it into device memory, which is copied back): replay must recreate it.
std::string write_host_memory_capture(const std::string& path, uint64_t host) {
  std::vector<int> b(kN), c(kN);
  for (int i = 0; i < kN; ++i) {
    b[i] = i * 5 - 17;
    c[i] = kScale * 1 + b[i];  // the host memory holds 0 + 1 after `increment`
  }
  CaptureBuilder w(path);
  w.module_load_ptx(0xA000, test_ptx());
  w.function_get(0xA000, 0xF001, "axpy_int");
  w.function_get(0xA000, 0xF002, "increment");
  w.host_alloc(host, kN * 4);
  w.alloc(kBase, kN * 4);
  w.alloc(kBase + 0x1000, kN * 4);
  w.htod(kBase, as_bytes(b));
  w.launch(0xF002, "increment", (kN + 127) / 128, 128, Params().ptr(host).i32(kN), 0, 0);
  w.launch(0xF001, "axpy_int", (kN + 255) / 256, 256,
           Params().ptr(host).ptr(kBase).ptr(kBase + 0x1000).i32(kScale).i32(kN), 0, 1);
  w.dtoh(kBase + 0x1000, kN * 4, cusnap::format::checksum64(as_bytes(c)));
  w.free_host(host);
  w.close();
  return path;
}

}  // namespace

TEST_CASE("host memory kernels reach is recreated, at its address or relocated", "[replay][host]") {
  const uint64_t host = 0x7ffd00000000ull;
  std::string path = write_host_memory_capture(temp_path("host_memory.cusnap"), host);
  ReplayResult same = replay_ok(path, emulator_options());
  CHECK(same.verdict() == Verdict::kMatched);
  CHECK(same.verification.matched == 1);
  CHECK(same.launches[0].pointers_rewritten == 0);

  // Not at its address: pointer parameters naming it are rewritten.
  ReplayOptions options = emulator_options();
  options.address_mode = AddressMode::kRelocate;
  std::vector<std::string> infos;
  options.on_message = [&](MessageLevel level, const std::string& m) {
    if (level == MessageLevel::kInfo) infos.push_back(m);
  };
  ReplayResult moved = replay_ok(path, options);
  CHECK(moved.verdict() == Verdict::kMatched);
  CHECK(moved.launches[0].pointers_rewritten == 1);
  bool said = false;
  for (const auto& m : infos)
    said |= m.find("could not be had at its captured device") == 0 ||
            m.find("host memory of call") == 0;
  CHECK(said);
}

TEST_CASE("an occupied captured address falls back to relocation, loudly", "[replay][relocation]") {
  auto capture = write_standard_capture(temp_path("reloc.cusnap"));
  // Occupy the captured range in this process, as another mapping of the replaying process would.
  void* blocker = mmap(reinterpret_cast<void*>(kBase), 4u << 20, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  REQUIRE(blocker == reinterpret_cast<void*>(kBase));
  std::vector<std::string> warnings;
  ReplayOptions options = emulator_options();
  options.on_message = [&](MessageLevel level, const std::string& m) {
    if (level == MessageLevel::kWarning) warnings.push_back(m);
  };
  auto result = replay_capture(capture.path, options);
  munmap(blocker, 4u << 20);
  REQUIRE(result);
  ReplayResult& r = result.value();
  CHECK(r.relocated_ranges == 1);  // the granule of a, b, c; x's granule is still free
  bool loud = false;
  for (const auto& w : warnings) loud = loud || w.find("RELOCATED") != std::string::npos;
  CHECK(loud);
  // Pointer parameters were rewritten, so the results still match.
  CHECK(r.launches[0].pointers_rewritten == 3);
  CHECK(r.launches[1].pointers_rewritten == 0);
  CHECK(r.matched());
}

TEST_CASE("forced relocation rewrites parameters", "[replay][relocation]") {
  auto capture = write_standard_capture(temp_path("forced.cusnap"));
  ReplayOptions options = emulator_options();
  options.address_mode = AddressMode::kRelocate;
  std::vector<std::string> warnings, infos;
  options.on_message = [&](MessageLevel level, const std::string& m) {
    (level == MessageLevel::kWarning ? warnings : infos).push_back(m);
  };
  ReplayResult r = replay_ok(capture.path, options);
  // Relocation is what was asked for: said once, as information, not as "results may be wrong".
  auto mentions = [](const std::vector<std::string>& messages, const std::string& what) {
    size_t n = 0;
    for (const auto& m : messages) n += m.find(what) != std::string::npos ? 1 : 0;
    return n;
  };
  CHECK(mentions(warnings, "elocat") == 0);
  CHECK(mentions(r.messages, "elocat") == 0);
  CHECK(mentions(infos, "--address-mode relocate: 2 of 2 device range(s)") == 1);
  CHECK(r.relocated_ranges == 2);
  CHECK(r.launches[0].pointers_rewritten == 3);
  CHECK(r.launches[1].pointers_rewritten == 1);
  CHECK(r.matched());
}

TEST_CASE("repetitions restore the inputs of a launch", "[replay][timing]") {
  auto capture = write_standard_capture(temp_path("repeat.cusnap"));
  ReplayOptions options = emulator_options();
  options.kernel_regex = "regex:incr";
  options.repeat = 5;
  options.warmup = 2;
  ReplayResult r = replay_ok(capture.path, options);
  REQUIRE(r.launches.size() == 2);
  CHECK_FALSE(r.launches[0].selected);
  CHECK(r.launches[0].time.samples == 0);
  CHECK(r.launches[1].selected);
  CHECK(r.launches[1].time.samples == 5);
  CHECK(r.launches[1].time.min_ms <= r.launches[1].time.median_ms);
  CHECK(r.launches[1].time.median_ms <= r.launches[1].time.max_ms);
  // `increment` ran 7 times; had its input not been restored, x would be off by 6.
  CHECK(r.matched());
}

TEST_CASE("launch selection follows Nsight Compute's skip and count", "[replay][timing]") {
  auto capture = write_standard_capture(temp_path("select.cusnap"));
  ReplayOptions options = emulator_options();
  options.launch_skip = 1;
  options.launch_count = 1;
  ReplayResult r = replay_ok(capture.path, options);
  REQUIRE(r.launches.size() == 2);
  CHECK_FALSE(r.launches[0].selected);
  CHECK(r.launches[1].selected);

  auto bad = LaunchSelector::create("regex:([", 0, 0);
  CHECK_FALSE(bad);
}

TEST_CASE("the target check refuses code the device cannot run", "[replay][target]") {
  StandardOptions o;
  o.ptx_target = "sm_120";
  auto capture = write_standard_capture(temp_path("target.cusnap"), o);
  auto result = replay_capture(capture.path, emulator_options());
  REQUIRE_FALSE(result);
  CHECK(result.error().kind() == ErrorKind::kTarget);
  CHECK(result.error().to_string().find("compute_120") != std::string::npos);
}

TEST_CASE("the report is JSON with the documented fields", "[replay][report]") {
  auto capture = write_standard_capture(temp_path("report.cusnap"));
  ReplayOptions options = emulator_options();
  ReplayResult r = replay_ok(capture.path, options);
  std::string json = report_json(r, options);
  for (const char* field :
       {"\"schema\":\"cusnap-replay-report\"",
        "\"capture\":", "\"driver\":", "\"device\":", "\"verification\":", "\"result\":\"matched\"",
        "\"launches\":", "\"kernel\":\"axpy_int\"", "\"grid\":[4,1,1]", "\"block\":[256,1,1]",
        "\"time_ms\":", "\"median\":", "\"stddev\":", "\"samples\":1"}) {
    INFO(field);
    CHECK(json.find(field) != std::string::npos);
  }
  // Balanced braces and brackets outside strings: a cheap structural check.
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char ch = json[i];
    if (in_string) {
      if (ch == '\\')
        ++i;
      else if (ch == '"')
        in_string = false;
      continue;
    }
    if (ch == '"') in_string = true;
    if (ch == '{' || ch == '[') ++depth;
    if (ch == '}' || ch == ']') --depth;
    REQUIRE(depth >= 0);
  }
  CHECK(depth == 0);
  std::string path = temp_path("report.json");
  CHECK_FALSE(write_report(path, r, options));
  CHECK(read_text(path) == json);
}

TEST_CASE("the report stays valid UTF-8 JSON whatever the names hold", "[replay][report]") {
  // Kernel names, paths and warnings come from the capture: a byte that is not UTF-8 becomes
  // U+FFFD and control characters are escaped (cusnap/common/json_writer.h), so every JSON
  // reader accepts the report.
  ReplayResult r;
  r.capture_path = "dir\x01/app\xff.cusnap";
  LaunchReport launch;
  launch.kernel = "k\xc3(\x7f";
  r.launches.push_back(launch);
  r.messages.push_back("tab\there");
  std::string json = report_json(r, ReplayOptions{});
  CHECK(json.find("\"path\":\"dir\\u0001/app\xEF\xBF\xBD.cusnap\"") != std::string::npos);
  CHECK(json.find("\"kernel\":\"k\xEF\xBF\xBD(\x7f\"") != std::string::npos);
  CHECK(json.find("\"tab\\there\"") != std::string::npos);
  CHECK(json.find('\xff') == std::string::npos);
  CHECK(json.back() == '\n');
}

namespace {

// A kernel that follows a pointer stored in device memory: only same-address replay keeps it.
std::string write_embedded_pointer_capture(const std::string& path, uint64_t* dtoh_seq) {
  std::vector<int> x(kN);
  std::vector<int> expected(kN);
  for (int i = 0; i < kN; ++i) {
    x[i] = 3 * i;
    expected[i] = x[i] + 5;
  }
  const uint64_t s_addr = kBase + 0x3000, x_addr = kBase + 0x400000;
  struct {
    uint64_t data;
    int32_t n;
    int32_t pad;
  } indirect{x_addr, kN, 0};
  std::vector<uint8_t> s_bytes(sizeof indirect);
  std::memcpy(s_bytes.data(), &indirect, sizeof indirect);
  CaptureBuilder w(path);
  w.module_load_ptx(0xA000, test_ptx());
  w.function_get(0xA000, 0xF003, "through_struct");
  w.alloc(s_addr, sizeof indirect);
  w.alloc(x_addr, kN * 4);
  w.htod(x_addr, as_bytes(x));
  w.htod(s_addr, s_bytes);
  w.launch(0xF003, "through_struct", (kN + 255) / 256, 256, Params().ptr(s_addr).i32(5));
  *dtoh_seq = w.dtoh(x_addr, kN * 4, cusnap::format::checksum64(as_bytes(expected)));
  w.close();
  return path;
}

}  // namespace

TEST_CASE("pointers stored in device memory stay valid at the captured addresses",
          "[replay][relocation]") {
  uint64_t dtoh_seq = 0;
  std::string path = write_embedded_pointer_capture(temp_path("embedded.cusnap"), &dtoh_seq);
  ReplayResult same = replay_ok(path, emulator_options());
  CHECK(same.relocated_ranges == 0);
  CHECK(same.verification.matched == 1);
  CHECK(same.matched());

  // Relocated, the stored pointer still names the captured address: the replay must not
  // pretend all is well (an access error or a mismatch), and it must have said so (as
  // information: relocation was asked for).
  ReplayOptions options = emulator_options();
  options.address_mode = AddressMode::kRelocate;
  bool loud = false;
  options.on_message = [&](MessageLevel, const std::string& m) {
    loud = loud || m.find("pointers stored in device memory are not") != std::string::npos;
  };
  auto relocated = replay_capture(path, options);
  CHECK(loud);
  if (relocated) {
    CHECK_FALSE(relocated.value().matched());
  } else {
    CHECK(relocated.error().kind() == ErrorKind::kDriver);
  }
}

namespace {

// A graph of a memset node and a device-to-host memcpy node after it, launched twice; the
// capture's checksum of the second launch's copy is `second_checksum`.
std::string write_graph_capture(const std::string& path, uint64_t second_checksum) {
  constexpr uint64_t kAddress = 0x7f0000000000, kCount = 256, kGraph = 0x6a00, kExec = 0x6e00;
  constexpr uint64_t kMemsetNode = 0x6b01, kCopyNode = 0x6b02, kStream = 0x5eed00;
  std::vector<uint32_t> filled(kCount, 0x01020304u);
  cusnap::test::CaptureBuilder w(path);
  w.stream_create(kStream);
  w.alloc(kAddress, kCount * 4);
  w.graph_create(kGraph);
  w.graph_memset_node(kGraph, kMemsetNode, {}, kAddress, 0x01020304u, kCount);
  w.graph_dtoh_node(kGraph, kCopyNode, {kMemsetNode}, kAddress, kCount * 4);
  w.graph_instantiate(kExec, kGraph);
  uint64_t first = w.graph_launch(kExec, kStream, 0);
  w.deferred_node_checksum(first, kCopyNode,
                           cusnap::format::checksum64(cusnap::test::as_bytes(filled)));
  uint64_t second = w.graph_launch(kExec, kStream, 1);
  w.deferred_node_checksum(second, kCopyNode, second_checksum);
  w.close();
  return path;
}

}  // namespace

TEST_CASE("a graph's memcpy node is verified after every launch of the graph", "[replay][graph]") {
  std::vector<uint32_t> filled(256, 0x01020304u);
  uint64_t right = cusnap::format::checksum64(cusnap::test::as_bytes(filled));
  ReplayResult ok =
      replay_ok(write_graph_capture(temp_path("graph.cusnap"), right), emulator_options());
  CHECK(ok.verification.matched == 2);
  CHECK(ok.verification.mismatched == 0);
  CHECK(ok.matched());

  // The second launch's copy delivered other bytes at capture: the replay must say so.
  ReplayResult bad =
      replay_ok(write_graph_capture(temp_path("graph_bad.cusnap"), right ^ 1), emulator_options());
  CHECK(bad.verification.matched == 1);
  CHECK(bad.verification.mismatched == 1);
  CHECK_FALSE(bad.matched());
}

namespace {

// The start of the graph captures below: `increment` (function 0xF002) loaded, a stream, a
// buffer of `count` ints and an empty graph.
void begin_increment_graph(cusnap::test::CaptureBuilder& w, uint64_t stream, uint64_t address,
                           uint64_t count, uint64_t graph) {
  w.module_load_ptx(0xA000, test_ptx());
  w.function_get(0xA000, 0xF002, "increment");
  w.stream_create(stream);
  w.alloc(address, count * 4);
  w.graph_create(graph);
}

// A kernel node (`increment`) made first, a memset node (1s) second and made its dependency
// afterwards, and a device-to-host memcpy node after the kernel: the graph leaves 2s, though a
// run in creation order would leave 1s.
std::string write_late_edge_graph(const std::string& path) {
  constexpr uint64_t kAddress = 0x7f0000000000, kCount = 64, kGraph = 0x6a00, kExec = 0x6e00;
  constexpr uint64_t kKernel = 0x6b01, kOnes = 0x6b02, kCopy = 0x6b03, kStream = 0x5eed00;
  std::vector<uint32_t> twos(kCount, 2u);
  cusnap::test::CaptureBuilder w(path);
  begin_increment_graph(w, kStream, kAddress, kCount, kGraph);
  w.graph_kernel_node(kGraph, kKernel, {}, 0xF002, "increment", 1, kCount,
                      cusnap::test::Params().ptr(kAddress).i32(kCount));
  w.graph_memset_node(kGraph, kOnes, {}, kAddress, 1u, kCount);
  w.graph_dtoh_node(kGraph, kCopy, {kKernel}, kAddress, kCount * 4);
  w.graph_add_edges(kGraph, {{kOnes, kKernel}});
  w.graph_instantiate(kExec, kGraph);
  uint64_t launch = w.graph_launch(kExec, kStream, 0);
  w.deferred_node_checksum(launch, kCopy, cusnap::format::checksum64(cusnap::test::as_bytes(twos)));
  w.close();
  return path;
}

}  // namespace

TEST_CASE("a graph launch run node by node follows the graph's dependencies, not creation order",
          "[replay][graph]") {
  std::string path = write_late_edge_graph(temp_path("graph_late_edge.cusnap"));
  for (GraphTiming timing : {GraphTiming::kGraph, GraphTiming::kNodes}) {
    CAPTURE(graph_timing_name(timing));
    ReplayOptions options = emulator_options();
    options.graph_timing = timing;
    ReplayResult r = replay_ok(path, options);
    CHECK(r.verification.matched == 1);
    CHECK(r.verification.mismatched == 0);
    CHECK(r.matched());
    REQUIRE(r.launches.size() == 1);
    CHECK(r.launches[0].graph_node == 0x6b01);
    CHECK(r.launches[0].kernel == "increment");
    // Timed one by one only node by node.
    CHECK((r.launches[0].time.samples > 0) == (timing == GraphTiming::kNodes));
  }
}

namespace {

// A graph with a memset node, cloned; the original changed after the clone (a kernel node added)
// and the clone instantiated and launched: its memory holds the memset alone. A node of the
// clone named later (its handle comes from cuGraphNodeFindInClone, never recorded typed) is an
// error, not a silent change.
std::string write_clone_capture(const std::string& path, bool use_clone_node, uint64_t* dtoh_seq) {
  constexpr uint64_t kAddress = 0x7f0000000000, kCount = 64, kGraph = 0x6a00, kClone = 0x6a01;
  constexpr uint64_t kExec = 0x6e00, kSet = 0x6b01, kKernel = 0x6b02, kStream = 0x5eed00;
  std::vector<uint32_t> nines(kCount, 9u);
  cusnap::test::CaptureBuilder w(path);
  begin_increment_graph(w, kStream, kAddress, kCount, kGraph);
  w.graph_memset_node(kGraph, kSet, {}, kAddress, 9u, kCount);
  w.graph_clone(kClone, kGraph);
  w.graph_kernel_node(kGraph, kKernel, {kSet}, 0xF002, "increment", 1, kCount,
                      cusnap::test::Params().ptr(kAddress).i32(kCount));
  if (use_clone_node) w.graph_add_edges(kClone, {{0x6c01, 0x6c02}});
  w.graph_instantiate(kExec, kClone);
  w.graph_launch(kExec, kStream, 0);
  w.stream_sync(kStream);
  *dtoh_seq =
      w.dtoh(kAddress, kCount * 4, cusnap::format::checksum64(cusnap::test::as_bytes(nines)));
  w.close();
  return path;
}

}  // namespace

TEST_CASE("a cloned graph replays as the graph was when cloned", "[replay][graph]") {
  uint64_t dtoh_seq = 0;
  for (GraphTiming timing : {GraphTiming::kGraph, GraphTiming::kNodes}) {
    CAPTURE(graph_timing_name(timing));
    ReplayOptions options = emulator_options();
    options.graph_timing = timing;
    ReplayResult r =
        replay_ok(write_clone_capture(temp_path("graph_clone.cusnap"), false, &dtoh_seq), options);
    CHECK(r.verification.matched == 1);
    CHECK(r.verification.mismatched == 0);
    CHECK(r.launches.empty());  // the kernel node was added to the original after the clone
  }
  auto refused =
      replay_capture(write_clone_capture(temp_path("graph_clone_node.cusnap"), true, &dtoh_seq),
                     emulator_options());
  REQUIRE_FALSE(refused);
  CHECK(refused.error().to_string().find("a graph node the capture never added") !=
        std::string::npos);
}

namespace {

// The kernel nodes graph_launch_kernels() finds for each graph launch, from the plan alone, are
// the ones the replay ran and listed for it, in the same order (cusnap extract selects kernel
// nodes by the former, `cusnap replay --kernel-name` counts the latter).
void check_model_matches_replay(const std::string& path) {
  auto reader = cusnap::format::Reader::open(path);
  REQUIRE(reader);
  auto plan = build_plan(*reader.value());
  REQUIRE(plan);
  std::map<uint64_t, std::vector<uint64_t>> expected;  // graph launch seq -> nodes
  for (const auto& [seq, kernels] : cusnap::replayer::graph_launch_kernels(plan.value())) {
    for (const auto& k : kernels) {
      expected[seq].push_back(k.node);
      CHECK(k.kernel != nullptr);
      CHECK(k.kernel_seq < seq);
    }
  }
  for (GraphTiming timing : {GraphTiming::kGraph, GraphTiming::kNodes}) {
    CAPTURE(graph_timing_name(timing));
    ReplayOptions options = emulator_options();
    options.graph_timing = timing;
    ReplayResult r = replay_ok(path, options);
    std::map<uint64_t, std::vector<uint64_t>> ran;
    for (const auto& l : r.launches)
      if (l.graph_node != 0) ran[l.seq].push_back(l.graph_node);
    for (auto it = expected.begin(); it != expected.end();)  // launches that ran no kernel
      it = it->second.empty() ? expected.erase(it) : std::next(it);
    CHECK(ran == expected);
  }
}

}  // namespace

TEST_CASE(
    "the driver-free graph model lists the kernel nodes each graph launch runs, as the "
    "replay does",
    "[replay][graph]") {
  check_model_matches_replay(write_late_edge_graph(temp_path("graph_model_late_edge.cusnap")));
  uint64_t dtoh_seq = 0;
  check_model_matches_replay(
      write_clone_capture(temp_path("graph_model_clone.cusnap"), false, &dtoh_seq));
}
