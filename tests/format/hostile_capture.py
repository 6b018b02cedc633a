#!/usr/bin/env python3
"""Hostile captures: files whose frames, index and trailer carry valid checksums (XXH3 is not a
MAC, anyone can recompute them) but whose Cap'n Proto records are malformed. Every reader path
must turn them into an error that names the call and the frame, with the documented exit code,
and never die of a signal.

The files are written here, from docs/format.md alone (independent of format/src's writer):
pycapnp builds well-formed messages, then the bytes of one pointer are patched to break exactly
one Cap'n Proto rule, and the checksums are computed over the result.

Usage: hostile_capture.py --venv DIR --cusnap PATH/cusnap --workdir DIR
"""
import argparse
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from package_venv import use_package_venv_from_argv  # noqa: E402

use_package_venv_from_argv()  # the cusnap package (python/): the independent reader
import cusnap  # noqa: E402
from cusnap import container  # noqa: E402  (constants, checksums)
import read_capture  # noqa: E402  (parse(): the reader's documented use)

KIND_HEADER, KIND_CALLS, KIND_INDEX = container.KIND_HEADER, container.KIND_CALLS, \
    container.KIND_INDEX
EXIT_CORRUPT = 3  # docs/cli.md: a frame, blob, index or record fails its checks


# ---- writing a capture (docs/format.md, "File layout") ------------------------------------------

def file_header():
    head = container.FILE_MAGIC + struct.pack("<HHIQ", 1, 0, 0, 0)
    return head + struct.pack("<Q", container.xxh3_64(head))


def frame(kind, frame_index, payload, specific=b"\0" * 32):
    head = container.FRAME_MAGIC + struct.pack("<BBHQQ", kind, 0, 0, len(payload), len(payload))
    head += specific + struct.pack("<QQ", container.xxh3_64(payload), frame_index)
    return head + struct.pack("<Q", container.xxh3_64(head)) + payload


def calls_specific(first_seq, last_seq):
    return struct.pack("<QQI", first_seq, last_seq, last_seq - first_seq + 1) + b"\0" * 12


def trailer(index_offset, trailer_offset):
    body = container.TRAILER_MAGIC + struct.pack("<QQ", index_offset, trailer_offset)
    return body + struct.pack("<Q", container.xxh3_64(body))


def write_capture(schema, records, forge_kinds=None, header=None):
    """A cleanly closed capture: header frame, one call frame holding `records` (message bytes,
    seqs 0..n-1), the index frame and the trailer. `records[i]` is (bytes, union discriminant,
    launch ordinal or None). `header`: a CaptureHeader builder or the message's bytes;
    `forge_kinds` rewrites the index's per-kind counts."""
    if header is None:
        header = schema.CaptureHeader.new_message(toolName="hostile_capture.py",
                                                  schemaVersion=2, containerVersion=1 << 16,
                                                  hostName="test")
    out = bytearray(file_header())
    frames = []

    def add(kind, payload, specific=b"\0" * 32, first=0, last=0):
        frames.append({"offset": len(out), "kind": kind, "storedSize": len(payload),
                       "rawSize": len(payload), "firstSeq": first, "lastSeq": last})
        out.extend(frame(kind, len(frames) - 1, payload, specific))

    add(KIND_HEADER, header if isinstance(header, bytes) else header.to_bytes())
    payload = b"".join(r[0] for r in records)
    add(KIND_CALLS, payload, calls_specific(0, len(records) - 1), 0, len(records) - 1)
    kinds = {}
    for _, which, _ in records:
        kinds[which] = kinds.get(which, 0) + 1
    if forge_kinds:
        kinds = forge_kinds(kinds)
    index = schema.CaptureIndex.new_message(
        frames=frames, callCount=len(records),
        launches=[{"ordinal": o, "seq": seq, "frame": 1}
                  for seq, (_, _, o) in enumerate(records) if o is not None],
        kindCounts=[{"kind": k, "count": c} for k, c in sorted(kinds.items())])
    index_offset = len(out)
    out.extend(frame(KIND_INDEX, len(frames), index.to_bytes()))
    out.extend(trailer(index_offset, len(out)))
    return bytes(out)


# ---- Cap'n Proto pointers (https://capnproto.org/encoding.html) ---------------------------------

def word(buf, i):
    return struct.unpack_from("<Q", buf, 8 + 8 * i)[0]  # 8: the one-segment table


def set_word(buf, i, value):
    struct.pack_into("<Q", buf, 8 + 8 * i, value)


def signed30(ptr):
    off = (ptr >> 2) & 0x3FFFFFFF
    return off - (1 << 30) if off & (1 << 29) else off


def struct_at(buf, i):
    """(first data word, data words, first pointer) of the struct that pointer word i points at."""
    ptr = word(buf, i)
    assert ptr & 3 == 0, "not a struct pointer"
    start = i + 1 + signed30(ptr)
    data_words = (ptr >> 32) & 0xFFFF
    return start, data_words, start + data_words


def pointer_slot(schema_struct, field):
    return schema_struct.schema.fields[field].proto.slot.offset


def list_target(buf, i):
    ptr = word(buf, i)
    assert ptr & 3 == 1, "not a list pointer"
    return i + 1 + signed30(ptr), (ptr >> 32) & 7, ptr >> 35


def one_segment(message):
    data = bytearray(message.to_bytes())
    assert struct.unpack_from("<I", data, 0)[0] == 0, "expected a single-segment message"
    return data


# ---- the records ---------------------------------------------------------------------------------

def records(schema, malformation):
    """Four records, the malformation applied to one of them. Returns (records, bad seq)."""
    cr = schema.CallRecord
    disc = {f: cr.schema.fields[f].proto.discriminantValue
            for f in ("generic", "launch", "memAlloc")}
    r0 = cr.new_message(seq=0, apiName="cuInit", generic={"args": "flags=0"})
    r1 = cr.new_message(seq=1, apiName="cuLaunchKernel",
                        launch={"function": 0x10, "gridX": 1, "gridY": 1, "gridZ": 1,
                                "blockX": 1, "blockY": 1, "blockZ": 1, "ordinal": 0,
                                "params": b"\x01" * 16, "kernelName": "k"})
    r2 = cr.new_message(seq=2, apiName="cuMemSetAccess",
                        memAlloc={"kind": "vmmSetAccess", "address": 0x1000, "size": 4096,
                                  "accessDescriptors": [{"locationType": 1, "locationId": 0,
                                                         "flags": 3},
                                                        {"locationType": 1, "locationId": 1,
                                                         "flags": 3}]})
    r3 = cr.new_message(seq=3, apiName="cuCtxSynchronize", generic={"args": ""})
    msgs = [one_segment(r) for r in (r0, r1, r2, r3)]

    def root_pointer(buf, field):
        start, data_words, ptrs = struct_at(buf, 0)
        return ptrs + pointer_slot(cr, field)

    if malformation == "text_without_nul":
        bad = 2
        target, _, count = list_target(msgs[bad], root_pointer(msgs[bad], "apiName"))
        msgs[bad][8 + 8 * target + count - 1] = ord("X")  # the NUL the count includes
    elif malformation in ("composite_tag_lies", "list_amplification"):
        bad = 2
        _, _, ptrs = struct_at(msgs[bad], root_pointer(msgs[bad], "memAlloc"))
        slot = ptrs + pointer_slot(schema.MemAlloc, "accessDescriptors")
        target, size, words = list_target(msgs[bad], slot)
        assert size == 7, "expected an inline-composite list"
        tag = word(msgs[bad], target)
        if malformation == "composite_tag_lies":
            # Same word count, ten times the elements: they cannot fit.
            set_word(msgs[bad], target, (tag & ~(0x3FFFFFFF << 2)) | (20 << 2))
        else:
            # 2^29-1 (the most a list can count) zero-sized elements in zero words: reading them
            # costs nothing but traversal budget, far more than the 64 Mi-word limit.
            set_word(msgs[bad], slot, word(msgs[bad], slot) & 0x7FFFFFFFF)  # word count 0
            set_word(msgs[bad], target, ((1 << 29) - 1) << 2)
    elif malformation == "out_of_bounds_data":
        bad = 1
        _, _, ptrs = struct_at(msgs[bad], root_pointer(msgs[bad], "launch"))
        slot = ptrs + pointer_slot(schema.Launch, "params")
        ptr = word(msgs[bad], slot)
        set_word(msgs[bad], slot, (ptr & ~(0x3FFFFFFF << 2)) | (100000 << 2))
    elif malformation == "capability_for_text":
        bad = 1
        _, _, ptrs = struct_at(msgs[bad], root_pointer(msgs[bad], "launch"))
        set_word(msgs[bad], ptrs + pointer_slot(schema.Launch, "kernelName"), 3)  # cap #0
    else:
        raise ValueError(malformation)
    ordinals = [None, 0, None, None]
    which = [disc["generic"], disc["launch"], disc["memAlloc"], disc["generic"]]
    return [(bytes(m), w, o) for m, w, o in zip(msgs, which, ordinals)], bad


MALFORMATIONS = ["text_without_nul", "composite_tag_lies", "list_amplification",
                 "out_of_bounds_data", "capability_for_text"]


# ---- the checks ----------------------------------------------------------------------------------

def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def check_path(name, cmd, bad, failures, must_name_call=True, keeps_going=None):
    rc, out, err = run(cmd)
    text = out + err
    problems = []
    if rc < 0:
        problems.append("killed by signal %d" % -rc)
    elif rc != EXIT_CORRUPT:
        problems.append("exit %d, expected %d" % (rc, EXIT_CORRUPT))
    if "terminate called" in text or "kj::ExceptionImpl" in text:
        problems.append("uncaught Cap'n Proto exception")
    if must_name_call and ("call %d" % bad not in text or "frame 1" not in text):
        problems.append("the error does not name call %d and frame 1" % bad)
    if keeps_going and keeps_going not in out:
        problems.append("did not go on to the next record (%r missing)" % keeps_going)
    if problems:
        failures.append("%s: %s\n    output: %s" % (name, "; ".join(problems), text[-600:]))
    else:
        print("  %-14s exit %d: ok" % (name, rc))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cusnap", required=True)
    ap.add_argument("--venv", required=True)  # used at the top (use_package_venv_from_argv)
    ap.add_argument("--workdir", required=True)
    # Sanitizer builds reserve terabytes of shadow address space: no address-space limit there
    # (the memory check is the release build's; the output is still checked).
    ap.add_argument("--no-memory-limit", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    # The package's copy of format/schema/capture.capnp (pycapnp loads one schema ID once).
    schema = cusnap.load_schema()
    failures = []
    for malformation in MALFORMATIONS:
        recs, bad = records(schema, malformation)
        path = os.path.join(args.workdir, malformation + ".cusnap")
        with open(path, "wb") as f:
            f.write(write_capture(schema, recs))
        print("%s (call %d):" % (malformation, bad))
        c = args.cusnap
        check_path("info", [c, "info", path], bad, failures)
        check_path("info --json", [c, "info", "--json", path], bad, failures)
        check_path("dump", [c, "dump", path], bad, failures, keeps_going="cuCtxSynchronize")
        check_path("dump --json", [c, "dump", "--json", path], bad, failures,
                   keeps_going="cuCtxSynchronize")
        check_path("verify", [c, "verify", path], bad, failures)
        check_path("replay", [c, "replay", "--driver", "emulator", path], bad, failures)
        # extract reads the records up to the launch (call 1) only: a bad record after it is
        # not its business, but whatever it reports must be an error exit, not a signal.
        check_path("extract", [c, "extract", path, "--call", "1", "-o", path + ".extract"], bad,
                   failures, must_name_call=bad <= 1)
        # The independent Python reader: its documented use raises a clean exception.
        try:
            read_capture.parse(path)
            failures.append("%s: read_capture.parse accepted the file" % malformation)
        except cusnap.CaptureError as e:
            if "call %d" % bad not in str(e) or "frame 1" not in str(e):
                failures.append("%s: read_capture.parse: %s does not name call %d, frame 1" %
                                (malformation, e, bad))
            else:
                print("  %-14s %s: ok" % ("python reader", e))
    # The same in the header frame (a capability where CaptureHeader.hostName is text): the file
    # cannot be opened, and every path says frame 0.
    header = one_segment(schema.CaptureHeader.new_message(toolName="hostile_capture.py",
                                                          schemaVersion=2, hostName="test"))
    _, _, ptrs = struct_at(header, 0)
    set_word(header, ptrs + pointer_slot(schema.CaptureHeader, "hostName"), 3)
    path = os.path.join(args.workdir, "malformed_header.cusnap")
    recs, _ = records(schema, "text_without_nul")
    with open(path, "wb") as f:
        f.write(write_capture(schema, recs[:2], header=bytes(header)))
    print("malformed_header:")
    for name, cmd in [("info", [args.cusnap, "info", path]),
                      ("info --json", [args.cusnap, "info", "--json", path]),
                      ("dump", [args.cusnap, "dump", path]),
                      ("dump --json", [args.cusnap, "dump", "--json", path]),
                      ("verify", [args.cusnap, "verify", path]),
                      ("replay", [args.cusnap, "replay", "--driver", "emulator", path]),
                      ("extract", [args.cusnap, "extract", path, "--call", "1", "-o",
                                   path + ".extract"])]:
        rc, out, err = run(cmd)
        if rc != EXIT_CORRUPT or "frame 0" not in out + err:
            failures.append("malformed_header: %s: exit %d\n    output: %s" %
                            (name, rc, (out + err)[-600:]))
        else:
            print("  %-14s exit %d: ok" % (name, rc))
    try:
        read_capture.parse(path)
        failures.append("malformed_header: read_capture.parse accepted the file")
    except cusnap.CaptureError as e:
        if "frame 0" not in str(e):
            failures.append("malformed_header: read_capture.parse: %s does not name frame 0" % e)
        else:
            print("  %-14s %s: ok" % ("python reader", e))

    # An index that lies where the old verify did not look (per-kind counts that add up to the
    # right total), over well-formed records: verify calls it corrupt, so replay refuses it
    # (exit 3) unless told --allow-corrupt.
    cr = schema.CallRecord
    generic = cr.schema.fields["generic"].proto.discriminantValue
    tool = cr.schema.fields["toolEvent"].proto.discriminantValue
    plain = [(bytes(one_segment(cr.new_message(seq=i, apiName="cuInit", generic={}))), generic,
              None) for i in range(3)]
    c = args.cusnap
    # A memcpy naming a blob the file does not hold (a writer that cannot store one records the
    # null id): semantically corrupt although every byte is well-formed.
    memcpy = cr.schema.fields["memcpy"].proto.discriminantValue
    orphan = cr.new_message(seq=1, apiName="cuMemcpyHtoD_v2",
                            memcpy={"kind": "hostToDevice", "size": 16,
                                    "payload": {"high": 0x1234, "low": 0x5678}})
    dangling = [plain[0], (bytes(one_segment(orphan)), memcpy, None)]
    semantic = [("forged_kind_counts",
                 write_capture(schema, plain, lambda k: {generic: k[generic] - 1, tool: 1}),
                 "count of generic records"),
                ("dangling_blob_reference", write_capture(schema, dangling),
                 "not stored before it")]
    for case, data, reason in semantic:
        path = os.path.join(args.workdir, case + ".cusnap")
        with open(path, "wb") as f:
            f.write(data)
        print(case + ":")
        for name, cmd, want in [
                ("verify", [c, "verify", path], EXIT_CORRUPT),
                ("replay", [c, "replay", "--driver", "emulator", path], EXIT_CORRUPT),
                ("replay --allow-corrupt",
                 [c, "replay", "--driver", "emulator", "--allow-corrupt", path], None)]:
            rc, out, err = run(cmd)
            if rc < 0 or (want is not None and (rc != want or reason not in out + err)) or \
                    (want is None and "not replaying a corrupt capture" in err):
                failures.append("%s: %s: exit %d, expected %s\n    output: %s" %
                                (case, name, rc, want, (out + err)[-600:]))
            else:
                print("  %-22s exit %d: ok" % (name, rc))
    # A 16 MiB header of 64 devices with 32768 attributes each: `info --json` must not build a
    # JSON tree of it (that took ~250 times the file size). Checked by an address-space limit
    # (prlimit --as), not by timing.
    header = schema.CaptureHeader.new_message(toolName="hostile_capture.py", schemaVersion=2,
                                              containerVersion=1 << 16)
    devices = header.init("devices", 64)
    for d in range(64):
        devices[d].name = "device %d" % d
        attributes = devices[d].init("attributes", 32768)
        for j in range(32768):
            attributes[j].id = j
            attributes[j].value = d
    path = os.path.join(args.workdir, "huge_header.cusnap")
    with open(path, "wb") as f:
        f.write(write_capture(schema, plain, header=header))
    print("huge_header (%d bytes):" % os.path.getsize(path))
    limit = 1 << 30
    for name, cmd in [("info", [c, "info", path]), ("info --json", [c, "info", "--json", path])]:
        rc, out, err = run(cmd if args.no_memory_limit else
                           ["prlimit", "--as=%d" % limit, "--"] + cmd)
        if rc != 0 or (name == "info --json" and '"attributes":[{"id":0,"value":0}' not in out):
            failures.append("huge_header: %s under a %d MiB address-space limit: exit %d\n"
                            "    output: %s" % (name, limit >> 20, rc, (out[:300] + err)[-600:]))
        else:
            print("  %-22s exit 0 %s: ok" % (name, "(no memory limit: sanitizer build)"
                                              if args.no_memory_limit else
                                              "within %d MiB" % (limit >> 20)))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
