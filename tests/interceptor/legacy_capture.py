#!/usr/bin/env python3
"""interceptor.legacy_launch: launches made through the legacy execution-control API.

Runs legacy_launch_app under `cusnap capture --driver emulator` (the app checks its results
against a host reference and exits non-zero otherwise), then checks that the capture holds one
`launch` record per launch the app printed ("expect launch ..."), in order, with that symbol as
apiName, that geometry, shared bytes, stream and parameter bytes (viaExtra), and finally that
`cusnap replay --driver emulator` matches every device-to-host checksum, twice, and once more
with --address-mode relocate, without warning that a legacy setter is not modelled. Then, with
--snapshot-kernels on every kernel: each launch has its beforeLaunch/afterLaunch snapshots,
replay compares them all, and `cusnap extract` makes one standalone capture per legacy launch
that replays alone with its snapshot chunks matched.
"""
import argparse
import json
import os
import re
import subprocess
import sys

SETTERS = ("cuFuncSetBlockShape", "cuFuncSetSharedSize", "cuParamSetSize", "cuParamSeti",
           "cuParamSetf", "cuParamSetv")


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def run(command):
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    print(f"$ {' '.join(command)} (rc {done.returncode})\n{done.stdout}{done.stderr}")
    return done


def dump_records(cusnap, capture):
    dump = subprocess.run([cusnap, "dump", "--json", capture], capture_output=True, text=True,
                          check=False)
    if dump.returncode != 0:
        fail(f"cusnap dump --json failed ({dump.returncode}): {dump.stderr}")
    return [json.loads(line)["record"] for line in dump.stdout.splitlines() if line.strip()]


def check_snapshots(args):
    capture = os.path.join(args.out_dir, "legacy_launch_snapshots.cusnap")
    if os.path.exists(capture):
        os.remove(capture)
    app = run([args.cusnap, "capture", "--driver", "emulator", "--snapshot-kernels", "regex:.",
               "-o", capture, "--", args.app, args.ptx])
    if app.returncode != 0:
        fail("legacy_launch_app failed under capture with snapshots")
    records = dump_records(args.cusnap, capture)
    phases = sorted((int(r["memorySnapshot"].get("launchOrdinal", "0")),
                     r["memorySnapshot"]["phase"]) for r in records if "memorySnapshot" in r)
    ran = [r["seq"] for r in records if "launch" in r and r.get("result", 0) == 0]
    # Four launches; the one the driver refused (ordinal 1) ran nothing and has no snapshots
    # (replay skips the failed call, and would refuse a snapshot of a launch it never makes).
    want = [(o, p) for o in (0, 2, 3) for p in ("afterLaunch", "beforeLaunch")]
    if phases != want:
        fail(f"snapshots (launch ordinal, phase): {phases}, want {want}")
    replay = run([args.cusnap, "replay", "--driver", "emulator", "--progress", "off", capture])
    if replay.returncode != 0 or "all match" not in replay.stdout:
        fail(f"replay of the capture with snapshots: exit {replay.returncode}")
    extracted = os.path.join(args.out_dir, "legacy_launch_extract")
    if os.path.isdir(extracted):
        for name in os.listdir(extracted):
            os.remove(os.path.join(extracted, name))
    else:
        os.makedirs(extracted)
    # By name: the refused launch ran nothing and is neither selected nor counted.
    by_name = os.path.join(args.out_dir, "legacy_launch_by_name")
    if os.path.isdir(by_name):
        for name in os.listdir(by_name):
            os.remove(os.path.join(by_name, name))
    done = run([args.cusnap, "extract", "--kernel-name", "regex:.", "-o", by_name, capture])
    if done.returncode != 0 or len(os.listdir(by_name)) != 3:
        fail(f"cusnap extract --kernel-name regex:. exited {done.returncode}, wrote "
             f"{sorted(os.listdir(by_name)) if os.path.isdir(by_name) else []} (want 3 captures)")
    # By seq, each launch that ran.
    for seq in ran:
        done = run([args.cusnap, "extract", "--call", seq, "-o",
                    os.path.join(extracted, f"call-{seq}.cusnap"), capture])
        if done.returncode != 0:
            fail(f"cusnap extract --call {seq} exited {done.returncode}")
    files = sorted(name for name in os.listdir(extracted) if name.endswith(".cusnap"))
    if len(files) != 3:
        fail(f"cusnap extract wrote {files}, want one capture per launch that ran (3)")
    for name in files:
        replay = run([args.cusnap, "replay", "--driver", "emulator", "--progress", "off",
                      os.path.join(extracted, name)])
        if replay.returncode != 0 or "all match" not in replay.stdout:
            fail(f"extracted {name} did not replay with its snapshots matched")
    print("snapshots: taken around every legacy launch; each launch replays alone")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cusnap", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--ptx", required=True)
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()
    capture = os.path.join(args.out_dir, "legacy_launch.cusnap")
    if os.path.exists(capture):
        os.remove(capture)

    app = run([args.cusnap, "capture", "--driver", "emulator", "-o", capture, "--", args.app,
               args.ptx])
    if app.returncode != 0:
        fail("legacy_launch_app failed under capture")
    expected = [dict(item.split("=", 1) for item in line.split()[2:])
                for line in app.stdout.splitlines() if line.startswith("expect launch ")]
    if len(expected) != 4:
        fail(f"expected 4 'expect launch' lines from the app, got {len(expected)}")

    records = dump_records(args.cusnap, capture)
    launches = [r for r in records if "launch" in r]
    if len(launches) != len(expected):
        fail(f"{len(launches)} launch records in the capture, want {len(expected)}: "
             f"{[r.get('apiName') for r in records]}")
    for want, record in zip(expected, launches):
        launch = record["launch"]
        got = {
            "api": record.get("apiName"),
            "grid": f"{launch.get('gridX', 0)},{launch.get('gridY', 0)},{launch.get('gridZ', 0)}",
            "block": f"{launch.get('blockX', 0)},{launch.get('blockY', 0)},"
                     f"{launch.get('blockZ', 0)}",
            "shared": str(launch.get("sharedBytes", 0)),
            "stream": str(launch.get("stream", "0")),
            "params": launch.get("params", ""),
            "result": str(record.get("result", 0)),
        }
        if got != want:
            fail(f"launch record differs\n  app:     {want}\n  capture: {got}")
        if not launch.get("viaExtra"):
            fail(f"{got['api']}: the parameter buffer is not recorded as viaExtra")
    print(f"capture: {len(launches)} legacy launch records as the app made them")

    # Twice as captured, then with every range moved: the pointers inside the viaExtra buffers
    # must be rewritten for the checksums to match.
    for attempt, mode in ((1, "same"), (2, "same"), (3, "relocate")):
        report = os.path.join(args.out_dir, f"legacy_launch_replay{attempt}.json")
        replay = run([args.cusnap, "replay", "--driver", "emulator", "--progress", "off",
                      "--address-mode", mode, "--report", report, capture])
        if replay.returncode != 0:
            fail(f"replay {attempt} exited {replay.returncode}")
        with open(report, encoding="utf-8") as f:
            verification = json.load(f)["verification"]
        if verification["result"] != "matched" or verification["mismatched"] != 0 or \
                verification["unverified"] != 0 or verification["matched"] != 3:
            fail(f"replay {attempt}: verification {verification}")
        for setter in SETTERS:
            if re.search(rf"\b{setter} is not modelled", replay.stdout + replay.stderr):
                fail(f"replay {attempt} warns that {setter} is not modelled")
    if "relocated (--address-mode relocate)" not in replay.stdout:
        fail("replay with --address-mode relocate did not move the device memory")
    print("replay: every device-to-host checksum matched, twice in place and once relocated")
    check_snapshots(args)


if __name__ == "__main__":
    main()
