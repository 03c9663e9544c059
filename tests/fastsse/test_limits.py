"""The bounds: line and event limits at their boundary, choices and tool calls."""

from __future__ import annotations

import re

import pytest

from fastsse._limits import MAX_CHOICES, MAX_TOOL_CALLS
from fastsse._verdict import MESSAGE_LIMITS

from .events import (
    COMPLETE_STREAMS,
    SSE_PROTOCOLS,
    cand,
    chat,
    chat_chunk,
    choice,
    g_bare_error,
    g_chunk,
    gemini,
    gemini_text,
    text,
    tool_call,
)


def _lines(data: bytes):
    return re.split(rb"\r\n|\n|\r", data)


def _largest_event(data: bytes) -> int:
    largest = current = 0
    for line in _lines(data):
        if not line:
            current = 0
        elif not line.startswith(b":"):
            current += len(line)
            largest = max(largest, current)
    return largest


@pytest.mark.parametrize("protocol", SSE_PROTOCOLS)
def test_line_limit_boundary(judge, protocol):
    data = COMPLETE_STREAMS[protocol]
    longest = max(len(line) for line in _lines(data))
    assert judge(data, protocol, max_line_bytes=longest).category == "complete"
    verdict = judge(data, protocol, max_line_bytes=longest - 1)
    assert (verdict.category, verdict.limit, verdict.retryable) == ("limit_exceeded", "line", False)
    assert verdict.message == MESSAGE_LIMITS["line"]


@pytest.mark.parametrize("protocol", SSE_PROTOCOLS)
def test_event_limit_boundary(judge, protocol):
    data = COMPLETE_STREAMS[protocol]
    largest = _largest_event(data)
    assert judge(data, protocol, max_event_bytes=largest).category == "complete"
    verdict = judge(data, protocol, max_event_bytes=largest - 1)
    assert (verdict.category, verdict.limit) == ("limit_exceeded", "event")


@pytest.mark.parametrize("limit", ["max_line_bytes", "max_event_bytes"])
def test_limit_without_newline(judge, limit):
    # A run-away line that never ends: the limit is reached without any line terminator.
    data = chat_chunk(choice(content="x" * 5000))[:-2]
    assert b"\n" not in data and b"\r" not in data
    unlimited = judge(data, "chat")
    assert (unlimited.category, unlimited.residual_bytes) == ("no_end_marker", len(data))
    verdict = judge(data, "chat", **{limit: 64})
    assert verdict.category == "limit_exceeded"
    assert verdict.limit == ("line" if limit == "max_line_bytes" else "event")
    assert verdict.residual_bytes == 0
    assert verdict.bytes == len(data)


def test_limit_exceeded_in_a_single_feed_call(impl):
    scanner = impl.Scanner("chat", max_line_bytes=64)
    scanner.feed(b"data: " + b"y" * 10_000)
    scanner.feed(b"z" * 10_000)  # ignored: nothing more is read
    verdict = scanner.close()
    assert verdict.limit == "line"
    assert verdict.bytes == 20_006


def test_comments_count_against_the_line_limit_only(judge):
    stream = gemini_text("Hi")
    longest = max(len(line) for line in _lines(stream))
    data = b": " + b"k" * 1000 + b"\n\n" + stream
    # the 1002-byte comment is no part of any event ...
    verdict = judge(data, "gemini", max_event_bytes=longest)
    assert (verdict.category, verdict.comments) == ("complete", 1)
    # ... but it is still a line
    assert judge(data, "gemini", max_line_bytes=longest).limit == "line"


def test_bare_json_counts_against_the_event_limit(judge):
    data = gemini(g_chunk(cand(text("Hi")))) + g_bare_error(503, "The model is overloaded. " * 8, "UNAVAILABLE")
    assert judge(data, "gemini").category == "upstream_error"
    verdict = judge(data, "gemini", max_event_bytes=len(data) // 2 + 1, max_line_bytes=len(data))
    assert verdict.limit == "event"


@pytest.mark.parametrize("protocol", ["chat", "gemini"])
def test_choices_limit(judge, protocol):
    def stream(n):
        if protocol == "chat":
            return chat(chat_chunk(*[choice(i, content="a", finish="stop") for i in range(n)]))
        return g_chunk(*[cand(text("a"), finish="STOP", index=i) for i in range(n)])

    verdict = judge(stream(MAX_CHOICES), protocol)
    assert (verdict.category, verdict.choices) == ("complete", MAX_CHOICES)
    verdict = judge(stream(MAX_CHOICES + 1), protocol)
    assert (verdict.category, verdict.limit) == ("limit_exceeded", "choices")
    assert verdict.message == MESSAGE_LIMITS["choices"]


def test_tool_calls_limit(judge):
    def stream(n):
        half = n // 2
        chunks = [
            chat_chunk(choice(tool_calls=[tool_call(i, "{}", id=f"call_{i}", name="f") for i in range(lo, hi)]))
            for lo, hi in ((0, half), (half, n))
        ]
        return chat(*chunks, chat_chunk(choice(finish="tool_calls")))

    verdict = judge(stream(MAX_TOOL_CALLS), "chat")
    assert (verdict.category, verdict.tool_calls) == ("complete", MAX_TOOL_CALLS)
    verdict = judge(stream(MAX_TOOL_CALLS + 1), "chat")
    assert (verdict.category, verdict.limit) == ("limit_exceeded", "tool_calls")
