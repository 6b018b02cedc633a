// `cusnap verify`: exit codes 0/2/3/4/1 and messages that name the frame, offset and last call.
// Expected values come from walking the byte layout directly (cli_test_util.h), not the reader.
#include <catch2/catch.hpp>
#include <random>

#include "capture_builder.h"
#include "sample_fixture.h"

using namespace cusnap::cli_test;

namespace {

// Last seq of the call frames that end at or before `cut`, or -1 when there is none.
int64_t last_complete_seq(const std::vector<RawFrame>& frames, uint64_t cut) {
  int64_t last = -1;
  for (const auto& f : frames) {
    if (f.end() <= cut && f.kind == kKindCalls) last = static_cast<int64_t>(f.last_seq);
  }
  return last;
}

// End of the last frame that is complete at `cut`.
uint64_t complete_end(const std::vector<RawFrame>& frames, uint64_t cut) {
  uint64_t end = 32;
  for (const auto& f : frames) {
    if (f.end() <= cut) end = f.end();
  }
  return end;
}

}  // namespace

TEST_CASE("verify: a whole file exits 0", "[verify]") {
  const Sample& s = sample();
  RunResult r = run_cusnap({"verify", s.path});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("whole: " + std::to_string(s.expected.calls.size()) + " calls, " +
                        std::to_string(s.expected.launches) + " launches",
                    0) == 0);
}

TEST_CASE("verify: truncated files exit 2 and say where the capture ends", "[verify]") {
  const Sample& s = sample();
  const auto bytes = read_file(s.path);
  const auto frames = walk_frames(bytes);
  REQUIRE(frames.size() > 6);
  REQUIRE(frames.back().kind == kKindIndex);
  REQUIRE(frames.back().end() + 32 == bytes.size());

  std::vector<uint64_t> cuts;
  for (size_t i = 1; i < frames.size(); ++i) {
    cuts.push_back(frames[i].offset);                                   // at a frame boundary
    cuts.push_back(frames[i].offset + 40);                              // inside a frame header
    cuts.push_back(frames[i].offset + 80 + frames[i].stored_size / 2);  // inside a payload
  }
  cuts.push_back(bytes.size() - 1);  // inside the trailer
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 10; ++i)
    cuts.push_back(frames[1].offset + rng() % (bytes.size() - frames[1].offset));

  std::string dir = scratch_dir("verify_truncated");
  for (uint64_t cut : cuts) {
    std::vector<uint8_t> head(bytes.begin(), bytes.begin() + static_cast<long>(cut));
    std::string path = dir + "/cut.cusnap";
    write_file(path, head);
    RunResult r = run_cusnap({"verify", path});
    INFO("cut at " << cut << "\n" << r.out << r.err);
    CHECK(r.exit_code == 2);
    int64_t last = last_complete_seq(frames, cut);
    std::string ends = last >= 0 ? "capture ends after call " + std::to_string(last)
                                 : "capture ends before the first call";
    CHECK(r.out.rfind("truncated: " + ends + "; complete frames end at byte offset " +
                          std::to_string(complete_end(frames, cut)),
                      0) == 0);
  }
}

TEST_CASE("verify: a file cut inside its header frame exits 2", "[verify]") {
  const Sample& s = sample();
  auto bytes = read_file(s.path);
  auto frames = walk_frames(bytes);
  std::string path = scratch_dir("verify_cut_header") + "/cut.cusnap";
  bytes.resize(frames[0].offset + 80 + frames[0].stored_size / 2);
  write_file(path, bytes);
  RunResult r = run_cusnap({"verify", path});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.rfind("truncated:", 0) == 0);
}

TEST_CASE("verify: a flipped bit exits 3 naming frame, offset and last good call", "[verify]") {
  const Sample& s = sample();
  const auto bytes = read_file(s.path);
  const auto frames = walk_frames(bytes);
  std::string path = scratch_dir("verify_corrupt") + "/flipped.cusnap";

  // Every call and blob frame, payload and header: the bad frame is always found.
  for (size_t k = 1; k + 1 < frames.size(); ++k) {
    for (uint64_t where : {frames[k].offset + 80 + frames[k].stored_size / 2,  // payload
                           frames[k].offset + 20}) {                           // header (raw_size)
      if (where >= frames[k].end()) continue;
      auto damaged = bytes;
      damaged[where] ^= 0x10;
      write_file(path, damaged);
      RunResult r = run_cusnap({"verify", path});
      INFO("frame " << k << " kind " << int(frames[k].kind) << " byte " << where << "\n"
                    << r.out << r.err);
      CHECK(r.exit_code == 3);
      int64_t last = last_complete_seq(frames, frames[k].offset);
      std::string last_text = last >= 0 ? "last good call " + std::to_string(last) : "no good call";
      CHECK(r.out.rfind("corrupt: frame " + std::to_string(k) + " at byte offset " +
                            std::to_string(frames[k].offset) + " failed: ",
                        0) == 0);
      CHECK(r.out.find("; " + last_text + "\n") != std::string::npos);
    }
  }
}

TEST_CASE("verify: damaged trailer, file header and header frame exit 3", "[verify]") {
  const Sample& s = sample();
  const auto bytes = read_file(s.path);
  const auto frames = walk_frames(bytes);
  std::string path = scratch_dir("verify_corrupt_edges") + "/flipped.cusnap";

  auto damaged = bytes;
  damaged[bytes.size() - 20] ^= 1;  // trailer
  write_file(path, damaged);
  RunResult r = run_cusnap({"verify", path});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.out.rfind("corrupt: the trailer at byte offset " + std::to_string(bytes.size() - 32),
                    0) == 0);
  CHECK(r.out.find("last good call " + std::to_string(s.expected.calls.size() - 1)) !=
        std::string::npos);

  damaged = bytes;
  damaged[frames[0].offset + 80 + frames[0].stored_size / 2] ^= 1;  // header frame payload
  write_file(path, damaged);
  r = run_cusnap({"verify", path});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.out.rfind("corrupt: frame 0", 0) == 0);

  damaged = bytes;
  damaged[12] ^= 1;  // file header flags
  write_file(path, damaged);
  r = run_cusnap({"verify", path});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 3);
}

TEST_CASE("verify and info on files that are not captures", "[verify]") {
  std::string dir = scratch_dir("verify_garbage");
  std::mt19937 rng(3);
  std::vector<uint8_t> garbage(5000);
  for (auto& b : garbage) b = static_cast<uint8_t>(rng());
  write_file(dir + "/garbage.bin", garbage);
  write_file(dir + "/empty.bin", {});

  for (const char* command : {"verify", "info", "dump"}) {
    INFO(command);
    RunResult r = run_cusnap({command, dir + "/garbage.bin"});
    CHECK(r.exit_code == 4);
    CHECK((r.out + r.err).find("garbage.bin") != std::string::npos);
    CHECK((r.out + r.err).find("magic") != std::string::npos);

    r = run_cusnap({command, dir + "/empty.bin"});
    CHECK((r.exit_code == 2 || r.exit_code == 4));
    CHECK((r.out + r.err).find("empty.bin") != std::string::npos);

    r = run_cusnap({command, dir + "/does-not-exist.cusnap"});
    CHECK(r.exit_code == 1);
    CHECK((r.out + r.err).find("does-not-exist.cusnap") != std::string::npos);

    r = run_cusnap({command, dir});  // a directory
    CHECK(r.exit_code == 1);
  }
}

TEST_CASE("damaged files never crash info, dump or verify", "[verify][robustness]") {
  const Sample& s = sample();
  const auto bytes = read_file(s.path);
  std::string path = scratch_dir("verify_mutations") + "/mutated.cusnap";
  std::mt19937_64 rng(2024);
  for (int round = 0; round < 12; ++round) {
    auto damaged = bytes;
    // A burst of random bytes somewhere, sometimes followed by a cut.
    uint64_t at = rng() % damaged.size();
    for (int i = 0; i < 1 + static_cast<int>(rng() % 64) && at + i < damaged.size(); ++i) {
      damaged[at + i] = static_cast<uint8_t>(rng());
    }
    if (round % 3 == 0) damaged.resize(rng() % damaged.size());
    write_file(path, damaged);
    for (const char* command : {"verify", "info", "dump"}) {
      RunResult r = run_cusnap({command, path});
      INFO("round " << round << " " << command << "\n" << r.out.substr(0, 2000) << r.err);
      CHECK(r.exit_code >= 0);
      CHECK(r.exit_code <= 4);  // a defined exit code, not a signal
      if (std::string(command) == "verify") CHECK(r.exit_code != 0);
    }
  }
}

// ---- sizes fit their payloads (format/record_sizes.h) ------------------------------------------

namespace {

constexpr uint64_t kDevice = 0x7f0000000000;

// A capture whose call `bad` breaks a size or handle rule: verify names the rule and the call
// (exit 3), replay refuses it as corrupt (exit 3), and --allow-corrupt gets past that gate to the
// plan or executor, which refuses the same call (the rule is what replay can do).
void check_corrupt_rule(const std::string& path, uint64_t bad, const std::string& reason) {
  std::string call = "call " + std::to_string(bad);
  RunResult v = run_cusnap({"verify", path});
  INFO("verify: " << v.out << v.err);
  CHECK(v.exit_code == 3);
  CHECK(v.out.rfind("corrupt: ", 0) == 0);
  CHECK(v.out.find(reason) != std::string::npos);
  CHECK(v.out.find(call) != std::string::npos);
  RunResult r = run_cusnap({"replay", "--driver", "emulator", path});
  INFO("replay: " << r.out << r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("not replaying a corrupt capture") != std::string::npos);
  RunResult a = run_cusnap({"replay", "--driver", "emulator", "--allow-corrupt", path});
  INFO("replay --allow-corrupt: " << a.out << a.err);
  CHECK(a.err.find("replaying it anyway (--allow-corrupt)") != std::string::npos);
  CHECK(a.err.find(call) != std::string::npos);
  CHECK(a.exit_code != 0);
}

std::vector<uint8_t> bytes_of(size_t n) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(i * 7 + 1);
  return out;
}

}  // namespace

TEST_CASE("verify: a copy whose payload blob fits its size is whole", "[verify][sizes]") {
  std::string path = scratch_dir("verify_sizes_whole") + "/fits.cusnap";
  {
    cusnap::test::CaptureBuilder b(path);
    b.alloc(kDevice, 64);
    b.htod_payload(kDevice, b.put(bytes_of(16)), 16);
    uint64_t copy = b.htod_payload(kDevice, b.put(bytes_of(32)), 8, 4);
    b.deferred_payload(copy, b.put(std::vector<uint8_t>(32, 0x42)));  // what pinned memory held
    b.close();
  }
  RunResult v = run_cusnap({"verify", path});
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);
  CHECK(v.out.rfind("whole: ", 0) == 0);
}

TEST_CASE("verify: a 1-D host-to-device copy whose payload is not its size is corrupt",
          "[verify][sizes]") {
  std::string path = scratch_dir("verify_sizes_1d") + "/short_payload.cusnap";
  uint64_t bad = 0;
  {
    cusnap::test::CaptureBuilder b(path);
    b.alloc(kDevice, 64);
    bad = b.htod_payload(kDevice, b.put(bytes_of(12)), 16);
    b.close();
  }
  check_corrupt_rule(path, bad, "memcpy payload size disagrees with its blob");
}

TEST_CASE("verify: a 2-D copy whose geometry needs more bytes than its payload is corrupt",
          "[verify][sizes]") {
  std::string path = scratch_dir("verify_sizes_2d") + "/short_2d_payload.cusnap";
  uint64_t bad = 0;
  {
    cusnap::test::CaptureBuilder b(path);
    b.alloc(kDevice, 64);
    bad = b.htod_payload(kDevice, b.put(bytes_of(24)), 8, 4);  // 4 rows of 8 bytes: 32
    b.close();
  }
  check_corrupt_rule(path, bad, "memcpy payload size disagrees with its blob");
}

TEST_CASE("verify: a deferred payload that is not what its copy moves is corrupt",
          "[verify][sizes]") {
  std::string path = scratch_dir("verify_sizes_deferred") + "/deferred_payload.cusnap";
  uint64_t bad = 0;
  {
    cusnap::test::CaptureBuilder b(path);
    b.alloc(kDevice, 64);
    uint64_t copy = b.htod_payload(kDevice, b.put(bytes_of(16)), 16);
    bad = b.deferred_payload(copy, b.put(bytes_of(12)));
    b.close();
  }
  check_corrupt_rule(path, bad, "deferred memcpy payload size disagrees with its blob");
}

TEST_CASE("verify: a module load whose image blob is not its imageSize is corrupt",
          "[verify][sizes]") {
  std::string path = scratch_dir("verify_sizes_image") + "/image_size.cusnap";
  uint64_t bad = 0;
  {
    cusnap::test::CaptureBuilder b(path);
    bad = b.module_load_ptx(0x1000, "// never loaded: the plan refuses the capture first\n", 4096);
    b.close();
  }
  check_corrupt_rule(path, bad, "module image size disagrees with its blob");
}

TEST_CASE("verify: a launch whose parameter layout points past its parameter bytes is corrupt",
          "[verify][sizes]") {
  std::string path = scratch_dir("verify_sizes_layout") + "/layout_past_params.cusnap";
  uint64_t bad = 0;
  {
    cusnap::test::CaptureBuilder b(path);
    b.alloc(kDevice, 64);
    uint64_t module = 0x1000, function = 0x2000;
    b.module_load_ptx(module, "// never loaded: the plan refuses the capture first\n");
    b.function_get(module, function, "k");
    cusnap::test::Params params;
    params.i32(1).slot_only(4, 8);  // bytes [4, 12) of a 4-byte block
    bad = b.launch(function, "k", 1, 1, params);
    b.close();
  }
  check_corrupt_rule(path, bad, "outside the 4-byte parameter block");
}

// ---- handles refer to something created earlier (format/record_handles.h) ----------------------

TEST_CASE(
    "verify: a launch of a function no record obtained, with no name to find it by, is "
    "corrupt",
    "[verify][handles]") {
  std::string path = scratch_dir("verify_handles_launch") + "/unnamed_launch.cusnap";
  uint64_t bad = 0;
  {
    cusnap::test::CaptureBuilder b(path);
    b.alloc(kDevice, 64);
    cusnap::test::Params params;
    params.ptr(kDevice);
    bad = b.launch(0x2000, "", 1, 1, params);
    b.close();
  }
  check_corrupt_rule(path, bad, "launch of function 0x2000 that no earlier record obtained");
}

TEST_CASE("verify: a functionGet of a module no record loaded is corrupt", "[verify][handles]") {
  std::string path = scratch_dir("verify_handles_module") + "/function_of_unknown_module.cusnap";
  uint64_t bad = 0;
  {
    cusnap::test::CaptureBuilder b(path);
    b.alloc(kDevice, 64);
    bad = b.function_get(0x1000, 0x2000, "k");
    b.close();
  }
  check_corrupt_rule(path, bad, "function 'k' of module 0x1000 that no earlier record loaded");
}

TEST_CASE("verify: handles no record created are findings of a whole file, and it replays",
          "[verify][handles]") {
  std::string path = scratch_dir("verify_handles_findings") + "/late_start.cusnap";
  uint64_t first_stream_use = 0, second_create = 0;
  {
    cusnap::test::CaptureBuilder b(path);
    b.alloc(kDevice, 64);
    first_stream_use = b.stream_sync(0x77);  // created before the capture started
    b.event_record(0x88, 0x77);              // so was this event
    b.stream_wait(0x77, 0x88);
    b.stream_create(0x55);
    second_create = b.stream_create(0x55);  // no destroy between
    b.close();
  }
  RunResult v = run_cusnap({"verify", path});
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);
  CHECK(v.out.rfind("whole: ", 0) == 0);
  CHECK(v.out.find("handles: 1 stream that no earlier record created, used by 3 calls (first: "
                   "call " +
                   std::to_string(first_stream_use)) != std::string::npos);
  CHECK(v.out.find("handles: 1 event that no earlier record created, used by 2 calls") !=
        std::string::npos);
  CHECK(v.out.find("capture started late?") != std::string::npos);
  CHECK(v.out.find("handles: 1 stream created again while live (no destroy between), by 1 call "
                   "(first: call " +
                   std::to_string(second_create)) != std::string::npos);
  // What verify calls whole replay does not refuse for a handle reason.
  RunResult r = run_cusnap({"replay", "--driver", "emulator", "--allow-unverified", path});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("verify: the sample captures have no handle findings", "[verify][handles]") {
  RunResult v = run_cusnap({"verify", sample().path});
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);
  CHECK(v.out.find("handles:") == std::string::npos);
}
