// Runner templates (runner.h, kTemplateFields): every substitution, shell quoting, escapes and
// the errors for unknown fields, missing placement keys and unbalanced braces.
#include <catch2/catch.hpp>
#include <string>

#include "cusnap/runner/runner.h"

using namespace cusnap::runner;

namespace {

struct Fixture {
  DriverEntry entry;
  ReplayJob job;
  Fixture() {
    entry.name = "r550";
    entry.driver = "/opt/nv 550/libcuda.so.1";
    entry.environment = {{"A", "1"}, {"MSG", "it's"}};
    entry.placement = {{"host", "node7"}};
    entry.line = 3;
    job.capture = "/shared/app.cusnap";
    job.entry = &entry;
    job.report = "/shared/out/r550.json";
    job.log = "/shared/out/r550.log";
    job.replay_args = {"--repeat", "3"};
  }
};

}  // namespace

TEST_CASE("template: fields are substituted, shell-quoted") {
  Fixture f;
  std::string error;
  auto s = expand_template("ssh {host} {command}", "/opt/cusnap/bin/cusnap", f.job, &error);
  REQUIRE(s);
  CHECK(*s ==
        "ssh node7 env A=1 'MSG=it'\\''s' /opt/cusnap/bin/cusnap replay /shared/app.cusnap "
        "--driver '/opt/nv 550/libcuda.so.1' --report /shared/out/r550.json -q --repeat 3");
  s = expand_template("{{{name}}} {cusnap} {capture} {driver} {report} {log} {env}", "/c", f.job,
                      &error);
  REQUIRE(s);
  CHECK(*s ==
        "{r550} /c /shared/app.cusnap '/opt/nv 550/libcuda.so.1' /shared/out/r550.json "
        "/shared/out/r550.log A=1 'MSG=it'\\''s'");
}

TEST_CASE("template: errors") {
  Fixture f;
  std::string error;
  CHECK_FALSE(expand_template("ssh {hots} x", "/c", f.job, &error));
  CHECK(error.find("unknown field {hots}") != std::string::npos);
  CHECK_FALSE(expand_template("srun -p {partition} {command}", "/c", f.job, &error));
  CHECK(error == "runner template uses {partition}, but entry r550 (line 3) has no partition=");
  CHECK_FALSE(expand_template("x {command", "/c", f.job, &error));
  CHECK(error.find("is not closed") != std::string::npos);
  CHECK_FALSE(expand_template("x } y", "/c", f.job, &error));
  CHECK(error.find("unmatched '}'") != std::string::npos);
  RunnerOptions options;
  options.kind = "ssh {nope}";
  CHECK_FALSE(make_runner(options, &error));
  CHECK(error.find("unknown field {nope}") != std::string::npos);
  options.kind = "lokal";
  CHECK_FALSE(make_runner(options, &error));
  CHECK(error.find("not local, slurm, or a command template") != std::string::npos);
}

TEST_CASE("template: shell quoting") {
  CHECK(shell_quote("plain/path-1.0_x") == "plain/path-1.0_x");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("$HOME") == "'$HOME'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
}
