#!/usr/bin/env python3
"""Independent reader test: parse captures written by the C++ writer using only the schema
(pycapnp) and the byte layout in docs/format.md (zstd and xxhash through ctypes on the system
libraries), and compare what is found with the JSON the writer program emitted.

Usage: read_capture.py --writer PATH/cusnap_format_sample_writer --schema capture.capnp --workdir DIR
"""
import argparse
import ctypes
import json
import os
import struct
import subprocess
import sys

import capnp  # pycapnp

FILE_MAGIC = b"CUSNAP\x00\x00"
FRAME_MAGIC = b"CSFR"
TRAILER_MAGIC = b"CSNPEND\x00"
KIND_HEADER, KIND_CALLS, KIND_BLOB, KIND_INDEX = 1, 2, 3, 4


class XXH128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]


_xxh = ctypes.CDLL("libxxhash.so.0")
_xxh.XXH3_64bits.restype = ctypes.c_uint64
_xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_xxh.XXH3_128bits.restype = XXH128
_xxh.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_zstd = ctypes.CDLL("libzstd.so.1")
_zstd.ZSTD_decompress.restype = ctypes.c_size_t
_zstd.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
_zstd.ZSTD_isError.restype = ctypes.c_uint
_zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]


class CaptureError(ValueError):
    """The file breaks docs/format.md; the message says where."""


def xxh64(b):
    return _xxh.XXH3_64bits(b, len(b))


def xxh128_hex(b):
    h = _xxh.XXH3_128bits(b, len(b))
    return "%016x%016x" % (h.high64, h.low64)


def zstd_decompress(b, raw_size):
    out = ctypes.create_string_buffer(max(raw_size, 1))
    n = _zstd.ZSTD_decompress(out, raw_size, b, len(b))
    if _zstd.ZSTD_isError(n) or n != raw_size:
        raise ValueError("zstd payload did not decode to raw_size")
    return out.raw[:raw_size]


def u64(b, off):
    return struct.unpack_from("<Q", b, off)[0]


def one_message(struct_type, payload, frame_index):
    """A payload holding exactly one message (header and index frames)."""
    try:
        messages = [m.to_dict() for m in struct_type.read_multiple_bytes(payload)]
    except capnp.KjException as e:
        raise CaptureError("frame %d: malformed message: %s" % (frame_index, e.description)) \
            from None
    assert len(messages) == 1, "expected one message, found %d" % len(messages)
    return messages[0]


def parse(path, schema):
    """Walks the file as docs/format.md describes; returns what it found."""
    data = open(path, "rb").read()
    assert data[:8] == FILE_MAGIC, "file magic"
    major, minor, flags = struct.unpack_from("<HHI", data, 8)
    assert (major, flags) == (1, 0), (major, flags)
    assert u64(data, 24) == xxh64(data[:24]), "file header checksum"

    found = {"calls": [], "blob_chunks": {}, "blob_sizes": {}, "index": None, "header": None,
             "trailer_ok": False, "frames": 0}
    off, frame_index, next_seq = 32, 0, 0
    while off < len(data):
        if len(data) - off < 80:
            break  # truncated inside a frame header
        h = data[off:off + 80]
        assert h[:4] == FRAME_MAGIC, "frame magic at %d" % off
        assert u64(h, 72) == xxh64(h[:72]), "frame header checksum at %d" % off
        kind, codec = h[4], h[5]
        stored, raw = u64(h, 8), u64(h, 16)
        assert u64(h, 64) == frame_index, "frame index"
        if off + 80 + stored > len(data):
            break  # truncated payload
        payload = data[off + 80: off + 80 + stored]
        assert u64(h, 56) == xxh64(payload), "payload checksum of frame %d" % frame_index
        if codec == 1:
            payload = zstd_decompress(payload, raw)
        else:
            assert codec == 0 and stored == raw
        if kind == KIND_HEADER:
            assert frame_index == 0
            found["header"] = one_message(schema.CaptureHeader, payload, frame_index)
        elif kind == KIND_CALLS:
            first, last, count = u64(h, 24), u64(h, 32), struct.unpack_from("<I", h, 40)[0]
            assert first == next_seq and count == last - first + 1
            records = list(schema.CallRecord.read_multiple_bytes(payload))
            assert len(records) == count
            for i, rec in enumerate(records):
                # Checksums prove nothing about the contents: a record that breaks Cap'n Proto's
                # rules is an error naming where it is, not a stray KjException.
                try:
                    assert rec.seq == first + i
                    found["calls"].append(rec.to_dict())
                    which = rec.which()
                    found["calls"][-1]["_which"] = which
                    # to_dict() leaves the anonymous union out: decode its member too.
                    body = getattr(rec, which)
                    if hasattr(body, "to_dict"):
                        found["calls"][-1][which] = body.to_dict()
                except capnp.KjException as e:
                    raise CaptureError("frame %d, call %d: malformed record: %s" %
                                       (frame_index, first + i, e.description)) from None
            next_seq = last + 1
        elif kind == KIND_BLOB:
            blob_id = "%016x%016x" % (u64(h, 24), u64(h, 32))
            chunk_offset, blob_size = u64(h, 40), u64(h, 48)
            chunks = found["blob_chunks"].setdefault(blob_id, [])
            assert chunk_offset == sum(len(c) for c in chunks), "chunks in order"
            chunks.append(payload)
            found["blob_sizes"][blob_id] = blob_size
        elif kind == KIND_INDEX:
            found["index"] = one_message(schema.CaptureIndex, payload, frame_index)
            trailer = data[off + 80 + stored:]
            if len(trailer) == 32 and trailer[:8] == TRAILER_MAGIC and \
                    u64(trailer, 24) == xxh64(trailer[:24]) and u64(trailer, 8) == off and \
                    u64(trailer, 16) == len(data) - 32:
                found["trailer_ok"] = True
            frame_index += 1
            break
        else:
            raise AssertionError("unknown frame kind %d" % kind)
        off += 80 + stored
        frame_index += 1
    found["frames"] = frame_index
    return found


def check(found, expected, closed):
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
        assert xxh128_hex(content) == blob_id, "blob hash"
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
    ap.add_argument("--writer", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    # The schema imports /capnp/c++.capnp (C++ namespace annotation only); pycapnp ships it.
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(capnp.__file__)))
    schema = capnp.load(args.schema, imports=[pkg_parent, "/usr/include"])
    for closed in (True, False):
        name = "closed" if closed else "killed"
        cap = os.path.join(args.workdir, name + ".cusnap")
        js = os.path.join(args.workdir, name + ".json")
        cmd = [args.writer, cap, js] + ([] if closed else ["--no-close"])
        subprocess.run(cmd, check=True)
        expected = json.load(open(js))
        found = parse(cap, schema)
        check(found, expected, closed)
        print("%s: %d calls, %d frames, %d blobs: ok" %
              (name, len(found["calls"]), found["frames"], len(found["blob_chunks"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
