#!/usr/bin/env python3
"""interceptor.legacy_launch: launches made through the legacy execution-control API.

Runs legacy_launch_app under `cusnap capture --driver emulator` (the app checks its results
against a host reference and exits non-zero otherwise), then checks that the capture holds one
`launch` record per launch the app printed ("expect launch ..."), in order, with that symbol as
apiName, that geometry, shared bytes, stream and parameter bytes (viaExtra), and finally that
`cusnap replay --driver emulator` matches every device-to-host checksum, twice, without warning
that a legacy setter is not modelled.
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
    if len(expected) != 3:
        fail(f"expected 3 'expect launch' lines from the app, got {len(expected)}")

    dump = subprocess.run([args.cusnap, "dump", "--json", capture], capture_output=True,
                          text=True, check=False)
    if dump.returncode != 0:
        fail(f"cusnap dump --json failed ({dump.returncode}): {dump.stderr}")
    records = [json.loads(line)["record"] for line in dump.stdout.splitlines() if line.strip()]
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
        }
        if got != want:
            fail(f"launch record differs\n  app:     {want}\n  capture: {got}")
        if not launch.get("viaExtra"):
            fail(f"{got['api']}: the parameter buffer is not recorded as viaExtra")
        if record.get("result", 0) != 0:
            fail(f"{got['api']}: recorded result {record.get('result')}")
    print(f"capture: {len(launches)} legacy launch records as the app made them")

    for attempt in (1, 2):
        report = os.path.join(args.out_dir, f"legacy_launch_replay{attempt}.json")
        replay = run([args.cusnap, "replay", "--driver", "emulator", "--progress", "off",
                      "--report", report, capture])
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
    print("replay: every device-to-host checksum matched, twice")


if __name__ == "__main__":
    main()
