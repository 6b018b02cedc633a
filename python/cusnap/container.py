"""The container layer of a capture: file header, frames, index and trailer (docs/format.md).

This is the second reader of the format (the first is format/src/, in C++), written from
docs/format.md alone: it walks the frames, checks every checksum, decodes zstd payloads and
collects the frame table, the call frames and the blob chunks. What the frames contain (Cap'n
Proto messages) is decoded by cusnap.capture.
"""
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import xxhash
import zstandard

FILE_MAGIC = b"CUSNAP\x00\x00"
FRAME_MAGIC = b"CSFR"
TRAILER_MAGIC = b"CSNPEND\x00"
FILE_HEADER_BYTES = 32
FRAME_HEADER_BYTES = 80
TRAILER_BYTES = 32
CONTAINER_VERSION_MAJOR = 1

KIND_HEADER, KIND_CALLS, KIND_BLOB, KIND_INDEX = 1, 2, 3, 4
CODEC_NONE, CODEC_ZSTD = 0, 1
KIND_NAMES = {KIND_HEADER: "header", KIND_CALLS: "calls", KIND_BLOB: "blob", KIND_INDEX: "index"}

# The C++ reader's defaults (format/include/cusnap/format/reader.h, ReaderOptions).
DEFAULT_MAX_FRAME_RAW_BYTES = 256 << 20
DEFAULT_MAX_BLOB_BYTES = 16 << 30


class CaptureError(ValueError):
    """The file breaks docs/format.md; the message says where (offset, frame, call)."""


class TruncatedCaptureError(CaptureError):
    """The file ends inside a frame or before its index: a writer that was killed."""


class CorruptCaptureError(CaptureError):
    """A complete frame, the index or the trailer fails a checksum or a structural check."""


def xxh3_64(data) -> int:
    return xxhash.xxh3_64_intdigest(data)


def xxh3_128_hex(data) -> str:
    """A BlobId's text form: 32 lowercase hex digits, high 64 bits then low."""
    return xxhash.xxh3_128_hexdigest(data)


def u64(data, offset: int) -> int:
    return struct.unpack_from("<Q", data, offset)[0]


@dataclass
class Frame:
    """One frame as found in the file (FrameEntry of the index, plus what its header says)."""
    index: int
    offset: int
    kind: int
    codec: int
    stored_size: int
    raw_size: int
    first_seq: int = 0  # calls frames
    last_seq: int = 0
    record_count: int = 0
    blob_id: str = ""  # blob frames
    chunk_offset: int = 0
    blob_size: int = 0

    @property
    def kind_name(self) -> str:
        return KIND_NAMES.get(self.kind, "unknown(%d)" % self.kind)

    @property
    def payload_offset(self) -> int:
        return self.offset + FRAME_HEADER_BYTES


@dataclass
class Integrity:
    """What reading the file found: `state` is "whole", "truncated" or "corrupt"."""
    state: str = "whole"
    footer_valid: bool = False  # the index and trailer were found and checked
    good_frames: int = 0
    last_good_seq: Optional[int] = None
    detail: str = ""  # why reading stopped, empty when whole

    @property
    def whole(self) -> bool:
        return self.state == "whole"


@dataclass
class Container:
    """The frames of a file, walked from offset 32 (docs/format.md, "Reading", step 4; the
    index, when there, is decoded and cross-checked by cusnap.capture)."""
    data: bytes
    container_version: tuple
    frames: List[Frame] = field(default_factory=list)
    blob_chunks: Dict[str, List[Frame]] = field(default_factory=dict)
    index_frame: Optional[Frame] = None
    integrity: Integrity = field(default_factory=Integrity)

    def payload(self, frame: Frame, max_raw_bytes: int = DEFAULT_MAX_FRAME_RAW_BYTES) -> bytes:
        """The decoded payload of `frame` (its checksum was verified when the file was walked)."""
        stored = self.data[frame.payload_offset:frame.payload_offset + frame.stored_size]
        if frame.codec == CODEC_NONE:
            return stored
        if frame.raw_size > max_raw_bytes:
            raise CorruptCaptureError("frame %d at offset %d: raw_size %d exceeds the limit %d" %
                                      (frame.index, frame.offset, frame.raw_size, max_raw_bytes))
        try:
            out = zstandard.ZstdDecompressor().decompress(stored, max_output_size=frame.raw_size)
        except zstandard.ZstdError as e:
            raise CorruptCaptureError("frame %d at offset %d: zstd payload does not decode: %s" %
                                      (frame.index, frame.offset, e)) from None
        if len(out) != frame.raw_size:
            raise CorruptCaptureError("frame %d at offset %d: zstd payload decodes to %d bytes, "
                                      "raw_size says %d" %
                                      (frame.index, frame.offset, len(out), frame.raw_size))
        return out


def _check_file_header(data: bytes) -> tuple:
    if len(data) < FILE_HEADER_BYTES:
        raise TruncatedCaptureError("file is %d bytes, shorter than the 32-byte file header" %
                                    len(data))
    if data[:8] != FILE_MAGIC:
        raise CaptureError("not a cusnap capture (file magic is %r)" % data[:8])
    if u64(data, 24) != xxh3_64(data[:24]):
        raise CorruptCaptureError("file header checksum mismatch")
    major, minor, flags = struct.unpack_from("<HHI", data, 8)
    if major != CONTAINER_VERSION_MAJOR:
        raise CaptureError("container version %d.%d: this reader reads major %d only" %
                           (major, minor, CONTAINER_VERSION_MAJOR))
    if flags != 0:
        raise CaptureError("file header flags 0x%x: unknown bits" % flags)
    return (major, minor)


def _zero_tail(data: bytes, offset: int) -> bool:
    return data.count(0, offset) == len(data) - offset


class _Stop(Exception):
    def __init__(self, state, detail):
        super().__init__(detail)
        self.state, self.detail = state, detail


def _frame_at(data: bytes, offset: int, frame_index: int, next_seq: int,
              max_raw_bytes: int) -> Frame:
    """The frame at `offset`, every check of docs/format.md step 4; raises _Stop."""
    where = "frame %d at offset %d" % (frame_index, offset)
    if len(data) - offset < FRAME_HEADER_BYTES:
        raise _Stop("truncated", "file ends inside the header of " + where)
    h = data[offset:offset + FRAME_HEADER_BYTES]
    if h[:4] != FRAME_MAGIC or u64(h, 72) != xxh3_64(h[:72]):
        # Some filesystems leave a killed writer's tail zero-filled: truncated, not corrupt.
        if _zero_tail(data, offset):
            raise _Stop("truncated", "zero-filled tail from offset %d" % offset)
        raise _Stop("corrupt", where + (": bad frame magic" if h[:4] != FRAME_MAGIC else
                                        ": frame header checksum mismatch"))
    kind, codec, flags = h[4], h[5], struct.unpack_from("<H", h, 6)[0]
    stored, raw, found_index = u64(h, 8), u64(h, 16), u64(h, 64)
    if found_index != frame_index:
        raise _Stop("corrupt", where + ": frame_index says %d" % found_index)
    if kind not in KIND_NAMES or codec not in (CODEC_NONE, CODEC_ZSTD) or flags != 0:
        raise _Stop("corrupt", where + ": kind %d, codec %d, flags %d" % (kind, codec, flags))
    if codec == CODEC_NONE and stored != raw:
        raise _Stop("corrupt", where + ": uncompressed but stored_size != raw_size")
    if raw > max_raw_bytes:
        raise _Stop("corrupt", where + ": raw_size %d exceeds the limit %d" % (raw, max_raw_bytes))
    end = offset + FRAME_HEADER_BYTES + stored
    if end > len(data):
        raise _Stop("truncated", "file ends inside the payload of " + where)
    payload = data[offset + FRAME_HEADER_BYTES:end]
    if u64(h, 56) != xxh3_64(payload):
        if _zero_tail(data, offset + FRAME_HEADER_BYTES):
            raise _Stop("truncated", "zero-filled tail inside the payload of " + where)
        raise _Stop("corrupt", where + ": payload checksum mismatch")
    frame = Frame(frame_index, offset, kind, codec, stored, raw)
    if kind == KIND_CALLS:
        frame.first_seq, frame.last_seq = u64(h, 24), u64(h, 32)
        frame.record_count = struct.unpack_from("<I", h, 40)[0]
        if frame.first_seq != next_seq or frame.last_seq < frame.first_seq or \
                frame.record_count != frame.last_seq - frame.first_seq + 1:
            raise _Stop("corrupt", where + ": calls %d..%d (%d records) do not continue at %d" %
                        (frame.first_seq, frame.last_seq, frame.record_count, next_seq))
        if frame.record_count * 16 > raw:
            raise _Stop("corrupt", where + ": %d records cannot fit %d bytes" %
                        (frame.record_count, raw))
    elif kind == KIND_BLOB:
        frame.blob_id = "%016x%016x" % (u64(h, 24), u64(h, 32))
        frame.chunk_offset, frame.blob_size = u64(h, 40), u64(h, 48)
        if frame.chunk_offset + raw > frame.blob_size:
            raise _Stop("corrupt", where + ": chunk ends past the blob's size")
    elif kind == KIND_HEADER and frame_index != 0:
        raise _Stop("corrupt", where + ": a second header frame")
    return frame


def read_container(data: bytes, max_frame_raw_bytes: int = DEFAULT_MAX_FRAME_RAW_BYTES) -> Container:
    """Walks every frame of `data`. Raises CaptureError when not even the file header and the
    header frame are readable; otherwise records in `integrity` where and why reading stopped."""
    container = Container(data=data, container_version=_check_file_header(data))
    offset, next_seq = FILE_HEADER_BYTES, 0
    integrity = container.integrity
    try:
        while True:
            if offset == len(data):
                raise _Stop("truncated", "file ends after frame %d, before the index" %
                            (len(container.frames) - 1))
            frame = _frame_at(data, offset, len(container.frames), next_seq, max_frame_raw_bytes)
            if not container.frames and frame.kind != KIND_HEADER:
                raise _Stop("corrupt", "frame 0 is a %s frame, not the header" % frame.kind_name)
            if frame.kind == KIND_BLOB:
                chunks = container.blob_chunks.setdefault(frame.blob_id, [])
                have = sum(c.raw_size for c in chunks)
                if frame.chunk_offset != have or (chunks and chunks[0].blob_size != frame.blob_size):
                    raise _Stop("corrupt", "frame %d at offset %d: chunk at %d of blob %s, "
                                "expected %d" % (frame.index, offset, frame.chunk_offset,
                                                 frame.blob_id, have))
                chunks.append(frame)
            container.frames.append(frame)
            if frame.kind == KIND_CALLS:
                next_seq = frame.last_seq + 1
                integrity.last_good_seq = frame.last_seq
            offset += FRAME_HEADER_BYTES + frame.stored_size
            if frame.kind == KIND_INDEX:
                container.index_frame = frame
                _check_trailer(data, offset, frame.offset)
                integrity.footer_valid = True
                break
    except _Stop as stop:
        if not container.frames:
            cls = TruncatedCaptureError if stop.state == "truncated" else CorruptCaptureError
            raise cls("header frame unreadable: " + stop.detail) from None
        integrity.state, integrity.detail = stop.state, stop.detail
    integrity.good_frames = len(container.frames)
    # Blobs whose chunks do not cover their size are dropped (docs/format.md, step 4).
    for blob_id in [b for b, chunks in container.blob_chunks.items()
                    if sum(c.raw_size for c in chunks) != chunks[0].blob_size]:
        del container.blob_chunks[blob_id]
    return container


def _check_trailer(data: bytes, trailer_offset: int, index_offset: int) -> None:
    rest = len(data) - trailer_offset
    if rest < TRAILER_BYTES:  # as the C++ reader: a writer killed while writing it
        raise _Stop("truncated", "file ends inside the trailer")
    t = data[trailer_offset:trailer_offset + TRAILER_BYTES]
    if rest != TRAILER_BYTES or t[:8] != TRAILER_MAGIC or u64(t, 24) != xxh3_64(t[:24]) or \
            u64(t, 8) != index_offset or u64(t, 16) != trailer_offset:
        raise _Stop("corrupt", "damaged trailer at offset %d" % trailer_offset)
