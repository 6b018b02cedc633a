"""A capture opened for reading: header, index, typed call records, launches with their
parameters, blobs and memory snapshots (docs/python.md).

Every Cap'n Proto message is decoded completely (each field visited) before it is handed on, so a
file whose checksums are right but whose messages break Cap'n Proto's rules raises CaptureError
naming the frame and the call, never a stray exception from deep inside a loop of the caller.
"""
import struct
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple, Union

import capnp

from . import container as _c
from .container import CaptureError, CorruptCaptureError, TruncatedCaptureError
from .schema_loader import load_schema

DEFAULT_TRAVERSAL_LIMIT_WORDS = 64 << 20  # format/include/cusnap/format/reader.h
DEFAULT_NESTING_LIMIT = 64


def blob_id_text(blob_id) -> str:
    """A BlobId (a schema BlobId, a dict with high/low, or its 32-hex-digit text) as text."""
    if isinstance(blob_id, str):
        text = blob_id.lower()
        if len(text) != 32 or any(ch not in "0123456789abcdef" for ch in text):
            raise ValueError("a BlobId is 32 hex digits, not %r" % blob_id)
        return text
    if isinstance(blob_id, dict):
        return "%016x%016x" % (int(blob_id["high"]), int(blob_id["low"]))
    return "%016x%016x" % (blob_id.high, blob_id.low)


def _walk(message):
    """Visits every field of a message (to_dict does), so that malformed pointers fail here."""
    message.to_dict()
    if message.schema.union_fields:  # to_dict() leaves an anonymous union out
        which = message.which()
        body = getattr(message, which)
        if hasattr(body, "to_dict"):
            body.to_dict()
    return message


class Call:
    """One CallRecord: `kind` is the union member ("launch", "memcpy", "generic", ...); `body`
    that member's reader (fields as in format/schema/capture.capnp); `record` the whole record."""

    def __init__(self, record, frame: _c.Frame):
        self.record = record
        self.frame = frame
        self.kind = record.which()
        self.body = getattr(record, self.kind)

    seq = property(lambda self: self.record.seq)
    api_name = property(lambda self: self.record.apiName)
    result = property(lambda self: self.record.result)
    thread_id = property(lambda self: self.record.threadId)
    start_ns = property(lambda self: self.record.startNs)
    end_ns = property(lambda self: self.record.endNs)
    context = property(lambda self: self.record.context)

    def to_dict(self) -> dict:
        """The record as plain Python values, the union member included under its name."""
        out = self.record.to_dict()
        out[self.kind] = self.body.to_dict() if hasattr(self.body, "to_dict") else self.body
        return out

    def __repr__(self):
        return "<Call %d %s %s>" % (self.seq, self.api_name, self.kind)


class Launch(Call):
    """A `launch` record: the kernel, its geometry, and its parameters cut by `layout`."""

    kernel_name = property(lambda self: self.body.kernelName)
    ordinal = property(lambda self: self.body.ordinal)
    function = property(lambda self: self.body.function)
    stream = property(lambda self: self.body.stream)
    shared_bytes = property(lambda self: self.body.sharedBytes)
    via_extra = property(lambda self: self.body.viaExtra)
    grid = property(lambda self: (self.body.gridX, self.body.gridY, self.body.gridZ))
    block = property(lambda self: (self.body.blockX, self.body.blockY, self.body.blockZ))

    @property
    def params(self) -> bytes:
        """The packed parameter bytes as the application passed them."""
        return bytes(self.body.params)

    @property
    def layout(self) -> List[Tuple[int, int]]:
        """(offset, size) of each parameter inside `params`, in parameter order."""
        return [(slot.offset, slot.size) for slot in self.body.layout]

    def param_bytes(self, index: int) -> bytes:
        """Parameter `index`'s bytes, as the layout places them."""
        layout = self.layout
        if not 0 <= index < len(layout):
            raise IndexError("launch %d (%s) has %d parameters in its layout, not %d" %
                             (self.ordinal, self.kernel_name, len(layout), index + 1))
        offset, size = layout[index]
        params = self.params
        if offset + size > len(params):  # the C++ verifier calls such a file corrupt
            raise CorruptCaptureError("call %d: parameter %d lies outside Launch.params" %
                                      (self.seq, index))
        return params[offset:offset + size]

    def param(self, index: int, fmt: Optional[str] = None):
        """Parameter `index` decoded: `fmt` is a struct format ("i", "f", "Q", "2f", ...), always
        little-endian; without it a 4- or 8-byte parameter is an unsigned integer (a pointer
        reads as its address) and others are returned as bytes."""
        raw = self.param_bytes(index)
        if fmt is None:
            if len(raw) in (4, 8):
                return int.from_bytes(raw, "little")
            return raw
        fmt = "<" + fmt.lstrip("<>=!@")
        if struct.calcsize(fmt) != len(raw):
            raise ValueError("parameter %d of %s is %d bytes, format %r needs %d" %
                             (index, self.kernel_name, len(raw), fmt, struct.calcsize(fmt)))
        values = struct.unpack(fmt, raw)
        return values[0] if len(values) == 1 else values

    def __repr__(self):
        return "<Launch %d %s grid=%s block=%s>" % (self.ordinal, self.kernel_name, self.grid,
                                                    self.block)


@dataclass
class SnapshotChunk:
    address: int
    size: int
    blob_id: str
    hash_only: bool


class Snapshot(Call):
    """A `memorySnapshot` record: device memory around launch `launch_ordinal`."""

    phase = property(lambda self: str(self.body.phase))
    launch_ordinal = property(lambda self: self.body.launchOrdinal)
    launch_seq = property(lambda self: self.body.launchSeq)
    skipped_reason = property(lambda self: self.body.skippedReason)

    @property
    def chunks(self) -> List[SnapshotChunk]:
        return [SnapshotChunk(c.address, c.size, blob_id_text(c.blob), c.hashOnly)
                for c in self.body.chunks]


_CALL_TYPES = {"launch": Launch, "memorySnapshot": Snapshot}


class Capture:
    """An open capture file. `integrity.state` says whether it is whole, truncated (a killed
    writer: everything up to the last complete frame is readable) or corrupt (reading stopped at
    a bad frame). With strict=True anything but whole raises instead."""

    def __init__(self, path: str, *, strict: bool = False,
                 max_frame_raw_bytes: int = _c.DEFAULT_MAX_FRAME_RAW_BYTES,
                 max_blob_bytes: int = _c.DEFAULT_MAX_BLOB_BYTES,
                 traversal_limit_words: int = DEFAULT_TRAVERSAL_LIMIT_WORDS,
                 nesting_limit: int = DEFAULT_NESTING_LIMIT):
        self.path = str(path)
        self.schema = load_schema()
        self._max_frame_raw = max_frame_raw_bytes
        self._max_blob = max_blob_bytes
        self._limits = dict(traversal_limit_in_words=traversal_limit_words,
                            nesting_limit=nesting_limit)
        with open(self.path, "rb") as f:
            data = f.read()
        self.container = _c.read_container(data, max_frame_raw_bytes)
        self.integrity = self.container.integrity
        self.header = self._one_message(self.schema.CaptureHeader, self.container.frames[0])
        self.index = None
        if self.container.index_frame is not None:
            self.index = self._one_message(self.schema.CaptureIndex, self.container.index_frame)
            self._check_index()
        if strict and not self.integrity.whole:
            cls = TruncatedCaptureError if self.integrity.state == "truncated" else \
                CorruptCaptureError
            raise cls("%s: %s: %s" % (self.path, self.integrity.state, self.integrity.detail))

    # ---- file-level facts ---------------------------------------------------------------------

    @property
    def container_version(self) -> str:
        return "%d.%d" % self.container.container_version

    @property
    def schema_version(self) -> int:
        return self.header.schemaVersion

    @property
    def frames(self) -> List[_c.Frame]:
        return list(self.container.frames)

    @property
    def call_count(self) -> int:
        return sum(f.record_count for f in self.container.frames if f.kind == _c.KIND_CALLS)

    def kind_counts(self) -> dict:
        """Records per union member name, counted from the call frames (the index's kindCounts
        when the file has one are checked against the same numbers)."""
        counts = {}
        for call in self.calls():
            counts[call.kind] = counts.get(call.kind, 0) + 1
        return counts

    # ---- records ------------------------------------------------------------------------------

    def calls(self) -> Iterator[Call]:
        """Every call record in seq order (launches as Launch, snapshots as Snapshot)."""
        for frame in self.container.frames:
            if frame.kind == _c.KIND_CALLS:
                yield from self._records(frame)

    def launches(self) -> Iterator[Launch]:
        return (c for c in self.calls() if c.kind == "launch")

    def snapshots(self) -> Iterator[Snapshot]:
        return (c for c in self.calls() if c.kind == "memorySnapshot")

    def _records(self, frame: _c.Frame) -> Iterator[Call]:
        payload = self.container.payload(frame, self._max_frame_raw)
        seq = frame.first_seq
        try:
            messages = list(self.schema.CallRecord.read_multiple_bytes(payload, **self._limits))
        except capnp.KjException as e:
            raise CorruptCaptureError("frame %d: malformed call records: %s" %
                                      (frame.index, e.description)) from None
        if len(messages) != frame.record_count:
            raise CorruptCaptureError("frame %d: %d records, its header says %d" %
                                      (frame.index, len(messages), frame.record_count))
        for record in messages:
            try:
                _walk(record)
                if record.seq != seq:
                    raise CorruptCaptureError("frame %d: record seq %d where %d belongs" %
                                              (frame.index, record.seq, seq))
                call = _CALL_TYPES.get(record.which(), Call)(record, frame)
            except capnp.KjException as e:
                raise CorruptCaptureError("frame %d, call %d: malformed record: %s" %
                                          (frame.index, seq, e.description)) from None
            yield call
            seq += 1

    # ---- blobs --------------------------------------------------------------------------------

    def blob_ids(self) -> List[str]:
        """Every complete blob in the file, in the order its first chunk appears."""
        return list(self.container.blob_chunks)

    def blob_size(self, blob_id) -> int:
        chunks = self.container.blob_chunks.get(blob_id_text(blob_id))
        if chunks is None:
            raise KeyError("blob %s is not in %s" % (blob_id_text(blob_id), self.path))
        return chunks[0].blob_size

    def blob(self, blob_id) -> bytes:
        """A blob's bytes, re-hashed against its id (a mismatch raises CorruptCaptureError)."""
        text = blob_id_text(blob_id)
        size = self.blob_size(text)
        if size > self._max_blob:
            raise CaptureError("blob %s is %d bytes, over the limit %d" % (text, size,
                                                                           self._max_blob))
        data = b"".join(self.container.payload(f, self._max_frame_raw)
                        for f in self.container.blob_chunks[text])
        if _c.xxh3_128_hex(data) != text:
            raise CorruptCaptureError("blob %s: its bytes hash to %s" % (text,
                                                                         _c.xxh3_128_hex(data)))
        return data

    def snapshot_chunk(self, chunk: SnapshotChunk) -> bytes:
        if chunk.hash_only:
            raise CaptureError("chunk at 0x%x was recorded by hash only: the file holds no bytes"
                               % chunk.address)
        return self.blob(chunk.blob_id)

    # ---- internals ----------------------------------------------------------------------------

    def _one_message(self, struct_type, frame: _c.Frame):
        payload = self.container.payload(frame, self._max_frame_raw)
        try:
            messages = [_walk(m) for m in struct_type.read_multiple_bytes(payload, **self._limits)]
        except capnp.KjException as e:
            raise CorruptCaptureError("frame %d (%s): malformed message: %s" %
                                      (frame.index, frame.kind_name, e.description)) from None
        if len(messages) != 1:
            raise CorruptCaptureError("frame %d (%s): %d messages, expected one" %
                                      (frame.index, frame.kind_name, len(messages)))
        return messages[0]

    def _check_index(self):
        """The index must describe the frames the walk found (docs/format.md, step 3)."""
        frames = [f for f in self.container.frames if f.kind != _c.KIND_INDEX]
        entries = list(self.index.frames)
        problem = None
        if len(entries) != len(frames):
            problem = "lists %d frames, the file has %d" % (len(entries), len(frames))
        else:
            for entry, frame in zip(entries, frames):
                if (entry.offset, entry.kind, entry.storedSize, entry.rawSize) != \
                        (frame.offset, frame.kind, frame.stored_size, frame.raw_size):
                    problem = "frame %d differs from the file's" % frame.index
                    break
        if problem is None and self.index.callCount != self.call_count:
            problem = "callCount %d, the call frames hold %d" % (self.index.callCount,
                                                                  self.call_count)
        if problem is not None:
            raise CorruptCaptureError("index frame %d: %s" % (self.container.index_frame.index,
                                                              problem))


def open_capture(path: Union[str, "os.PathLike"], **options) -> Capture:
    """Opens a capture (see Capture for the options)."""
    return Capture(path, **options)
