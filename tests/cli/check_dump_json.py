#!/usr/bin/env python3
"""Checks `cusnap dump --json` and `cusnap info --json` with nothing but Python's json module,
against the expectations the sample writer recorded (TSV: seq kind api result threadId keyValue).

usage: check_dump_json.py CUSNAP SAMPLE_WRITER SCRATCH_DIR
"""
import json
import os
import subprocess
import sys

# Per kind, the record field whose value the writer noted as keyValue (64-bit: a JSON string).
KEY_FIELDS = {
    "contextCreate": "context",
    "contextDestroy": "context",
    "moduleLoad": "handle",
    "functionGet": "handle",
    "memAlloc": "address",
    "launch": "function",
    "streamCreate": "stream",
    "streamSynchronize": "stream",
    "memset": "address",
}


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    cusnap, writer, scratch = sys.argv[1:4]
    os.makedirs(scratch, exist_ok=True)
    capture = os.path.join(scratch, "sample.cusnap")
    tsv = os.path.join(scratch, "sample.tsv")
    subprocess.run([writer, capture, tsv], check=True)

    calls, totals = [], {}
    with open(tsv) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if cols[0].startswith("#"):
                totals[cols[0][1:]] = int(cols[1])
            else:
                calls.append(cols)

    out = subprocess.run([cusnap, "dump", "--json", capture], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    lines = out.splitlines()
    if len(lines) != len(calls):
        fail("%d JSON lines for %d calls" % (len(lines), len(calls)))
    for line, (seq, kind, api, result, thread, key) in zip(lines, calls):
        obj = json.loads(line)
        rec = obj["record"]
        if obj["v"] != 1 or obj["seq"] != seq or obj["kind"] != kind:
            fail("envelope mismatch: %s" % line)
        if not isinstance(obj["frame"], int):
            fail("frame is not an integer: %s" % line)
        if rec["seq"] != seq or rec["apiName"] != api or rec["result"] != int(result):
            fail("record header mismatch: %s" % line)
        if rec["threadId"] != thread:  # 64-bit integers are strings
            fail("threadId mismatch: %s" % line)
        if kind not in rec:
            fail("union member %s missing: %s" % (kind, line))
        field = KEY_FIELDS.get(kind)
        if field is not None and rec[kind][field] != key:
            fail("%s.%s is %r, expected %s" % (kind, field, rec[kind][field], key))
        if kind == "launch":
            params = rec["launch"]["params"]
            if len(params) != 32 or int(params, 16) < 0:
                fail("launch params not 16 bytes of hex: %r" % params)
        if kind == "memcpy" and rec["memcpy"]["kind"] == "hostToDevice":
            if len(rec["memcpy"]["payload"]) != 32:
                fail("payload blob id is not 32 hex digits: %s" % line)

    info = json.loads(subprocess.run([cusnap, "info", "--json", capture], check=True,
                                     stdout=subprocess.PIPE, text=True).stdout)
    if int(info["counts"]["calls"]) != len(calls):
        fail("info counts.calls %s != %d" % (info["counts"]["calls"], len(calls)))
    if int(info["counts"]["launches"]) != totals["launches"]:
        fail("info counts.launches")
    if int(info["bytes"]["blobReferenced"]) != totals["blob_referenced_bytes"]:
        fail("info bytes.blobReferenced")
    if int(info["bytes"]["blobUnique"]) != totals["blob_unique_bytes"]:
        fail("info bytes.blobUnique")
    if info["integrity"]["state"] != "whole":
        fail("info integrity.state")
    print("OK: %d JSON lines checked" % len(lines))


if __name__ == "__main__":
    main()
