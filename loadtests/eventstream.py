"""AWS event stream frames, written as Bedrock writes them (``application/vnd.amazon.eventstream``).

Each frame: total length and headers length (big-endian u32), the CRC32 of those 8 bytes, the
headers (name length u8, name, type 7 = string, value length u16, value), the payload, and the
CRC32 of everything before it.  The mock provider and the tests build Bedrock streams with
these; tests hold the frames to botocore's own decoder (tests/fastsse/test_eventstream.py).
"""

from __future__ import annotations

import base64
import json
import zlib

STRING = 7
JSON = "application/json"
CONTENT_TYPE = "application/vnd.amazon.eventstream"
# Bedrock pads each event's JSON with "p", a run of this alphabet of random length, so that an
# event's size does not tell its tokens (seen in captures of both ConverseStream and InvokeModel).
PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One frame with these string headers and this payload."""
    block = b"".join(
        bytes([len(name.encode())])
        + name.encode()
        + bytes([STRING])
        + len(value.encode()).to_bytes(2, "big")
        + value.encode()
        for name, value in headers.items()
    )
    prelude = (16 + len(block) + len(payload)).to_bytes(4, "big") + len(block).to_bytes(4, "big")
    prelude += zlib.crc32(prelude).to_bytes(4, "big")
    body = prelude + block + payload
    return body + zlib.crc32(body).to_bytes(4, "big")


def _compact(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def event(event_type: str, payload: dict, pad: int = 0) -> bytes:
    """An event of a Bedrock stream: a member of ConverseStreamOutput or ResponseStream, padded
    with pad characters of "p"."""
    if pad:
        payload = {**payload, "p": PADDING[:pad]}
    return frame({":event-type": event_type, ":content-type": JSON, ":message-type": "event"}, _compact(payload))


def chunk(model_event: dict, pad: int = 0) -> bytes:
    """An InvokeModelWithResponseStream chunk: the model's own event, base64 in "bytes"."""
    return event("chunk", {"bytes": base64.b64encode(_compact(model_event)).decode()}, pad)


def exception(exception_type: str, message: str) -> bytes:
    """A modeled exception inside the stream (throttlingException, modelStreamErrorException, ...)."""
    return frame(
        {":exception-type": exception_type, ":content-type": JSON, ":message-type": "exception"},
        _compact({"message": message}),
    )


def error(code: str, message: str) -> bytes:
    """A service error inside the stream: its code and message in headers, no payload."""
    return frame({":error-code": code, ":error-message": message, ":message-type": "error"}, b"")


def corrupt(data: bytes) -> bytes:
    """The frame with one payload bit flipped: its message CRC no longer matches."""
    at = len(data) - 5  # the payload's last byte (a frame's last 4 bytes are its CRC)
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]
