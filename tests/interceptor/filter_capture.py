#!/usr/bin/env python3
"""interceptor.filter.<case>: kernel-filtered captures on the emulator (docs/capture.md,
"Kernel filters").

Each case captures a sample twice, in full and with `--kernel-name`, and checks the filtered file
against the full one: exactly the launches the filter selects (names, geometry and parameters as
the full capture recorded them, in the same order), each with a beforeLaunch snapshot holding
its inputs and an afterLaunch one; no copy, memset or unselected launch; `cusnap verify` passes,
`cusnap info` says what the file is, and `cusnap replay` on the emulator restores each launch's
inputs and matches every after-launch chunk.
"""

import argparse
import json
import os
import subprocess
import sys

META = ("seq", "threadId", "startNs", "endNs", "result", "apiName", "context")


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=280,
                          **kwargs)


def kind(record):
    for key in record:
        if key not in META:
            return key
    return "?"


def capture(args, name, options, sample_args=(), expect_rc=0):
    path = os.path.join(args.out_dir, name)
    if os.path.exists(path):
        os.remove(path)
    result = run([args.cusnap, "capture", "--driver", "emulator", "--force-overwrite", "-o", path,
                  *options, "--", args.sample, *sample_args])
    if result.returncode != expect_rc:
        fail(f"capture {options} exited {result.returncode} (expected {expect_rc}): "
             f"{result.stdout}{result.stderr}")
    return path, result


def records(args, path):
    dump = run([args.cusnap, "dump", "--json", path])
    if dump.returncode != 0:
        fail(f"cusnap dump --json {path} failed ({dump.returncode}): {dump.stderr}")
    return [json.loads(line)["record"] for line in dump.stdout.splitlines() if line.strip()]


def launches(recs):
    return [r["launch"] for r in recs if kind(r) == "launch" and r.get("result", 0) == 0]


def allocations(recs):
    """(address, size) of every allocation, in the order the application made them."""
    out = []
    for r in recs:
        if kind(r) == "memAlloc" and r.get("result", 0) == 0:
            a = r["memAlloc"]
            if int(a.get("size", 0)) > 0:
                out.append((int(a["address"]), int(a["size"])))
    return out


def normalized_params(params, allocs):
    """The parameter bytes with every 8-byte word that points into an allocation written as
    (allocation index, offset): two runs of the same sample place allocations at different
    addresses (the emulator's mappings move with ASLR), in the same order."""
    raw = bytes.fromhex(params)
    words = []
    for at in range(0, len(raw), 8):
        word = raw[at:at + 8]
        value = int.from_bytes(word, "little") if len(word) == 8 else None
        hit = next((f"A{k}+{value - base}" for k, (base, size) in enumerate(allocs)
                    if value is not None and base <= value < base + size), None)
        words.append(hit or word.hex())
    return tuple(words)


def signatures(recs):
    """What identifies each launch across two runs of the same deterministic sample."""
    allocs = allocations(recs)
    return [(l.get("kernelName", ""), l.get("gridX", 0), l.get("gridY", 0), l.get("gridZ", 0),
             l.get("blockX", 0), l.get("blockY", 0), l.get("blockZ", 0),
             normalized_params(l.get("params", ""), allocs)) for l in launches(recs)]


def check_filtered(args, path, expected, output_lines):
    """The filtered file holds exactly `expected` (signatures), each snapshotted; replay matches."""
    verify = run([args.cusnap, "verify", path])
    if verify.returncode != 0:
        fail(f"cusnap verify {path}: {verify.returncode} {verify.stdout}{verify.stderr}")
    recs = records(args, path)
    got = signatures(recs)
    if got != expected:
        fail(f"{path}: launches {[g[0] for g in got]}, expected {[e[0] for e in expected]} "
             f"(full signatures: {got} vs {expected})")
    kinds = [kind(r) for r in recs]
    for forbidden in ("memcpy", "memset", "graph", "graphExec", "graphNode"):
        if forbidden in kinds:
            fail(f"{path}: a {forbidden} record in a kernel-filtered capture")
    # Snapshots per launch ordinal: a beforeLaunch and an afterLaunch, or (when other streams'
    # work overlapped the launch: multi_stream runs four streams at once) one skipped record with
    # its reason, and then replay warns that the launch is not verified.
    ordinals, skipped = {}, set()
    for r in recs:
        if kind(r) == "memorySnapshot":
            s = r["memorySnapshot"]
            ordinal = int(s.get("launchOrdinal", 0))
            if s.get("skippedReason"):
                if "overlapped" not in s["skippedReason"]:
                    fail(f"{path}: snapshot skipped: {s['skippedReason']}")
                skipped.add(ordinal)
                continue
            ordinals.setdefault(ordinal, []).append(s.get("phase", "beforeLaunch"))
            if s.get("phase", "beforeLaunch") == "beforeLaunch" and \
                    any(c.get("hashOnly") for c in s.get("chunks", [])):
                fail(f"{path}: a beforeLaunch chunk without its bytes")
    taken = sorted(set(ordinals) - skipped)
    if sorted(set(ordinals) | skipped) != list(range(len(expected))) or \
            any(sorted(ordinals[o]) != ["afterLaunch", "beforeLaunch"] for o in taken) or \
            (expected and not taken and not args.concurrent):
        fail(f"{path}: snapshots per launch ordinal {ordinals}, skipped {sorted(skipped)}")
    info = run([args.cusnap, "info", path])
    if info.returncode != 0 or "filtered" not in info.stdout:
        fail(f"cusnap info {path} does not say it is kernel-filtered: {info.stdout}{info.stderr}")
    for line in output_lines:
        if line not in info.stdout:
            fail(f"cusnap info {path}: expected {line!r} in {info.stdout}")
    report = path + ".json"
    # A file with no launch has nothing to verify: exit 7 unless --allow-unverified.
    replay = run([args.cusnap, "replay", "--driver", "emulator", "--progress", "off", "--report",
                  report, *([] if taken else ["--allow-unverified"]), path])
    if replay.returncode != 0:
        fail(f"replay of {path} exited {replay.returncode}: {replay.stdout}{replay.stderr}")
    with open(report, encoding="utf-8") as f:
        data = json.load(f)
    snaps = data["snapshots"]
    if taken:
        if snaps["result"] != "matched" or snaps["mismatched_chunks"] != 0 or \
                snaps["restored_chunks"] == 0:
            fail(f"replay of {path}: snapshots {snaps['result']}, restored "
                 f"{snaps['restored_chunks']}, mismatched {snaps['mismatched_chunks']}")
        after = [c for c in snaps["checks"] if c["phase"] == "afterLaunch"]
        if len(after) != len(taken) or any(c["mismatched_chunks"] for c in after):
            fail(f"replay of {path}: {len(after)} after-launch checks for {len(taken)} launches "
                 "with their inputs")
        for ordinal in skipped:
            if f"the inputs of launch #{ordinal} " not in replay.stdout + replay.stderr:
                fail(f"replay of {path} does not warn that launch #{ordinal} is unverified: "
                     f"{replay.stdout}{replay.stderr}")
    if snaps.get("kernel_filter") is None:
        fail(f"replay report of {path} does not name the kernel filter")
    return recs, info.stdout, snaps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cusnap", required=True)
    parser.add_argument("--sample", required=True)
    parser.add_argument("--case", required=True)
    # The sample runs streams concurrently: every selected launch may have its snapshot skipped
    # (other streams' work overlapped it, a matter of timing); single-stream samples must not.
    parser.add_argument("--concurrent", action="store_true")
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    case = args.case

    if case == "regex":
        # multi_stream: six kernels on four streams and the legacy one.
        full, _ = capture(args, "full.cusnap", [])
        every = signatures(records(args, full))
        names = [s[0] for s in every]
        if len(set(names)) < 4:
            fail(f"the sample launches too few distinct kernels: {names}")
        chosen = {names[1], names[3]}
        expected = [s for s in every if s[0] in chosen]
        path, _ = capture(args, "regex.cusnap",
                          ["--kernel-name", f"regex:^({names[1]}|{names[3]})$"])
        _, _, snaps = check_filtered(args, path, expected,
                                     [f"{len(expected)} of {len(expected)} matching launches "
                                      f"recorded ({len(every)} seen)"])
        # Exact names: NAME matches the whole name only.
        path, _ = capture(args, "exact.cusnap", ["--kernel-name", names[0]])
        check_filtered(args, path, [s for s in every if s[0] == names[0]], [])
        print(f"regex: {[e[0] for e in expected]} of {names} recorded, restored and matched "
              f"({snaps['restored_chunks']} chunks restored)")
    elif case == "skip_count":
        full, _ = capture(args, "full.cusnap", [])
        every = signatures(records(args, full))
        if len(every) < 6:
            fail(f"the sample has {len(every)} launches")
        path, _ = capture(args, "skip_count.cusnap",
                          ["--kernel-name", "regex:.", "--launch-skip", "2", "--launch-count", "3"])
        # Recording stops at the last selected launch: 5 launches were seen by then.
        check_filtered(args, path, every[2:5],
                       ["after skipping 2, at most 3", "3 of 5 matching launches recorded "
                        "(5 seen)"])
        # Skip only: every launch after the first four.
        path, _ = capture(args, "skip.cusnap", ["--kernel-name", "regex:.", "--launch-skip", "4"])
        check_filtered(args, path, every[4:], [])
        print(f"skip_count: launches 2..4 and 4.. of {len(every)} recorded exactly")
    elif case == "size":
        # many_launches: 2000 dependent launches of one kernel; two of them are recorded.
        full, _ = capture(args, "full.cusnap", [])
        every = signatures(records(args, full))
        path, _ = capture(args, "size.cusnap",
                          ["--kernel-name", "step", "--launch-skip", "1000", "--launch-count", "2"])
        check_filtered(args, path, every[1000:1002], ["2 of 1002 matching launches recorded"])
        full_bytes, filtered_bytes = os.path.getsize(full), os.path.getsize(path)
        if filtered_bytes * 5 > full_bytes:
            fail(f"the filtered capture is {filtered_bytes} B, the full one {full_bytes} B")
        print(f"size: 2 of {len(every)} launches in {filtered_bytes} B (full capture "
              f"{full_bytes} B), replayed matched")
    elif case == "none":
        full, _ = capture(args, "full.cusnap", [])
        seen = len(launches(records(args, full)))
        path, _ = capture(args, "none.cusnap", ["--kernel-name", "no_such_kernel"])
        recs, info, _ = check_filtered(args, path, [],
                                       [f"the filter selected no launch (0 matching of {seen} "
                                        "seen)"])
        if any(kind(r) == "memorySnapshot" for r in recs):
            fail(f"{path}: snapshots without a selected launch")
        print("none: a valid file with its state and an info line saying nothing was selected")
    elif case == "refused":
        for options, needle in (
                (["--kernel-name", "step", "--capture-range", "cudaProfilerApi"],
                 "--kernel-name cannot be combined with --capture-range"),
                (["--kernel-name", "step", "--snapshot-kernels", "step"],
                 "--kernel-name and --snapshot-kernels are exclusive"),
                (["--kernel-name", "regex:("], "--kernel-name")):
            path, result = capture(args, "refused.cusnap", options, expect_rc=1)
            if needle not in result.stderr or os.path.exists(path):
                fail(f"capture {options}: expected {needle!r} and no file: {result.stderr}")
        # The same conflict through the environment (no wrapper): the shim records nothing and
        # the application runs as without it.
        env = dict(os.environ, CUSNAP_KERNEL_NAME="step", CUSNAP_CAPTURE_RANGE="cudaProfilerApi")
        path = os.path.join(args.out_dir, "refused_env.cusnap")
        result = run([args.cusnap, "capture", "--driver", "emulator", "--force-overwrite", "-o",
                      path, "--", "env", "CUSNAP_KERNEL_NAME=step",
                      "CUSNAP_CAPTURE_RANGE=cudaProfilerApi", args.sample], env=env)
        if os.path.exists(path) or "cannot be combined with CUSNAP_CAPTURE_RANGE" not in \
                result.stderr:
            fail(f"the environment's conflict was not refused: rc {result.returncode} "
                 f"{result.stderr}")
        if "PASSED" not in result.stdout:
            fail(f"the application did not finish normally: {result.stdout}")
        print("refused: --capture-range, --snapshot-kernels and a bad regex refused with a message")
    else:
        fail(f"unknown case {case}")


if __name__ == "__main__":
    main()
