"""Replaying beyond chat: Anthropic's and Responses' events (an "event:" line before the data),
Ollama's lines, Converse's frames and Gemini's chunks (whose number of parts varies: the scanner
keeps spare events besides the current one).  The compiled twin counts an event that repeats the one
kept but for its holes (the delta's text, padding, a sequence number that follows the last)
without reading it; the Python twin reads every event, and both must agree under any chunking.
The cases aim at what could make a replay wrong: a delta the rules count as state (a tool's
input, a call's arguments), a sequence number that does not follow, padding that is not spaces,
lines between the "event:" line and the data, a frame whose CRC is wrong."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsse import _scanner_py
from loadtests import eventstream as es

from .feeding import agree as twins_agree

try:
    from fastsse import _scanner as _scanner_c
except ImportError:
    _scanner_c = None

pytestmark = pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")


def agree(data: bytes, protocol: str = "auto", **limits):
    """Both twins agree under every chunking; the verdict, and how many events the compiled twin
    replayed when fed the stream whole."""
    verdict = twins_agree(data, protocol, **limits)
    scanner = _scanner_c.Scanner(protocol, **limits)
    scanner.feed(data)
    scanner.close()
    return verdict, scanner.replayed


# ---------------------------------------------------------------------------------- anthropic


def a_event(name: bytes, data: bytes, end: bytes = b"\n") -> bytes:
    return b"event: " + name + end + b"data: " + data + end + end


def a_delta(
    text: bytes = b"hi",
    kind: bytes = b"text_delta",
    key: bytes = b"text",
    pad: bytes = b"",
    index: int = 0,
    end: bytes = b"\n",
) -> bytes:
    """A content_block_delta written byte by byte, so that its text and padding can be anything."""
    data = b'{"type":"content_block_delta","index":%d,"delta":{"type":"%s","%s":"%s"}%s}' % (
        index,
        kind,
        key,
        text,
        pad,
    )
    return a_event(b"content_block_delta", data, end)


def a_stream(*deltas: bytes, stop: bytes = b"end_turn", blocks: tuple = (b"text",)) -> bytes:
    head = a_event(
        b"message_start",
        b'{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}',
    )
    for i, block in enumerate(blocks):
        body = {"type": "content_block_start", "index": i, "content_block": {"type": block.decode()}}
        if block == b"tool_use":
            body["content_block"].update(id="toolu_1", name="f", input={})
        head += a_event(b"content_block_start", json.dumps(body, separators=(",", ":")).encode())
    tail = b"".join(
        a_event(b"content_block_stop", b'{"type":"content_block_stop","index":%d}' % i) for i in range(len(blocks))
    )
    tail += a_event(
        b"message_delta",
        b'{"type":"message_delta","delta":{"stop_reason":"%s","stop_sequence":null},"usage":{"output_tokens":9}}'
        % stop,
    )
    tail += a_event(b"message_stop", b'{"type":"message_stop"}')
    return head + b"".join(deltas) + tail


def test_anthropic_text_deltas_are_replayed_padding_and_all():
    deltas = [a_delta(b"word %d" % i, pad=b" " * (i % 7)) for i in range(20)]
    verdict, replayed = agree(a_stream(*deltas))
    assert verdict.category == "complete" and verdict.text_events == 20
    assert replayed >= 18


def test_anthropic_empty_text_and_thinking_deltas_count_as_read():
    deltas = [a_delta(b"" if i % 3 == 0 else b"t") for i in range(12)]
    deltas += [a_delta(b"" if i % 2 else b"th", kind=b"thinking_delta", key=b"thinking") for i in range(8)]
    verdict, replayed = agree(a_stream(*deltas, blocks=(b"text", b"thinking")))
    assert (verdict.text_events, verdict.reasoning_events) == (8, 1 + 4)  # the block, its deltas
    assert replayed >= 16


def test_anthropic_tool_input_deltas_are_read_not_replayed():
    """Each piece of a tool's input goes to its JSON check: [1, 2 then ]] is not one value."""
    pieces = [b'{\\"a\\": [1, ', b"2", b"]]"]
    deltas = [a_delta(p, kind=b"input_json_delta", key=b"partial_json") for p in pieces]
    verdict, replayed = agree(a_stream(*deltas, stop=b"tool_use", blocks=(b"tool_use",)))
    assert verdict.category == "tool_call_malformed" and replayed == 0


@pytest.mark.parametrize(
    "between",
    [b":keep-alive\n", b"id: 7\n", b"retry: 10\n", b"event: content_block_delta\n"],
)
def test_lines_between_the_event_line_and_the_data(between):
    """A repeat must be the kept event's bytes and nothing else: with another line in between it
    is read (a second "event:" line replaces the first; an "id:" line is part of the event)."""
    kept = a_delta(b"a")
    other = kept.replace(b"\ndata:", b"\n" + between + b"data:", 1)
    verdict, _ = agree(a_stream(kept, other, kept, other, a_delta(b"b")))
    assert verdict.category == "complete" and verdict.text_events == 5


@pytest.mark.parametrize("pad", [b"\t\t", b" \t ", b"\r", b" \r ", b"  x"])
def test_padding_that_is_not_plain_spaces(pad):
    """Tabs are padding; a CR ends the line (the event is broken) and a letter is not JSON."""
    kept = a_delta(b"a", pad=b"  ")
    agree(a_stream(kept, a_delta(b"b", pad=pad), kept, a_delta(b"c", pad=pad)))


@pytest.mark.parametrize("end", [b"\r\n", b"\r"])
def test_anthropic_line_ends(end):
    deltas = [a_delta(b"w%d" % i, pad=b" " * (i % 3), end=end) for i in range(8)]
    verdict, _ = agree(a_stream(*deltas).replace(b"\n", end) if end == b"\r\n" else a_stream(*deltas))
    assert verdict.text_events == 8


def test_anthropic_error_event_among_repeats():
    error = a_event(b"error", b'{"type":"error","error":{"type":"overloaded_error","message":"x"}}')
    deltas = [a_delta(b"w")] * 5 + [error] + [a_delta(b"w")] * 5
    verdict, _ = agree(a_stream(*deltas))
    assert verdict.category == "upstream_error"


# ---------------------------------------------------------------------------------- responses


def r_delta(
    seq, text: bytes = b"hi", kind: bytes = b"response.output_text.delta", obfuscation: bytes = b"xyz"
) -> bytes:
    data = (
        b'{"type":"%s","content_index":0,"item_id":"msg_1","output_index":0,"delta":"%s",'
        b'"logprobs":[],"obfuscation":"%s","sequence_number":%s}' % (kind, text, obfuscation, str(seq).encode())
    )
    return a_event(kind, data)


def r_stream(*deltas: bytes, first_seq: int = 0, last_seq: int | None = None) -> bytes:
    def ev(kind, body, seq):
        body = {"type": kind, **body, "sequence_number": seq}
        return a_event(kind.encode(), json.dumps(body, separators=(",", ":")).encode())

    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-x", "output": []}
    head = ev("response.created", {"response": response}, first_seq)
    head += ev(
        "response.output_item.added",
        {"output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}},
        first_seq + 1,
    )
    last = first_seq + 2 + len(deltas) if last_seq is None else last_seq
    done = {**response, "status": "completed"}
    tail = ev(
        "response.output_item.done",
        {
            "output_index": 0,
            "item": {"id": "msg_1", "type": "message", "content": [{"type": "output_text", "text": "x"}]},
        },
        last,
    )
    tail += ev("response.completed", {"response": done}, last + 1)
    return head + b"".join(deltas) + tail


def test_responses_deltas_are_replayed_while_their_numbers_follow():
    deltas = [r_delta(2 + i, b"w%d" % i, obfuscation=b"o" * (i % 9)) for i in range(20)]
    verdict, replayed = agree(r_stream(*deltas))
    assert verdict.category == "complete" and verdict.text_events == 20
    assert replayed >= 18


@pytest.mark.parametrize("numbers", [[2, 3, 5, 6], [2, 3, 3, 4], [2, 3, 2, 3], [2, 3, 4, 4]])
def test_responses_a_number_that_does_not_follow_is_a_gap(numbers):
    deltas = [r_delta(n, b"w") for n in numbers]
    verdict, _ = agree(r_stream(*deltas, last_seq=numbers[-1] + 1))
    assert verdict.category == "sequence_gap"


@pytest.mark.parametrize("number", [b"03", b"3.0", b"-3", b"3e0", b"1234567890123456789", b'"3"'])
def test_responses_numbers_that_are_not_plain(number):
    """Not a plain integer: read (a leading zero is not JSON; the others are not the number
    expected), never replayed as if they followed."""
    deltas = [r_delta(2, b"a"), r_delta(3, b"b"), r_delta(number.decode(), b"c"), r_delta(5, b"d")]
    agree(r_stream(*deltas, last_seq=6))


def test_responses_refusal_and_reasoning_deltas_count_as_theirs():
    deltas = [r_delta(2 + i, b"n", kind=b"response.refusal.delta") for i in range(4)]
    deltas += [r_delta(6 + i, b"" if i % 2 else b"r", kind=b"response.reasoning_summary_text.delta") for i in range(6)]
    verdict, _ = agree(r_stream(*deltas))
    assert (verdict.text_events, verdict.refusal_events, verdict.reasoning_events) == (0, 4, 3)


# Once a delta has been replayed, its repeats are counted in runs (_replay.h), their sequence
# numbers read there: each must follow the last, or the run stops before it and its reading
# reports the gap.


def in_runs(data: bytes, protocol: str = "auto") -> int:
    """How many events the compiled twin counted in runs, fed the stream whole."""
    scanner = _scanner_c.Scanner(protocol)
    scanner.feed(data)
    scanner.close()
    return scanner.in_runs


def test_responses_deltas_are_counted_in_runs(replay_widest):
    deltas = [r_delta(2 + i, b"w%d" % i, obfuscation=b"o" * (i % 9)) for i in range(40)]
    verdict, _ = agree(r_stream(*deltas))
    assert verdict.category == "complete" and verdict.text_events == 40
    assert in_runs(r_stream(*deltas)) >= 36


@pytest.mark.parametrize("at", [3, 4, 10, 20, 38, 39])
@pytest.mark.parametrize("step", [0, 2, -1, 10**6])
def test_responses_a_number_that_does_not_follow_in_a_run_is_a_gap(at, step, replay_widest):
    """A repeat whose number is the last one again, skips one, goes back or jumps, anywhere in
    a run (its first events, its middle, its last)."""
    numbers = list(range(2, 42))
    numbers[at:] = [n + step - 1 for n in numbers[at:]]
    deltas = [r_delta(n, b"w%d" % i) for i, n in enumerate(numbers)]
    verdict, _ = agree(r_stream(*deltas, last_seq=numbers[-1] + 1))
    assert verdict.category == "sequence_gap"


@pytest.mark.parametrize("number", [b"0%d", b"00%d", b"%d.0", b"-%d", b"%de0", b"%dE0", b'"%d"', b"%d ", b" %d"])
@pytest.mark.parametrize("at", [5, 30])
def test_responses_numbers_that_are_not_plain_in_a_run(number, at, replay_widest):
    """The number that follows, written other than as a plain integer, in a run: left to the
    event's reading, which says what it is (a leading zero is not JSON; the others are not the
    number expected). A run that took one would count what the Python twin does not."""
    deltas = [r_delta(2 + i, b"w") for i in range(40)]
    deltas[at] = r_delta((number % (2 + at)).decode(), b"w")
    agree(r_stream(*deltas, last_seq=42))


def test_responses_a_number_of_too_many_digits_in_a_run(replay_widest):
    deltas = [r_delta(2 + i, b"w") for i in range(40)]
    deltas[20] = r_delta("1234567890123456789", b"w")
    agree(r_stream(*deltas, last_seq=42))


@pytest.mark.parametrize("first", [10**14 - 20, 10**15 - 20])
def test_responses_numbers_of_fifteen_digits_and_more_in_a_run(first, replay_widest):
    """A run reads at most fifteen digits, as memo_match does: past them the events are read,
    and numbers that follow are still no gap."""
    deltas = [r_delta(first + i, b"w%d" % i) for i in range(40)]
    data = r_stream(*deltas, first_seq=first - 2)
    verdict, _ = agree(data)
    assert verdict.category == "complete" and verdict.text_events == 40
    assert (in_runs(data) >= 36) == (first + 40 < 10**15)


def test_a_sequence_number_outside_responses_is_no_gap_in_a_run(replay_widest):
    """Another protocol's stray sequence_number follows nothing: its repeats are replayed (read
    as the plain integer it is, one at a time), and numbers that jump are no gap."""

    def chunk(number: int, content: bytes = b"w", finish: bytes = b"null") -> bytes:
        return (
            b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","sequence_number":%d,'
            b'"choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":%s}]}\n\n' % (number, content, finish)
        )

    numbers = [(i * 7919) % 1000 for i in range(40)]
    data = b"".join(chunk(n, b"w%d" % i) for i, n in enumerate(numbers)) + chunk(1, b"", b'"stop"')
    verdict, replayed = agree(data + b"data: [DONE]\n\n", "chat")
    assert verdict.category == "complete" and verdict.text_events == 40
    assert replayed >= 36


def r_args(index: int, piece: bytes, seq: int) -> bytes:
    return a_event(
        b"response.function_call_arguments.delta",
        b'{"type":"response.function_call_arguments.delta","item_id":"fc_%d","output_index":%d,"delta":"%s",'
        b'"obfuscation":"ab","sequence_number":%d}' % (index, index, piece, seq),
    )


def r_call(index: int, seq: int) -> bytes:
    return a_event(
        b"response.output_item.added",
        b'{"type":"response.output_item.added","output_index":%d,"item":{"id":"fc_%d","type":"function_call",'
        b'"name":"f","arguments":""},"sequence_number":%d}' % (index, index, seq),
    )


def r_args_done(index: int, seq: int) -> bytes:
    return a_event(
        b"response.function_call_arguments.done",
        b'{"type":"response.function_call_arguments.done","item_id":"fc_%d","output_index":%d,"arguments":"{}",'
        b'"sequence_number":%d}' % (index, index, seq),
    )


@pytest.mark.parametrize(
    ("pieces", "category"),
    [
        ([b'{\\"a\\": ', b"1", b"2", b"}"], "complete"),
        ([b'{\\"a\\": ', b"1", b"}}"], "tool_call_malformed"),  # one closing brace too many
        ([b'{\\"a\\": [', b"1,", b"2,", b"3", b"]", b"}"], "complete"),
        ([b'{\\"a\\": [', b"1,", b"2,", b"3", b"]"], "tool_call_malformed"),  # never closed
        ([b'{\\"a\\": \\"', b"x\\\\n", b"\\u00e9", b'\\"}'], "complete"),  # escapes: the captured path
        ([b'{\\"a\\": \\"', b"x\\\\n", b"\\u00e9", b'\\"}}'], "tool_call_malformed"),
        ([b'{\\"a\\": \\"', b"x\\n", b"y", b'\\"}'], "tool_call_malformed"),  # a raw line end in a string
    ],
)
def test_responses_argument_deltas_feed_their_calls_json_check(pieces, category):
    """A call's argument deltas are replayed: each repeat's fragment goes to the JSON check of
    its item, as reading it would; what the check finds at the item's end is the same."""
    seq = 2
    events = [r_call(1, seq)]
    for piece in pieces:
        seq += 1
        events.append(r_args(1, piece, seq))
    events.append(r_args_done(1, seq + 1))
    verdict, replayed = agree(r_stream(*events))
    assert verdict.category == category
    assert replayed >= len(pieces) - 2


def test_responses_argument_deltas_of_two_calls_take_turns():
    """Two calls' fragments interleaved: each repeat goes to its own item's check (output_index
    is compared, never a hole)."""
    events = [r_call(1, 2), r_call(2, 3)]
    seq = 3
    for a, b in ((b"{", b"["), (b"}", b"1"), (b"", b"]")):
        events += [r_args(1, a, seq + 1), r_args(2, b, seq + 2)]
        seq += 2
    events += [r_args_done(1, seq + 1), r_args_done(2, seq + 2)]
    verdict, _ = agree(r_stream(*events))
    assert verdict.category == "complete" and verdict.tool_calls == 2
    events[-3] = r_args(2, b"}", seq)  # the second call's last fragment closes what never opened
    assert agree(r_stream(*events))[0].category == "tool_call_malformed"


def test_responses_argument_deltas_after_their_item_ended():
    """A repeat of the kept fragment after its item's arguments were done starts them anew: read,
    not fed to a check that no longer exists."""
    events = [r_call(1, 2), r_args(1, b"{", 3), r_args(1, b"}", 4), r_args_done(1, 5)]
    events += [r_args(1, b"}", 6), r_args(1, b"}", 7), r_args_done(1, 8)]
    verdict, _ = agree(r_stream(*events))
    assert verdict.category == "tool_call_malformed"


# ---------------------------------------------------------------------------------- ollama


@pytest.fixture(params=[1, 0], ids=["avx2", "sse2"])
def replay_widest(request):
    """Runs of replayed events (_replay.h) allowed 32-byte steps (where the CPU has AVX2) or
    16-byte ones only: each path is held to the same answers."""
    before = _scanner_c._replay_widest(request.param)
    yield request.param
    _scanner_c._replay_widest(before)


def o_line(
    text: bytes = b"hi",
    stamp: int | bytes = 0,
    key: bytes = b"content",
    end: bytes = b"\n",
    done: bytes = b"false",
) -> bytes:
    """A line whose created_at is 2025-12-01T12:00:00.<stamp's nine digits>Z, or the given bytes."""
    stamp = b"2025-12-01T12:00:00.%09dZ" % stamp if isinstance(stamp, int) else stamp
    return (
        b'{"model":"qwen3:8b","created_at":"%s","message":{"role":"assistant","%s":"%s"},"done":%s}'
        % (stamp, key, text, done)
    ) + end


def o_done(reason: bytes = b"stop") -> bytes:
    return (
        b'{"model":"qwen3:8b","created_at":"2025-12-01T12:00:09Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"%s","eval_count":9}\n'
        % reason
    )


def test_ollama_lines_are_replayed(replay_widest):
    lines = [o_line(b"w%d" % i, i) for i in range(20)] + [o_line(b"", 99)]
    verdict, replayed = agree(b"".join(lines) + o_done(), "ollama")
    assert verdict.category == "complete" and verdict.text_events == 20
    assert replayed >= 19


@pytest.mark.parametrize("reason", [b"stop", b"length"])
def test_ollama_a_last_line_that_repeats_the_shape_but_is_done(reason):
    """done: true is outside the holes: the last line is read, its reason judged."""
    lines = [o_line(b"w", i) for i in range(6)] + [
        o_line(b"", 7, done=b"true").replace(b"}\n", b',"done_reason":"%s"}\n' % reason)
    ]
    verdict, _ = agree(b"".join(lines), "ollama")
    assert verdict.finish_reason_raw == reason.decode()


@pytest.mark.parametrize("end", [b"\r\n", b" \n", b"\n\n", b"\n \n"])
def test_ollama_line_ends_and_blank_lines(end):
    lines = [o_line(b"w%d" % i, i, end=end) for i in range(8)]
    verdict, _ = agree(b"".join(lines) + o_done(), "ollama")
    assert verdict.text_events == 8


@pytest.mark.parametrize("texts", ["same", "varied"])
def test_ollama_thinking_then_text(replay_widest, texts):
    """Each line counts as its key says, read, replayed or in a run (varied texts stay holes:
    a run counts them; the same text repeated becomes bytes to compare)."""
    think = [b"t" if texts == "same" else b"t%d" % i for i in range(12)]
    say = [b"w" if texts == "same" else b"w%d" % i for i in range(12)]
    lines = [o_line(think[i], i, key=b"thinking") for i in range(12)] + [o_line(say[i], 12 + i) for i in range(12)]
    verdict, replayed = agree(b"".join(lines) + o_done(), "ollama")
    assert (verdict.reasoning_events, verdict.text_events) == (12, 12)
    assert replayed >= 20


def test_ollama_thinking_lines_as_ollama_sends_them(replay_widest):
    """Ollama's thinking lines carry an empty content beside the thinking: the empty content
    holds the kept value again at the first replay (memo_match tries the kept value first
    there), and the lines are counted in runs; a line whose content is text after all counts
    as text and as reasoning."""

    def thinking(text: bytes, stamp: int, content: bytes = b"") -> bytes:
        return o_line(b"", stamp).replace(b'"content":""', b'"content":"%s","thinking":"%s"' % (content, text))

    lines = [thinking(b"t%d" % i, i) for i in range(16)]
    lines[9] = thinking(b"t9", 9, content=b"and text")
    lines[12] = thinking(b"", 12)
    lines += [o_line(b"w%d" % i, 20 + i) for i in range(6)]
    verdict, replayed = agree(b"".join(lines) + o_done(), "ollama")
    assert (verdict.reasoning_events, verdict.text_events) == (15, 7)
    assert replayed >= 19


def test_ollama_last_line_without_its_newline():
    lines = [o_line(b"w", i) for i in range(6)]
    verdict, _ = agree(b"".join(lines) + o_done().rstrip(b"\n"), "ollama")
    assert verdict.category == "complete"


# A free string as wide at the first replay as the kept one (Ollama's created_at) is taken as
# wide from then on: its bytes are looked at as they are copied into the kept line, which is
# compared across it.  A time stamp of another width (Go drops a fraction's trailing zeros), or
# with a byte a string may not hold plain, must be read as any string is.


def test_ollama_time_stamps_as_wide_are_replayed(replay_widest):
    lines = [o_line(b"w%d" % i, 10**8 + i) for i in range(40)]
    verdict, replayed = agree(b"".join(lines) + o_done(), "ollama")
    assert verdict.category == "complete" and verdict.text_events == 40
    assert replayed >= 38


def test_ollama_time_stamps_of_another_width(replay_widest):
    """Go's RFC 3339 time drops the trailing zeros of the fraction: one stamp in ten is shorter."""
    stamps = [b"2025-12-01T12:00:00.%sZ" % (b"%09d" % (10**8 + i)).rstrip(b"0") for i in range(1, 60)]
    assert len({len(stamp) for stamp in stamps}) > 1
    lines = [o_line(b"w%d" % i, stamp) for i, stamp in enumerate(stamps)]
    verdict, replayed = agree(b"".join(lines) + o_done(), "ollama")
    assert verdict.category == "complete" and verdict.text_events == len(stamps)
    assert replayed == len(stamps) - 1  # all but the first: the shorter ones looked at again as strings


@pytest.mark.parametrize("at", [0, 1, 7, 15, 16, 17, 28, 29])
@pytest.mark.parametrize(
    "byte, category",
    [
        (b"\x01", "malformed_event"),
        (b"\x1f", "malformed_event"),
        (b"\\", "malformed_event"),
        (b'"', "malformed_event"),
        (b"\x7f", "complete"),
        (b"\xc3", "complete"),
    ],  # fmt: skip
)
def test_ollama_a_time_stamp_as_wide_with_a_byte_a_string_may_not_hold(at, byte, category, replay_widest):
    """Every byte of a stamp taken as wide is looked at: one a string may not hold plain (a
    control byte, a lone backslash, a quote) makes the line malformed, as reading it does."""
    stamps = [b"2025-12-01T12:00:00.%09dZ" % (10**8 + i) for i in range(12)]
    stamps[8] = stamps[8][:at] + byte + stamps[8][at + 1 :]
    lines = [o_line(b"w%d" % i, stamp) for i, stamp in enumerate(stamps)]
    verdict, _ = agree(b"".join(lines) + o_done(), "ollama")
    assert verdict.category == category


@pytest.mark.parametrize("at", range(10))
@pytest.mark.parametrize("byte", [b"\x00", b"\\", b'"'])
def test_ollama_a_short_free_string_as_wide_with_a_byte_a_string_may_not_hold(at, byte, replay_widest):
    """The same for a value shorter than a vector (looked at byte by byte)."""
    stamps = [b"12:00:%02d.%d" % (i, i % 10) for i in range(12)]
    stamps[8] = stamps[8][:at] + byte + stamps[8][at + 1 :]
    lines = [o_line(b"w%d" % i, stamp) for i, stamp in enumerate(stamps)]
    verdict, _ = agree(b"".join(lines) + o_done(), "ollama")
    assert verdict.category == "malformed_event"


def test_ollama_a_time_stamp_as_wide_with_an_escape(replay_widest):
    """An escape is read as the string it is in: two lines with one stand for the same stamp."""
    stamps = [b"2025-12-01T12:00:00.%09dZ" % (10**8 + i) for i in range(12)]
    stamps[6] = stamps[6][:20] + b"\\u0031" + stamps[6][21:]  # a digit, escaped
    stamps[9] = stamps[9][:28] + b'\\"'  # a quote, escaped: as wide
    lines = [o_line(b"w%d" % i, stamp) for i, stamp in enumerate(stamps)]
    verdict, _ = agree(b"".join(lines) + o_done(), "ollama")
    assert verdict.category == "complete" and verdict.text_events == 12


@pytest.mark.parametrize("bound", ["max_line_bytes", "max_event_bytes"])
def test_ollama_a_repeat_past_the_bound_in_a_run(bound, replay_widest):
    """A line that repeats the kept one but is longer than the bound is left to its reading,
    which reports the limit, in a run as one at a time."""
    lines = [o_line(b"w%d" % i, 10**8 + i) for i in range(12)]
    lines[9] = o_line(b"w" * 300, 10**8 + 9)
    verdict, _ = agree(b"".join(lines) + o_done(), "ollama", **{bound: 256})
    assert verdict.category == "limit_exceeded"


@pytest.mark.parametrize("size", range(0, 100, 3))
def test_ollama_texts_of_every_length_in_a_run(size, replay_widest):
    """A run finds where each text ends 32 or 16 bytes a step: texts as long as a step, shorter
    and longer, then one with an escape, a control byte or a quote (an unescaped one ends the
    string early: the line is malformed) at each of a few places near a step's end."""
    letters = [bytes([97 + i]) for i in range(12)]  # texts that differ: the kept one's is a hole
    lines = [o_line(letters[i] * ((size + i) % 100), 10**8 + i) for i in range(12)]
    verdict, replayed = agree(b"".join(lines) + o_done(), "ollama")
    assert verdict.category == "complete"
    assert verdict.text_events == sum(1 for i in range(len(lines)) if (size + i) % 100)
    assert replayed == len(lines) - 1
    for at in sorted({0, 15, 16, 31, 32, 33, size - 1, size} & set(range(size + 1))):
        for byte, category in [
            (b"\\\\", "complete"),  # an escaped backslash
            (b"\\u00e9", "complete"),
            (b"\\n", "complete"),
            (b"\\x", "malformed_event"),  # no such escape
            (b"\t", "malformed_event"),  # a control byte
            (b'"', "malformed_event"),
        ]:
            lines = [o_line(letters[i] * size, 10**8 + i) for i in range(12)]
            lines[9] = o_line(b"x" * at + byte + b"x" * (size - at), 10**8 + 9)
            verdict = twins_agree(b"".join(lines) + o_done(), "ollama", chunked=at % 5 == 0)
            assert verdict.category == category, (at, byte)


def test_ollama_a_repeat_that_differs_in_any_byte_outside_its_holes(replay_widest):
    """A run compares every byte of a line but its holes with the kept line's: one byte changed
    anywhere else is not a repeat, but read (a key or a value of another name, or no JSON)."""
    lines = [o_line(b"w%d" % i, 10**8 + i) for i in range(12)]
    stamp, text = lines[9].index(b"2025"), lines[9].index(b'"w9"') + 1
    for at in range(len(lines[9]) - 1):
        if not (stamp <= at < stamp + 30 or text <= at < text + 2):
            changed = lines[:9] + [lines[9][:at] + b"#" + lines[9][at + 1 :]] + lines[10:]
            verdict = twins_agree(b"".join(changed) + o_done(), "ollama", chunked=False)
            try:
                json.loads(changed[9])
            except ValueError:
                assert verdict.category == "malformed_event", at


def test_ollama_a_line_cut_inside_a_time_stamp_as_wide(replay_widest):
    lines = b"".join(o_line(b"w%d" % i, 10**8 + i) for i in range(10))
    for cut in range(len(lines) - 100, len(lines)):
        verdict = twins_agree(lines[:cut], "ollama", chunked=cut % 7 == 0)
        assert not verdict.complete


# ---------------------------------------------------------------------------------- converse


def c_delta(text: str, pad: int = 0, index: int = 0) -> bytes:
    return es.event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": text}}, pad=pad)


def c_stream(*deltas: bytes, stop: str = "end_turn") -> bytes:
    return (
        es.event("messageStart", {"role": "assistant"})
        + b"".join(deltas)
        + es.event("contentBlockStop", {"contentBlockIndex": 0})
        + es.event("messageStop", {"stopReason": stop})
        + es.event(
            "metadata", {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}, "metrics": {"latencyMs": 9}}
        )
    )


def test_converse_frames_are_replayed():
    deltas = [c_delta(f"word {i}", pad=1 + i % 20) for i in range(20)]
    verdict, replayed = agree(c_stream(*deltas), "bedrock-converse")
    assert verdict.category == "complete" and verdict.text_events == 20
    assert replayed >= 18


def test_converse_a_corrupt_frame_among_repeats_is_malformed():
    deltas = [c_delta("w", pad=3) for _ in range(6)]
    broken = bytearray(c_delta("x", pad=3))
    broken[-6] ^= 0x01  # in the payload: the message CRC no longer matches
    verdict, _ = agree(c_stream(*deltas[:3], bytes(broken), *deltas[3:]), "bedrock-converse")
    assert verdict.category == "malformed_event" and verdict.malformed_events == 1


def test_converse_a_repeat_of_another_kind():
    """The same payload under another :event-type is another event."""
    deltas = [c_delta("w", pad=3) for _ in range(4)]
    other = es.event("contentBlockStart", {"contentBlockIndex": 0, "delta": {"text": "w"}}, pad=3)
    verdict, _ = agree(c_stream(*deltas, other, *deltas), "bedrock-converse")
    assert verdict.text_events == 8


# ---------------------------------------------------------------------------------- invoke


def i_chunk(model_event: bytes, pad: int = 0, payload: bytes | None = None) -> bytes:
    """An InvokeModel chunk carrying model_event's bytes as they are (payload: the whole JSON
    payload instead, with the base64 in it as {b64})."""
    b64 = base64.b64encode(model_event)
    if payload is None:
        payload = b'{"bytes":"%s"%s}' % (b64, b',"p":"%s"' % es.PADDING[:pad].encode() if pad else b"")
    else:
        payload = payload.replace(b"{b64}", b64)
    return es.frame({":event-type": "chunk", ":content-type": es.JSON, ":message-type": "event"}, payload)


def i_stream(*chunks: bytes, stop: bytes = b"end_turn") -> bytes:
    start = b'{"type":"message_start","message":{"model":"claude","id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}'
    block = b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'
    end = [
        b'{"type":"content_block_stop","index":0}',
        b'{"type":"message_delta","delta":{"stop_reason":"%s"},"usage":{"output_tokens":9}}' % stop,
        b'{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":1}}',
    ]
    return i_chunk(start) + i_chunk(block) + b"".join(chunks) + b"".join(i_chunk(e, pad=3) for e in end)


def i_delta(text: bytes, kind: bytes = b"text_delta", key: bytes = b"text") -> bytes:
    return b'{"type":"content_block_delta","index":0,"delta":{"type":"%s","%s":"%s"}}' % (kind, key, text)


def test_invoke_decoded_events_are_replayed():
    deltas = [i_chunk(i_delta(b"word %d" % i), pad=1 + i % 30) for i in range(20)]
    verdict, replayed = agree(i_stream(*deltas), "bedrock-invoke")
    assert verdict.category == "complete" and verdict.text_events == 20
    assert replayed >= 18
    empty = [i_chunk(i_delta(b"" if i % 3 else b"w")) for i in range(12)]  # empty deltas count nothing
    verdict, replayed = agree(i_stream(*empty), "bedrock-invoke")
    assert verdict.text_events == 4 and replayed >= 10


def test_invoke_a_tool_input_among_repeats_is_read():
    deltas = [i_chunk(i_delta(b"w")) for _ in range(4)]
    tool = i_chunk(i_delta(b'{\\"a\\":', b"input_json_delta", b"partial_json"))
    verdict, _ = agree(i_stream(*deltas, tool, *deltas), "bedrock-invoke")
    assert verdict.text_events == 8


def test_invoke_a_repeat_of_bedrocks_last_chunk_still_ends_the_stream():
    """A chunk with Bedrock's invocation metrics sets the end marker when read: a repeat of it
    must too, even after a chunk that turned the marker off (review: Gemini-shaped chunks, each
    with metrics, were replayed without it)."""
    metrics = b',"amazon-bedrock-invocationMetrics":{"inputTokenCount":1}'
    gemini = b'{"candidates":[{"content":{"parts":[{"text":"%s"}]}}]%s}'
    stream = i_chunk(gemini % (b"a", metrics)) + i_chunk(gemini % (b"b", metrics))
    assert agree(stream, "bedrock-invoke")[0].category == "missing_finish_reason"
    llama = b'{"generation":"%s","stop_reason":null%s}'
    stream = b"".join(i_chunk(llama % (b"w%d" % i, metrics)) for i in range(4))
    assert agree(stream, "bedrock-invoke")[0].end_marker_seen


@pytest.mark.parametrize(
    "payload",
    [
        b'{"bytes":"{b64}"}',  # no padding
        b'{"bytes": "{b64}"}',  # a blank: the reader reads it
        b'{"p":"abc","bytes":"{b64}"}',
        b'{"bytes":"{b64}","p":"ab\\u0063"}',  # an escape in the padding
        b'{"bytes":"{b64}","p":"abc","q":1}',
        b'{"bytes":"{b64}","p":"abc"} ',
        b'{"bytes":"{b64}","p":"abc"',  # not JSON
        b'{"bytes":"{b64}","p":"abc}',
        b'{"bytes":"{b64}","p":"a\x01c"}',  # a control byte
        b'{"bytes":"{b64}",}',
        b'{"bytes":"{b64}"',
        b'{"bytes":"{b64}\\u0041"}',  # an escape in the base64
        b'{"bytes":"{b64}","p":1}',
        b'{"bytes":"{b64}","p":"\xc3\xa9"}',
        b'{"bytes":"{b64}","p":""}',
        b'{"bytes":"{b64}","p":"%s"}' % (b"a" * 200),  # longer than the padding looked for
        b'{"bytes":"{b64}","p":"x","p":"y"}',
        b'{"bytes":"","p":"x"}',
        b'{"bytes":"{b64}","q":"x"}',
    ],
)
def test_invoke_chunk_payloads_not_as_bedrock_writes_them(payload):
    """The compiled twin reads a payload written as Bedrock writes it without the JSON reader;
    anything else is read, and both twins agree."""
    deltas = [i_chunk(i_delta(b"w")) for _ in range(3)]
    agree(i_stream(*deltas, i_chunk(i_delta(b"x"), payload=payload), *deltas), "bedrock-invoke")


@pytest.fixture(params=[2, 1, 0], ids=["avx2", "ssse3", "scalar"])
def base64_widest(request):
    """The compiled twin's base64 decoder allowed blocks of 32 bytes (where the CPU has AVX2),
    of 16 (SSSE3), or none: each path is held to the same answers."""
    before = _scanner_c._base64_widest(request.param)
    yield request.param
    _scanner_c._base64_widest(before)


@pytest.mark.parametrize("size", range(1, 121))
def test_invoke_base64_of_every_length(size, base64_widest):
    """The compiled twin decodes base64 32 or 16 characters a step where the CPU allows: every
    length, and each of a few bytes outside the alphabet (or padding where it may not be) at
    every position of the encoded event, against the Python twin's binascii."""
    event = i_delta(b"\\u00e9" * (size // 6) + b"x" * (size % 6))
    good = base64.b64encode(event)
    verdict, _ = agree(i_stream(i_chunk(event)), "bedrock-invoke")
    assert verdict.category == "complete" and verdict.text_events == 1
    for at in range(0, len(good) - 2, 1 if size < 30 else 7):  # (the last two may be padding)
        bad = good[:at] + b"*=-\x80_"[at % 5 : at % 5 + 1] + good[at + 1 :]
        stream = i_stream(i_chunk(b"", payload=b'{"bytes":"%s"}' % bad))
        scanned = _scanner_c.scan(stream, "bedrock-invoke")
        assert scanned == _scanner_py.scan(stream, "bedrock-invoke")
        assert scanned.malformed_events == 1, at


# ---------------------------------------------------------------------------------- near repeats

hole_text = st.one_of(
    st.sampled_from([b"", b"a", b"\\n", b"\\u00e9", b'\\"', b"\\x", b"\\u12", b'"', b"\n", b"\r", b"\t", b"\\"]),
    st.binary(max_size=12),
)
padding = st.one_of(st.sampled_from([b"", b" ", b"   ", b"\t", b" \r", b"\n", b"x"]), st.binary(max_size=4))


@st.composite
def anthropic_near_repeats(draw):
    events = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(
            st.sampled_from(
                [(b"text_delta", b"text")] * 4
                + [(b"thinking_delta", b"thinking"), (b"input_json_delta", b"partial_json")]
            )
        )
        events.append(a_delta(draw(hole_text), *kind, pad=draw(padding), index=draw(st.sampled_from([0, 0, 0, 1]))))
    return a_stream(*events, blocks=(b"text", b"tool_use"))


@st.composite
def responses_near_repeats(draw):
    events, seq = [], 2
    for _ in range(draw(st.integers(1, 14))):
        seq += draw(st.sampled_from([1, 1, 1, 1, 0, 2]))
        kind = draw(
            st.sampled_from(
                [b"response.output_text.delta"] * 4
                + [b"response.refusal.delta", b"response.function_call_arguments.delta"]
            )
        )
        if kind == b"response.function_call_arguments.delta" and draw(st.booleans()):
            # a fragment of JSON arguments, and now and then the end of its item's arguments
            text = draw(st.sampled_from([b"{", b"}", b"[", b"]", b"1", b",", b'\\"a\\":', b'\\"', b"", b" "]))
            events.append(r_delta(seq, text, kind, draw(hole_text)))
            if draw(st.integers(0, 5)) == 0:
                seq += 1
                events.append(r_args_done(0, seq))
        else:
            events.append(r_delta(seq, draw(hole_text), kind, draw(hole_text)))
    return r_stream(*events, last_seq=seq + 1)


# a time stamp as Go writes it (trailing zeros dropped), or with any byte in it
stamp_text = st.builds(
    lambda digits, junk, at: (b"2025-12-01T12:00:00.%sZ" % digits.encode().rstrip(b"0"))[:at] + junk,
    st.text("0123456789", min_size=1, max_size=9),
    st.sampled_from([b"", b"", b"", b"\x01", b"\\", b'\\"', b"\\u0041", b"\xe2\x82\xac", b'"']),
    st.integers(0, 30),
)


@st.composite
def ollama_near_repeats(draw):
    lines = []
    for _ in range(draw(st.integers(1, 14))):
        key = draw(st.sampled_from([b"content", b"content", b"thinking", b"role"]))
        done = draw(st.sampled_from([b"false"] * 5 + [b"true", b"0"]))
        lines.append(
            o_line(
                draw(hole_text),
                draw(st.integers(0, 10**9 - 1) | stamp_text),
                key,
                draw(st.sampled_from([b"\n", b"\r\n", b" \n"])),
                done,
            )
        )
    return b"".join(lines) + draw(st.sampled_from([o_done(), b""]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(anthropic_near_repeats())
def test_twins_agree_on_anthropic_near_repeats(data):
    agree(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(responses_near_repeats())
def test_twins_agree_on_responses_near_repeats(data):
    agree(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ollama_near_repeats())
def test_twins_agree_on_ollama_near_repeats(data):
    before = _scanner_c._replay_widest(1)
    try:
        agree(data, "ollama")
        agree(data)
        _scanner_c._replay_widest(0)  # runs 16 bytes a step
        agree(data, "ollama")
    finally:
        _scanner_c._replay_widest(before)


# ---------------------------------------------------------------------------------- gemini


def g_chunk(*parts: bytes, finish: bytes = b"", total: int | bytes = 9, end: bytes = b"\r\n\r\n") -> bytes:
    """A Gemini chunk written byte by byte: each part's bytes as given (b'{"text": "..."}'), its
    totalTokenCount a number or the bytes given."""
    finish_reason = b',"finishReason": "%s"' % finish if finish else b""
    total = b"%d" % total if isinstance(total, int) else total
    return (
        b'data: {"candidates": [{"content": {"parts": ['
        + b",".join(parts)
        + b'],"role": "model"}'
        + finish_reason
        + b',"index": 0}],"usageMetadata": {"promptTokenCount": 4,"totalTokenCount": %s},'
        b'"modelVersion": "gemini-2.5-flash","responseId": "r1"}' % total + end
    )


def g_text(text: bytes) -> bytes:
    return b'{"text": "' + text + b'"}'


def g_thought(text: bytes) -> bytes:
    return b'{"text": "' + text + b'","thought": true}'


def test_gemini_chunks_of_any_number_of_parts_are_replayed():
    chunks = [g_chunk(*[g_text(b"w%d" % k) for k in range(1 + i % 3)], total=10 + i) for i in range(24)]
    verdict, replayed = agree(b"".join(chunks) + g_chunk(g_text(b"."), finish=b"STOP"))
    assert verdict.category == "complete" and verdict.text_events == sum(1 + i % 3 for i in range(24)) + 1
    assert replayed >= 18  # the three shapes, each kept (one current, the others spare)


@pytest.mark.parametrize(
    ("number", "category"),
    [
        (b"0", "complete"),
        (b"7", "complete"),
        (b"12345678901234567890123", "complete"),  # wider than any count: still a number
        (b"-3", "complete"),  # a sign, a fraction, an exponent: left to memo_match, read
        (b"2.5", "complete"),
        (b"1e3", "complete"),
        (b'"9"', "complete"),  # a string where a count was: no rule reads it
        (b"01", "malformed_event"),  # a leading zero is no JSON number
        (b"00", "malformed_event"),
        (b"-", "malformed_event"),
        (b"1.", "malformed_event"),
        (b"", "malformed_event"),
        (b"1x", "malformed_event"),
    ],
)
def test_gemini_token_counts_in_a_run(replay_widest, number, category):
    """A chunk's token count that varies is a number hole, which a run takes when it is digits
    without a leading zero, of any width; anything else is left to memo_match and the reader,
    which decide as reading the chunk would."""
    chunks = [g_chunk(g_text(b"w%d" % i), total=10**i) for i in range(14)]  # 1 to 14 digits
    verdict, replayed = agree(b"".join(chunks) + g_chunk(g_text(b"."), finish=b"STOP"))
    assert (verdict.category, verdict.text_events) == ("complete", 15)
    assert replayed == 13
    chunks[9] = g_chunk(g_text(b"w9"), total=number)
    verdict, _ = agree(b"".join(chunks) + g_chunk(g_text(b"."), finish=b"STOP"))
    assert verdict.category == category


def test_gemini_thought_parts_count_once_whatever_their_text():
    chunks = [g_chunk(g_thought(b"" if i % 2 else b"hmm")) for i in range(6)]
    chunks += [g_chunk(g_text(b"" if i % 3 == 0 else b"w")) for i in range(9)]
    verdict, _ = agree(b"".join(chunks) + g_chunk(g_text(b"."), finish=b"STOP"))
    assert (verdict.reasoning_events, verdict.text_events) == (6, 6 + 1)


def test_gemini_a_chunk_after_the_finish_reopens_the_stream():
    """The last chunk must close its candidates: a replayed chunk after a finish is not the end."""
    body = b"".join(g_chunk(g_text(b"w")) for _ in range(4))
    verdict, _ = agree(body + g_chunk(g_text(b"."), finish=b"STOP") + g_chunk(g_text(b"more")))
    assert verdict.category != "complete"


@pytest.mark.parametrize("stamped", [False, True])
def test_gemini_chunks_after_the_finish_reopen_it_however_many(stamped, replay_widest):
    """Repeats after the finish reopen the stream as one repeat does, counted one at a time or
    in a run (a chunk with a time stamp as wide in each: a plain kept event)."""

    def chunk(text: bytes, i: int, finish: bytes = b"") -> bytes:
        stamp = b'"responseId": "r1","createTime": "2025-12-01T12:00:%02dZ"' % i
        return g_chunk(g_text(text), finish=finish).replace(
            b'"responseId": "r1"', stamp if stamped else b'"responseId": "r1"'
        )

    body = b"".join(chunk(b"w%d" % i, i) for i in range(8))
    after = b"".join(chunk(b"more%d" % i, 20 + i) for i in range(5))
    verdict, replayed = agree(body + chunk(b".", 10, finish=b"STOP") + after)
    assert verdict.category == "no_end_marker" and replayed >= 11


@st.composite
def gemini_near_repeats(draw):
    chunks = []
    for _ in range(draw(st.integers(1, 14))):
        parts = [
            draw(st.sampled_from([g_text, g_text, g_thought]))(draw(hole_text)) for _ in range(draw(st.integers(1, 3)))
        ]
        finish = draw(st.sampled_from([b"", b"", b"", b"STOP", b"MAX_TOKENS"]))
        chunks.append(
            g_chunk(
                *parts,
                finish=finish,
                total=draw(st.integers(0, 10**6)),
                end=draw(st.sampled_from([b"\r\n\r\n", b"\n\n"])),
            )
        )
    return b"".join(chunks)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gemini_near_repeats())
def test_twins_agree_on_gemini_near_repeats(data):
    agree(data)


# ---------------------------------------------------------------------------------- review's cases


def test_the_largest_line_bound_with_a_json_first_line():
    """max_line_bytes=sys.maxsize (no bound) while the first line is held: no overflow."""
    import sys

    verdict, _ = agree(b'{"a":1}\n{"b":2}\n', max_line_bytes=sys.maxsize)
    assert verdict.events == 2


def test_an_error_event_is_never_kept_nor_made_a_template():
    """An "event: error" line makes the event an error by its type alone: a later stream whose
    chunk repeats it under that type is an error too (templates are shared across streams)."""
    from fastsse import _scanner_py

    chunk = b'"object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{%s},"finish_reason":%s}]}\n\n'
    ok = b'data: {"id":"x",' + chunk % (b'"role":"assistant"', b"null")
    error = b'event: error\ndata: {"id":"x",' + chunk % (b'"content":"Hi"', b"null")
    end = b'data: {"id":"x",' + chunk % (b"", b'"stop"') + b"data: [DONE]\n\n"
    caches = _scanner_c.Caches()
    _scanner_c.scan(ok + error + error + end, caches=caches)
    later = ok + error + end
    assert _scanner_c.scan(later, caches=caches) == _scanner_py.scan(later)
    assert _scanner_py.scan(later).category == "upstream_error"


@pytest.mark.parametrize(
    "parts",
    [
        (b'{"text":"a","text":""}', b'{"text":"","text":""}'),  # two texts: their emptiness counts together
        (b'{"text":"","text":"a"}', b'{"text":"b","text":""}'),
        (
            b'{"text":"a","inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo"}}',  # text wins over output
            b'{"text":"","inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo"}}',
        ),
    ],
)
def test_content_parts_whose_text_counts_with_something_else(parts):
    first, then = parts
    verdict, _ = agree(g_chunk(first) + g_chunk(then) * 3 + g_chunk(g_text(b"."), finish=b"STOP"))
    assert verdict.category == "complete"


def test_a_delta_past_the_last_hole():
    """More values than holes: one past the last is compared, and counted as read."""
    free = b"".join(b'"f%d":"",' % i for i in range(15))
    line = b'{"model":"q","message":{"role":"assistant","content":""},' + free + b'"response":"x","done":false}\n'
    last = b'{"model":"q","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}\n'
    verdict, _ = agree(line * 4 + last, "ollama")
    assert verdict.text_events == 4
