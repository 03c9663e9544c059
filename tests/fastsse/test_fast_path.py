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

from .conftest import chunkings

try:
    from fastsse import _scanner as _scanner_c
except ImportError:
    _scanner_c = None

needs_both = pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")


def agree(data: bytes, protocol: str = "auto", chunked: bool = True):
    """Both twins give the same verdict, the compiled one under several chunkings too."""
    verdict = _scanner_py.scan(data, protocol)
    assert _scanner_c.scan(data, protocol) == verdict
    if chunked:
        for name, chunks in chunkings(data, len(data)):
            if name == "bytewise" and len(data) > 3000:
                continue
            for twin in (_scanner_c, _scanner_py):
                scanner = twin.Scanner(protocol)
                for chunk in chunks:
                    scanner.feed(chunk)
                assert scanner.close() == verdict, (twin.__name__, name)
    return verdict


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
@pytest.mark.parametrize("arguments", [
    '{"location": "Paris, France"}',
    '{"a": "' + "x" * 15 + '\\"' + "y" * 16 + '"}',
    '{"path": "C:\\\\temp\\\\' + "d" * 14 + '"}',
    '{"city": "S\\u00e3o Paulo", "pair": "\\ud83d\\ude00"}',
    '{"broken": ',
    '{"bad": "\x01"}',
    '{"emoji": "😀", "n": -1.5e+10}',
])
def test_tool_arguments_are_unescaped_alike(arguments):
    first = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                             "function": {"name": "get_weather", "arguments": ""}}]}
    pieces = [arguments[i : i + 7] for i in range(0, len(arguments), 7)] or [""]
    events = [chat_event(first)]
    events += [chat_event({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
    agree(chat_stream(*events))


@needs_both
@pytest.mark.parametrize("body", [
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
])
def test_event_bodies_at_the_edges(body):
    agree(b"data: " + body + b"\n\n" + chat_event({}, "stop") + b"data: [DONE]\n\n", "chat")
    agree(b"data: " + body + b"\n\n" + chat_event({}, "stop") + b"data: [DONE]\n\n", chunked=False)


@needs_both
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.text(st.sampled_from('ab"\\\n\x01é😀/\t ') , max_size=40), min_size=1, max_size=4),
    pad=st.sampled_from(["", " ", "\t", "\r\n"]),
    cut=st.integers(0, 10_000),
    insert=st.sampled_from([None, *b'{}[]",:\\ 0e-.tfnx\x01']),
    protocol=st.sampled_from(["auto", "chat"]),
)
def test_generated_chat_events_with_damage(texts, pad, cut, insert, protocol):
    events = []
    for i, text in enumerate(texts):
        tool = {"index": 0, "id": "call_%d" % i, "function": {"arguments": text}}
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
