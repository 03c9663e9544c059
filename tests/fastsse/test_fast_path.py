"""The compiled twin reads a complete event by recursive descent (json_whole) and hands anything
unusual to its byte-at-a-time automaton.  These cases aim at that path's edges: strings and
escapes across 16-byte SIMD blocks, backslash runs, \\u escapes in captured values, whitespace
(including the "\\n" that joins data lines), numbers of every form, escaped and duplicate keys,
nesting past the fast path's depth, and damage anywhere.  Both twins must agree on each, under
any chunking."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsse import _scanner_py

from .feeding import agree, chunkings

try:
    from fastsse import _scanner as _scanner_c
except ImportError:
    _scanner_c = None

needs_both = pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")


def chat_event(delta: dict, finish=None, pad: str = "", **extra) -> bytes:
    payload = {
        "id": "chatcmpl-Zv7mjrK9pDDKw9ZZg6JyDjAXC6yxp",
        "object": "chat.completion.chunk",
        "created": 1751551190,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **extra,
    }
    text = json.dumps(payload, separators=(",", ":"))
    if pad:
        text = text.replace(",", "," + pad).replace(":", pad + ":" + pad)
    return b"data: " + text.encode() + b"\n\n"


def chat_stream(*events: bytes) -> bytes:
    return b"".join(events) + chat_event({}, "stop") + b"data: [DONE]\n\n"


# Strings whose special bytes fall on every position around a 16-byte block boundary.
TRICKY = [
    "a" * k + special + "b" * m
    for k in (0, 1, 14, 15, 16, 17, 31, 32)
    for special in ('"', "\\", "\\\\", "\\\\\\", "\n", "é", "\u2028", "😀", "\\u00e9", "\x1f")
    for m in (0, 1, 15, 16)
]


@needs_both
@pytest.mark.parametrize("text", TRICKY[::3] + ["", "x" * 200, "\\" * 33, '"' * 17])
@pytest.mark.parametrize("field", ["content", "reasoning_content", "refusal"])
def test_tricky_strings_in_recorded_and_dead_fields(text, field):
    agree(chat_stream(chat_event({field: text}), chat_event({"content": "ok"}, None, obfuscation=text)))


@needs_both
@pytest.mark.parametrize(
    "arguments",
    [
        '{"location": "Paris, France"}',
        '{"a": "' + "x" * 15 + '\\"' + "y" * 16 + '"}',
        '{"path": "C:\\\\temp\\\\' + "d" * 14 + '"}',
        '{"city": "S\\u00e3o Paulo", "pair": "\\ud83d\\ude00"}',
        '{"broken": ',
        '{"bad": "\x01"}',
        '{"emoji": "😀", "n": -1.5e+10}',
    ],
)
def test_tool_arguments_are_unescaped_alike(arguments):
    first = {
        "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
        ]
    }
    pieces = [arguments[i : i + 7] for i in range(0, len(arguments), 7)] or [""]
    events = [chat_event(first)]
    events += [chat_event({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
    agree(chat_stream(*events))


@needs_both
@pytest.mark.parametrize(
    "body",
    [
        b'{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}',
        b' \t{ "choices" : [ { "index" : 0 , "delta" : { "content" : "x" } } ] } \t',
        b'{"choices":[{"index":0,"delta":{"content":"x"}}]}\ndata: ',  # a second data line
        b'{"choices":\ndata: [{"index":1,"delta":{"content":"x"}}]}',  # "\n" inside the JSON
        b'{"\\u0063hoices":[{"index":0,"delta":{"content":"x"}}]}',  # an escaped key
        b'{"choices":[{"index":0,"delta":{"content":"x"}}],"choices":[{"index":1}]}',
        b'{"choices":[{"index":9007199254740993,"delta":{"content":"x"}}]}',
        b'{"choices":[{"index":-0,"delta":{"content":"x"}}]}',
        b'{"choices":[{"index":0.0,"delta":{"content":"x"}}]}',
        b'{"choices":[{"index":1e2,"delta":{"content":"x"}}]}',
        b'{"choices":[{"index":01,"delta":{"content":"x"}}]}',
        b'{"choices":[{"index":1.,"delta":{"content":"x"}}]}',
        b'{"choices":[{"index":-,"delta":{"content":"x"}}]}',
        b'{"choices":[{"index":0,"delta":{"content":"x"}}]} x',
        b'{"choices":[{"index":0,"delta":{"content":"x"}}]}}',
        b'{"choices":[{"index":0,"delta":{"content":"x"}}],}',
        b'{"choices":[{"index":0,"delta":{"content":"x"},}]}',
        b'{"choices":[{"index":0,"delta":{"content":"x"}}]',
        b'{"choices":[{"index":0,"delta":{"content":"x"}}],"ok":tru}',
        b'{"choices":[{"index":0,"delta":{"content":"x"}}],"ok":nul',
        b'{"choices":[{"index":0,"delta":{"content":"x\\q"}}]}',
        b'{"choices":[{"index":0,"delta":{"content":"x\\u12"}}]}',
        b'{"choices":[{"index":0,"delta":{"content":"x\\',
        b'{"choices":[{"index":0,"delta":{"content":true,"refusal":false}}]}',
        b'{"error":{"code":429,"type":"rate_limit"},"choices":[]}',
        b'{"error":null,"choices":[{"index":0,"delta":{"content":"x"}}]}',
        b'[{"choices":[]}]',
        b'"choices"',
        b"42",
        b'{"a":' + b"[" * 70 + b"]" * 70 + b',"choices":[{"index":0,"delta":{"content":"x"}}]}',
        b'{"a":' + b'{"b":' * 63 + b"1" + b"}" * 63 + b',"choices":[{"index":0,"delta":{"content":"x"}}]}',
        b'{"a":' + b"[" * 600 + b"]" * 600 + b"}",
    ],
)
def test_event_bodies_at_the_edges(body):
    agree(b"data: " + body + b"\n\n" + chat_event({}, "stop") + b"data: [DONE]\n\n", "chat")
    agree(b"data: " + body + b"\n\n" + chat_event({}, "stop") + b"data: [DONE]\n\n", chunked=False)


@needs_both
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.text(st.sampled_from('ab"\\\n\x01é😀/\t '), max_size=40), min_size=1, max_size=4),
    pad=st.sampled_from(["", " ", "\t", "\r\n"]),
    cut=st.integers(0, 10_000),
    insert=st.sampled_from([None, *b'{}[]",:\\ 0e-.tfnx\x01']),
    protocol=st.sampled_from(["auto", "chat"]),
)
def test_generated_chat_events_with_damage(texts, pad, cut, insert, protocol):
    events = []
    for i, text in enumerate(texts):
        tool = {"index": 0, "id": f"call_{i}", "function": {"arguments": text}}
        delta = {"content": text, "tool_calls": [tool]} if i % 2 else {"reasoning_content": text}
        events.append(chat_event(delta, None, pad=pad if pad != "\r\n" else "", obfuscation=text))
    data = chat_stream(*events)
    if pad == "\r\n":
        data = data.replace(b"\n", b"\r\n")
    if insert is not None:
        at = cut % (len(data) + 1)
        data = data[:at] + bytes([insert]) + data[at:]
    agree(data, protocol, chunked=False)
    agree(data, protocol) if cut % 7 == 0 else None


# --- one-line events read where they lie ---------------------------------------------------
# The compiled scanner reads an event made of one data line followed by a blank line inside
# the chunk without copying it; split anywhere else (or fed byte by byte, as agree() also does)
# the same bytes go through the line buffer.  Both ways must give the same verdict.

TERMINATORS = [b"\n", b"\r", b"\r\n"]
BEFORE_DATA = [
    b"",
    b"event: message\n",
    b"event:\r\n",
    b": note\n",
    b"id: 7\r",
    b"retry: 10\n",
    b'{"error": {"code": 500}}\n',
]
DATA_FIELDS = [b"data: ", b"data:", b"data:  ", b"data:\t"]


@needs_both
@pytest.mark.parametrize("line_end", TERMINATORS)
@pytest.mark.parametrize("blank", TERMINATORS)
@pytest.mark.parametrize("before", BEFORE_DATA)
@pytest.mark.parametrize("field", DATA_FIELDS)
def test_one_line_events_under_every_framing(line_end, blank, before, field):
    def event(payload: bytes) -> bytes:
        return before + field + payload + line_end + blank

    body = chat_event({"content": "hi"})[len(b"data: ") : -2]
    stop = chat_event({}, "stop")[len(b"data: ") : -2]
    agree(event(body) + event(stop) + event(b"[DONE]"))
    agree(event(body) + event(b"") + event(stop) + event(b"[DONE]"), "chat")
    agree(event(body) + event(stop) + event(b"[DONE]")[:-1])  # the last blank line cut short


@needs_both
@pytest.mark.parametrize(
    "data",
    [
        b"data\n\n",  # a data field without a colon
        b'data: {"a":1}\ndata: {"b":2}\n\n',  # two data lines: one event, joined by "\n"
        b"data: {}\n: comment\n\n",  # a comment before the blank line
        b"data: {}\n\r\n",  # LF, then a CRLF blank line
        b"data: {}\r\r\n",  # CR ends the line, CRLF the blank one
        b"dat: {}\n\n",
        b"data : {}\n\n",
    ],
)
def test_one_line_event_lookalikes(data):
    tail = chat_event({}, "stop") + b"data: [DONE]\n\n"
    agree(chat_event({"content": "x"}) + data + tail)
    agree(data + chat_event({"content": "x"}) + tail)


@needs_both
def test_limits_hit_inside_an_event_read_in_place():
    choices = [{"index": i, "delta": {"content": "x"}, "finish_reason": None} for i in range(200)]
    many = b"data: " + json.dumps({"object": "chat.completion.chunk", "choices": choices}).encode()
    verdict = agree(chat_event({"content": "x"}) + many + b"\n\n" + chat_event({}, "stop"), "chat")
    assert verdict.category == "limit_exceeded" and verdict.limit == "choices"
    event = b"event: message\n" + chat_event({"content": "x" * 50})
    line = len(event.split(b"\n")[1])
    for max_event_bytes in (line, line + 14, line + 15, line + 16, len(event)):
        verdict_py = _scanner_py.scan(event * 3, max_event_bytes=max_event_bytes)
        assert _scanner_c.scan(event * 3, max_event_bytes=max_event_bytes) == verdict_py
        for name, chunks in chunkings(event * 3, max_event_bytes):
            scanner = _scanner_c.Scanner(max_event_bytes=max_event_bytes)
            for chunk in chunks:
                scanner.feed(chunk)
            assert scanner.close() == verdict_py, name


@needs_both
@pytest.mark.parametrize("blank", TERMINATORS)
def test_event_type_does_not_outlive_its_event(blank):
    from .events import anthropic_text

    stop = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    data = anthropic_text("Hi")
    assert data.endswith(stop)
    # a typed event, then one whose type can only come from its (absent) event: line
    data = data[: -len(stop)] + b'event: message_stop\ndata: {"type":"ping"}\n' + blank
    data += b"data: {}\n" + blank
    assert agree(data).category == "no_end_marker"
