"""The compiled twin replays an event that repeats the one before but for a few string values
(the delta's text, the chunk id, the obfuscation padding): it compares bytes instead of reading
the JSON.  These cases aim at that path: hole values that are empty, escaped, broken or hold a
line end, events that differ just outside a hole, content parts that count outside any hole,
CRLF, limits, several choices.  The Python twin reads every event; both must agree under any
chunking, and ``Scanner.replayed`` shows the path ran where it should."""

from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .feeding import agree as twins_agree

try:
    from fastsse import _scanner as _scanner_c
except ImportError:
    _scanner_c = None

pytestmark = pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")

DONE = b"data: [DONE]\n\n"


def agree(data: bytes, protocol: str = "auto", **limits):
    """Both twins give the same verdict under every chunking (conftest.agree); returns it and
    how many events the compiled twin replayed when fed the stream whole."""
    verdict = twins_agree(data, protocol, **limits)
    scanner = _scanner_c.Scanner(protocol, **limits)
    scanner.feed(data)
    scanner.close()
    return verdict, scanner.replayed


def event(
    content: bytes = b"hi",
    key: bytes = b"content",
    finish: bytes = b"null",
    chunk_id: bytes = b"chatcmpl-1",
    padding: bytes = b"xyz",
    end: bytes = b"\n\n",
) -> bytes:
    """A chat chunk written byte by byte, so that hole values can be anything, broken too."""
    return (
        b'data: {"id":"' + chunk_id + b'","object":"chat.completion.chunk","created":1751551190,'
        b'"model":"gpt-4o","choices":[{"index":0,"delta":{"' + key + b'":"' + content + b'"},'
        b'"logprobs":null,"finish_reason":' + finish + b'}],"obfuscation":"' + padding + b'"}' + end
    )


def finished(*events: bytes) -> bytes:
    return b"".join(events) + event(b"", finish=b'"stop"') + DONE


def test_repeated_events_are_replayed_and_counted():
    verdict, replayed = agree(finished(*(event(b"word %d" % i, padding=b"p" * (i % 9)) for i in range(50))))
    assert verdict.category == "complete" and verdict.text_events == 50
    assert replayed == 49


@pytest.mark.parametrize(
    "key, field",
    [
        (b"content", "text_events"),
        (b"reasoning_content", "reasoning_events"),
        (b"refusal", "refusal_events"),
    ],
)
def test_only_non_empty_values_count(key, field):
    values = [b"a", b"", b"b", b"", b"", b"\\n", b"c"]
    verdict, replayed = agree(finished(*(event(v, key=key) for v in values)))
    assert getattr(verdict, field) == 4
    assert replayed == len(values) - 1


@pytest.mark.parametrize(
    "value",
    [
        b'say \\"hi\\"',
        b"\\\\",
        b"caf\\u00e9",
        b"\\ud83d\\ude00",
        b"tab\\there",
        b"a" * 40 + b"\\/" + b"b" * 40,
        "naïve 🙂".encode(),
    ],
)
def test_escaped_and_non_ascii_values_are_replayed(value):
    verdict, replayed = agree(finished(event(b"first"), event(value), event(value + value)))
    assert verdict.text_events == 3 and replayed == 2


@pytest.mark.parametrize(
    "value",
    [
        b"\\x41",
        b"\\u12",
        b"\\u12zz",
        b"cut \\",
        b"raw\ttab",
        b"nul\x00",
        b'a"b',
        b"line\nbreak",
        b"cr\rhere",
        b"crlf\r\nhere",
        b"end\n\n",
    ],
)
def test_broken_values_are_read_not_replayed(value):
    verdict, replayed = agree(finished(event(b"first"), event(value), event(b"after")))
    assert verdict.category != "complete" or value in (b"end\n\n",)
    _, control = agree(finished(event(b"first"), event(b"valid"), event(b"after")))
    assert replayed == control - 1  # the broken event was read; the ones after it replay


@pytest.mark.parametrize(
    "other",
    [
        event(b"x", chunk_id=b"chatcmpl-2"),  # a hole that repeated its value is compared since
        event(b"x", key=b"refusal"),  # a different key: read, and kept in its turn
        event(b"x", finish=b'"length"'),  # a finish reason is state: read
        event(b"x").replace(b'"index":0', b'"index":1'),  # another choice
        event(b"x").replace(b'"model":"gpt-4o"', b'"model":"gpt-4o-mini"'),
        event(b"x").replace(b"}\n\n", b"} \n\n"),
        event(b"x").replace(b"\n\n", b"\nid: 7\n\n"),
        event(b"x").replace(b"data: ", b"data:"),
        b'event: error\ndata: {"error":{"message":"overloaded"}}\n\n',
        b": keep-alive\n\n",
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}\n\n',
    ],
)
def test_events_that_differ_outside_the_holes_are_read(other):
    _, replayed = agree(finished(event(b"a"), event(b"b"), other, event(b"c"), event(b"d")))
    _, control = agree(finished(event(b"a"), event(b"b"), event(b"x"), event(b"c"), event(b"d")))
    assert replayed < control  # `other` was read (and what follows it may be, once)


def test_crlf_events_are_replayed():
    events = [event(b"w%d" % i, end=b"\r\n\r\n") for i in range(10)]
    verdict, replayed = agree(
        b"".join(events) + event(b"", finish=b'"stop"', end=b"\r\n\r\n") + b"data: [DONE]\r\n\r\n"
    )
    assert verdict.text_events == 10 and replayed == 9


def test_lone_cr_events_are_read():
    events = [event(b"w%d" % i, end=b"\r\r") for i in range(10)]
    verdict, replayed = agree(b"".join(events) + event(b"", finish=b'"stop"', end=b"\r\r") + b"data: [DONE]\r\r")
    assert verdict.text_events == 10 and replayed == 0


def test_a_replayed_event_past_the_line_limit_is_the_limit():
    base = len(event(b""))
    stream = finished(event(b"a"), event(b"b"), event(b"c" * 500), event(b"d"))
    verdict, _ = agree(stream, max_line_bytes=base + 100)
    assert verdict.category == "limit_exceeded" and verdict.limit == "line"
    verdict, _ = agree(stream, max_event_bytes=base + 100)
    assert verdict.category == "limit_exceeded" and verdict.limit == "event"


@pytest.mark.parametrize("over", [0, 1])
def test_a_replayed_line_at_the_limit_and_one_byte_past_it(over):
    long = event(b"c" * 300)
    line = len(long) - 2  # without its line end and the blank line
    stream = finished(event(b"a"), event(b"b"), long, event(b"d"))
    verdict, replayed = agree(stream, max_line_bytes=line - over)
    assert (verdict.category == "limit_exceeded") == bool(over)
    if not over:
        assert replayed == 3


def test_replay_with_the_largest_limits():
    verdict, replayed = agree(
        finished(*(event(b"w%d" % i) for i in range(5))), max_line_bytes=sys.maxsize, max_event_bytes=sys.maxsize
    )
    assert verdict.category == "complete" and replayed == 4


def test_content_parts_count_outside_the_holes():
    """Mistral sends thinking as content parts: the part's type, not a hole, makes it count."""

    def thinking(text: bytes) -> bytes:
        return (
            b'data: {"id":"m","object":"chat.completion.chunk","model":"magistral","choices":[{"index":0,'
            b'"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"'
            + text
            + b'"}]}]},"finish_reason":null}]}\n\n'
        )

    verdict, replayed = agree(finished(*(thinking(b"t%d" % i) for i in range(8)), event(b"answer")))
    assert verdict.reasoning_events == 8 and verdict.text_events == 1 and replayed == 7


def test_several_choices_are_replayed():
    def two(a: bytes, b: bytes) -> bytes:
        return (
            b'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"'
            + a
            + b'"}},{"index":1,"delta":{"content":"'
            + b
            + b'"}}]}\n\n'
        )

    end = (
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"},'
        b'{"index":1,"delta":{},"finish_reason":"length"}]}\n\n' + DONE
    )
    verdict, replayed = agree(b"".join(two(b"a%d" % i, b"" if i % 2 else b"b") for i in range(6)) + end)
    assert verdict.text_events == 9 and verdict.category == "truncated_length" and replayed == 5


def test_a_finish_chunk_is_never_replayed():
    """Two finish chunks: the second's reason must win, so neither may be replayed."""
    stream = event(b"a") + event(b"", finish=b'"stop"') + event(b"", finish=b'"length"') + DONE
    verdict, replayed = agree(stream)
    assert verdict.finish_reason == "length" and replayed == 0


def tool_event(arguments: bytes, index: int = 0, call_id: bytes | None = None, padding: bytes = b"p") -> bytes:
    head = (
        b'"id":"' + call_id + b'","type":"function","function":{"name":"f",' if call_id is not None else b'"function":{'
    )
    return (
        b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,'
        b'"delta":{"tool_calls":[{"index":%d,' % index + head + b'"arguments":"' + arguments + b'"}}]},'
        b'"finish_reason":null}],"obfuscation":"' + padding + b'"}\n\n'
    )


def tool_stream(*events: bytes) -> bytes:
    end = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    return b"".join(events) + end + DONE


def fragments(arguments: bytes, size: int) -> list[bytes]:
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


@pytest.mark.parametrize(
    "arguments, category",
    [
        (b'{\\"city\\": \\"Paris\\", \\"days\\": 3}', "complete"),
        (b'{\\"city\\": \\"Z\\u00fcrich\\", \\"note\\": \\"a\\\\nb\\"}', "complete"),
        (b'{\\"city\\": \\"Paris\\", \\"days\\": 3', "tool_call_malformed"),
        (b'{\\"city\\": \\"Paris\\"}}', "tool_call_malformed"),
    ],
)
@pytest.mark.parametrize("size", [1, 3, 7])
def test_tool_call_arguments_are_replayed(arguments, category, size):
    pieces = fragments(arguments, size)
    # a piece must not end inside an escape: join escapes to the piece before
    merged: list[bytes] = []
    for piece in pieces:
        if merged and (
            merged[-1].endswith(b"\\") and not merged[-1].endswith(b"\\\\") or merged[-1][-6:].find(b"\\u") >= 0
        ):
            merged[-1] += piece
        else:
            merged.append(piece)
    events = [tool_event(b"", call_id=b"call_1")] + [
        tool_event(piece, padding=b"q" * (i % 5)) for i, piece in enumerate(merged)
    ]
    verdict, replayed = agree(tool_stream(*events))
    assert verdict.category == category and verdict.tool_calls == 1
    assert replayed >= len(merged) - 2


def test_interleaved_and_restarted_tool_calls():
    """Two calls take turns, then a new id at index 0 starts a third call there."""
    events = [tool_event(b"", 0, b"call_a"), tool_event(b"", 1, b"call_b")]
    for piece in fragments(b"[10, 20, 30]", 2):  # index 0 gets each piece twice: malformed
        events += [tool_event(piece, 0), tool_event(piece, 0, padding=b"pp"), tool_event(piece, 1)]
    events += [
        tool_event(b"", 0, b"call_c"),
        tool_event(b"[", 0),
        tool_event(b"1", 0, padding=b"z"),
        tool_event(b"]", 0),
    ]
    verdict, replayed = agree(tool_stream(*events))
    assert verdict.tool_calls == 3 and verdict.category == "tool_call_malformed" and replayed > 0


# Hole values, broken ones included, and the events around them.
hole_value = st.one_of(
    st.sampled_from(
        [b"", b"a", b"\\n", b"\\u00e9", b"\\\\", b'\\"', b"\\x", b"\\u12", b'"', b"\n", b"\r", b"\t", b"\\"]
    ),
    st.binary(max_size=24),
    st.text(max_size=12).map(str.encode),
)
any_event = st.builds(
    event,
    content=hole_value,
    key=st.sampled_from([b"content", b"reasoning_content", b"refusal", b"role"]),
    finish=st.sampled_from([b"null", b'"stop"', b'"length"', b"1", b'"x\\u0041"']),
    chunk_id=st.sampled_from([b"chatcmpl-1", b"", b"\\u0041"]),
    padding=hole_value,
    end=st.sampled_from([b"\n\n", b"\r\n\r\n", b"\n", b"\r\r", b"\n\r\n"]),
)


@st.composite
def near_repeats(draw):
    """Mostly one shape with new hole values, now and then any event at all."""
    shape = draw(
        st.fixed_dictionaries(
            {
                "key": st.sampled_from([b"content", b"reasoning_content", b"refusal"]),
                "chunk_id": st.sampled_from([b"chatcmpl-1", b"\\u0041"]),
                "end": st.sampled_from([b"\n\n", b"\n\n", b"\r\n\r\n"]),
            }
        )
    )
    tools = draw(st.booleans())
    events = [tool_event(b"", call_id=b"call_1")] if tools else []
    for _ in range(draw(st.integers(1, 16))):
        if draw(st.integers(0, 5)) == 0:
            events.append(draw(st.one_of(any_event, st.builds(tool_event, hole_value, st.integers(0, 1)))))
        elif tools:
            events.append(tool_event(draw(hole_value), padding=draw(hole_value)))
        else:
            events.append(event(draw(hole_value), padding=draw(hole_value), **shape))
    return b"".join(events)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_repeats(), st.booleans())
def test_twins_agree_on_near_repeats(events, done):
    agree(events + (DONE if done else b""))
