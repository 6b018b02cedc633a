// sigkill_capture: kills a captured application with SIGKILL at seeded random moments and checks
// that every capture left behind reads up to its last complete frame (interceptor.sigkill).
//
// Usage: sigkill_capture CUSNAP OUT_DIR SEED KILLS [MIN_KILLED_PERCENT] -- APP [ARGS...]
//   SEED: a number, or "random" (derived from the clock); the seed used is printed first so a
//   failing run can be repeated.
//
// 1. Calibration: `cusnap capture --driver emulator -- APP` runs to completion; its duration T
//    sets the kill times, and `cusnap verify` must call that file whole (exit 0).
// 2. KILLS runs of the same command, each in a process group of its own. Kill 0 comes 0-5 ms
//    after the start (before the application has even loaded the driver, usually); kill k >= 1
//    at a uniformly random moment in the k-th of KILLS-1 equal slices of [0, 0.75 T]. (The
//    application should issue calls all along: e.g. multi_thread --sync-every, since on the
//    emulator an application that only synchronises at the end issues every call early.) The
//    whole
//    group (the `cusnap capture` wrapper and the application, whose shim holds the writer) gets
//    SIGKILL; this process is a child subreaper, so it reaps the orphaned application too before
//    looking at the file.
// 3. The verify contract relied upon (docs/cli.md): a file a killed writer left behind makes
//    `cusnap verify` exit 2 with a verdict starting "truncated:" -- never 3 (corrupt), 4 or 1.
//    "capture ends after call N" names the last call of the last complete frame; then
//    `cusnap info --json` must open the file (exit 0), report integrity "truncated" and count
//    exactly N + 1 calls (calls 0..N recovered). Only a file that ends inside its file header or
//    header frame (verdict "... inside the file header" / "inside frame 0") may make `info`
//    exit 2 as well. A file with at least one complete call frame must replay (`cusnap replay
//    --driver emulator`) up to there with no verification mismatched: exit 0 or 2, never
//    5 (mismatch) or 6 (a replayed call failed). No file at all is accepted only for kills
//    before 0.4 T (the
//    shim creates it when the application's cuInit returns). Kills after 0.4 T must
//    leave at least one complete call frame (N exists).
// 4. The application may have finished before its kill (a loaded machine, or a kill that only
//    hit the wrapper while it summarised): then verify must say whole (exit 0). At least
//    MIN_KILLED_PERCENT (default 67) of the runs must have been killed before the end (a
//    truncated file, or none for an early kill). Which process died of what is not used to
//    judge: the wrapper reaps the application itself when it exits first, so only the file
//    tells.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Output {
  int rc = -1;
  std::string out;
};

// Runs argv to completion (stderr discarded) and returns its exit code and stdout.
Output run(const std::vector<std::string>& args) {
  int pipe_fds[2];
  Output result;
  if (::pipe(pipe_fds) != 0) return result;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd >= 0) ::dup2(null_fd, 2);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) result.out.append(buffer, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// Starts argv in a new process group; returns its pid (= the group id).
pid_t start_group(const std::vector<std::string>& args) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd >= 0) {
      ::dup2(null_fd, 1);
      ::dup2(null_fd, 2);
    }
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid > 0) ::setpgid(pid, pid);  // also here, so the kill cannot come before the child's call
  return pid;
}

// Waits for every child: the wrapper and the orphans adopted as subreaper (the application).
void reap_all() {
  for (;;) {
    int status = 0;
    if (::waitpid(-1, &status, 0) < 0 && errno != EINTR) break;  // ECHILD: nothing left
  }
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

int main(int argc, char** argv) {
  // Optional MIN_KILLED_PERCENT before "--" (default 67): the share of runs that must have been
  // killed while writing. 0 for the kill matrix of short samples, which may finish before a kill
  // on a fast machine: their files are still all checked, whatever moment each kill hit.
  int min_killed_percent = 67;
  int dashes = 5;
  if (argc >= 8 && std::strcmp(argv[6], "--") == 0) {
    min_killed_percent = std::atoi(argv[5]);
    dashes = 6;
  }
  if (argc < dashes + 2 || std::strcmp(argv[dashes], "--") != 0) {
    std::fprintf(stderr,
                 "usage: sigkill_capture CUSNAP OUT_DIR SEED KILLS [MIN_KILLED_PERCENT] -- APP "
                 "[ARGS...]\n");
    return 2;
  }
  const std::string cusnap = argv[1];
  const std::string out_dir = argv[2];
  uint64_t seed = std::strcmp(argv[3], "random") == 0
                      ? static_cast<uint64_t>(Clock::now().time_since_epoch().count())
                      : std::strtoull(argv[3], nullptr, 0);
  const int kills = std::atoi(argv[4]);
  std::vector<std::string> app(argv + dashes + 1, argv + argc);
  std::printf("seed %llu (repeat with SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  if (kills < 2) {
    std::fprintf(stderr, "KILLS must be at least 2\n");
    return 2;
  }
  // Orphaned applications (their wrapper killed first) are reparented to us, so we can reap
  // them and know the file is final before reading it.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    std::perror("prctl(PR_SET_CHILD_SUBREAPER)");
    return 2;
  }

  auto capture_command = [&](const std::string& file) {
    std::vector<std::string> args = {cusnap, "capture", "--driver", "emulator", "--force-overwrite",
                                     "-o",   file,      "--"};
    args.insert(args.end(), app.begin(), app.end());
    return args;
  };

  // ---- calibration
  const std::string full = out_dir + "/sigkill-full.cusnap";
  auto t0 = Clock::now();
  Output calibration = run(capture_command(full));
  double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  Output verdict = run({cusnap, "verify", full});
  std::printf("calibration: exit %d in %.3f s; verify exit %d: %s\n", calibration.rc, total_s,
              verdict.rc, first_line(verdict.out).c_str());
  if (calibration.rc != 0 || verdict.rc != 0) {
    std::printf("FAIL: the uninterrupted capture must succeed and be whole\n");
    return 1;
  }

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::regex ends_after("capture ends after call ([0-9]+)");
  const std::regex info_calls("\"counts\":\\{\"calls\":\"?([0-9]+)");
  const std::regex replayed_calls("replayed +([0-9]+) call");
  int failures = 0, killed = 0;
  for (int k = 0; k < kills; ++k) {
    double delay = k == 0 ? 0.005 * unit(rng) : 0.75 * total_s * (k - 1 + unit(rng)) / (kills - 1);
    const std::string file = out_dir + "/sigkill-" + std::to_string(k) + ".cusnap";
    ::unlink(file.c_str());
    pid_t pid = start_group(capture_command(file));
    if (pid < 0) {
      std::perror("fork");
      return 2;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    ::kill(-pid, SIGKILL);
    reap_all();
    // Late enough that a call frame must be in the file: the writer seals one at most 250 ms
    // (1.25 flush intervals) after its first record, which comes after the process started.
    bool late = delay >= 0.4 * total_s && delay >= 0.35;
    std::printf("kill %d at %.4f s: ", k, delay);

    auto fail = [&](const std::string& why) {
      std::printf("FAIL: %s\n", why.c_str());
      ++failures;
    };
    if (!file_exists(file)) {
      std::printf("no file\n");
      if (late)
        fail("no capture file although the application ran for " + std::to_string(delay) + " s");
      ++killed;  // killed before the shim created its file
      continue;
    }
    Output v = run({cusnap, "verify", file});
    std::string line = first_line(v.out);
    std::printf("verify exit %d: %s\n", v.rc, line.c_str());
    if (v.rc == 0 && line.rfind("whole:", 0) == 0) continue;  // the application had finished
    if (v.rc != 2 || line.rfind("truncated:", 0) != 0) {
      fail("a killed writer's file must verify as truncated (exit 2), or whole (exit 0)");
      continue;
    }
    ++killed;
    std::smatch m;
    bool has_calls = std::regex_search(line, m, ends_after);
    long long last_call = has_calls ? std::stoll(m[1]) : -1;
    if (late && !has_calls)
      fail("no complete call frame after a kill in the second half of the run");
    Output info = run({cusnap, "info", "--json", file});
    bool header_damaged = line.find("inside the file header") != std::string::npos ||
                          line.find("inside frame 0") != std::string::npos;
    if (info.rc != 0) {
      if (!header_damaged)
        fail("cusnap info exit " + std::to_string(info.rc) + " on a truncated file");
      continue;
    }
    if (info.out.find("\"state\":\"truncated\"") == std::string::npos)
      fail("cusnap info does not say truncated");
    std::smatch c;
    if (!std::regex_search(info.out, c, info_calls)) {
      fail("cusnap info --json has no call count");
    } else if (std::stoll(c[1]) != last_call + 1) {
      fail("cusnap info counts " + std::string(c[1]) + " calls, verify recovered calls 0.." +
           std::to_string(last_call));
    }
    if (!has_calls) continue;
    // The recovered prefix replays, verified up to its last complete frame: exit 0 or 2 (the
    // replayer warns and replays what the file holds; docs/replay.md says 2, it exits 0 today),
    // never a mismatch (5), a failed call (6) or a rejection (1, 3); every call replayed or
    // deliberately skipped, none mismatched.
    // --allow-unverified: a prefix cut before the first checksummed copy verifies nothing
    // (exit 7 otherwise); what it does hold must still replay.
    Output replay =
        run({cusnap, "replay", "--driver", "emulator", "--no-timing", "--allow-unverified", file});
    std::smatch r;
    bool replayed = std::regex_search(replay.out, r, replayed_calls);
    std::printf("  replay exit %d: %s calls replayed\n", replay.rc,
                replayed ? r[1].str().c_str() : "?");
    if (replay.rc != 0 && replay.rc != 2) {
      fail("the recovered prefix must replay verified, got exit " + std::to_string(replay.rc));
    } else if (!replayed || replay.out.find(" 0 mismatched") == std::string::npos) {
      fail("the replay of the recovered prefix reports no call count or a mismatch");
    } else if (std::stoll(r[1]) == 0 && last_call > 64) {
      fail("the replay of " + std::to_string(last_call + 1) + " recovered calls replayed none");
    }
  }
  std::printf("%d of %d runs left a truncated capture, %d failures\n", killed, kills, failures);
  if (killed * 100 < kills * min_killed_percent) {
    std::printf("FAIL: too few runs were killed while writing\n");
    ++failures;
  }
  return failures == 0 ? 0 : 1;
}
