// For interceptor.signals: a driver-API program whose own signal handling must work exactly as
// without the shim. Prints what it observed on stdout; the test compares a direct run with one
// under `cusnap capture`.
//   handled    handlers for SIGHUP, SIGSEGV (recovers with siglongjmp) and SIGALRM, installed
//              before cuInit (so the shim's handlers chain to them): 200 recorded calls each
//              followed by a handled SIGHUP, one recovered SIGSEGV, then alarm(1) must fire.
//              Prints "hup 200 segv 1 alarm 1"; exit 0.
//   fork-term  fork()s; the child makes recorded calls (opening its own capture, which installs
//              the shim's handlers once more over the inherited ones) and raises
//              SIGTERM with the default disposition. Prints "child signal <n>"; exit 0 when the
//              child died of SIGTERM.
#include <cuda.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace {

volatile sig_atomic_t g_hups = 0;
volatile sig_atomic_t g_segvs = 0;
volatile sig_atomic_t g_alarms = 0;
sigjmp_buf g_recover;

void on_hup(int) { g_hups = g_hups + 1; }
void on_alarm(int) { g_alarms = g_alarms + 1; }
void on_segv(int, siginfo_t*, void*) {
  g_segvs = g_segvs + 1;
  siglongjmp(g_recover, 1);
}

bool check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "signal_app: %s failed (%d)\n", what, static_cast<int>(result));
  return false;
}

bool start_cuda(CUcontext* context, CUdeviceptr* buffer) {
  CUdevice device = 0;
  return check(cuInit(0), "cuInit") && check(cuDeviceGet(&device, 0), "cuDeviceGet") &&
         check(cuCtxCreate(context, nullptr, 0, device), "cuCtxCreate") &&
         check(cuMemAlloc(buffer, 64), "cuMemAlloc");
}

int handled() {
  struct sigaction action {};
  sigemptyset(&action.sa_mask);
  action.sa_handler = on_hup;
  sigaction(SIGHUP, &action, nullptr);
  action.sa_handler = on_alarm;
  sigaction(SIGALRM, &action, nullptr);
  action.sa_flags = SA_SIGINFO;
  action.sa_sigaction = on_segv;
  sigaction(SIGSEGV, &action, nullptr);

  CUcontext context = nullptr;
  CUdeviceptr buffer = 0;
  if (!start_cuda(&context, &buffer)) return 1;
  for (int i = 0; i < 200; ++i) {
    if (!check(cuMemsetD8(buffer, static_cast<unsigned char>(i), 64), "cuMemsetD8")) return 1;
    raise(SIGHUP);
  }
  if (sigsetjmp(g_recover, 1) == 0) {
    volatile int* nowhere = nullptr;
    *nowhere = 1;  // SIGSEGV, recovered by on_segv
  }
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGALRM);
  sigprocmask(SIG_BLOCK, &block, &old);
  alarm(1);
  while (g_alarms == 0) sigsuspend(&old);  // returns once the alarm's handler ran
  sigprocmask(SIG_SETMASK, &old, nullptr);
  if (!check(cuMemFree(buffer), "cuMemFree") || !check(cuCtxDestroy(context), "cuCtxDestroy"))
    return 1;
  std::printf("hup %d segv %d alarm %d\n", static_cast<int>(g_hups), static_cast<int>(g_segvs),
              static_cast<int>(g_alarms));
  return g_hups == 200 && g_segvs == 1 && g_alarms == 1 ? 0 : 1;
}

int fork_term() {
  CUcontext context = nullptr;
  CUdeviceptr buffer = 0;
  if (!start_cuda(&context, &buffer)) return 1;
  std::fflush(stdout);
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    // Calls that need no device work (the driver's threads did not survive fork), recorded into
    // the child's own capture.
    (void)cuInit(0);  // opens the child's capture
    for (int i = 0; i < 10; ++i) {
      CUdevice device = 0;
      (void)cuDeviceGet(&device, 0);
    }
    raise(SIGTERM);
    _exit(3);  // not reached: SIGTERM's default action ends the process
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
  }
  int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  std::printf("child signal %d\n", signal);
  (void)cuMemFree(buffer);
  (void)cuCtxDestroy(context);
  return signal == SIGTERM ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "handled") == 0) return handled();
  if (argc == 2 && std::strcmp(argv[1], "fork-term") == 0) return fork_term();
  std::fprintf(stderr, "usage: signal_app handled|fork-term\n");
  return 2;
}
