"""The framings beyond SSE: AWS event stream frames (Bedrock) held to botocore's own decoder,
and NDJSON lines (Ollama); their bounds, and both twins under every chunking and mutation.
"""

from __future__ import annotations

import random
import tracemalloc
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsse import _scanner_py
from fastsse._eventstream_py import parse_headers
from loadtests import eventstream as es

from .events import (
    C_START,
    COMPLETE_STREAMS,
    a_end,
    a_start,
    a_text,
    c_delta,
    c_stop,
    c_text,
    converse,
    invoke,
    o_chat,
)
from .feeding import agree

try:
    from fastsse import _scanner as _scanner_c
except ImportError:
    _scanner_c = None

eventstream = pytest.importorskip("botocore.eventstream")

BEDROCK_STREAMS = [COMPLETE_STREAMS["bedrock-converse"], COMPLETE_STREAMS["bedrock-invoke"]]


def botocore_frames(data: bytes):
    """What botocore's decoder makes of the bytes: the messages it yields, and whether it raised
    (as boto3 and anthropic's Bedrock client read a stream)."""
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(data)
    messages = []
    try:
        for message in buffer:
            messages.append(message)
    except (eventstream.ParserError, KeyError):  # KeyError: an unknown header type
        return messages, True
    return messages, False


@pytest.mark.parametrize("data", BEDROCK_STREAMS, ids=["converse", "invoke"])
def test_botocore_reads_our_frames_as_we_write_them(impl, data):
    messages, raised = botocore_frames(data)
    assert not raised
    verdict = impl.scan(data)
    assert verdict.events == len(messages) and verdict.category == "complete"
    for message in messages:
        assert message.headers[":message-type"] == "event"
    assert botocore_frames(es.exception("throttlingException", "slow down"))[0][0].headers[":exception-type"] == (
        "throttlingException"
    )


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x5A]) + data[at + 1 :]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, 1), where=st.floats(0, 1, exclude_max=True), cut=st.booleans())
def test_a_frame_is_an_event_exactly_when_botocore_accepts_it(which, where, cut):
    """A damaged byte anywhere: botocore raises where the scanner counts a malformed frame; a
    cut: botocore stops after the frames it could read, the scanner counts those and keeps the
    rest as residue.  (InvokeModel's end is its last frame, which a cut never keeps.)"""
    data = BEDROCK_STREAMS[which]
    at = int(where * len(data))
    damaged = data[:at] if cut else _flip(data, at)
    messages, raised = botocore_frames(damaged)
    verdict = agree(damaged, ("bedrock-converse", "bedrock-invoke")[which], chunked=False)
    assert raised == (verdict.malformed_events > 0)
    read = sum(len(m.payload) + 16 + _headers_length(m) for m in messages)
    # complete only for a cut between whole frames after the one that ends the stream
    # (Converse's messageStop; a metadata frame after it says usage only), never for a damaged
    # byte
    ended = cut and at == read and any(m.headers.get(":event-type") == "messageStop" for m in messages)
    assert (verdict.category == "complete") == ended
    if cut:
        assert (verdict.events, verdict.residual_bytes) == (len(messages), at - read)


def _headers_length(message) -> int:
    return sum(1 + len(name) + 1 + 2 + len(value.encode()) for name, value in message.headers.items())


def test_every_header_type_is_stepped_over(impl):
    """Headers of every type around the ones the scanner reads (botocore reads them too)."""
    others = (
        bytes([4]) + b"flag" + bytes([0]),
        bytes([3]) + b"off" + bytes([1]),
        bytes([1]) + b"b" + bytes([2, 7]),
        bytes([1]) + b"s" + bytes([3]) + (300).to_bytes(2, "big"),
        bytes([1]) + b"i" + bytes([4]) + (70000).to_bytes(4, "big"),
        bytes([1]) + b"l" + bytes([5]) + (2**40).to_bytes(8, "big"),
        bytes([3]) + b"raw" + bytes([6]) + (3).to_bytes(2, "big") + b"\x00\x01\x02",
        bytes([4]) + b"date" + bytes([8]) + (1764590400000).to_bytes(8, "big"),
        bytes([4]) + b"uuid" + bytes([9]) + bytes(range(16)),
    )
    wanted = b"".join(
        bytes([len(n)]) + n + bytes([7]) + len(v).to_bytes(2, "big") + v
        for n, v in ((b":message-type", b"event"), (b":event-type", b"messageStop"))
    )
    block = b"".join(others[:5]) + wanted + b"".join(others[5:])
    assert parse_headers(block) == {b":message-type": b"event", b":event-type": b"messageStop"}
    stop = _frame_with(block, b'{"stopReason":"end_turn"}')
    messages, raised = botocore_frames(stop)
    assert not raised and messages[0].headers[":event-type"] == "messageStop"
    data = converse(C_START, *c_text(0, "Hi"), stop)
    assert impl.scan(data).category == "complete"
    assert agree(data).category == "complete"
    # a header of an unknown type (10) or one that runs past its block makes the frame malformed
    for bad in (wanted + bytes([1]) + b"x" + bytes([10]), wanted + bytes([1]) + b"x" + bytes([7, 0, 9]) + b"ab"):
        verdict = impl.scan(converse(C_START, *c_text(0, "Hi"), _frame_with(bad, b'{"stopReason":"end_turn"}')))
        assert (verdict.category, verdict.malformed_events) == ("no_end_marker", 1)


def test_an_empty_header_name_is_a_name_as_botocore_reads_it(impl):
    empty = bytes([0]) + bytes([0])  # a header named "" of type 0 (true)
    named = b"".join(
        bytes([len(n)]) + n + bytes([7]) + len(v).to_bytes(2, "big") + v
        for n, v in ((b":message-type", b"event"), (b":event-type", b"messageStop"))
    )
    stop = _frame_with(named + empty, b'{"stopReason":"end_turn"}')
    messages, raised = botocore_frames(stop)
    assert not raised and messages[0].headers[""] is True
    assert agree(converse(C_START, *c_text(0, "Hi"), stop)).category == "complete"
    assert impl.scan(converse(C_START, *c_text(0, "Hi"), stop)).category == "complete"


def _frame_with(block: bytes, payload: bytes) -> bytes:
    prelude = (16 + len(block) + len(payload)).to_bytes(4, "big") + len(block).to_bytes(4, "big")
    prelude += zlib.crc32(prelude).to_bytes(4, "big")
    body = prelude + block + payload
    return body + zlib.crc32(body).to_bytes(4, "big")


def _lying_prelude(total: int, headers: int = 0) -> bytes:
    prelude = total.to_bytes(4, "big") + headers.to_bytes(4, "big")
    return prelude + zlib.crc32(prelude).to_bytes(4, "big")


@pytest.mark.parametrize("protocol", ["auto", "bedrock-converse", "bedrock-invoke"])
def test_a_length_that_lies_is_a_limit_not_a_buffer(impl, protocol):
    """A sound prelude that announces 2 GiB: the scanner stops at once instead of waiting for it."""
    scanner = impl.Scanner(protocol, max_event_bytes=1 << 20)
    scanner.feed(C_START + _lying_prelude(2**31 - 1))
    for _ in range(64):
        scanner.feed(b"x" * 65536)
    verdict = scanner.close()
    assert (verdict.category, verdict.limit, verdict.residual_bytes) == ("limit_exceeded", "event", 0)


def test_a_frame_is_buffered_no_further_than_the_bound():
    """Python's twin, measured: feeding 16 MiB of a frame that claims 2 GiB allocates next to
    nothing; one that claims 6 MiB (under the default bound) is held until it ends, and its payload
    copied once to be read."""
    for total, at_most in ((2**31 - 1, 256 << 10), (6 << 20, 3 * (6 << 20))):
        scanner = _scanner_py.Scanner("bedrock-converse")
        tracemalloc.start()
        scanner.feed(_lying_prelude(total))
        piece = b"x" * 65536
        for _ in range(256):
            scanner.feed(piece)
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < at_most
        scanner.close()


@pytest.mark.parametrize("prelude", [_lying_prelude(10), _lying_prelude(64, 60), b"\x00\x00\x00\x40" + bytes(8)])
def test_a_prelude_that_cannot_be_trusted_loses_the_rest(impl, prelude):
    """Too short for a frame, headers longer than the frame, or a CRC that does not match: the
    lengths cannot be trusted, so nothing after them is read, and the stream is never complete."""
    tail = b"".join(c_text(0, "Hi") + c_stop("end_turn"))
    verdict = impl.scan(C_START + prelude + tail)
    assert (verdict.category, verdict.malformed_events, verdict.events) == ("no_end_marker", 1, 1)


def test_exceptions_name_their_type_bounded(impl):
    long_name = "x" * 40 + "!" * 30 + "Exception"
    verdict = impl.scan(converse(C_START, es.exception(long_name, "boom")))
    assert verdict.error_code == "x" * 40  # the first 64 bytes, then only identifier characters
    assert verdict.category == "upstream_error"


def test_auto_tells_the_framings_apart(impl):
    assert impl.scan(COMPLETE_STREAMS["bedrock-converse"]).protocol == "bedrock-converse"
    assert impl.scan(COMPLETE_STREAMS["bedrock-invoke"]).protocol == "bedrock-invoke"
    assert impl.scan(b"\r\n\n" + COMPLETE_STREAMS["ollama"]).protocol == "ollama"
    # an invoke stream whose first frame is an exception names no protocol yet
    verdict = impl.scan(es.exception("throttlingException", "slow down"))
    assert (verdict.protocol, verdict.category) == ("unknown", "upstream_error")
    # with the protocol given, the framing is the protocol's whatever the first byte
    verdict = impl.scan(COMPLETE_STREAMS["chat"], "ollama")  # "data: {...}" lines are no JSON
    assert (verdict.category, verdict.malformed_events) == ("no_end_marker", verdict.events)
    assert impl.scan(COMPLETE_STREAMS["ollama"], "bedrock-converse").category == "no_end_marker"


PRETTY_ERROR = b'{\n  "error": {\n    "code": 503,\n    "message": "overloaded",\n    "status": "UNAVAILABLE"\n  }\n}\n'


@pytest.mark.parametrize(
    ("data", "protocol", "category"),
    [
        # a JSON body, pretty-printed: read as SSE's bare JSON object, not as broken lines
        (PRETTY_ERROR, "unknown", "upstream_error"),
        (b"\n" + PRETTY_ERROR.replace(b"\n", b"\r\n"), "unknown", "upstream_error"),
        # the same on one line, with and without its newline: an NDJSON line, read whole
        (b'{"error":{"code":503,"status":"UNAVAILABLE"}}\n', "unknown", "upstream_error"),
        (b'{"error":{"code":503,"status":"UNAVAILABLE"}}', "unknown", "upstream_error"),
        (COMPLETE_STREAMS["ollama"], "ollama", "complete"),
        (b"{ \t\r\n", "unknown", "no_end_marker"),  # a first line that is no JSON: SSE's residue
    ],
)
def test_auto_decides_ndjson_by_the_first_line(data, protocol, category):
    verdict = agree(data)
    assert (verdict.protocol, verdict.category) == (protocol, category)


def test_the_first_line_is_held_no_further_than_the_bound(impl):
    """Past max_line_bytes without a newline it is SSE's line, which is the limit."""
    scanner = impl.Scanner(max_line_bytes=4096)
    scanner.feed(b"{")
    for _ in range(100):
        scanner.feed(b"x" * 1000)
    verdict = scanner.close()
    assert (verdict.category, verdict.limit) == ("limit_exceeded", "line")
    first = b'{"model":"m","message":{"content":"' + b"x" * 4100 + b'"},"done":false}\n'
    assert agree(first + COMPLETE_STREAMS["ollama"], max_line_bytes=4096).limit == "line"
    assert agree(first + COMPLETE_STREAMS["ollama"], max_line_bytes=8192).category == "complete"


@pytest.mark.parametrize("size", range(1, 301))
def test_the_message_crc_of_every_length(size):
    """The compiled twin's CRC32 (carry-less multiplication from 64 bytes on) against zlib's,
    through the scanner: every text length to 300, whole and with one bit flipped."""
    frame = es.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x" * size}})
    stream = converse(C_START, frame, *c_stop("end_turn"))
    verdict = agree(stream, "bedrock-converse", chunked=size % 50 == 0)
    assert verdict.category == "complete" and verdict.malformed_events == 0
    for at in (12, len(frame) // 2 + 6, len(frame) - 5):  # after the prelude, inside, the last byte
        broken = bytearray(frame)
        broken[at] ^= 0x10
        verdict = agree(converse(C_START, bytes(broken), *c_stop("end_turn")), "bedrock-converse", chunked=False)
        assert verdict.category == "malformed_event", at


@pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")
def test_the_compiled_crc32_is_zlibs():
    """Every length to 600 (the table below 64 bytes, carry-less multiplication from 64 on, its
    last 1 to 15 bytes folded in), from three alignments, going on from several CRCs."""
    rng = random.Random(32)
    data = rng.randbytes(604)
    for crc in (0, 0xFFFFFFFF, rng.getrandbits(32), rng.getrandbits(32)):
        for size in range(601):
            for start in range(3):
                part = data[start : start + size]
                assert _scanner_c._crc32(crc, part) == zlib.crc32(part, crc), (crc, size, start)


def test_ndjson_lines_are_bounded(impl):
    line = o_chat("x" * 5000)
    for limit in ("max_line_bytes", "max_event_bytes"):
        verdict = impl.scan(line + line, "ollama", **{limit: 4096})
        assert (verdict.category, verdict.limit) == ("limit_exceeded", "line" if limit == "max_line_bytes" else "event")
        scanner = impl.Scanner("ollama", **{limit: 4096})
        for _ in range(100):  # a line that never ends
            scanner.feed(b"x" * 1000)
        assert scanner.close().category == "limit_exceeded"


STREAMS = [
    COMPLETE_STREAMS["bedrock-converse"],
    COMPLETE_STREAMS["bedrock-invoke"],
    COMPLETE_STREAMS["ollama"],
    converse(C_START, c_delta(0, toolUse={"input": '{"a"'}), *c_stop("tool_use")),
    invoke(a_start(), *a_text(0, "Hi"), *a_end("max_tokens")),
    o_chat(thinking="Hmm") + o_chat("4") + o_chat(done=True, done_reason="length"),
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_twins_agree_on_mutated_framed_streams(seed):
    pytest.importorskip("fastsse._scanner")
    rng = random.Random(seed)
    data = bytearray(rng.choice(STREAMS))
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data) + 1)
        action = rng.randrange(3)
        if action == 0 and data:
            del data[at : at + rng.randint(1, 20)]
        elif action == 1:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        else:
            data[at:at] = rng.choice([b"\n", b"\x00", b"{", b'"', b"}", b"=", b"\r\n"])
    for protocol in ("auto", "bedrock-converse", "bedrock-invoke", "ollama"):
        agree(bytes(data), protocol, chunked=rng.random() < 0.3)
