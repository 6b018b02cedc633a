#!/usr/bin/env python3
"""interceptor.range.<case>: capture ranges on the emulator (docs/capture.md, "Capture ranges").

range_app (tests/interceptor/range_app.cpp) does work before, inside and after its ranges. For
each case the capture must hold the state live at the range's start (creation records, then one
rangeStart snapshot covering exactly the live allocations and module variables), then only the
range's calls; it must pass `cusnap verify`, say what it is in `cusnap info`, and replay on its
own on the emulator with every device-to-host checksum of the range matched.
"""

import argparse
import glob
import json
import os
import subprocess
import sys

KN_BYTES = 4096 * 4  # range_app's buffers


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=240,
                          **kwargs)


def capture(args, name, app_mode, options, expect_rc=0):
    pattern = os.path.join(args.out_dir, name)
    for old in glob.glob(os.path.join(args.out_dir, "*.cusnap")):
        os.remove(old)
    result = run([args.cusnap, "capture", "--driver", "emulator", "-o", pattern, *options, "--",
                  args.app, args.image, app_mode])
    if result.returncode != expect_rc:
        fail(f"capture {options} exited {result.returncode}: {result.stdout}{result.stderr}")
    if f"range_app {app_mode}: checksum" not in result.stdout:
        fail(f"the application's output changed under capture: {result.stdout!r}")
    return result


def records(args, path):
    dump = run([args.cusnap, "dump", "--json", path])
    if dump.returncode != 0:
        fail(f"cusnap dump --json {path} failed ({dump.returncode}): {dump.stderr}")
    return [json.loads(line)["record"] for line in dump.stdout.splitlines() if line.strip()]


def kind(record):
    for key in record:
        if key not in ("seq", "threadId", "startNs", "endNs", "result", "apiName", "context"):
            return key
    return "?"


def check_file(args, path, number, expected_checksums, trigger="cudaProfilerApi", strict=True):
    """One range capture: header, structure, verify, replay."""
    verify = run([args.cusnap, "verify", path])
    if verify.returncode != 0:
        fail(f"cusnap verify {path}: {verify.returncode} {verify.stdout}{verify.stderr}")
    info = run([args.cusnap, "info", path])
    if info.returncode != 0 or f"{trigger}" not in info.stdout:
        fail(f"cusnap info {path} does not name the range: {info.stdout}{info.stderr}")
    if f"range {number}," not in info.stdout:
        fail(f"cusnap info {path}: expected range {number}: {info.stdout}")
    recs = records(args, path)
    kinds = [kind(r) for r in recs]
    starts = [i for i, r in enumerate(recs)
              if kind(r) == "memorySnapshot" and r["memorySnapshot"].get("phase") == "rangeStart"]
    if len(starts) != 1:
        fail(f"{path}: {len(starts)} rangeStart snapshots, expected 1 ({kinds})")
    start = starts[0]
    state, calls = recs[:start], recs[start + 1:]
    state_kinds = set(kind(r) for r in state)
    allowed_state = {"contextCreate", "contextSetCurrent", "primaryContext", "moduleLoad",
                     "functionGet", "globalGet", "memAlloc", "streamCreate", "eventCreate"}
    if not state_kinds <= allowed_state:
        fail(f"{path}: the state part holds {state_kinds - allowed_state}")
    allocs = [r["memAlloc"] for r in state if kind(r) == "memAlloc"]
    sizes = sorted(int(a["size"]) for a in allocs)
    if sizes != [KN_BYTES, KN_BYTES]:
        fail(f"{path}: live allocations at the start {sizes}, expected the two buffers only "
             "(the freed 1 MiB one and later ones must not appear)")
    if not any(kind(r) == "moduleLoad" and "image" in r["moduleLoad"] for r in state):
        fail(f"{path}: no module load with its image before the range")
    chunks = recs[start]["memorySnapshot"].get("chunks", [])
    covered = sum(int(c["size"]) for c in chunks)
    if covered != 2 * KN_BYTES or any(c.get("hashOnly") for c in chunks):
        fail(f"{path}: the start snapshot covers {covered} bytes, expected {2 * KN_BYTES}, "
             "all stored")
    # Nothing from outside the range: no upload at all (range_app uploads only outside ranges),
    # and no allocation.
    for r in calls if strict else []:
        k = kind(r)
        if k == "memAlloc" or k == "memFree":
            fail(f"{path}: call {r['seq']} ({r['apiName']}) is from outside the range")
        if k == "memcpy" and r["memcpy"].get("kind") == "hostToDevice":
            fail(f"{path}: an upload (call {r['seq']}) from outside the range")
        if r.get("apiName", "").startswith("cuProfilerSt"):
            fail(f"{path}: the trigger call {r['apiName']} is recorded")
    report = os.path.join(args.out_dir, os.path.basename(path) + ".json")
    replay = run([args.cusnap, "replay", "--driver", "emulator", "--progress", "off", "--report",
                  report, path])
    if replay.returncode != 0:
        fail(f"replay of {path} exited {replay.returncode}: {replay.stdout}{replay.stderr}")
    with open(report, encoding="utf-8") as f:
        verification = json.load(f)["verification"]
    if verification["result"] != "matched" or verification["mismatched"] != 0 or \
            verification["matched"] != expected_checksums:
        fail(f"replay of {path}: verification {verification}, expected {expected_checksums} "
             "matched")
    return recs, calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cusnap", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--image", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    case = args.case

    if case == "profiler":
        capture(args, "full.cusnap", "profiler", [])
        full = os.path.getsize(os.path.join(args.out_dir, "full.cusnap"))
        full_launches = sum(1 for r in records(args, os.path.join(args.out_dir, "full.cusnap"))
                            if kind(r) == "launch")
        capture(args, "range.cusnap", "profiler", ["--capture-range", "cudaProfilerApi"])
        path = os.path.join(args.out_dir, "range.cusnap")
        _, calls = check_file(args, path, 1, 2)
        launches = [r for r in calls if kind(r) == "launch"]
        if len(launches) != 2 or full_launches != 6:
            fail(f"{len(launches)} launches in the range (expected 2), {full_launches} in all")
        size = os.path.getsize(path)
        print(f"profiler: range capture {size} B (whole run {full} B), 2 of 6 launches, matched")
    elif case == "repeat":
        capture(args, "rep_%n.cusnap", "repeat",
                ["--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat:2"])
        files = sorted(glob.glob(os.path.join(args.out_dir, "rep_*.cusnap")))
        if [os.path.basename(f) for f in files] != ["rep_1.cusnap", "rep_2.cusnap"]:
            fail(f"repeat:2 wrote {files}")
        for n, path in enumerate(files, 1):
            check_file(args, path, n, 2)
        # No %n: the number goes before the extension.
        capture(args, "rep.cusnap", "repeat", ["--capture-range", "cudaProfilerApi",
                                               "--capture-range-end", "repeat"])
        files = sorted(glob.glob(os.path.join(args.out_dir, "rep*.cusnap")))
        if [os.path.basename(f) for f in files] != ["rep.1.cusnap", "rep.2.cusnap",
                                                    "rep.3.cusnap"]:
            fail(f"repeat without %n wrote {files}")
        for n, path in enumerate(files, 1):
            check_file(args, path, n, 2)
        print("repeat: one file per range, each replays on its own with its checksums matched")
    elif case == "never":
        capture(args, "never.cusnap", "never", ["--capture-range", "cudaProfilerApi"])
        path = os.path.join(args.out_dir, "never.cusnap")
        verify = run([args.cusnap, "verify", path])
        info = run([args.cusnap, "info", path])
        if verify.returncode != 0 or "never started" not in info.stdout:
            fail(f"a range that never started: verify {verify.returncode}, info {info.stdout}")
        if records(args, path):
            fail("a range that never started left records")
        if "\ufffd" in info.stdout:
            fail(f"cusnap info of the empty range file shows undecodable text: {info.stdout}")
        print("never: an empty, valid capture whose info says the range never started")
    elif case == "nostop":
        capture(args, "nostop.cusnap", "nostop", ["--capture-range", "cudaProfilerApi"])
        # The range runs to exit: its work and everything after it (two more reads).
        check_file(args, os.path.join(args.out_dir, "nostop.cusnap"), 1, 4, strict=False)
        print("nostop: a range open at exit is closed with the process and replays")
    elif case == "nvtx":
        capture(args, "nvtx.cusnap", "nvtx",
                ["--capture-range", "nvtx", "--nvtx-capture", "work@cusnap.range"])
        path = os.path.join(args.out_dir, "nvtx.cusnap")
        _, calls = check_file(args, path, 1, 5, trigger="nvtx work@cusnap.range")
        nvtx = [(r["nvtx"].get("kind", "push"), r["nvtx"].get("message", ""),
                 r["nvtx"].get("domain", "")) for r in calls if kind(r) == "nvtx"]
        expected = [("push", "work", "cusnap.range"), ("push", "work", "cusnap.range"),
                    ("pop", "work", "cusnap.range"), ("pop", "work", "cusnap.range")]
        if nvtx != expected:
            fail(f"NVTX records in the range: {nvtx}, expected {expected}")
        print("nvtx: the range of work@cusnap.range, nested push inside, replays matched")
    elif case in ("signal", "handler"):
        capture(args, f"{case}.cusnap", case, ["--capture-range", "signal"])
        check_file(args, os.path.join(args.out_dir, f"{case}.cusnap"), 1, 2,
                   trigger="signal (SIGUSR1)")
        print(f"{case}: SIGUSR1 toggles the range" +
              (", the application's own handler ran each time" if case == "handler" else ""))
    else:
        fail(f"unknown case {case}")


if __name__ == "__main__":
    main()
