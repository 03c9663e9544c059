"""The compiled twin's templates of Ollama's lines (test_templates.py says how templates work).
An Ollama stream's first line and its last (done: true, its done_reason, its durations and
counts) repeat from stream to stream but for their text, time stamp and numbers: they match
templates made from the streams before, as SSE events do.  A template's effect is _ollama's:
the text and thinking its holes count, and for the last line the end of the stream with its
done_reason.  A wrong effect is a false alarm or a missed cut; the Python twin reads every
line, and both must agree."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from .feeding import HOLE_TEXTS, after, judge, judged_in_orders, twins_agree_in_turn

try:
    from fastsse import _scanner as _scanner_c
except ImportError:
    _scanner_c = None
from fastsse import _scanner_py

pytestmark = pytest.mark.skipif(_scanner_c is None, reason="compiled twin not built")

CANARY = b"CANARY-0a7c2e"


# Each test starts from an empty template table (conftest.no_templates).


def line(content: bytes = b"Hi", *, thinking: bytes | None = None, stamp: bytes = b"000968344", extra: bytes = b"",
         model: bytes = b"qwen3:8b", done: bytes = b"false", tail: bytes = b"") -> bytes:  # fmt: skip
    """One line of /api/chat as Ollama writes it (no spaces; created_at with nanoseconds)."""
    return (
        b'{"model":"' + model + b'","created_at":"2025-12-01T12:00:00.' + stamp + b'Z","message":{"role":"assistant",'
        b'"content":"' + content + b'"' + (b',"thinking":"' + thinking + b'"' if thinking is not None else b"")
        + extra + b'},"done":' + done + tail + b"}\n"
    )  # fmt: skip


def last(reason: bytes | None = b"stop", duration: bytes = b"6237979954", count: bytes = b"56", **values) -> bytes:
    tail = (b',"done_reason":"' + reason + b'"' if reason is not None else b"") + (
        b',"total_duration":' + duration + b',"eval_count":' + count
    )
    return line(b"", done=b"true", tail=tail, **values)


def stream(texts=(b"Hello", b" world"), *, thoughts=(), reason: bytes | None = b"stop", done=True,
           duration: bytes = b"6237979954", count: bytes = b"56", model: bytes = b"qwen3:8b") -> bytes:  # fmt: skip
    """Thinking lines, text lines, then the last line (done: true) with its done_reason."""
    lines = [line(b"", thinking=t, stamp=b"1%08d" % i, model=model) for i, t in enumerate(thoughts)]
    lines += [line(t, stamp=b"2%08d" % i, model=model) for i, t in enumerate(texts)]
    if done:
        lines.append(last(reason, duration, count, model=model))
    return b"".join(lines)


@pytest.mark.parametrize("thoughts", [(), (b"hmm", b"so")])
def test_a_stream_of_the_same_shapes_is_counted_from_templates(thoughts):
    first = stream([b"Hi", b" there"], thoughts=thoughts)
    second = stream([b"Second", b" answer", b"!"], thoughts=[b"think", b" more"][: len(thoughts)], duration=b"17",
                    count=b"3")  # fmt: skip
    verdict, templated = after(first, second, "ollama")
    assert verdict.category == "complete" and verdict.protocol == "ollama"
    assert verdict.text_events == 3 and verdict.reasoning_events == len(thoughts) and verdict.model == "qwen3:8b"
    # the first line (which is kept: the rest of its shape are replays), the first text line
    # after thinking, and the last line
    assert templated == (3 if thoughts else 2)


@pytest.mark.parametrize(
    "reason, category",
    [
        (b"length", "truncated_length"),
        (b"connection_closed", "upstream_error"),
        (b"stop", "complete"),
        (None, "complete"),  # (a server before 0.1.35: "done" alone)
    ],
)
def test_the_last_line_says_its_done_reason_from_a_template(reason, category):
    # The same done_reason in both streams: the last line is a template's, and its effect must
    # end the stream with that reason (without the effect, a cut; without the reason, complete).
    verdict, templated = after(stream(reason=reason), stream([b"x"], reason=reason, count=b"9"), "ollama")
    assert verdict.category == category and templated == 2


@pytest.mark.parametrize(
    "reason, category",
    [(b"length", "truncated_length"), (b"connection_closed", "upstream_error"), (None, "complete")],
)
def test_a_done_reason_is_never_a_hole(reason, category):
    # a template of a last line that said "stop" does not take one that says another reason
    verdict, templated = after(stream(), stream(reason=reason), "ollama")
    assert verdict.category == category and verdict.finish_reason_raw == (reason or b"done").decode()
    assert templated == 1  # the first line; the last differs from its template: read


def test_done_false_on_the_last_line_is_a_cut():
    cut = stream([b"a"], done=False) + line(b"", stamp=b"300000000")
    verdict, templated = after(stream(), cut, "ollama")
    assert verdict.category == "no_end_marker" and templated == 1
    # and a template of the last line does not end a stream cut before it
    verdict, templated = after(stream(), stream([b"a", b"b"], done=False), "ollama")
    assert verdict.category == "no_end_marker" and templated == 1


def test_a_line_with_tool_calls_is_read():
    calls = b',"tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Lima"}}}]'
    with_call = line(b"Hi") + line(b"", extra=calls, stamp=b"100000000") + last(b"stop")
    judge(_scanner_c, with_call, "ollama")
    assert not any(b"tool_calls" in kept for kept in _scanner_c.default_caches.template_bytes())
    verdict, templated = after(with_call, with_call, "ollama")
    assert verdict.category == "complete" and verdict.tool_calls == 1 and templated == 2


def test_an_error_line_is_never_a_template():
    failed = line(b"Hi") + b'{"error":"model runner has unexpectedly stopped"}\n'
    judge(_scanner_c, failed, "ollama")
    assert not any(b"error" in kept for kept in _scanner_c.default_caches.template_bytes())
    verdict, _ = after(failed, failed, "ollama")
    assert verdict.category == _scanner_py.scan(failed, "ollama").category == "upstream_error"


def test_another_model_is_read():
    verdict, templated = after(stream(), stream(model=b"llama3.2"), "ollama")
    assert verdict.model == "llama3.2" and verdict.category == "complete" and templated == 0


def test_an_auto_stream_reads_its_first_line_then_takes_templates():
    # auto decides the framing by reading the first line; the lines after it are Ollama's
    verdict, templated = after(stream(), stream([b"x", b"y"], count=b"4"), "auto")
    assert verdict.protocol == "ollama" and verdict.category == "complete" and templated == 1


def test_ollama_and_chat_templates_are_their_own():
    # the same bytes read as chat (not SSE: malformed) and as ollama, in turn: every verdict
    # is the Python twin's
    judged_in_orders(stream([b"a", b"b"]), [("chat", "ollama", "auto", "ollama"), ("ollama", "auto", "chat", "ollama")])


def test_templates_keep_no_payload():
    data = stream([CANARY, CANARY], thoughts=[CANARY])
    judge(_scanner_c, data, "ollama")
    kept = _scanner_c.default_caches.template_bytes()
    assert kept and not any(CANARY in template for template in kept)


# ------------------------------------------------------------------------------ generated
text = HOLE_TEXTS


@st.composite
def generated_stream(draw) -> bytes:
    data = stream(
        draw(st.lists(text, max_size=3)),
        thoughts=draw(st.lists(text, max_size=2)),
        reason=draw(st.sampled_from([b"stop", b"stop", b"length", None, b"connection_closed"])),
        done=draw(st.booleans()),
        count=draw(st.sampled_from([b"5", b"01", b"-1", b"2.5", b"x"])),
        model=draw(st.sampled_from([b"qwen3:8b", b"llama3.2"])),
    )
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return data


test_twins_agree_on_streams_judged_one_after_another = twins_agree_in_turn(generated_stream(), ["ollama", "auto"])
