// inprocess_overhead: what the shim adds to a driver call, measured in one process (issue 4).
//
// The emulator's libcuda.so.1 is dlopen'd by absolute path and called through function pointers
// ("direct"). The shim is dlopen'd twice from two different files (a second file is a separate
// instance with its own capture state): once with CUSNAP_CAPTURE_OUTPUT unset ("off": the pure
// pass-through path) and once with it set ("rec": recording into --capture). Both shims forward
// to the very same emulator instance (CUSNAP_REAL_DRIVER names the file the bench opened), so the
// three modes share one context, one module and one function handle, and calls of the three modes
// can be interleaved: every repetition times one batch per mode, in rotating order, and the
// report gives per-mode medians and the median of the per-repetition differences against direct.
//
// Calls (each cheap on the emulator, so that what is measured is the path to it):
//   cuDeviceGetAttribute  a query the shim does not model (recorded generically while capturing)
//   cuCtxSetCurrent       a call the shim models (a typed contextSet record while capturing)
//   cuLaunchKernel8       cuLaunchKernel of an empty kernel (`ret`, grid 1, block 1) with eight
//                         parameters: pointer, int, float, 24-byte struct, pointer, int, double,
//                         12-byte struct (80 parameter bytes)
//   cuLaunchKernel8 grid0 the same launch with gridDimX 0, which the driver refuses at once: the
//                         shim records it all the same, without the emulator's kernel execution
//   cuGraphAddKernelNode8 a kernel node of that launch (no dependencies) added to a graph of the
//                         mode's own (destroyed and made again, untimed, after every batch):
//                         the cost of recording one node
//   cuGraphLaunch 4 nodes cuGraphLaunch of an executable graph of four such kernel nodes in a
//                         chain, instantiated once through the recording shim: the cost of
//                         recording a graph launch (one small record, never the graph)
//   cuLaunchKernel8 captured  the cuLaunchKernel8 launch on a stream of the mode's own that is
//                         being captured (cuStreamBeginCapture; the capture is ended and its
//                         graph destroyed, untimed, after every batch): the cost of recording a
//                         stream-captured kernel node, against a plain launch's
//
//   inprocess_overhead --emulator EMU.so --shim SHIM.so --shim-copy COPY.so --capture OUT.cusnap
//                      [--reps N] [--batch N] [--launch-batch N] [--only direct|off|rec]
//                      [--compare OTHER_SHIM.so [--range-outside | --filter-outside]]
//
// --shim-copy is a path the bench may write: the shim file is copied there and loaded as the
// recording instance. --compare adds a fourth mode, "rec2": another shim build (e.g. the one
// before a change), copied to COPY.so.2.so and recording into OUT.cusnap.2, interleaved with the
// others, so that a before/after comparison is immune to the machine's load changing between runs.
// --range-outside makes "rec2" a capture with --capture-range cudaProfilerApi whose range never
// starts (CUSNAP_CAPTURE_RANGE): the cost of a call outside a capture range (docs/capture.md,
// "Capture ranges"); give --compare the same shim to compare it with "rec".
// --filter-outside makes "rec2" a kernel-filtered capture (CUSNAP_KERNEL_NAME) whose filter
// selects no launch: the cost of a launch the filter passes through (docs/capture.md, "Kernel
// filters").
// Output: one line per (call, mode) and a summary table; all times are ns per call. Exit status 1
// when any call fails.
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace {

constexpr const char* kPtx =
    ".version 7.5\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry k8(\n"
    "  .param .u64 p_ptr,\n"
    "  .param .u32 p_int,\n"
    "  .param .f32 p_float,\n"
    "  .param .align 8 .b8 p_struct[24],\n"
    "  .param .u64 p_ptr2,\n"
    "  .param .s32 p_int2,\n"
    "  .param .f64 p_double,\n"
    "  .param .align 4 .b8 p_small[12]\n"
    ")\n"
    "{\n"
    "  ret;\n"
    "}\n";

struct Api {
  const char* label = "";
  void* handle = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*primary_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*graph_create)(CUgraph*, unsigned) = nullptr;
  CUresult (*graph_destroy)(CUgraph) = nullptr;
  CUresult (*graph_add_kernel_node)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                    const CUDA_KERNEL_NODE_PARAMS*) = nullptr;
  CUresult (*graph_instantiate)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*graph_launch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
  CUresult (*stream_destroy)(CUstream) = nullptr;
  CUresult (*begin_capture)(CUstream, CUstreamCaptureMode) = nullptr;
  CUresult (*end_capture)(CUstream, CUgraph*) = nullptr;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "inprocess_overhead: %s\n", what.c_str());
  std::exit(1);
}

void check(CUresult result, const char* what, const char* mode) {
  if (result != CUDA_SUCCESS)
    die(std::string(what) + " (" + mode + ") failed: " + std::to_string(result));
}

template <class F>
void bind(void* handle, const char* symbol, F& out) {
  void* address = ::dlsym(handle, symbol);
  if (address == nullptr) die(std::string("no symbol ") + symbol);
  out = reinterpret_cast<F>(address);
}

Api open_api(const char* label, const std::string& path) {
  Api api;
  api.label = label;
  api.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api.handle == nullptr) die("dlopen " + path + ": " + ::dlerror());
  bind(api.handle, "cuInit", api.init);
  bind(api.handle, "cuDeviceGet", api.device_get);
  bind(api.handle, "cuDevicePrimaryCtxRetain", api.primary_retain);
  bind(api.handle, "cuCtxSetCurrent", api.ctx_set_current);
  bind(api.handle, "cuCtxSynchronize", api.ctx_synchronize);
  bind(api.handle, "cuDeviceGetAttribute", api.device_get_attribute);
  bind(api.handle, "cuMemAlloc_v2", api.mem_alloc);
  bind(api.handle, "cuModuleLoadData", api.module_load_data);
  bind(api.handle, "cuModuleGetFunction", api.module_get_function);
  bind(api.handle, "cuLaunchKernel", api.launch_kernel);
  bind(api.handle, "cuGraphCreate", api.graph_create);
  bind(api.handle, "cuGraphDestroy", api.graph_destroy);
  bind(api.handle, "cuGraphAddKernelNode_v2", api.graph_add_kernel_node);
  bind(api.handle, "cuGraphInstantiateWithFlags", api.graph_instantiate);
  bind(api.handle, "cuGraphLaunch", api.graph_launch);
  bind(api.handle, "cuStreamCreate", api.stream_create);
  bind(api.handle, "cuStreamDestroy_v2", api.stream_destroy);
  bind(api.handle, "cuStreamBeginCapture_v2", api.begin_capture);
  bind(api.handle, "cuStreamEndCapture", api.end_capture);
  return api;
}

struct Args {
  std::string emulator, shim, shim_copy, capture, compare;
  bool range_outside = false;
  bool filter_outside = false;
  int reps = 301;
  int batch = 2000;
  int launch_batch = 200;
  int only = -1;  // --only MODE: time that mode alone (for profiling; no comparison)
};

Args parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--emulator")
      args.emulator = value();
    else if (a == "--shim")
      args.shim = value();
    else if (a == "--shim-copy")
      args.shim_copy = value();
    else if (a == "--capture")
      args.capture = value();
    else if (a == "--compare")
      args.compare = value();
    else if (a == "--range-outside")
      args.range_outside = true;
    else if (a == "--filter-outside")
      args.filter_outside = true;
    else if (a == "--reps")
      args.reps = std::atoi(value().c_str());
    else if (a == "--batch")
      args.batch = std::atoi(value().c_str());
    else if (a == "--launch-batch")
      args.launch_batch = std::atoi(value().c_str());
    else if (a == "--only") {
      std::string mode = value();
      args.only = mode == "direct" ? 0
                  : mode == "off"  ? 1
                  : mode == "rec"  ? 2
                  : mode == "rec2" ? 3
                                   : -2;
      if (args.only == -2) die("--only takes direct, off, rec or rec2");
    } else
      die("unknown argument " + a);
  }
  if (args.emulator.empty() || args.shim.empty() || args.shim_copy.empty() ||
      args.capture.empty() || args.reps < 1 || args.batch < 1 || args.launch_batch < 1) {
    die("usage: inprocess_overhead --emulator EMU.so --shim SHIM.so --shim-copy COPY.so --capture "
        "OUT "
        "[--reps N] [--batch N] [--launch-batch N] [--only direct|off|rec|rec2] [--compare "
        "OTHER_SHIM.so [--range-outside | --filter-outside]]");
  }
  return args;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t at = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(at, v.size() - 1)];
}

constexpr int kMaxModes = 4;
const char* const kModeNames[kMaxModes] = {"direct", "off", "rec", "rec2"};
int g_modes = 3;  // 4 with --compare
int g_only = -1;  // >= 0: only this mode is run (profiling)

// Times `batch` calls of body(mode) per mode per repetition, modes in rotating order; `after`
// runs untimed after each batch (e.g. synchronisation). ns per call, [mode][rep].
std::vector<std::vector<double>> interleave(int reps, int batch,
                                            const std::function<void(int)>& body,
                                            const std::function<void(int)>& after) {
  std::vector<std::vector<double>> ns(g_modes);
  for (int mode = 0; mode < g_modes; ++mode) {  // warm-up batch per mode
    if (g_only >= 0 && mode != g_only) continue;
    for (int i = 0; i < batch; ++i) body(mode);
    after(mode);
  }
  for (int rep = 0; rep < reps; ++rep) {
    for (int k = 0; k < g_modes; ++k) {
      int mode = (rep + k) % g_modes;
      if (g_only >= 0 && mode != g_only) continue;
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < batch; ++i) body(mode);
      auto end = std::chrono::steady_clock::now();
      after(mode);
      ns[mode].push_back(std::chrono::duration<double, std::nano>(end - start).count() / batch);
    }
  }
  return ns;
}

void report(const char* call, const std::vector<std::vector<double>>& ns) {
  if (g_only >= 0) {
    std::printf("%-24s %-6s median %9.1f ns  p10 %9.1f  p90 %9.1f  (alone)\n", call,
                kModeNames[g_only], median(ns[g_only]), percentile(ns[g_only], 0.1),
                percentile(ns[g_only], 0.9));
    return;
  }
  double direct = median(ns[0]);
  for (int mode = 0; mode < g_modes; ++mode) {
    std::vector<double> added(ns[mode].size());
    for (size_t r = 0; r < added.size(); ++r) added[r] = ns[mode][r] - ns[0][r];
    double m = median(ns[mode]);
    std::printf(
        "%-24s %-6s median %9.1f ns  p10 %9.1f  p90 %9.1f  added %+9.1f ns (paired median %+9.1f)  "
        "ratio %6.2f\n",
        call, kModeNames[mode], m, percentile(ns[mode], 0.1), percentile(ns[mode], 0.9), m - direct,
        median(added), m / direct);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  g_only = args.only;
  std::error_code ec;
  std::filesystem::copy_file(args.shim, args.shim_copy,
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) die("cannot copy " + args.shim + " to " + args.shim_copy + ": " + ec.message());

  // One emulator instance for everyone: the shims open the same file by the same path.
  Api direct = open_api("direct", args.emulator);
  ::setenv("CUSNAP_REAL_DRIVER", args.emulator.c_str(), 1);
  ::unsetenv("CUSNAP_CAPTURE_OUTPUT");
  Api off = open_api("off", args.shim);
  // The shim reads its configuration when it is loaded.
  ::setenv("CUSNAP_CAPTURE_OUTPUT", args.capture.c_str(), 1);
  ::setenv("CUSNAP_FORCE_OVERWRITE", "1", 1);
  Api rec = open_api("rec", args.shim_copy);
  Api rec2;
  if (!args.compare.empty()) {
    std::string copy = args.shim_copy + ".2.so";
    std::filesystem::copy_file(args.compare, copy,
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) die("cannot copy " + args.compare + " to " + copy + ": " + ec.message());
    ::setenv("CUSNAP_CAPTURE_OUTPUT", (args.capture + ".2").c_str(), 1);
    if (args.range_outside) ::setenv("CUSNAP_CAPTURE_RANGE", "cudaProfilerApi", 1);
    if (args.filter_outside) ::setenv("CUSNAP_KERNEL_NAME", "^no_kernel_has_this_name$", 1);
    rec2 = open_api("rec2", copy);
    ::unsetenv("CUSNAP_CAPTURE_RANGE");
    ::unsetenv("CUSNAP_KERNEL_NAME");
    g_modes = 4;
  }
  ::unsetenv("CUSNAP_CAPTURE_OUTPUT");
  const Api* apis[kMaxModes] = {&direct, &off, &rec, &rec2};

  // Set up through the recording shim, so that its capture knows the context, the module and
  // the function (name and parameter layout) exactly as it would in an application.
  check(rec.init(0), "cuInit", "rec");
  CUdevice device = 0;
  check(rec.device_get(&device, 0), "cuDeviceGet", "rec");
  CUcontext context = nullptr;
  check(rec.primary_retain(&context, device), "cuDevicePrimaryCtxRetain", "rec");
  check(rec.ctx_set_current(context), "cuCtxSetCurrent", "rec");
  CUdeviceptr buffer = 0;
  check(rec.mem_alloc(&buffer, 4096), "cuMemAlloc", "rec");
  CUmodule module = nullptr;
  check(rec.module_load_data(&module, kPtx), "cuModuleLoadData", "rec");
  CUfunction function = nullptr;
  check(rec.module_get_function(&function, module, "k8"), "cuModuleGetFunction", "rec");
  if (g_modes == 4) {  // the second recording shim learns the context and the function too
    check(rec2.init(0), "cuInit", "rec2");
    check(rec2.ctx_set_current(context), "cuCtxSetCurrent", "rec2");
    CUfunction again = nullptr;
    check(rec2.module_get_function(&again, module, "k8"), "cuModuleGetFunction", "rec2");
    if (again != function) die("the two recording shims see different function handles");
  }
  check(direct.init(0), "cuInit", "direct");
  check(off.init(0), "cuInit", "off");

  std::printf(
      "inprocess_overhead: reps %d, batch %d (queries) / %d (launches); modes interleaved\n",
      args.reps, args.batch, args.launch_batch);
  auto nothing = [](int) {};

  auto attribute = interleave(
      args.reps, args.batch,
      [&](int mode) {
        int value = 0;
        check(apis[mode]->device_get_attribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                               device),
              "cuDeviceGetAttribute", kModeNames[mode]);
      },
      nothing);
  report("cuDeviceGetAttribute", attribute);

  auto set_current = interleave(
      args.reps, args.batch,
      [&](int mode) {
        check(apis[mode]->ctx_set_current(context), "cuCtxSetCurrent", kModeNames[mode]);
      },
      nothing);
  report("cuCtxSetCurrent", set_current);

  struct Struct24 {
    double a;
    long long b;
    float c;
    int d;
  } s24{1.5, 7, 2.5f, 3};
  struct Struct12 {
    int x, y, z;
  } s12{4, 5, 6};
  CUdeviceptr p0 = buffer, p4 = buffer + 64;
  unsigned i1 = 42;
  float f2 = 3.25f;
  int i5 = -9;
  double d6 = 6.5;
  void* params[8] = {&p0, &i1, &f2, &s24, &p4, &i5, &d6, &s12};
  auto launch = interleave(
      args.reps, args.launch_batch,
      [&](int mode) {
        check(apis[mode]->launch_kernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
              "cuLaunchKernel", kModeNames[mode]);
      },
      [&](int) { check(direct.ctx_synchronize(), "cuCtxSynchronize", "direct"); });
  report("cuLaunchKernel8", launch);

  // The same launch refused by the driver (grid 0): the emulator returns at once and queues no
  // work, while the shim records it exactly as a successful one (hooks run after the real call,
  // whatever it returned). This isolates the recording cost from the emulator's asynchronous
  // kernel execution, which competes for the CPU with the calling thread on a small machine.
  auto refused = interleave(
      args.reps, args.launch_batch,
      [&](int mode) {
        CUresult result =
            apis[mode]->launch_kernel(function, 0, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
        if (result == CUDA_SUCCESS) die("a launch with grid 0 was accepted");
      },
      nothing);
  report("cuLaunchKernel8 grid0", refused);

  // Graphs: a kernel node of the same launch, added to a graph of each mode's own.
  CUDA_KERNEL_NODE_PARAMS node{};
  node.func = function;
  node.gridDimX = node.gridDimY = node.gridDimZ = 1;
  node.blockDimX = node.blockDimY = node.blockDimZ = 1;
  node.kernelParams = params;
  CUgraph graphs[kMaxModes] = {};
  for (int mode = 0; mode < g_modes; ++mode)
    check(apis[mode]->graph_create(&graphs[mode], 0), "cuGraphCreate", kModeNames[mode]);
  auto add_node = interleave(
      args.reps, args.launch_batch,
      [&](int mode) {
        CUgraphNode made = nullptr;
        check(apis[mode]->graph_add_kernel_node(&made, graphs[mode], nullptr, 0, &node),
              "cuGraphAddKernelNode", kModeNames[mode]);
      },
      [&](int mode) {
        check(apis[mode]->graph_destroy(graphs[mode]), "cuGraphDestroy", kModeNames[mode]);
        check(apis[mode]->graph_create(&graphs[mode], 0), "cuGraphCreate", kModeNames[mode]);
      });
  report("cuGraphAddKernelNode8", add_node);
  for (int mode = 0; mode < g_modes; ++mode)
    check(apis[mode]->graph_destroy(graphs[mode]), "cuGraphDestroy", kModeNames[mode]);

  // One executable graph of four chained kernel nodes, made through the recording shim (as an
  // application's would be), launched by every mode.
  CUgraph chain = nullptr;
  check(rec.graph_create(&chain, 0), "cuGraphCreate", "rec");
  CUgraphNode previous = nullptr;
  for (int i = 0; i < 4; ++i) {
    CUgraphNode made = nullptr;
    check(rec.graph_add_kernel_node(&made, chain, previous != nullptr ? &previous : nullptr,
                                    previous != nullptr ? 1 : 0, &node),
          "cuGraphAddKernelNode", "rec");
    previous = made;
  }
  CUgraphExec exec = nullptr;
  check(rec.graph_instantiate(&exec, chain, 0), "cuGraphInstantiateWithFlags", "rec");
  auto graph_launch = interleave(
      args.reps, args.launch_batch,
      [&](int mode) {
        check(apis[mode]->graph_launch(exec, nullptr), "cuGraphLaunch", kModeNames[mode]);
      },
      [&](int) { check(direct.ctx_synchronize(), "cuCtxSynchronize", "direct"); });
  report("cuGraphLaunch 4 nodes", graph_launch);

  // Stream capture: the same launch enqueued on a capturing stream becomes a kernel node of the
  // capture's graph (the driver runs nothing); the shim records it as graph construction.
  CUstream capturing[kMaxModes] = {};
  auto begin = [&](int mode) {
    check(apis[mode]->begin_capture(capturing[mode], CU_STREAM_CAPTURE_MODE_RELAXED),
          "cuStreamBeginCapture", kModeNames[mode]);
  };
  auto end = [&](int mode) {
    CUgraph captured = nullptr;
    check(apis[mode]->end_capture(capturing[mode], &captured), "cuStreamEndCapture",
          kModeNames[mode]);
    check(apis[mode]->graph_destroy(captured), "cuGraphDestroy", kModeNames[mode]);
  };
  for (int mode = 0; mode < g_modes; ++mode) {
    check(apis[mode]->stream_create(&capturing[mode], CU_STREAM_NON_BLOCKING), "cuStreamCreate",
          kModeNames[mode]);
    begin(mode);
  }
  auto captured_launch = interleave(
      args.reps, args.launch_batch,
      [&](int mode) {
        check(apis[mode]->launch_kernel(function, 1, 1, 1, 1, 1, 1, 0, capturing[mode], params,
                                        nullptr),
              "cuLaunchKernel (capturing)", kModeNames[mode]);
      },
      [&](int mode) {
        end(mode);
        begin(mode);
      });
  report("cuLaunchKernel8 captured", captured_launch);
  for (int mode = 0; mode < g_modes; ++mode) {
    end(mode);
    check(apis[mode]->stream_destroy(capturing[mode]), "cuStreamDestroy", kModeNames[mode]);
  }

  long recorded_launches =
      g_only >= 0 && g_only != 2 ? 0 : 2L * (args.reps + 1) * args.launch_batch;
  std::printf("recorded launches expected in %s: %ld\n", args.capture.c_str(), recorded_launches);
  check(rec.ctx_synchronize(), "cuCtxSynchronize", "rec");
  // The recording shim closes its capture in its library destructor, at exit.
  return 0;
}
