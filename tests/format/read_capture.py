#!/usr/bin/env python3
"""Independent reader test: parse captures written by the C++ writer with the cusnap Python
package (python/: the second reader of the format, written from docs/format.md and the schema
alone), and compare what it finds with the JSON the writer program emitted. Runs in the venv the
python.package.install test made.

Usage: read_capture.py --venv DIR --writer PATH/cusnap_format_sample_writer --workdir DIR
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from package_venv import use_package_venv  # noqa: E402


def parse(path):
    """Reads the file with the cusnap package; returns what it found, as plain values."""
    import cusnap
    from cusnap import container

    cap = cusnap.open(path)
    found = {"calls": [], "blob_chunks": {}, "blob_sizes": {}, "index": None,
             "header": cap.header.to_dict(), "trailer_ok": cap.integrity.footer_valid,
             "frames": len(cap.frames)}
    for call in cap.calls():
        record = call.to_dict()
        record["_which"] = call.kind
        found["calls"].append(record)
    for blob_id in cap.blob_ids():
        frames = cap.container.blob_chunks[blob_id]
        found["blob_chunks"][blob_id] = [cap.container.payload(f) for f in frames]
        found["blob_sizes"][blob_id] = cap.blob_size(blob_id)
    if cap.index is not None:
        found["index"] = cap.index.to_dict()
    return found


def check(found, expected, closed):
    from cusnap import container
    calls = found["calls"]
    assert len(calls) == expected["calls"], (len(calls), expected["calls"])
    kinds = {}
    for c in calls:
        kinds[c["_which"]] = kinds.get(c["_which"], 0) + 1
    assert kinds == expected["kinds"], (kinds, expected["kinds"])
    assert found["header"]["hostName"] == expected["hostName"]
    assert found["header"]["schemaVersion"] == expected["schemaVersion"]
    assert found["header"]["devices"][0]["computeCapabilityMajor"] == 8

    # Blobs: complete, hash equals id, sizes as written; every referenced id is present.
    blobs = {}
    for blob_id, chunks in found["blob_chunks"].items():
        content = b"".join(chunks)
        assert len(content) == found["blob_sizes"][blob_id]
        assert container.xxh3_128_hex(content) == blob_id, "blob hash"
        blobs[blob_id] = len(content)
    assert blobs == expected["blobs"], (blobs, expected["blobs"])
    assert any(len(c) > 1 for c in found["blob_chunks"].values()), "a multi-chunk blob"
    for c in calls:
        if c["_which"] == "memcpy":
            p = c["memcpy"]["payload"]
            assert "%016x%016x" % (int(p["high"]), int(p["low"])) in blobs

    # Launches: ordinals, grid, parameter bytes.
    launches = [c for c in calls if c["_which"] == "launch"]
    assert len(launches) == len(expected["launches"])
    for got, want in zip(launches, expected["launches"]):
        assert got["seq"] == want["seq"]
        assert got["launch"]["ordinal"] == want["ordinal"]
        assert got["launch"]["gridX"] == want["gridX"]
        assert got["launch"]["kernelName"] == want["kernelName"]
        assert bytes(got["launch"]["params"]).hex() == want["params"]

    if closed:
        assert found["trailer_ok"], "trailer"
        index = found["index"]
        assert int(index["callCount"]) == expected["calls"]
        assert len(index["launches"]) == len(expected["launches"])
        for entry, want in zip(index["launches"], expected["launches"]):
            assert int(entry["seq"]) == want["seq"]
        assert len(index["frames"]) == found["frames"] - 1
        assert int(index["stats"]["blobBytesLogical"]) == expected["blob_bytes_logical"]
        assert len(index["blobs"]) == len(expected["blobs"])
    else:
        assert found["index"] is None and not found["trailer_ok"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--venv", required=True)
    ap.add_argument("--writer", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    use_package_venv(args.venv)
    os.makedirs(args.workdir, exist_ok=True)
    for closed in (True, False):
        name = "closed" if closed else "killed"
        cap = os.path.join(args.workdir, name + ".cusnap")
        js = os.path.join(args.workdir, name + ".json")
        cmd = [args.writer, cap, js] + ([] if closed else ["--no-close"])
        subprocess.run(cmd, check=True)
        expected = json.load(open(js))
        found = parse(cap)
        check(found, expected, closed)
        print("%s: %d calls, %d frames, %d blobs: ok" %
              (name, len(found["calls"]), found["frames"], len(found["blob_chunks"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
