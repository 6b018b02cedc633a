#!/usr/bin/env python3
"""The cusnap Python package (python/, installed by python.package.install) against captures the
C++ tools wrote: a sample captured on the emulator, with and without memory snapshots, replayed
and compared. What the package reads must equal what `cusnap info --json` says; a parameter
decoded by the launch's layout must equal what the sample passed; every blob must hash as its id
says and have the index's size; truncated and hostile files must raise CaptureError (a clear
Python exception), never crash the interpreter.

Usage: test_package.py --venv DIR --cusnap PATH --sample PATH(vector_add) --workdir DIR
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from package_venv import use_package_venv  # noqa: E402

SIZE = 3000  # vector_add's n: its fourth parameter (int n)
failures = []


def expect(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def run(*cmd, **kw):
    return subprocess.run(list(cmd), check=True, capture_output=True, text=True, **kw).stdout


def check_capture(cusnap, cusnap_exe, path, snapshots):
    info = json.loads(run(cusnap_exe, "info", "--json", path))
    cap = cusnap.open(path, strict=True)
    expect(cap.integrity.whole and cap.integrity.footer_valid, "%s: whole, with a footer" % path)
    expect(cap.container_version == info["containerVersion"], "container version")
    expect(cap.schema_version == info["header"]["schemaVersion"], "schema version")
    expect(cap.header.toolName == info["header"]["toolName"], "header toolName")
    calls = list(cap.calls())
    expect(len(calls) == int(info["counts"]["calls"]) == cap.index.callCount, "call count")
    expect([c.seq for c in calls] == list(range(len(calls))), "seqs 0..n-1 in order")
    kinds = {k["kind"]: int(k["count"]) for k in info["callKinds"]}
    expect(cap.kind_counts() == kinds, "kind counts %s vs info's %s" % (cap.kind_counts(), kinds))

    launches = list(cap.launches())
    expect(len(launches) == int(info["counts"]["launches"]) == len(cap.index.launches),
           "launch count")
    per_kernel = {}
    for launch in launches:
        per_kernel[launch.kernel_name] = per_kernel.get(launch.kernel_name, 0) + 1
    expect(per_kernel == {k["name"]: int(k["launches"]) for k in info["kernels"]},
           "kernel names and launches %s vs info's %s" % (per_kernel, info["kernels"]))
    expect([l.ordinal for l in launches] == list(range(len(launches))), "launch ordinals")
    for launch, entry in zip(launches, cap.index.launches):
        expect(launch.seq == entry.seq, "index launch %d seq" % launch.ordinal)
    add = [l for l in launches if l.kernel_name == "vector_add"]
    expect(len(add) == 1, "one vector_add launch")
    if add:
        launch = add[0]
        expect(len(launch.layout) == 4, "vector_add has 4 parameters in its layout")
        expect(launch.param(3, "i") == SIZE, "parameter n decoded by layout: %r" %
               (launch.param(3, "i"),))
        expect(launch.grid[0] * launch.block[0] >= SIZE, "grid covers n")
        pointers = [launch.param(i) for i in range(3)]
        allocs = [c.body.address for c in calls if c.kind == "memAlloc"]
        expect(all(p in allocs for p in pointers), "pointer parameters are allocations")

    # Blobs: the index's list, each re-hashed by cap.blob(), sizes as the index says.
    index_blobs = {cusnap.blob_id_text(b.id): b.size for b in cap.index.blobs}
    expect(sorted(index_blobs) == sorted(cap.blob_ids()), "blob ids")
    for blob_id, size in index_blobs.items():
        data = cap.blob(blob_id)
        expect(len(data) == size, "blob %s size" % blob_id)
    copies = [c for c in calls if c.kind == "memcpy" and c.body.payload.high]
    expect(copies, "host-to-device copies with payloads")
    for c in copies:
        expect(len(cap.blob(c.body.payload)) == c.body.size, "copy %d payload size" % c.seq)
    # A host-to-device copy's bytes are the sample's input (floats); a reader can decode them.
    expect(len(cap.blob(copies[0].body.payload)) == SIZE * 4, "first payload is n floats")

    snaps = list(cap.snapshots())
    expect(len(snaps) == int(info["snapshots"]["records"]), "snapshot records")
    if snapshots:
        expect(snaps, "the snapshot capture has snapshots")
        for snap in snaps:
            expect(snap.launch_seq in [l.seq for l in launches], "snapshot names a launch")
            for chunk in snap.chunks:
                if not chunk.hash_only:
                    expect(len(cap.snapshot_chunk(chunk)) == chunk.size, "snapshot chunk bytes")
    return cap


def check_damaged(cusnap, path, workdir):
    data = open(path, "rb").read()
    cases = {
        "empty": b"",
        "not_a_capture": b"hello, this is not a capture" * 10,
        "inside_file_header": data[:20],
        "inside_header_frame": data[:32 + 60],
        "flipped_file_header": data[:3] + bytes([data[3] ^ 1]) + data[4:],
    }
    for name, content in cases.items():
        damaged = os.path.join(workdir, name + ".cusnap")
        open(damaged, "wb").write(content)
        try:
            cusnap.open(damaged)
            expect(False, "%s: opened without an error" % name)
        except cusnap.CaptureError as e:
            print("%s: %s: %s" % (name, type(e).__name__, e))

    # A killed writer: every prefix that keeps the header frame opens as truncated (strict=True
    # raises TruncatedCaptureError); the calls read are a prefix of the whole file's.
    whole = [c.seq for c in cusnap.open(path).calls()]
    for cut in (len(data) - 1, len(data) - 32, len(data) * 2 // 3, len(data) // 3):
        damaged = os.path.join(workdir, "cut_%d.cusnap" % cut)
        open(damaged, "wb").write(data[:cut])
        try:
            cap = cusnap.open(damaged)
        except cusnap.TruncatedCaptureError as e:  # the cut fell inside the header frame
            print("cut at %d: %s" % (cut, e))
            continue
        expect(cap.integrity.state == "truncated", "cut at %d: %s" % (cut, cap.integrity))
        seqs = [c.seq for c in cap.calls()]
        expect(seqs == whole[:len(seqs)], "cut at %d: a prefix of the calls" % cut)
        try:
            cusnap.open(damaged, strict=True)
            expect(False, "cut at %d: strict open accepted it" % cut)
        except cusnap.TruncatedCaptureError:
            pass

    # One flipped bit in the middle of the file: corrupt (a checksum catches it).
    middle = len(data) // 2
    damaged = os.path.join(workdir, "flipped_middle.cusnap")
    open(damaged, "wb").write(data[:middle] + bytes([data[middle] ^ 0x10]) + data[middle + 1:])
    try:
        cap = cusnap.open(damaged)
        expect(cap.integrity.state == "corrupt", "flipped middle: %s" % cap.integrity)
        list(cap.calls())
        for blob_id in cap.blob_ids():
            cap.blob(blob_id)
    except cusnap.CaptureError as e:
        print("flipped middle: %s: %s" % (type(e).__name__, e))


def check_forged_blob(cusnap, path, workdir):
    """Checksums are not a MAC: a blob frame whose bytes changed and whose checksums were
    recomputed reads as whole, and only the re-hash against the blob's id can tell."""
    import struct
    from cusnap import container
    cap = cusnap.open(path)
    frame = next((f for f in cap.frames if f.kind == container.KIND_BLOB and
                  f.codec == container.CODEC_NONE and f.raw_size > 0), None)
    expect(frame is not None, "an uncompressed blob frame to forge")
    if frame is None:
        return
    data = bytearray(open(path, "rb").read())
    data[frame.payload_offset] ^= 0x01
    payload = bytes(data[frame.payload_offset:frame.payload_offset + frame.stored_size])
    struct.pack_into("<Q", data, frame.offset + 56, container.xxh3_64(payload))
    struct.pack_into("<Q", data, frame.offset + 72,
                     container.xxh3_64(bytes(data[frame.offset:frame.offset + 72])))
    forged = os.path.join(workdir, "forged_blob.cusnap")
    open(forged, "wb").write(bytes(data))
    cap = cusnap.open(forged, strict=True)  # every checksum is right
    try:
        cap.blob(frame.blob_id)
        expect(False, "a forged blob was read without error")
    except cusnap.CorruptCaptureError as e:
        print("forged blob: %s" % e)


def check_reports(cusnap, cusnap_exe, path, workdir):
    report = os.path.join(workdir, "replay.json")
    subprocess.run([cusnap_exe, "replay", path, "--driver", "emulator", "--report", report],
                   check=True, capture_output=True)
    r = cusnap.read_replay_report(report)
    expect(r.schema == "cusnap-replay-report" and r.version >= 2, "replay report schema")
    expect(r.verified, "replay verified")
    expect(len(r.launches) == len(list(cusnap.open(path).launches())), "report launches")
    comparison = os.path.join(workdir, "compare.json")
    with open(comparison, "w") as out:
        subprocess.run([cusnap_exe, "compare", report, report, "--json"], check=True,
                       stdout=out)
    c = cusnap.read_comparison(comparison)
    expect(not c.flagged and not c.results_differ, "a report compared with itself")
    try:
        cusnap.read_replay_report(comparison)
        expect(False, "a comparison read as a replay report")
    except cusnap.ReportError as e:
        print("comparison as a replay report: %s" % e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--venv", required=True)
    ap.add_argument("--cusnap", required=True)
    ap.add_argument("--sample", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    use_package_venv(args.venv)
    import cusnap  # the installed package, not the source tree

    expect(os.path.abspath(cusnap.__file__).startswith(os.path.abspath(args.venv)),
           "cusnap imported from the venv: %s" % cusnap.__file__)
    os.makedirs(args.workdir, exist_ok=True)
    plain = os.path.join(args.workdir, "plain.cusnap")
    snap = os.path.join(args.workdir, "snap.cusnap")
    run(args.cusnap, "capture", "--driver", "emulator", "--force-overwrite", "-o", plain, "--",
        args.sample, "--size", str(SIZE))
    run(args.cusnap, "capture", "--driver", "emulator", "--force-overwrite",
        "--snapshot-kernels", "vector_add", "--snapshot-outputs", "-o", snap, "--", args.sample,
        "--size", str(SIZE))
    check_capture(cusnap, args.cusnap, plain, snapshots=False)
    check_capture(cusnap, args.cusnap, snap, snapshots=True)
    check_damaged(cusnap, plain, args.workdir)
    stored = os.path.join(args.workdir, "uncompressed.cusnap")
    run(args.cusnap, "capture", "--driver", "emulator", "--force-overwrite", "--compress-level",
        "0", "-o", stored, "--", args.sample, "--size", str(SIZE))
    check_forged_blob(cusnap, stored, args.workdir)
    check_reports(cusnap, args.cusnap, plain, args.workdir)
    if failures:
        print("%d failures" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
