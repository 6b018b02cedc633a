#include "process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "cusnap/runner/runner.h"

extern char** environ;

namespace cusnap::runner::detail {
namespace {

int decode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// The environment for a child, built before fork (nothing allocates between fork and exec).
std::vector<std::string> environment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::map<std::string, std::string> env;
  std::vector<std::string> order;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string s = *e;
    size_t eq = s.find('=');
    if (eq == std::string::npos) continue;
    std::string k = s.substr(0, eq);
    if (env.emplace(k, s.substr(eq + 1)).second) order.push_back(k);
  }
  for (const auto& [k, v] : overrides) {
    if (!env.count(k)) order.push_back(k);
    env[k] = v;
  }
  std::vector<std::string> out;
  for (const std::string& k : order) out.push_back(k + "=" + env[k]);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

}  // namespace

pid_t spawn(const std::vector<std::string>& argv,
            const std::vector<std::pair<std::string, std::string>>& overrides,
            const std::string& log, std::string* error) {
  std::vector<std::string> args = argv;
  std::vector<std::string> env = environment(overrides);
  std::vector<char*> argp = pointers(args), envp = pointers(env);
  const std::string out = log.empty() ? "/dev/null" : log;
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create " + out + ": " + std::strerror(errno);
    return -1;
  }
  // A pipe that closes on exec tells the parent whether exec worked.
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    ::close(fd);
    ::close(status_pipe[0]);
    ::close(status_pipe[1]);
    return -1;
  }
  if (pid == 0) {
    int null_in = ::open("/dev/null", O_RDONLY);
    if (null_in >= 0) ::dup2(null_in, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execve(argp[0], argp.data(), envp.data());
    int e = errno;
    [[maybe_unused]] ssize_t n = ::write(status_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(fd);
  ::close(status_pipe[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(status_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(status_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    wait_for(pid);
    *error = "cannot run " + argv[0] + ": " + std::strerror(child_errno);
    return -1;
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return decode(status);
}

bool poll_exit(pid_t pid, int* status) {
  int s = 0;
  pid_t r = ::waitpid(pid, &s, WNOHANG);
  if (r == 0) return false;
  *status = r < 0 ? -1 : decode(s);
  return true;
}

int run_capture(const std::vector<std::string>& argv, std::string* out, std::string* err,
                std::string* error) {
  char out_template[] = "/tmp/cusnap-runner-out.XXXXXX";
  char err_template[] = "/tmp/cusnap-runner-err.XXXXXX";
  int out_fd = ::mkstemp(out_template);
  int err_fd = ::mkstemp(err_template);
  if (out_fd < 0 || err_fd < 0) {
    *error = std::string("mkstemp: ") + std::strerror(errno);
    return -1;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return -1;
  }
  std::vector<std::string> args = argv;
  std::vector<char*> argp = pointers(args);
  if (pid == 0) {
    int null_in = ::open("/dev/null", O_RDONLY);
    if (null_in >= 0) ::dup2(null_in, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execvp(argp[0], argp.data());
    std::fprintf(stderr, "cannot run %s: %s\n", argp[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = wait_for(pid);
  auto slurp = [](const char* path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  *out = slurp(out_template);
  *err = slurp(err_template);
  ::close(out_fd);
  ::close(err_fd);
  ::unlink(out_template);
  ::unlink(err_template);
  if (status == 127 && err->find("cannot run") == 0) {
    *error = *err;
    while (!error->empty() && error->back() == '\n') error->pop_back();
    return -1;
  }
  return status;
}

std::string join(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    s += s.empty() ? "" : " ";
    s += shell_quote(a);
  }
  return s;
}

}  // namespace cusnap::runner::detail
