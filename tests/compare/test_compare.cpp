// compare_reports(): identical replays are equal; a changed result is found at its launch; a
// single changed element of a saved output is found with its index; float noise within the
// tolerance is not flagged; a 20 % slowdown is flagged and a 1 % one is not (known sample sets,
// never real timing); launches of different captures are matched by kernel and occurrence.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cusnap/compare/compare.h"
#include "report_builder.h"

using namespace cusnap::compare;
using cusnap::test::BuiltCopy;
using cusnap::test::BuiltLaunch;
using cusnap::test::BuiltReport;

namespace {

Report parsed(const BuiltReport& b, const std::string& name) {
  Expected<Report> r = parse_report(b.json(), name);
  if (!r) FAIL(r.error().to_string());
  return r.value();
}

// Samples around `center` ms with a deterministic spread of +-1 % (no clock involved).
std::vector<double> samples(double center, size_t n = 20) {
  std::vector<double> v;
  for (size_t i = 0; i < n; ++i) {
    double spread = (static_cast<double>(i % 5) - 2.0) * 0.005;  // -1 % .. +1 %
    v.push_back(center * (1 + spread));
  }
  return v;
}

BuiltReport two_kernels(double scale_b = 1.0) {
  BuiltReport r;
  r.launches = {{10, "scale", samples(1.0 * scale_b)}, {12, "add", samples(2.0)}};
  r.copies = {{11, 0x7f0000000000, 16, 0xaaaa, 1, ""}, {13, 0x7f0000001000, 16, 0xbbbb, 2, ""}};
  return r;
}

std::string tmp_dir(const std::string& name) {
  std::filesystem::path p = std::filesystem::path(CUSNAP_TEST_TMP_DIR) / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

void write_floats(const std::string& path, const std::vector<float>& v) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(v.data()),
            static_cast<std::streamsize>(v.size() * sizeof(float)));
}

float next_up(float f, int steps) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += static_cast<uint32_t>(steps);  // positive values: the next representable ones
  std::memcpy(&f, &bits, 4);
  return f;
}

cusnap::replayer::Tolerance parse_tolerance_or_fail(const std::string& rule) {
  Expected<cusnap::replayer::Tolerance> t = cusnap::replayer::parse_tolerance(rule);
  REQUIRE(t);
  return t.value();
}

}  // namespace

TEST_CASE("identical replays are equal and nothing is flagged", "[compare]") {
  Report a = parsed(two_kernels(), "a.json");
  Report b = parsed(two_kernels(), "b.json");
  Comparison c = compare_reports(a, b, {});
  CHECK(c.matched_by == MatchBy::kCall);
  REQUIRE(c.launches.size() == 2);
  for (const LaunchComparison& l : c.launches) {
    CHECK(l.results == ResultState::kEqual);
    CHECK(l.observations == 1);
    REQUIRE(l.time);
    CHECK(l.time->change == 0);
    CHECK(!l.time->slower);
  }
  CHECK(!c.results_differ);
  CHECK(!c.first_differing);
  CHECK(!c.slower);
  CHECK(!c.flagged());
  CHECK(render_text(c).find("nothing flagged") != std::string::npos);
}

TEST_CASE("a differing copy checksum names the first differing launch", "[compare]") {
  BuiltReport changed = two_kernels();
  changed.copies[1].checksum = 0xcccc;  // the copy after launch 1 (add)
  Comparison c = compare_reports(parsed(two_kernels(), "a"), parsed(changed, "b"), {});
  CHECK(c.results_differ);
  CHECK(c.flagged());
  REQUIRE(c.first_differing == 1u);
  CHECK(c.launches[0].results == ResultState::kEqual);
  CHECK(c.launches[1].results == ResultState::kDifferent);
  CHECK(c.launches[1].detail == "copy call 13: checksum 0xbbbb and 0xcccc");
  REQUIRE(c.kernels.size() == 2);
  CHECK(c.kernels[1].kernel == "add");
  CHECK(c.kernels[1].differing_launches == 1);
  CHECK(render_text(c).find("DIFFERENT: first differing launch: add #1") != std::string::npos);
}

TEST_CASE("a single changed element in a saved output is found with its index", "[compare]") {
  std::string dir_a = tmp_dir("element_a"), dir_b = tmp_dir("element_b");
  std::vector<float> values(64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5f + static_cast<float>(i);
  write_floats(dir_a + "/out", values);
  values[37] = 1000.0f;
  write_floats(dir_b + "/out", values);
  auto report = [&](const std::string& dir, uint64_t checksum) {
    BuiltReport r;
    r.launches = {{10, "scale", {}}};
    r.copies = {{11, 0x7f0000000000, 256, checksum, 1, "out"}};
    r.outputs_dir = dir;
    return r;
  };
  CompareOptions options;
  SECTION("bytes only") {
    Comparison c =
        compare_reports(parsed(report(dir_a, 1), "a"), parsed(report(dir_b, 2), "b"), options);
    REQUIRE(c.launches[0].outputs.size() == 1);
    const OutputComparison& o = c.launches[0].outputs[0];
    CHECK(!o.equal);
    REQUIRE(o.first_difference);
    CHECK(*o.first_difference / 4 == 37);  // a byte of element 37 (37.5f and 1000.0f share some)
    CHECK(o.differing_bytes >= 1);
    CHECK(o.differing_bytes <= 4);
    CHECK(c.launches[0].results == ResultState::kDifferent);
    CHECK(c.flagged());
  }
  SECTION("element by element") {
    options.tolerances.push_back(parse_tolerance_or_fail("f32:ulp=4"));
    Comparison c =
        compare_reports(parsed(report(dir_a, 1), "a"), parsed(report(dir_b, 2), "b"), options);
    const OutputComparison& o = c.launches[0].outputs[0];
    REQUIRE(o.elements);
    CHECK(o.elements->elements == 64);
    CHECK(o.elements->over == 1);
    REQUIRE(!o.elements->worst.empty());
    CHECK(o.elements->worst[0].index == 37);
    CHECK(o.elements->worst[0].expected == 37.5);
    CHECK(o.elements->worst[0].actual == 1000.0);
    CHECK(c.launches[0].results == ResultState::kDifferent);
    CHECK(render_json(c).find("\"index\": 37") != std::string::npos);
  }
}

TEST_CASE("float noise within the tolerance is not flagged", "[compare]") {
  std::string dir_a = tmp_dir("noise_a"), dir_b = tmp_dir("noise_b");
  std::vector<float> a(32), b(32);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = 1.0f + static_cast<float>(i) / 7;
    b[i] = next_up(a[i], static_cast<int>(i % 3));  // 0 to 2 ULP off
  }
  write_floats(dir_a + "/o", a);
  write_floats(dir_b + "/o", b);
  auto report = [&](const std::string& dir, uint64_t checksum) {
    BuiltReport r;
    r.launches = {{10, "scale", {}}};
    r.copies = {{11, 0x7f0000000000, 128, checksum, 1, "o"}};
    r.outputs_dir = dir;
    return r;
  };
  CompareOptions options;
  options.tolerances.push_back(parse_tolerance_or_fail("f32:ulp=2"));
  Comparison c =
      compare_reports(parsed(report(dir_a, 1), "a"), parsed(report(dir_b, 2), "b"), options);
  CHECK(c.launches[0].results == ResultState::kWithin);
  CHECK(!c.results_differ);
  CHECK(!c.flagged());
  // The same noise with a tighter rule is a difference.
  options.tolerances = {parse_tolerance_or_fail("f32:ulp=1")};
  c = compare_reports(parsed(report(dir_a, 1), "a"), parsed(report(dir_b, 2), "b"), options);
  CHECK(c.launches[0].results == ResultState::kDifferent);
  CHECK(c.flagged());
}

TEST_CASE("a 20 % slowdown is flagged and a 1 % one is not", "[compare]") {
  Report a = parsed(two_kernels(), "a");
  Comparison slow = compare_reports(a, parsed(two_kernels(1.20), "b"), {});
  REQUIRE(slow.kernels[0].time);
  const TimeChange& t = *slow.kernels[0].time;
  CHECK(t.change == Approx(0.20));
  CHECK(t.interval_known);
  CHECK(t.ci_low > 0.15);
  CHECK(t.ci_high < 0.25);
  CHECK(t.slower);
  CHECK(slow.slower);
  CHECK(slow.flagged());
  CHECK(!slow.results_differ);
  CHECK(!slow.kernels[1].time->slower);  // add did not change

  Comparison little = compare_reports(a, parsed(two_kernels(1.01), "b"), {});
  CHECK(little.kernels[0].time->change == Approx(0.01));
  CHECK(!little.kernels[0].time->slower);
  CHECK(!little.flagged());

  // A 20 % change in noise that large is not significant: not flagged either.
  BuiltReport noisy = two_kernels();
  noisy.launches[0].times_ms = {0.5, 1.9, 0.6, 2.0, 0.55, 1.8, 0.65, 1.95};
  BuiltReport noisy_b = noisy;
  for (double& x : noisy_b.launches[0].times_ms) x *= 1.2;
  Comparison n = compare_reports(parsed(noisy, "a"), parsed(noisy_b, "b"), {});
  CHECK(!n.kernels[0].time->significant);
  CHECK(!n.slower);

  // Faster is reported, never flagged.
  Comparison fast = compare_reports(a, parsed(two_kernels(0.7), "b"), {});
  CHECK(fast.kernels[0].time->faster);
  CHECK(fast.faster);
  CHECK(!fast.flagged());
}

TEST_CASE("the bootstrap interval is reproducible and needs two samples a side", "[compare]") {
  CompareOptions o;
  TimeChange x = compare_times(samples(1.0), samples(1.1), o);
  TimeChange y = compare_times(samples(1.0), samples(1.1), o);
  CHECK(x.ci_low == y.ci_low);
  CHECK(x.ci_high == y.ci_high);
  TimeChange one = compare_times({1.0}, {2.0}, o);
  CHECK(one.change == 1.0);
  CHECK(!one.interval_known);
  CHECK(!one.significant);
  CHECK(!one.slower);
  o.time_threshold = 0.5;
  CHECK(!compare_times(samples(1.0), samples(1.2), o).slower);
}

TEST_CASE("different captures are matched by kernel name and occurrence", "[compare]") {
  BuiltReport a = two_kernels();
  BuiltReport b;
  b.calls = 120;
  b.launches = {{20, "add", samples(2.0)}, {30, "scale", samples(1.0)}, {40, "scale", {}}};
  b.copies = {{21, 0x7f0000001000, 16, 0xbbbb, 1, ""}, {31, 0x7f0000000000, 16, 0xaaaa, 2, ""}};
  Comparison c = compare_reports(parsed(a, "a"), parsed(b, "b"), {});
  CHECK(c.matched_by == MatchBy::kKernelOccurrence);
  REQUIRE(c.launches.size() == 3);
  CHECK(c.launches[0].kernel == "scale");
  CHECK(c.launches[0].call_b == 30u);
  CHECK(c.launches[0].results == ResultState::kEqual);
  CHECK(c.launches[1].call_b == 20u);
  CHECK(c.launches[1].results == ResultState::kEqual);
  CHECK(!c.launches[2].call_a);  // the second scale of B has no partner
  CHECK(c.launches[2].call_b == 40u);
  CHECK(!c.results_differ);
  CHECK(!c.notes.empty());
}
