"""The compiled twin's templates of Gemini chunks (test_templates.py says how templates work).
Gemini has no end marker: each chunk with candidates says again whether the stream is over
(every candidate it carries has a finishReason), and a promptFeedback.blockReason ends it.  So
a template's effect, and the kept event a template hands to replay, must re-decide the end as
reading would: a finish chunk from a template closes the stream, and any chunk after it, from a
template or a replay, opens it again.  A wrong effect here is a false alarm or a missed cut;
the Python twin reads every event, and both must agree."""

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

CANARY = b"CANARY-5e1d0b"


# Each test starts from an empty template table (conftest.no_templates).


def candidate(text: bytes = b"Hi", *, thought: bool = False, finish: bytes | None = None, index: bytes = b"0") -> bytes:
    part = b'{"text": "' + text + b'"' + (b', "thought": true' if thought else b"") + b"}"
    finish_field = b',"finishReason": "' + finish + b'"' if finish is not None else b""
    return b'{"content": {"parts": [' + part + b'],"role": "model"},"index": ' + index + finish_field + b"}"


def chunk(
    *candidates: bytes,
    response_id: bytes = b"R-1",
    count: bytes = b"3",
    model: bytes = b"gemini-2.5-flash",
    thoughts: bytes | None = None,
    end: bytes = b"\r\n\r\n",
) -> bytes:
    """A Gemini chunk as its API writes it (": " after each key, CRLF), byte by byte."""
    return (
        b'data: {"candidates": ['
        + b",".join(candidates or (candidate(),))
        + b'],"usageMetadata": {"promptTokenCount": 24,"candidatesTokenCount": '
        + count
        + b',"totalTokenCount": 30'
        + (b',"thoughtsTokenCount": ' + thoughts if thoughts is not None else b"")
        + b'},"modelVersion": "'
        + model
        + b'","responseId": "'
        + response_id
        + b'"}'
        + end
    )


def blocked(reason: bytes = b"SAFETY", response_id: bytes = b"R-1") -> bytes:
    return (
        b'data: {"promptFeedback": {"blockReason": "' + reason + b'"},"usageMetadata": {"promptTokenCount": 24,'
        b'"totalTokenCount": 24},"modelVersion": "gemini-2.5-flash","responseId": "' + response_id + b'"}\r\n\r\n'
    )


def stream(
    texts=(b"Hello", b" world"),
    *,
    thoughts=(),
    finish: bytes | None = b"STOP",
    last: bytes = b"",
    response_id: bytes = b"R-1",
    **values,
) -> bytes:
    """Thought chunks, text chunks, then the last chunk (its text last) with its finish reason."""
    common = dict(response_id=response_id, **values)
    events = [chunk(candidate(text, thought=True), count=b"%d" % i, **common) for i, text in enumerate(thoughts)]
    events += [chunk(candidate(text), count=b"%d" % (10 + i), **common) for i, text in enumerate(texts)]
    events.append(chunk(candidate(last, finish=finish), count=b"99", **common))
    return b"".join(events)


@pytest.mark.parametrize("protocol", ["gemini", "auto"])
def test_a_stream_of_the_same_shapes_is_counted_from_templates(protocol):
    first = stream([b"Hi", b" there"], thoughts=[b"hmm", b"so"])
    second = stream([b"Second", b" answer", b"!"], thoughts=[b"think"], response_id=b"R-22", last=b"end")
    verdict, templated = after(first, second, protocol)
    assert verdict.category == "complete" and verdict.protocol == "gemini"
    assert verdict.text_events == 4 and verdict.reasoning_events == 1 and verdict.model == "gemini-2.5-flash"
    # the thought chunk, the first text chunk and the last chunk (the rest are replays)
    assert templated == 3


@pytest.mark.parametrize(
    "finish, category",
    [
        (b"MAX_TOKENS", "truncated_length"),
        (b"SAFETY", "content_filtered"),
        (b"OTHER", "upstream_error"),
        (b"MALFORMED_FUNCTION_CALL", "tool_call_malformed"),
        (None, "no_end_marker"),
    ],
)
def test_a_finish_reason_is_never_a_hole(finish, category):
    verdict, templated = after(stream(), stream(finish=finish), "gemini")
    assert verdict.category == category
    assert templated == 1  # the first text chunk; the last chunk differs from its template: read


def test_a_finish_chunk_from_a_template_ends_the_stream_and_a_later_template_reopens_it():
    # A thought chunk after the finish chunk, of a shape this stream has not sent before (so
    # no replay knows it): its template's effect must reopen the stream.
    first = stream([b"a"]) + chunk(candidate(b"t", thought=True), count=b"100")
    second = stream([b"x"], response_id=b"R-2") + chunk(candidate(b"u", thought=True), count=b"7", response_id=b"R-2")
    verdict, templated = after(first, second, "gemini")
    assert verdict.category == "no_end_marker" and templated == 3 and verdict.reasoning_events == 1
    # closed again by a finish chunk: complete
    closed = second + chunk(candidate(b"", finish=b"STOP"), count=b"8", response_id=b"R-2")
    verdict, templated = after(first + chunk(candidate(b"", finish=b"STOP")), closed, "gemini")
    assert verdict.category == "complete" and templated == 4


def test_a_replayed_chunk_kept_from_a_template_reopens_the_stream():
    # The second stream's first chunk is counted from a template and kept; the finish chunk
    # (a template) ends the stream; the chunk after it repeats the kept one.
    first = stream([b"a", b"b"])
    second = stream([b"x"]) + chunk(candidate(b"y"), count=b"100")
    verdict, scanner = judge(_scanner_c, first, "gemini")
    verdict, scanner = judge(_scanner_c, second, "gemini")
    assert verdict == _scanner_py.scan(second, "gemini") and verdict.category == "no_end_marker"
    assert scanner.templated == 2 and scanner.replayed == 1


def test_every_candidate_must_finish():
    def two(finishes) -> bytes:
        texts = chunk(candidate(b"a"), candidate(b"b", index=b"1"))
        return texts + chunk(*(candidate(b"", finish=f, index=b"%d" % i) for i, f in enumerate(finishes)))

    verdict, templated = after(two([b"STOP", b"STOP"]), two([b"STOP", b"STOP"]), "gemini")
    assert verdict.category == "complete" and verdict.choices == 2 and templated == 2
    verdict, templated = after(two([b"STOP", b"STOP"]), two([b"STOP", None]), "gemini")
    assert verdict.category == "no_end_marker" and templated == 1
    verdict, templated = after(two([b"STOP", b"MAX_TOKENS"]), two([b"STOP", b"STOP"]), "gemini")
    assert verdict.category == "complete" and templated == 1


def test_usage_that_counted_reasoning_tokens_is_replayed_and_templated():
    # Gemini's thinking streams say thoughtsTokenCount in every chunk (the corpus's
    # thinking-thought-parts.sse: 20 of 23 chunks the same count).  No hole: a repeat says the
    # same count, and a template's effect says the model reasoned unseen.
    def thinking(texts, finish=b"STOP") -> bytes:
        data = b"".join(chunk(candidate(t), count=b"%d" % i, thoughts=b"787") for i, t in enumerate(texts))
        return data + chunk(candidate(b"", finish=finish), count=b"99")

    data = thinking([b"a", b"b", b"c"])
    verdict, scanner = judge(_scanner_c, data, "gemini")
    assert verdict == _scanner_py.scan(data, "gemini") and scanner.replayed == 2
    # Nothing shown but usage's count, then the token limit: reasoning cut short.  Only the
    # first chunk (a template's) says the count.
    verdict, templated = after(thinking([b"a"]), thinking([b""], finish=b"MAX_TOKENS"), "gemini")
    assert verdict.category == _scanner_py.scan(thinking([b""], finish=b"MAX_TOKENS"), "gemini").category
    assert verdict.category == "reasoning_exhausted" and templated == 1


def test_a_block_reason_is_never_a_template():
    first = chunk(candidate(b"a")) + blocked()
    judge(_scanner_c, first, "gemini")
    assert not any(b"blockReason" in kept for kept in _scanner_c.default_caches.template_bytes())
    for second in (first, blocked(response_id=b"R-2"), chunk(candidate(b"b"), response_id=b"R-2") + blocked(b"OTHER")):
        verdict, _ = after(first, second, "gemini")
        assert verdict.category == _scanner_py.scan(second, "gemini").category != "complete"


def test_another_model_or_candidate_index_is_read():
    verdict, templated = after(stream(), stream(model=b"gemini-2.5-pro"), "gemini")
    assert verdict.model == "gemini-2.5-pro" and templated == 0
    shifted = chunk(candidate(b"a", index=b"1")) + chunk(candidate(b"", finish=b"STOP", index=b"1"))
    verdict, templated = after(stream(), shifted, "gemini")
    assert verdict.category == "complete" and templated == 0


def test_chat_and_gemini_scanners_of_the_same_bytes_keep_their_own_templates():
    # Gemini's bytes read by a chat scanner (its rules: no end without [DONE]), then by auto
    # and gemini scanners, and the other way round: each protocol's templates are its own
    # (Template.detected), and every verdict is the Python twin's.
    judged_in_orders(stream([b"a", b"b"]), [("chat", "auto", "gemini", "chat"), ("gemini", "chat", "auto", "auto")])


def test_templates_keep_no_payload():
    data = (
        chunk(candidate(CANARY, thought=True), response_id=CANARY)
        + chunk(candidate(CANARY), response_id=CANARY)
        + chunk(candidate(CANARY, finish=b"STOP"), response_id=CANARY)
    )
    for protocol in ("gemini", "auto"):
        judge(_scanner_c, data, protocol)
        kept = _scanner_c.default_caches.template_bytes()
        assert len(kept) == 3 and not any(CANARY in template for template in kept)


# ------------------------------------------------------------------------------ generated
text = HOLE_TEXTS
event = st.one_of(
    st.builds(
        lambda texts, thoughts, finishes, rid, count: chunk(
            *(
                candidate(t, thought=th, finish=f, index=b"%d" % i)
                for i, (t, th, f) in enumerate(zip(texts, thoughts, finishes, strict=False))
            ),
            response_id=rid,
            count=count,
        ),
        st.lists(text, min_size=1, max_size=2),
        st.lists(st.booleans(), min_size=2, max_size=2),
        st.lists(st.sampled_from([None, None, b"STOP", b"MAX_TOKENS", b"SAFETY"]), min_size=2, max_size=2),
        st.sampled_from([b"R-1", b"R-2", b""]),
        st.sampled_from([b"1", b"27", b"0", b"1.5", b"01", b""]),
    ),
    st.sampled_from([blocked(), blocked(b"OTHER"), b"data: [DONE]\r\n\r\n", b": ping\r\n\r\n"]),
)


test_twins_agree_on_streams_judged_one_after_another = twins_agree_in_turn(
    st.lists(event, min_size=1, max_size=6).map(b"".join), ["gemini", "auto", "chat"]
)
