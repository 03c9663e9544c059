"""Framing: bytes -> frames, by the AWS event stream encoding (``application/vnd.amazon.eventstream``).

The framing Bedrock streams in (ConverseStream, InvokeModelWithResponseStream).  Each frame is

    prelude:  total length (u32), headers length (u32), CRC32 of those 8 bytes (u32)
    headers:  name length (u8), name, value type (u8), value; repeated
    payload:  total length - headers length - 16 bytes (JSON, for Bedrock)
    CRC32 of every byte of the frame before it (u32)

all big-endian, CRC32 as zlib's (the IEEE polynomial).  A frame is an event only when both CRCs
match.  A prelude whose CRC does not match leaves its lengths untrustworthy: nothing after it
can be framed, so the stream is *lost* from there.  A length that lies cannot make the framing
buffer more than the scanner's ``max_event_bytes``: a frame announced longer is a limit.
``EventStreamFraming`` holds what a stream has buffered between chunks; the scanner
(``_scanner_py``) decides what each frame means.  The compiled twin's ``_eventstream.pxd`` holds
the same rules.
"""

from __future__ import annotations

import binascii
import re
import zlib
from collections.abc import Iterator

PRELUDE_BYTES = 12
CRC_BYTES = 4
MIN_FRAME_BYTES = PRELUDE_BYTES + CRC_BYTES

# Header value types, and the size of the fixed-size ones (types 6 and 7 carry a u16 length).
T_TRUE, T_FALSE, T_BYTE, T_SHORT, T_INT, T_LONG, T_BYTES, T_STRING, T_TIMESTAMP, T_UUID = range(10)
FIXED_SIZES = {T_TRUE: 0, T_FALSE: 0, T_BYTE: 1, T_SHORT: 2, T_INT: 4, T_LONG: 8, T_TIMESTAMP: 8, T_UUID: 16}

# The headers the scanner reads.
H_MESSAGE_TYPE = b":message-type"
H_EVENT_TYPE = b":event-type"
H_EXCEPTION_TYPE = b":exception-type"
H_ERROR_CODE = b":error-code"
READ_HEADERS = frozenset({H_MESSAGE_TYPE, H_EVENT_TYPE, H_EXCEPTION_TYPE, H_ERROR_CODE})


class Frame:
    """One frame: whether it is whole and sound, what its headers name, its payload."""

    __slots__ = ("valid", "headers", "payload")

    def __init__(self, valid: bool, headers: dict[bytes, bytes], payload: bytes) -> None:
        self.valid = valid
        self.headers = headers
        self.payload = payload


def parse_headers(block: bytes) -> dict[bytes, bytes] | None:
    """The string and byte-array headers the scanner reads, or None if the block is not a
    sequence of well-formed headers."""
    headers: dict[bytes, bytes] = {}
    pos, n = 0, len(block)
    while pos < n:
        name_len = block[pos]
        pos += 1
        if pos + name_len + 1 > n:  # (an empty name is a name: botocore reads it)
            return None
        name = block[pos : pos + name_len]
        pos += name_len
        kind = block[pos]
        pos += 1
        if kind == T_BYTES or kind == T_STRING:
            if pos + 2 > n:
                return None
            size = int.from_bytes(block[pos : pos + 2], "big")
            pos += 2
            if pos + size > n:
                return None
            if name in READ_HEADERS:
                headers[name] = block[pos : pos + size]
            pos += size
        elif kind in FIXED_SIZES:
            pos += FIXED_SIZES[kind]
            if pos > n:
                return None
        else:
            return None
    return headers


def frame_of(data: bytes | bytearray) -> Frame:
    """A whole frame's bytes (its prelude already checked): its CRC, headers and payload (the
    one copy made)."""
    view = memoryview(data)
    total = len(view)
    headers_len = int.from_bytes(view[4:8], "big")
    valid = zlib.crc32(view[: total - CRC_BYTES]) == int.from_bytes(view[total - CRC_BYTES :], "big")
    headers = parse_headers(bytes(view[PRELUDE_BYTES : PRELUDE_BYTES + headers_len])) if valid else None
    payload = bytes(view[PRELUDE_BYTES + headers_len : total - CRC_BYTES]) if headers is not None else b""
    return Frame(headers is not None, headers or {}, payload)


class EventStreamFraming:
    """What a stream has buffered between chunks: the frame being read."""

    __slots__ = ("buf", "total", "lost", "limit")

    def __init__(self) -> None:
        self.buf = bytearray()  # the frame so far
        self.total = 0  # its length, once its prelude is read and sound
        self.lost = False  # a prelude was corrupt: nothing after it can be framed
        self.limit = False  # a frame announced itself longer than the bound

    def read(self, data: bytes, max_frame_bytes: int) -> Iterator[Frame]:
        """The frames this chunk completes, in order; stops for good at a corrupt prelude
        (``lost``) or a frame longer than max_frame_bytes (``limit``)."""
        buf = self.buf
        pos, n = 0, len(data)
        while pos < n:
            need = (self.total or PRELUDE_BYTES) - len(buf)
            buf += data[pos : pos + need]
            pos += min(need, n - pos)
            if not self.total:
                if len(buf) < PRELUDE_BYTES:
                    return
                total = int.from_bytes(buf[0:4], "big")
                headers_len = int.from_bytes(buf[4:8], "big")
                if zlib.crc32(buf[0:8]) != int.from_bytes(buf[8:12], "big") or (
                    total < MIN_FRAME_BYTES or headers_len > total - MIN_FRAME_BYTES
                ):
                    self.lost = True
                    buf.clear()
                    return
                if total > max_frame_bytes:
                    self.limit = True
                    buf.clear()
                    return
                self.total = total
            if len(buf) == self.total:
                frame = frame_of(buf)
                buf.clear()
                self.total = 0
                yield frame


# Base64 as Bedrock writes a chunk's bytes: the standard alphabet, padded to a multiple of 4.
_BASE64 = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def base64_decode(text: bytes) -> bytes | None:
    """The bytes a chunk's base64 text encodes, or None if it is not such text."""
    if _BASE64.fullmatch(text) is None:
        return None
    return binascii.a2b_base64(text)
