#!/usr/bin/env python3
"""interceptor.cudart_lookups: runs nvcc-built runtime-API programs (static cudart) with the
chain  runtime -> cudart_spy (libcuda.so.1 on LD_LIBRARY_PATH) -> shim -> cudart_fake_driver
and checks every cuGetProcAddress answer the runtime received, as the spy logged it, against
what the fake driver itself chose for that request (cudart_fake_driver.cpp: a hand-written rule
that for a large share of the requests picks another ABI than the toolkit headers would):

  * the fake answered with one of its exports: the shim's own exported wrapper of exactly that
    export, at the symbol's exact address -- whatever driver_api.py's model would select;
  * the fake answered with no export (a new ABI): the fake's pointer for that very request,
    passed through untouched, and the shim's log (CUSNAP_LOG_FILE) says so exactly once per name;
  * the empty-name probe: exactly as the driver answered it: success, NULL (and
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND when a status is asked for); with --not-found-probe a
    program runs once more against a fake that answers the probe CUDA_ERROR_NOT_FOUND, which
    the runtime must receive unchanged;
  * the fake's choices differ from the model's (gen_expected_proc.expected_symbol) for at least
    MIN_DIFFERENT_SHARE of the requests, or the test would not show that the shim follows the
    driver; where they agree, independently of the model, from the headers: the wrapper is
    declared in cuda.h with exactly the type of the PFN typedef of the request
    (PFN_<name>_v<version>, or its _ptsz/_ptds variant for flags=2 where one exists; the types
    compared by the C++ compiler);
  * the self-look-ups of cuGetProcAddress at 11030 and 12000 (cuda-facts.md) and the counts:
    >= 400 look-ups, the empty-name probe, >= 60 flags=2 requests.

  check_cudart_lookups.py --driver-api PY --stub SO --typedefs H [--typedefs H]
      --cxx COMPILER --cuda-h CUDA_H
      --shim SO --spy-dir DIR --fake SO --work-dir DIR --app NAME=EXE [--app NAME=EXE]
      [--not-found-probe NAME=EXE]
"""
import argparse
import os
import re
import subprocess
import sys

PER_THREAD_FLAG = 2  # CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
MIN_LOOKUPS = 400
MIN_PER_THREAD_REQUESTS = 60
MIN_DIFFERENT_SHARE = 0.35
# (symbol, version, flags) -> exported symbol, from cuda-facts.md ("How programs reach the driver");
# the fake answers these as NVIDIA's driver does.
ANCHORS = {
    ("cuGetProcAddress", 11030, 0): "cuGetProcAddress",
    ("cuGetProcAddress", 12000, 0): "cuGetProcAddress_v2",
}
PASSED_THROUGH_LOG = re.compile(r"cuGetProcAddress\((\w+), -?\d+, flags=\d+\): the driver answered "
                                r"\S+, none of its exports")
MAX_REPORTED = 40
CUDA_SUCCESS = 0
CUDA_ERROR_NOT_FOUND = 500


class Lookup:
    def __init__(self, line_no, fields):
        (self.entry, self.symbol, version, flags, result, status, self.kind, self.answer,
         self.chosen) = fields
        self.line_no = line_no
        self.version = int(version)
        self.flags = int(flags)
        self.result = int(result)
        self.status = int(status)

    def __str__(self):
        return (f"{self.symbol}@{self.version} flags={self.flags} via {self.entry}: result {self.result}, "
                f"status {self.status}, answer {self.kind} {self.answer}")


class HeaderFacts:
    """What the toolkit headers say directly, without driver_api.py: which PFN typedefs exist
    (PFN_<name>_v<version>[_ptsz|_ptds]), and whether an exported symbol's declaration in cuda.h
    has exactly the type of a given PFN typedef, decided by the C++ compiler.

    cuda.h and cudaTypedefs.h are read with __CUDA_API_VERSION_INTERNAL, the headers' own switch
    that declares every ABI under its exported name (cuMemAlloc with 32-bit sizes, cuCtxCreate_v2,
    cuMemcpy_ptds, ...) instead of mapping the public names to the newest one by macros."""

    def __init__(self, typedef_headers, cxx, cuda_h):
        self.pfns = set()
        for header in typedef_headers:
            with open(header, encoding="utf-8") as f:
                self.pfns.update(re.findall(r"\bPFN_(cu\w+?_v\d+(?:_ptsz|_ptds)?)\)", f.read()))
        self.typedef_headers = typedef_headers
        self.cxx = cxx
        self.cuda_h = cuda_h
        self.verdicts = {}  # (pfn, symbol) -> True when the types are identical

    def pfn_for(self, name, version, per_thread):
        """The PFN typedef of exactly this request (the runtime asks at the version that
        introduced the ABI it uses), or None when there is none at that exact version."""
        if per_thread:
            for stream in ("ptsz", "ptds"):
                if f"{name}_v{version}_{stream}" in self.pfns:
                    return f"PFN_{name}_v{version}_{stream}"
        if f"{name}_v{version}" in self.pfns:
            return f"PFN_{name}_v{version}"
        return None

    def compare(self, pairs):
        """Compiles one static_assert per (pfn, symbol) pair; a pair whose line has an error
        (undeclared symbol or different type) does not match."""
        pairs = sorted(set(pairs) - set(self.verdicts))
        if not pairs:
            return
        include_dir = os.path.dirname(self.cuda_h)
        lines = ["#include <cuda.h>", "#include <cudaProfiler.h>"]
        lines += [f"#include <{os.path.basename(h)}>" for h in self.typedef_headers]
        lines += ["#include <type_traits>"]
        first = len(lines) + 1
        lines += [f"static_assert(std::is_same_v<{pfn}, decltype(&{symbol})>, \"\");" for pfn, symbol in pairs]
        command = [self.cxx, "-D__CUDA_API_VERSION_INTERNAL", "-std=c++17", "-fsyntax-only", "-fmax-errors=0",
                   "-I", include_dir, "-x", "c++", "-"]
        out = subprocess.run(command, input="\n".join(lines) + "\n", capture_output=True, text=True)
        bad = {int(n) for n in re.findall(r"^<stdin>:(\d+):\d+: error", out.stderr, re.M)}
        if out.returncode != 0 and not bad:
            raise RuntimeError(f"{' '.join(command)} failed:\n{out.stderr}")
        for index, pair in enumerate(pairs):
            self.verdicts[pair] = (first + index) not in bad


def run_app(name, exe, args, extra_env):
    log_path = os.path.join(args.work_dir, f"{name}.lookups.tsv")
    shim_log = os.path.join(args.work_dir, f"{name}.shim.log")
    for path in (log_path, shim_log):
        if os.path.exists(path):
            os.remove(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUSNAP_")}
    env.update({
        "LD_LIBRARY_PATH": args.spy_dir,
        "CUSNAP_SPY_SHIM": args.shim,
        "CUSNAP_SPY_LOG": log_path,
        "CUSNAP_REAL_DRIVER": args.fake,
        "CUSNAP_LOG_FILE": shim_log,
    })
    env.update(extra_env)
    try:
        proc = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=120)
        outcome = f"exit code {proc.returncode}"
        stderr = proc.stderr
    except subprocess.TimeoutExpired as e:
        outcome = "timed out"
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    print(f"[{name}] {exe}: {outcome} (expected to fail after the look-ups)")
    tail = stderr.strip().splitlines()[-5:]
    for line in tail:
        print(f"[{name}]   stderr: {line}")
    lookups = []
    if not os.path.exists(log_path):
        return lookups, [f"the spy wrote no log ({log_path}): the runtime never reached it"]
    problems = []
    with open(log_path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 9:
                problems.append(f"{log_path}:{line_no}: malformed line {line!r}")
                continue
            lookups.append(Lookup(line_no, fields))
    logged = {}
    if os.path.exists(shim_log):
        with open(shim_log, encoding="utf-8") as f:
            for line in f:
                match = PASSED_THROUGH_LOG.search(line)
                if match:
                    logged[match.group(1)] = logged.get(match.group(1), 0) + 1
    return lookups, logged, problems


def model_choice(by_name, lk):
    """What driver_api.py's model (the toolkit headers) would answer for this request."""
    import gen_expected_proc  # noqa: E402 (on sys.path from main)
    return gen_expected_proc.expected_symbol(by_name, lk.symbol, lk.version, (lk.flags & PER_THREAD_FLAG) != 0)


def check(name, lookups, logged, by_name, headers, probe_result=CUDA_SUCCESS):
    problems = []
    counts = {"wrapped": 0, "passed through": 0, "per-thread answers": 0, "typed": 0, "different": 0}
    seen = {}
    passed_names = set()
    for lk in lookups:
        where = f"[{name}] log line {lk.line_no}: {lk}, the fake chose {lk.chosen}"
        seen[(lk.symbol, lk.version, lk.flags)] = lk
        if lk.symbol == "":
            if lk.result != probe_result or lk.kind != "null" or lk.status not in (-1, 1):
                problems.append(f"{where}: the empty-name probe must come back as the driver answered "
                                f"(result {probe_result}, NULL, SYMBOL_NOT_FOUND)")
            continue
        if lk.result != 0 or lk.status not in (-1, 0):
            problems.append(f"{where}: the fake found every name; the runtime must get success")
            continue
        modelled = model_choice(by_name, lk)
        if lk.chosen == "?":
            problems.append(f"{where}: the fake driver was never asked for this request")
        elif lk.chosen == "-":
            counts["passed through"] += 1
            passed_names.add(lk.symbol)
            request = f"{lk.symbol}@{lk.version}/{lk.flags}"
            if lk.kind != "fake" or lk.answer != request:
                problems.append(f"{where}: no export, expected the driver's answer to {request} untouched")
        else:
            counts["wrapped"] += 1
            if lk.kind != "shim" or lk.answer != lk.chosen:
                problems.append(f"{where}: expected the shim's own {lk.chosen}")
        if lk.chosen != (modelled or "-"):
            counts["different"] += 1
        if lk.kind != "shim":
            continue
        threaded = lk.answer.endswith(("_ptsz", "_ptds"))
        counts["per-thread answers"] += threaded
        if lk.answer != modelled:
            continue
        # Model-independent, from the headers, where the fake chose as the headers do: the answer
        # is declared with exactly the type of the PFN typedef asked for, and carries the
        # per-thread suffix that typedef carries.
        pfn = headers.pfn_for(lk.symbol, lk.version, (lk.flags & PER_THREAD_FLAG) != 0)
        if pfn is None:
            continue
        counts["typed"] += 1
        suffix = pfn[-5:] if pfn.endswith(("_ptsz", "_ptds")) else ""
        if suffix != (lk.answer[-5:] if threaded else ""):
            problems.append(f"{where}: the ABI asked for is {pfn}, the answer's stream variant differs")
        if not headers.verdicts.get((pfn, lk.answer), False):
            problems.append(f"{where}: cuda.h does not declare {lk.answer} with the type {pfn}")
    for key, symbol in ANCHORS.items():
        lk = seen.get(key)
        if lk is None:
            problems.append(f"[{name}] the runtime never asked for {key[0]}@{key[1]} flags={key[2]}")
        elif lk.kind != "shim" or lk.answer != symbol:
            problems.append(f"[{name}] {lk}: expected {symbol} (cuda-facts.md)")
    for symbol in sorted(passed_names | set(logged)):
        if logged.get(symbol, 0) != 1 or symbol not in passed_names:
            problems.append(f"[{name}] {symbol}: passed through {symbol in passed_names}, logged "
                            f"{logged.get(symbol, 0)} time(s); expected exactly once per passed-through name")

    total = len(lookups)
    probes = sum(1 for lk in lookups if lk.symbol == "")
    threaded_requests = sum(1 for lk in lookups if lk.flags & PER_THREAD_FLAG)
    names = len({lk.symbol for lk in lookups if lk.symbol})
    relayed = sum(1 for lk in lookups if lk.entry.startswith("self_"))
    print(f"[{name}] {total} look-ups of {names} names ({relayed} through the self-looked-up "
          f"cuGetProcAddress), {probes} empty-name probe(s), {threaded_requests} with flags=2; "
          f"{counts['wrapped']} answered with the shim's wrapper ({counts['per-thread answers']} _ptsz/_ptds), "
          f"{counts['passed through']} passed through ({len(passed_names)} names); {counts['different']} "
          f"chosen by the fake differently from the headers; {counts['typed']} answers type-checked "
          "against their PFN typedef")
    if total < MIN_LOOKUPS:
        problems.append(f"[{name}] only {total} look-ups observed, expected at least {MIN_LOOKUPS}")
    if counts["different"] < MIN_DIFFERENT_SHARE * (total - probes):
        problems.append(f"[{name}] the fake chose differently from the headers for only "
                        f"{counts['different']} of {total - probes} requests")
    if counts["passed through"] == 0:
        problems.append(f"[{name}] the fake answered no request with a non-export")
    if probes < 1:
        problems.append(f"[{name}] no empty-name probe observed")
    if threaded_requests < MIN_PER_THREAD_REQUESTS:
        problems.append(f"[{name}] only {threaded_requests} flags=2 requests, expected at least "
                        f"{MIN_PER_THREAD_REQUESTS}")
    for version in (11030, 12000):
        answers = sorted({f"{lk.kind} {lk.answer}" for lk in lookups
                          if lk.symbol == "cuGetProcAddress" and lk.version == version})
        print(f"[{name}] self-look-up cuGetProcAddress@{version}: {', '.join(answers) or 'never asked'}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver-api", required=True)
    parser.add_argument("--stub", required=True)
    parser.add_argument("--typedefs", action="append", required=True)
    parser.add_argument("--cxx", required=True, help="a C++ compiler, to compare declared types")
    parser.add_argument("--cuda-h", required=True)
    parser.add_argument("--shim", required=True)
    parser.add_argument("--spy-dir", required=True)
    parser.add_argument("--fake", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--app", action="append", required=True, help="NAME=EXECUTABLE")
    parser.add_argument("--not-found-probe", action="append", default=[], help="NAME=EXECUTABLE")
    args = parser.parse_args()
    # The spy and the shim insist on absolute paths (the shim never opens a driver by soname).
    args.shim, args.spy_dir, args.fake = (os.path.abspath(p) for p in (args.shim, args.spy_dir, args.fake))

    sys.path.insert(0, os.path.dirname(os.path.abspath(args.driver_api)))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import driver_api  # noqa: E402
    import gen_expected_proc  # noqa: E402

    api = driver_api.load(args.typedefs, args.stub)
    by_name = gen_expected_proc.group_by_name(api)
    headers = HeaderFacts(args.typedefs, args.cxx, args.cuda_h)
    os.makedirs(args.work_dir, exist_ok=True)

    problems = []
    request_sets = {}
    runs = [(spec, {}, CUDA_SUCCESS) for spec in args.app]
    runs += [(spec, {"CUSNAP_FAKE_PROBE": "not_found"}, CUDA_ERROR_NOT_FOUND) for spec in args.not_found_probe]
    for spec, extra_env, probe_result in runs:
        name, _, exe = spec.partition("=")
        lookups, logged, run_problems = run_app(name, exe, args, extra_env)
        problems += run_problems
        pairs = [(headers.pfn_for(lk.symbol, lk.version, (lk.flags & PER_THREAD_FLAG) != 0), lk.answer)
                 for lk in lookups if lk.kind == "shim" and lk.answer == model_choice(by_name, lk)]
        headers.compare([pair for pair in pairs if pair[0] is not None])
        problems += check(name, lookups, logged, by_name, headers, probe_result)
        request_sets[name] = {(lk.symbol, lk.version, lk.flags) for lk in lookups}
    if len(request_sets) > 1:
        sets = list(request_sets.values())
        same = all(s == sets[0] for s in sets[1:])
        print(f"the programs' look-up sets are {'identical' if same else 'different'}")

    if problems:
        for problem in problems[:MAX_REPORTED]:
            print("FAIL:", problem)
        if len(problems) > MAX_REPORTED:
            print(f"FAIL: ... and {len(problems) - MAX_REPORTED} more")
        return 1
    print("every cuGetProcAddress answer is the wrapper of the export the driver chose, or its own answer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
